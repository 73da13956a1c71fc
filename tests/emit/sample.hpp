// tests/emit/sample.hpp — the strategy the emit round trip writes as a header and reads back:
// several groups, a hierarchical topology, pinned placement, even<4, 1>, bucket caps with a
// separate first cap, a by_bytes partitioner, compression, and split tensors. Shared by the
// generator, the checker TU and tests/unit/emit.cpp.
#pragma once

#include <autosync/strategy/descriptor.hpp>

namespace autosync::emit_sample {

inline constexpr group_desc group0 = describe<strategy<topo::hierarchical<topo::ring, topo::tree>, comp::fp16,
                                                       fuse::bucket_cap<26214400, 1048576>, sched::priority>>();
inline constexpr group_desc group1 =
    describe<strategy<arch::parameter_server, part::even<4, 1>, place::pinned<1>, repl::local, fuse::bucket_cap<4096>>>();
inline constexpr group_desc group2 = describe<strategy<arch::parameter_server, part::by_bytes<4096000>, place::hashed>>();
inline constexpr group_desc group3 =
    describe<strategy<arch::sharded, topo::halving_doubling, comp::bf16, fuse::unbounded, place::load_balanced>>();

inline strategy_desc make() {
  strategy_desc s;
  s.name = "emit \"sample\" \xC2\xB5?";
  s.groups = {group0, group1, group2, group3};
  s.assignments = {
      {"conv1.weight", 0, 0, {}},
      {"layer1.0.conv1.weight", 1, 0, {}},
      {"fc.weight", 0, 0, {0, 3}},          // split along axis 0: shard 0 -> group 0, shard 1 -> group 3
      {"emb\\tab\t", 2, 0, {}},
      {"attn.qkv", 0, 1, {1, 1, 0}},        // split along axis 1 into 3 shards
  };
  return s;
}

}  // namespace autosync::emit_sample
