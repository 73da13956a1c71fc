// autosync/strategy/made_for.hpp — what a strategy was made for: the cluster and the layout.
//
// A strategy is only as good as the cluster it was searched on, and a plan compiled for another
// layout runs other collectives (an 8-rank plan from a 4-rank strategy runs, but not the
// strategy that was priced). The search paths stamp a strategy with
//
//   "made_for": {"cluster": "p3.16xlarge-x4", "fingerprint": "fnv1a64:3f0c...", "world_size": 32, "ranks_per_node": 8}
//
// (the top level of the strategy JSON, optional), and whoever runs it checks it against what it
// runs on: check_made_for throws autosync::error naming the field and both values
//
//   'made_for.world_size': strategy 'autosync' was made for 32 ranks (cluster 'p3.16xlarge-x4', 8 per node);
//                          this job has 4 ranks
//
// A strategy without the stamp (older files, hand-written ones) is not checked.
//
// The fingerprint covers what the cost model reads of a cluster: per node the devices, both
// links (bandwidth, latency), the NIC count, server_only, the device FLOP/s, the reduction
// bandwidth, the compute roofline (node_spec::compute) and the codec rate; the collective backend, the
// transport, NVLS, CollNet, the GPU generation (and, when it is `automatic`, the device label
// it is read from), the latency scale and the channel count. It does not cover the name or
// the source text: a calibrated copy of a preset under another name differs by name, one whose
// links were re-measured differs by fingerprint. FNV-1a over the fields' bytes, each number
// as its IEEE-754 bit pattern: the same on every machine.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace autosync {

struct made_for_info {
  std::string cluster;      // the cluster's name
  std::string fingerprint;  // cluster_fingerprint(cluster)
  int world_size = 0;       // ranks of the layout the strategy was priced for
  int ranks_per_node = 0;
  friend bool operator==(const made_for_info&, const made_for_info&) = default;
};

namespace detail::made_for {

struct fnv {
  std::uint64_t h = 0xcbf29ce484222325ull;
  constexpr void byte(std::uint8_t b) noexcept { h = (h ^ b) * 0x100000001b3ull; }
  constexpr void u64(std::uint64_t v) noexcept {
    for (int i = 0; i < 8; ++i) byte(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  constexpr void i64(std::int64_t v) noexcept { u64(static_cast<std::uint64_t>(v)); }
  constexpr void f64(double v) noexcept { u64(std::bit_cast<std::uint64_t>(v)); }
};

}  // namespace detail::made_for

// "fnv1a64:" and 16 hex digits (see the header comment for the fields).
[[nodiscard]] inline std::string cluster_fingerprint(const cluster_spec& c) {
  detail::made_for::fnv h;
  h.i64(static_cast<std::int64_t>(c.nodes.size()));
  for (const auto& n : c.nodes) {
    h.i64(n.devices);
    h.f64(n.intra.bandwidth);
    h.f64(n.intra.latency);
    h.f64(n.nic.bandwidth);
    h.f64(n.nic.latency);
    h.i64(n.nics);
    h.i64(n.server_only ? 1 : 0);
    h.f64(n.device_flops);
    h.f64(n.reduce_bandwidth);
    const auto& d = n.compute;  // the compute roofline (cost/compute.hpp)
    for (const double v : {d.fp32, d.tf32, d.bf16, d.fp16, d.matmul_efficiency, d.memory_bandwidth, d.memory_efficiency, d.kernel_floor, d.l2_bytes})
      h.f64(v);
    h.i64(d.multiprocessors);
    h.f64(n.codec_flops);
  }
  h.i64(static_cast<std::int64_t>(c.backend));
  h.i64(static_cast<std::int64_t>(c.transport.kind));
  h.f64(c.transport.message_latency);
  h.f64(c.transport.message_overhead);
  h.f64(c.transport.efficiency);
  h.i64(c.transport.gpu_direct);
  h.i64(c.transport.ll128);
  h.i64((c.nvls ? 1 : 0) | (c.collnet ? 2 : 0));
  h.i64(static_cast<std::int64_t>(c.generation));
  if (c.generation == gpu_generation::automatic) {  // NCCL's generation is read from the device label
    h.i64(static_cast<std::int64_t>(c.device.size()));
    for (const char ch : c.device) h.byte(static_cast<std::uint8_t>(ch));
  }
  h.f64(c.latency_scale);
  h.i64(c.channels);
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h.h));
  return buf;
}

// The stamp for a strategy searched on `c` for a layout of world_size ranks, ranks_per_node per
// node (0, 0: the cluster's own, c.world_size() and c.max_devices_per_node()).
[[nodiscard]] inline made_for_info made_for_of(const cluster_spec& c, int world_size = 0, int ranks_per_node = 0) {
  made_for_info m;
  m.cluster = c.name;
  m.fingerprint = cluster_fingerprint(c);
  m.world_size = world_size > 0 ? world_size : c.world_size();
  m.ranks_per_node = ranks_per_node > 0 ? ranks_per_node : c.max_devices_per_node();
  return m;
}

// Throws autosync::error naming the first field of `stamp` that differs from what the strategy
// `name` is about to run on: cluster `c`, world_size ranks, ranks_per_node per node.
inline void check_made_for(const made_for_info& stamp, std::string_view name, const cluster_spec& c, int world_size, int ranks_per_node) {
  const std::string who = "strategy '" + std::string(name) + "' was made for ";
  const std::string where = "cluster '" + stamp.cluster + "', " + std::to_string(stamp.world_size) + " ranks, " +
                            std::to_string(stamp.ranks_per_node) + " per node";
  if (stamp.cluster != c.name)
    throw error("made_for.cluster", who + "cluster '" + stamp.cluster + "'; this run's cluster is '" + c.name +
                                        "' (search again for this cluster, or run on cluster '" + stamp.cluster + "')");
  if (stamp.world_size != world_size)
    throw error("made_for.world_size", who + std::to_string(stamp.world_size) + " ranks (" + where + "); this job has " +
                                           std::to_string(world_size) + " ranks");
  if (stamp.ranks_per_node != ranks_per_node)
    throw error("made_for.ranks_per_node", who + std::to_string(stamp.ranks_per_node) + " ranks per node (" + where +
                                               "); this job runs " + std::to_string(ranks_per_node) + " per node");
  if (const auto f = cluster_fingerprint(c); stamp.fingerprint != f)
    throw error("made_for.fingerprint", who + "cluster '" + stamp.cluster + "' with fingerprint " + stamp.fingerprint +
                                            "; this run's cluster '" + c.name + "' has fingerprint " + f +
                                            " (same name, other links, devices or settings)");
}

}  // namespace autosync
