// 00 — policy types: a group's synchronization strategy as a type.
//
// Each aspect (slot) takes one policy; the order does not matter and missing slots take their
// defaults. describe<S>() is the runtime descriptor of the type, so what the search finds at
// run time and what a trainer instantiates at compile time are the same thing.
#include <autosync/autosync.hpp>

#include <cstdio>
#include <type_traits>

using namespace autosync;

// PyTorch DDP's defaults as a type: 25 MiB buckets, 1 MiB first bucket, ring all-reduce.
using ddp_like = strategy<fuse::bucket_cap<25u << 20, 1u << 20>, topo::ring>;
// A BytePS-style parameter-server group.
using byteps_like = strategy<arch::parameter_server, part::by_bytes<4096000>, place::hashed, sched::priority>;
// Hierarchical all-reduce with bf16 on the wire.
using hier_bf16 = strategy<topo::hierarchical<topo::ring, topo::tree>, comp::bf16, fuse::unbounded>;

static_assert(std::is_same_v<ddp_like, strategy<topo::ring, fuse::bucket_cap<25u << 20, 1u << 20>>>, "any order");
static_assert(std::is_same_v<byteps_like::replication, repl::none>, "defaults fill missing slots");
static_assert(describe<hier_bf16>().topology.inter == topology_kind::tree);

template <StrategyType S>
void show(const char* label) {
  constexpr group_desc g = describe<S>();
  std::printf("%-12s architecture=%s topology=%s compression=%s fusion cap=%llu first=%llu schedule=%s\n", label,
              std::string(name_of(g.architecture)).c_str(), std::string(name_of(g.topology.kind)).c_str(),
              std::string(compression_registry[g.compression].name).c_str(),
              static_cast<unsigned long long>(g.fusion.cap_bytes), static_cast<unsigned long long>(g.fusion.first_cap_bytes),
              std::string(name_of(g.schedule)).c_str());
}

int main() {
  show<ddp_like>("ddp_like");
  show<byteps_like>("byteps_like");
  show<hier_bf16>("hier_bf16");
}
