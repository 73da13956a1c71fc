// Policy packs: normalization, defaults, descriptors. Compiled, never run.
#include <autosync/strategy/descriptor.hpp>

#include <type_traits>

namespace {
using namespace autosync;

// Any order, same type.
static_assert(std::is_same_v<strategy<topo::ring, arch::all_reduce>, strategy<arch::all_reduce, topo::ring>>);
static_assert(std::is_same_v<strategy<comp::fp16, sched::priority, fuse::bucket_cap<1024>>,
                             strategy<fuse::bucket_cap<1024>, comp::fp16, sched::priority>>);
// Defaults fill the missing slots.
static_assert(std::is_same_v<strategy<>, strategy<arch::all_reduce, part::none, place::round_robin, repl::none, topo::ring,
                                                  comp::none, fuse::none, sched::fifo>>);
static_assert(std::is_same_v<strategy<comp::bf16>::architecture, arch::all_reduce>);
static_assert(std::is_same_v<strategy<comp::bf16>::compression, comp::bf16>);
// Concepts per slot.
static_assert(TopologyPolicy<topo::hierarchical<topo::ring, topo::halving_doubling>>);
static_assert(!TopologyPolicy<comp::fp16>);
static_assert(CompressionPolicy<comp::fp16> && !CompressionPolicy<topo::ring>);
static_assert(PartitionerPolicy<part::even<4, 1>> && PartitionerPolicy<part::by_bytes<4096000>>);
static_assert(PlacementPolicy<place::pinned<3>> && FusionPolicy<fuse::unbounded> && SchedulePolicy<sched::fifo>);
static_assert(StrategyType<strategy<>> && !StrategyType<topo::ring>);
// Descriptors mirror the types.
constexpr auto d = describe<strategy<arch::parameter_server, part::even<4, 1>, place::pinned<2>, repl::local>>();
static_assert(d.architecture == architecture_kind::parameter_server);
static_assert(d.partitioner == partitioner_value{partitioner_kind::even, 4, 1, 0});
static_assert(d.placement == placement_value{placement_kind::pinned, 2});
static_assert(d.replication == replication_kind::local);
static_assert(describe<strategy<fuse::bucket_cap<25u << 20, 1u << 20>>>().fusion == fusion_value{25u << 20, 1u << 20});
static_assert(describe<strategy<>>() == group_desc{});
static_assert(describe<strategy<topo::hierarchical<topo::tree, topo::ring>>>().topology ==
              topology_value{topology_kind::hierarchical, topology_kind::tree, topology_kind::ring});
// The compression registry is generated from comp::all.
static_assert(compression_registry.size() == 3);
static_assert(compression_registry[comp::fp16::value].name == "fp16");
static_assert(parse_compression("bf16") == comp::bf16::value);
static_assert(!parse_compression("int8").has_value());
// Enum names.
static_assert(name_of(topology_kind::halving_doubling) == "halving_doubling");
static_assert([] { schedule_kind k{}; return parse_enum("priority", k) && k == schedule_kind::priority; }());
// Even shards: floor(d/K), the first d mod K one more.
static_assert(even_shard(10, 4, 0).begin == 0 && even_shard(10, 4, 0).end == 3);
static_assert(even_shard(10, 4, 2).begin == 6 && even_shard(10, 4, 3).end == 10);
}  // namespace
