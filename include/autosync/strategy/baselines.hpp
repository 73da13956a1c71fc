// autosync/strategy/baselines.hpp — what users would pick instead, as strategy descriptors.
//
// Each baseline is the default of a peer system (facts: shared reference notes "peers"),
// written with the same vocabulary a user writes: policy packs turned into descriptors with
// describe<strategy<...>>(), uniform_strategy, and plain edits of strategy_desc. The search
// seeds itself with every baseline, so its answer is never predicted worse than the best
// of them, and the report compares against them.
//
//   name                     groups (dense)                                   sparse tensors
//   ddp                      all_reduce ring, buckets 25 MiB, first 1 MiB     parameter_server (fallback)
//   horovod-64mb / -128mb    all_reduce ring, fusion buffer 64 / 128 MiB      all_gather (Horovod's path)
//   horovod-hier             as horovod-128mb, hierarchical<ring, ring>       all_gather
//   autodist-ps              parameter_server, everything on server 0         (same group)
//   autodist-ps-lb           parameter_server, load_balanced                  (same group)
//   autodist-partitioned-ps  parameter_server, load_balanced, even<K, 0>      (same groups)
//   autodist-ar-chunk128     all_reduce ring, one group per 128 tensors,      all_gather
//                            each group one bucket
//   parallax                 as autodist-ar-chunk128                          parameter_server load_balanced
//   byteps                   parameter_server, by_bytes<4096000>, hashed,     (same group)
//                            priority schedule, local (in-node) reduction
//   zero2                    sharded (reduce-scatter + all-gather) ring,      all_gather
//                            buckets of 5e8 elements
//
// Buckets form in ready order, i.e. reverse parameters() order for a model without explicit
// ready_order: that is exactly what the fusion slot does, so DDP needs no reordering here.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/pack.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::baselines {

inline constexpr std::uint64_t MiB = 1024ull * 1024ull;

// PyTorch DDP: bucket_cap_mb = 25, the first bucket (gradients ready first) 1 MiB.
inline constexpr std::uint64_t ddp_bucket_bytes = 25 * MiB;
inline constexpr std::uint64_t ddp_first_bucket_bytes = 1 * MiB;
// Horovod: HOROVOD_FUSION_THRESHOLD, 64 MiB before v0.21, 128 MiB since (the value is in bytes).
inline constexpr std::uint64_t horovod_fusion_64mb = 64 * MiB;
inline constexpr std::uint64_t horovod_fusion_128mb = 128 * MiB;
// BytePS: BYTEPS_PARTITION_BYTES default.
inline constexpr std::uint64_t byteps_partition_bytes = 4096000;
// DeepSpeed ZeRO: reduce_bucket_size = allgather_bucket_size = 5e8 elements.
inline constexpr std::uint64_t zero_bucket_elements = 500000000;
// AutoDist AllReduce / Parallax builders: chunk_size = 128 tensors per group.
inline constexpr std::int32_t autodist_chunk = 128;
// autodist-partitioned-ps leaves tensors smaller than this whole. AutoDist itself partitions
// every variable; splitting a bias of a few KiB into shards only multiplies per-message
// latency, and the search's knowledge constraints treat tensors this small as "tiny" too.
inline constexpr std::int64_t partitioned_ps_min_bytes = 64 * 1024;

// ---- helpers (public: users build their own variants the same way) -------------------------

// Drops groups no tensor or shard uses and renumbers the rest (order kept).
[[nodiscard]] inline strategy_desc drop_unused_groups(strategy_desc s) {
  std::vector<std::int32_t> used(s.groups.size(), 0);
  for (const auto& a : s.assignments) {
    if (a.split())
      for (auto g : a.shard_groups) used[static_cast<std::size_t>(g)] = 1;
    else
      used[static_cast<std::size_t>(a.group)] = 1;
  }
  std::vector<std::int32_t> to(s.groups.size(), -1);
  std::vector<group_desc> kept;
  for (std::size_t g = 0; g < s.groups.size(); ++g)
    if (used[g]) {
      to[g] = static_cast<std::int32_t>(kept.size());
      kept.push_back(s.groups[g]);
    }
  if (kept.size() == s.groups.size()) return s;
  s.groups = std::move(kept);
  for (auto& a : s.assignments) {
    if (a.split())
      for (auto& g : a.shard_groups) g = to[static_cast<std::size_t>(g)];
    else
      a.group = to[static_cast<std::size_t>(a.group)];
  }
  return s;
}

// Sends every sparse tensor of `m` to one extra group `sparse_group` (a strategy built for
// dense gradients cannot all-reduce them). A model without sparse tensors is left as it is.
[[nodiscard]] inline strategy_desc route_sparse(const model_spec& m, strategy_desc s, const group_desc& sparse_group) {
  bool any = false;
  const auto gi = static_cast<std::int32_t>(s.groups.size());
  for (std::size_t k = 0; k < s.assignments.size(); ++k) {
    auto& a = s.assignments[k];
    const auto i = (k < m.tensors.size() && m.tensors[k].name == a.tensor) ? std::optional<std::size_t>(k) : m.find(a.tensor);
    if (!i || !m.tensors[*i].sparse) continue;
    any = true;
    a.group = gi;
    a.shard_groups.clear();
    a.split_axis = 0;
  }
  if (!any) return s;
  s.groups.push_back(sparse_group);
  return drop_unused_groups(std::move(s));
}

// Smallest divisor >= 2 of d (d itself when d is prime; 1 when d < 2): AutoDist's
// PartitionedPS shard count.
[[nodiscard]] constexpr std::int64_t smallest_divisor(std::int64_t d) noexcept {
  if (d < 2) return 1;
  for (std::int64_t k = 2; k * k <= d; ++k)
    if (d % k == 0) return k;
  return d;
}

// The largest element size of the model's gradients (bytes per element).
[[nodiscard]] constexpr std::uint32_t element_bytes(const model_spec& m) noexcept {
  std::uint32_t e = 1;
  for (const auto& t : m.tensors) e = std::max(e, size_of(t.type));
  return e;
}

namespace detail {
inline constexpr group_desc all_gather_group = describe<strategy<arch::all_gather>>();
inline constexpr group_desc ps_balanced_group = describe<strategy<arch::parameter_server, place::load_balanced>>();
}  // namespace detail

// ---- the baselines ----------------------------------------------------------------------------

// PyTorch DDP: ring all-reduce, 25 MiB buckets in ready order, first bucket 1 MiB. DDP has no
// sparse path to copy; sparse gradients go to a parameter_server group (load-balanced).
[[nodiscard]] inline strategy_desc ddp(const model_spec& m) {
  using g = strategy<arch::all_reduce, topo::ring, fuse::bucket_cap<ddp_bucket_bytes, ddp_first_bucket_bytes>>;
  return route_sparse(m, uniform_strategy(m, describe<g>(), "ddp"), detail::ps_balanced_group);
}

// Horovod: ring all-reduce with a fusion buffer of `fusion_bytes` (every bucket the same
// cap); sparse gradients are all-gathered (Horovod's IndexedSlices path).
[[nodiscard]] inline strategy_desc horovod(const model_spec& m, std::uint64_t fusion_bytes = horovod_fusion_128mb) {
  group_desc g = describe<strategy<arch::all_reduce, topo::ring>>();
  g.fusion = fusion_value{fusion_bytes, fusion_bytes};
  const std::string name = "horovod-" + std::to_string(fusion_bytes / MiB) + "mb";
  return route_sparse(m, uniform_strategy(m, g, name), detail::all_gather_group);
}

// Horovod with HOROVOD_HIERARCHICAL_ALLREDUCE=1: intra-node reduce-scatter, inter-node ring,
// intra-node all-gather.
[[nodiscard]] inline strategy_desc horovod_hierarchical(const model_spec& m, std::uint64_t fusion_bytes = horovod_fusion_128mb) {
  group_desc g = describe<strategy<arch::all_reduce, topo::hierarchical<topo::ring, topo::ring>>>();
  g.fusion = fusion_value{fusion_bytes, fusion_bytes};
  return route_sparse(m, uniform_strategy(m, g, "horovod-hier"), detail::all_gather_group);
}

// AutoDist PS: every variable on the first server.
[[nodiscard]] inline strategy_desc ps(const model_spec& m) {
  return uniform_strategy(m, describe<strategy<arch::parameter_server, place::pinned<0>>>(), "autodist-ps");
}

// AutoDist PSLoadBalancing: each variable to the least-loaded server (greedy by bytes).
[[nodiscard]] inline strategy_desc ps_load_balanced(const model_spec& m) {
  return uniform_strategy(m, detail::ps_balanced_group, "autodist-ps-lb");
}

// AutoDist PartitionedPS: a variable is split along axis 0 into K shards, K the smallest
// divisor >= 2 of dim 0, here capped by the number of servers (more shards than servers
// only add messages); shards placed on the least-loaded server. Tensors smaller than
// partitioned_ps_min_bytes, with dim 0 < 2, or on a one-server cluster stay whole.
// One group per shard count K: parameter_server, load_balanced, even<K, 0> (K = 1: none).
[[nodiscard]] inline strategy_desc partitioned_ps(const model_spec& m, const cluster_spec& c) {
  const std::int64_t servers = std::max(1, c.server_count());
  strategy_desc s{"autodist-partitioned-ps", {}, {}};
  std::vector<std::int64_t> group_k;  // shard count of each group
  s.assignments.reserve(m.tensors.size());
  for (const auto& t : m.tensors) {
    std::int64_t k = 1;
    if (t.bytes() >= partitioned_ps_min_bytes) k = std::min({smallest_divisor(t.shape[0]), servers, t.shape[0]});
    auto it = std::find(group_k.begin(), group_k.end(), k);
    if (it == group_k.end()) {
      group_desc g = detail::ps_balanced_group;
      if (k > 1) g.partitioner = partitioner_value{partitioner_kind::even, static_cast<std::int32_t>(k), 0, 0};
      s.groups.push_back(g);
      group_k.push_back(k);
      it = group_k.end() - 1;
    }
    s.assignments.push_back(assignment{t.name, static_cast<std::int32_t>(it - group_k.begin()), 0, {}});
  }
  return s;
}

// AutoDist AllReduce(chunk_size): tensor i (forward order) in group i / chunk, each group one
// fused collective (ring). Sparse gradients are all-gathered (AutoDist's AllReduce
// synchronizer gathers IndexedSlices).
[[nodiscard]] inline strategy_desc all_reduce_chunk(const model_spec& m, std::int32_t chunk = autodist_chunk) {
  if (chunk < 1) throw error("chunk", "must be >= 1, got " + std::to_string(chunk));
  const group_desc g = describe<strategy<arch::all_reduce, topo::ring, fuse::unbounded>>();
  strategy_desc s{"autodist-ar-chunk" + std::to_string(chunk), {}, {}};
  const auto n = m.tensors.size();
  const auto groups = (n + static_cast<std::size_t>(chunk) - 1) / static_cast<std::size_t>(chunk);
  s.groups.assign(groups, g);
  s.assignments.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    s.assignments.push_back(assignment{m.tensors[i].name, static_cast<std::int32_t>(i / static_cast<std::size_t>(chunk)), 0, {}});
  return route_sparse(m, std::move(s), detail::all_gather_group);
}

// Parallax (AutoDist builder): sparse gradients to load-balanced parameter servers, dense
// ones all-reduced in chunks of 128 tensors.
[[nodiscard]] inline strategy_desc parallax(const model_spec& m) {
  auto s = route_sparse(m, all_reduce_chunk(m, autodist_chunk), detail::ps_balanced_group);
  s.name = "parallax";
  return s;
}

// BytePS: push/pull to summation servers, tensors cut into 4,096,000-byte partitions, keys
// placed by hash, front layers first (priority). BytePS sums inside a machine before pushing
// (`replication`, local by default; pass none for clusters of one device per node).
[[nodiscard]] inline strategy_desc byteps(const model_spec& m, replication_kind replication = replication_kind::local) {
  group_desc g = describe<strategy<arch::parameter_server, part::by_bytes<byteps_partition_bytes>, place::hashed, sched::priority>>();
  g.replication = replication;
  return uniform_strategy(m, g, "byteps");
}

// DeepSpeed ZeRO stage 2: gradients reduce-scattered, each rank updates its shard, parameters
// all-gathered; buckets of 5e8 elements (2e9 bytes for fp32). Sparse gradients all-gathered
// (DeepSpeed's sparse_gradients path).
[[nodiscard]] inline strategy_desc zero2(const model_spec& m) {
  group_desc g = describe<strategy<arch::sharded, topo::ring>>();
  const std::uint64_t cap = zero_bucket_elements * element_bytes(m);
  g.fusion = fusion_value{cap, cap};
  return route_sparse(m, uniform_strategy(m, g, "zero2"), detail::all_gather_group);
}

// Whether hierarchical collectives mean anything on `c` (several nodes, several devices each).
[[nodiscard]] constexpr bool hierarchical_meaningful(const cluster_spec& c) noexcept {
  return c.worker_nodes() > 1 && c.max_devices_per_node() > 1;
}

// Every baseline that applies to (m, c), named. Dense-only systems route sparse tensors to a
// parameter-server or all-gather group, so all of them apply to every model; horovod-hier is
// left out where it degenerates to the flat ring (one node, or one device per node), and
// BytePS's in-node reduction is off where a node holds one device.
[[nodiscard]] inline std::vector<strategy_desc> all(const model_spec& m, const cluster_spec& c) {
  std::vector<strategy_desc> r;
  r.push_back(ddp(m));
  r.push_back(horovod(m, horovod_fusion_64mb));
  r.push_back(horovod(m, horovod_fusion_128mb));
  if (hierarchical_meaningful(c)) r.push_back(horovod_hierarchical(m));
  r.push_back(ps(m));
  r.push_back(ps_load_balanced(m));
  r.push_back(partitioned_ps(m, c));
  r.push_back(all_reduce_chunk(m, autodist_chunk));
  r.push_back(parallax(m));
  r.push_back(byteps(m, c.max_devices_per_node() > 1 ? replication_kind::local : replication_kind::none));
  r.push_back(zero2(m));
  return r;
}

}  // namespace autosync::baselines
