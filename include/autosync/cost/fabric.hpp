// autosync/cost/fabric.hpp — a cluster summarized for costing, and the collectives on it.
//
// `make_fabric(cluster)` boils a cluster_spec down to the numbers the formulas of
// cost/collectives.hpp need:
//
//   p      ranks (world size)            nodes  worker nodes        g  ranks per node (max)
//   intra  device <-> device inside a node (alpha = intra latency, beta = 1 / intra bandwidth)
//   inter  one node's network: alpha = NIC latency, beta = 1 / (NIC bandwidth x NICs)
//   gamma  seconds per byte summed (1 / reduce_bandwidth)
//   device_flops, codec_flops (compression work per second: codec_rate), servers
//   (parameter-server nodes), workers (per worker node: ranks, NIC)
//
// Heterogeneous clusters: a collective runs at the pace of its slowest member, so the
// collective numbers take the slowest node (smallest bandwidth, largest latency, slowest
// device, slowest reduction) — one slow NIC bounds every ring through it. Parameter-server
// costs keep per-node numbers (`servers`, `workers`), since each server is its own lane and
// each worker node's NICs are their own resource. A co-located server (a cluster without
// server_only nodes: every worker node serves) names the worker node it shares NICs with
// (`server_cost::worker`), so the cost model charges its traffic to that node's NICs.
//
// Which link a collective sees (all_reduce / reduce_scatter / all_gather below):
//
//   one node               every topology runs on `intra` over p ranks.
//   flat, several nodes    the collective crosses node boundaries. Its steps are synchronous,
//                          so a step costs the slowest link's latency (alpha = max of intra
//                          and NIC latency) and the slowest per-flow bandwidth:
//                            beta = max(intra.beta, flows x inter.beta)
//                          flows = the streams that leave one node at once through its NICs:
//                            ring              1  (one ring edge leaves each node; NCCL spreads
//                                                  it over the NICs as channels)
//                            halving_doubling  g  (in the cross-node steps every rank of the
//                                                  node exchanges with a rank on another node)
//                            tree              1  (the executor's trees span every rank, one
//                                                  operation at a time per rank: each of the
//                                                  busiest rank's operations may cross nodes)
//   hierarchical<I, O>     I on g ranks over `intra`; O on N nodes for n/g bytes, g of them
//                          side by side, each on flow link {inter.alpha,
//                          max(intra.beta, g x inter.beta)} (a rank's bytes also cross its own
//                          device link; with a NIC per rank the flow sees one NIC).
//
//     2 nodes x 4 ranks, ring (flat):        hierarchical<ring, ring>:
//       n0: r0-r1-r2-r3                        n0: RS(r0..r3)  AR(r0,r4) AR(r1,r5) ..  AG(r0..r3)
//                      \  one edge per          n1: RS(r4..r7)  (4 flows share the NICs) AG(r4..r7)
//       n1: r7-r6-r5-r4 /  node crosses NICs
//
// A cluster whose backend is NCCL (cluster_spec::backend) runs each collective as one NCCL call,
// and its time is cost/nccl_model.hpp's (algorithm x protocol, channels, pipelines, transport)
// on the profile make_fabric precomputes:
//   ring / tree          NCCL with that algorithm (NCCL_ALGO or the tuner plugin), NCCL's protocol
//   halving_doubling     NCCL's own choice (NCCL has no halving-doubling; it picks by its cost)
//   hierarchical<I, O>   NCCL on the intra communicator (g ranks, one node) + NCCL on the inter
//                        communicators (N ranks, one per node; g of them side by side, each with
//                        1/g of the node's NICs) + NCCL on the intra communicator, each NCCL's choice
//   sharded              reduce-scatter + all-gather as NCCL runs them (ring, or PAT with 1 GPU/node)
// The MPI backend (the CPU executor's own algorithms on send/recv) keeps the formulas below.
//
// With these choices every estimate is >= `lower_bound(fabric, n)`:
//   max( 2(p-1)/p n intra.beta  (every rank's own link; when g > 1),
//        2(N-1)/N n inter.beta  (every node's NICs, the node-level cut) )
// (hierarchical<ring, ring> with an infinitely fast network meets the first term exactly).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/collectives.hpp>
#include <autosync/cost/nccl_model.hpp>
#include <autosync/policy/topology.hpp>

#include <algorithm>
#include <vector>

namespace autosync::cost {

// A node that hosts parameter-server shards.
struct server_cost {
  int node = 0;             // index into cluster.nodes
  link_cost nic{};          // alpha NIC latency, beta 1 / (NIC bandwidth x NICs)
  bool colocated = false;   // a worker node that also serves (no dedicated servers in the cluster)
  int worker = -1;          // co-located: the index into `fabric::workers` of the node it shares
                            // (its NIC carries both; estimate.hpp step 4); dedicated: -1
};
// A worker node, for the worker side of parameter-server traffic.
struct worker_cost {
  int node = 0;             // index into cluster.nodes
  int ranks = 1;            // devices on it
  link_cost nic{};
};

struct fabric {
  int p = 1;                // ranks
  int nodes = 1;            // worker nodes
  int g = 1;                // ranks per node (the largest node)
  link_cost intra{};        // slowest intra-node link
  link_cost inter{};        // slowest node network (all NICs of a node together)
  double gamma = 0.0;       // seconds per byte reduced (slowest device)
  double device_flops = 0.0;  // slowest device
  double codec_flops = 0.0;   // slowest worker's codec rate (codec_rate): compression work per second
  std::vector<server_cost> servers;  // cluster.server_nodes() order: the `server` of a sync_item
  std::vector<worker_cost> workers;  // worker nodes in cluster order
  // NCCL backend (cluster_spec::backend): the world communicator, the intra-node one and one of
  // the g side-by-side inter-node ones (hierarchical topologies), each as the selector
  // nccl::select reads (the collectives below), which holds the communicator's profile
  bool nccl = false;
  nccl::selector world_select{}, intra_select{}, inter_select{};
  [[nodiscard]] constexpr const nccl::profile& world() const noexcept { return world_select.f; }
  [[nodiscard]] constexpr const nccl::profile& intra_comm() const noexcept { return intra_select.f; }
  [[nodiscard]] constexpr const nccl::profile& inter_comm() const noexcept { return inter_select.f; }

  // The link a flat collective sees with `flows` streams per node through the NICs.
  [[nodiscard]] constexpr link_cost flat(int flows) const noexcept {
    if (nodes <= 1) return intra;
    const double bi = g > 1 ? intra.beta : 0.0;
    return {std::max(g > 1 ? intra.alpha : 0.0, inter.alpha), std::max(bi, flows * inter.beta)};
  }
  // The link one of g side-by-side inter-node collectives sees.
  [[nodiscard]] constexpr link_cost inter_flow() const noexcept {
    const double bi = g > 1 ? intra.beta : 0.0;
    return {inter.alpha, std::max(bi, g * inter.beta)};
  }
};

[[nodiscard]] constexpr double inverse(double bandwidth) noexcept { return bandwidth > 0.0 ? 1.0 / bandwidth : 0.0; }

// Compression work per second of the MPI executor's codecs on one CPU core, in the compressors'
// units (policy/compression.hpp, compressors/common.hpp: fp16 is 2 per element, the others in
// proportion to their measured time): the executor's fp16 codec with error feedback (the
// default) encodes and decodes an element in 12.5 ns on one AMD EPYC core (exec::encode +
// exec::decode of 4 Mi fp32 elements; the bare conversions of tests/bench/codecs.cpp take 8.7 ns
// of it), what `autosync calibrate` measures as the node's codec_flops.
inline constexpr double host_codec_flops = 2.0 / 12.5e-9;
// On a GPU the codec kernels stream memory: fp16 reads 4 and writes 2 bytes per element to encode,
// reads 2 and writes 4 to decode, 12 bytes for its 2 units.
inline constexpr double gpu_codec_bytes_per_unit = 6.0;

// Node n's codec rate (the `j.comp` of cost/estimate.hpp step 4: work / rate): its calibrated
// codec_flops when set; on the MPI backend the codecs run on the executor's CPU core
// (host_codec_flops); on NCCL as kernels that stream device memory (memory_bandwidth x
// memory_efficiency / gpu_codec_bytes_per_unit) when the device is described, else at its
// device_flops.
[[nodiscard]] constexpr double codec_rate(const cluster_spec& c, const node_spec& n) noexcept {
  if (n.codec_flops > 0.0) return n.codec_flops;
  if (c.backend == collective_backend::mpi) return host_codec_flops;
  if (n.compute.described()) return n.compute.memory_bandwidth * n.compute.memory_efficiency / gpu_codec_bytes_per_unit;
  return n.device_flops;
}

// The cluster must be valid (cluster_spec::validate).
[[nodiscard]] constexpr fabric make_fabric(const cluster_spec& c) {
  fabric f;
  f.p = c.world_size();
  f.nodes = c.worker_nodes();
  f.g = c.max_devices_per_node();
  bool first = true, first_intra = true;
  double min_flops = 0.0, min_codec = 0.0, min_reduce = 0.0, min_nic = 0.0, max_nic_lat = 0.0, min_intra = 0.0, max_intra_lat = 0.0;
  for (int i = 0; i < static_cast<int>(c.nodes.size()); ++i) {
    const auto& n = c.nodes[static_cast<std::size_t>(i)];
    if (n.server_only) continue;
    f.workers.push_back(worker_cost{i, n.devices, link_cost{n.nic.latency, inverse(n.nic_bandwidth())}});
    if (first) {
      min_flops = n.device_flops;
      min_codec = codec_rate(c, n);
      min_reduce = n.reduce_bandwidth;
      min_nic = n.nic_bandwidth();
      max_nic_lat = n.nic.latency;
      first = false;
    } else {
      min_flops = std::min(min_flops, n.device_flops);
      min_codec = std::min(min_codec, codec_rate(c, n));
      min_reduce = std::min(min_reduce, n.reduce_bandwidth);
      min_nic = std::min(min_nic, n.nic_bandwidth());
      max_nic_lat = std::max(max_nic_lat, n.nic.latency);
    }
    if (n.devices > 1) {
      if (first_intra) {
        min_intra = n.intra.bandwidth;
        max_intra_lat = n.intra.latency;
        first_intra = false;
      } else {
        min_intra = std::min(min_intra, n.intra.bandwidth);
        max_intra_lat = std::max(max_intra_lat, n.intra.latency);
      }
    }
  }
  f.intra = link_cost{max_intra_lat, inverse(min_intra)};
  f.inter = link_cost{max_nic_lat, inverse(min_nic)};
  f.gamma = inverse(min_reduce);
  f.device_flops = min_flops;
  f.codec_flops = min_codec;
  const bool dedicated = c.has_dedicated_servers();
  for (int i = 0; i < static_cast<int>(c.nodes.size()); ++i) {
    const auto& n = c.nodes[static_cast<std::size_t>(i)];
    if (n.server_only == dedicated)
      f.servers.push_back(server_cost{i, link_cost{n.nic.latency, inverse(n.nic_bandwidth())}, !dedicated, -1});
  }
  if (!dedicated)  // every worker node serves: server k is worker k (both in cluster order)
    for (std::size_t k = 0; k < f.servers.size(); ++k) f.servers[k].worker = static_cast<int>(k);
  if (c.backend == collective_backend::nccl) {
    f.nccl = true;
    int nics = 64;
    bool pcie = false;
    for (const auto& n : c.nodes) {
      if (n.server_only) continue;
      nics = std::min(nics, n.nics);
      pcie = pcie || (n.devices > 1 && n.intra.bandwidth < 64e9);  // below NVLink rates: a PCIe path
    }
    const double bi = inverse(f.intra.beta), bn = inverse(f.inter.beta);
    f.world_select = nccl::make_selector(nccl::make_profile(c, f.p, f.nodes, f.g, bi, bn, nics, pcie));
    f.intra_select = nccl::make_selector(nccl::make_profile(c, f.g, 1, f.g, bi, bn, nics, pcie));
    f.inter_select = nccl::make_selector(nccl::make_profile(c, f.nodes, f.nodes, 1, bi, bn / f.g, std::max(1, nics / f.g), pcie));
  }
  return f;
}

// --- collectives on a fabric -------------------------------------------------------------------
namespace detail {
[[nodiscard]] constexpr int flows_of(topology_kind k, int g) noexcept { return k == topology_kind::halving_doubling ? g : 1; }

// The NCCL algorithms a topology steers NCCL to (halving_doubling and hierarchical levels: its choice).
[[nodiscard]] constexpr unsigned nccl_allowed(topology_kind k) noexcept {
  switch (k) {
    case topology_kind::ring: return nccl::only(nccl::algorithm::ring);
    case topology_kind::tree: return nccl::only(nccl::algorithm::tree);
    case topology_kind::halving_doubling:
    case topology_kind::hierarchical: break;
  }
  return nccl::all_algorithms;
}
[[nodiscard]] constexpr double nccl_collective(const fabric& f, nccl::operation op, const topology_value& t, double n) noexcept {
  if (t.kind != topology_kind::hierarchical || f.nodes <= 1 || f.g <= 1)
    return nccl::select(f.world_select, op, n, nccl_allowed(t.kind == topology_kind::hierarchical ? t.inter : t.kind)).time;
  const double share = n / f.g;
  const double in_rs = nccl::select(f.intra_select, nccl::operation::reduce_scatter, n, nccl_allowed(t.intra)).time;
  const double in_ag = nccl::select(f.intra_select, nccl::operation::all_gather, n, nccl_allowed(t.intra)).time;
  const double out = nccl::select(f.inter_select, op, share, nccl_allowed(t.inter)).time;
  switch (op) {
    case nccl::operation::reduce_scatter: return in_rs + out;
    case nccl::operation::all_gather: return out + in_ag;
    case nccl::operation::all_reduce: break;
  }
  return in_rs + out + in_ag;
}
}  // namespace detail

[[nodiscard]] constexpr double all_reduce(const fabric& f, const topology_value& t, double n) noexcept {
  if (f.p <= 1) return 0.0;
  if (f.nccl) return detail::nccl_collective(f, nccl::operation::all_reduce, t, n);
  if (t.kind == topology_kind::hierarchical)
    return hierarchical_all_reduce(t.intra, t.inter, f.g, f.nodes, n, f.intra, f.inter_flow(), f.gamma);
  if (f.nodes <= 1) return all_reduce(t.kind, f.p, n, f.intra, f.gamma);
  return all_reduce(t.kind, f.p, n, f.flat(detail::flows_of(t.kind, f.g)), f.gamma);
}
[[nodiscard]] constexpr double reduce_scatter(const fabric& f, const topology_value& t, double n) noexcept {
  if (f.p <= 1) return 0.0;
  if (f.nccl) return detail::nccl_collective(f, nccl::operation::reduce_scatter, t, n);
  if (t.kind == topology_kind::hierarchical)
    return hierarchical_reduce_scatter(t.intra, t.inter, f.g, f.nodes, n, f.intra, f.inter_flow(), f.gamma);
  if (f.nodes <= 1) return reduce_scatter(t.kind, f.p, n, f.intra, f.gamma);
  return reduce_scatter(t.kind, f.p, n, f.flat(detail::flows_of(t.kind, f.g)), f.gamma);
}
[[nodiscard]] constexpr double all_gather(const fabric& f, const topology_value& t, double n) noexcept {
  if (f.p <= 1) return 0.0;
  if (f.nccl) return detail::nccl_collective(f, nccl::operation::all_gather, t, n);
  if (t.kind == topology_kind::hierarchical) return hierarchical_all_gather(t.intra, t.inter, f.g, f.nodes, n, f.intra, f.inter_flow());
  if (f.nodes <= 1) return all_gather(t.kind, f.p, n, f.intra);
  return all_gather(t.kind, f.p, n, f.flat(detail::flows_of(t.kind, f.g)));
}
// Sparse gradients (architecture all_gather on a host backend), one segment (a table) of `n`
// bytes of touched rows and their indices: the executor's three collectives
// (exec/collectives/sparse_all_gather.hpp), an all-gather of every rank's row count (16 bytes:
// ceil(lg p) start-ups), then ring all-gathers of the indices and of the rows ((p-1) start-ups
// each; (p-1) n bytes in per rank in all), and the local sum of the (p-1) n gathered bytes.
// Affine in n: a bucket of k segments costs sparse_all_gather(f, sum) + (k-1) sparse_all_gather(f, 0).
[[nodiscard]] constexpr double sparse_all_gather(const fabric& f, double n) noexcept {
  if (f.p <= 1) return 0.0;
  const link_cost l = f.nodes <= 1 ? f.intra : f.flat(1);
  return (ceil_log2(f.p) + (f.p - 1)) * l.alpha + ring_all_gather(f.p, f.p * n, l.alpha, l.beta) + (f.p - 1) * n * f.gamma;
}

// NCCL's tree all-reduce on an alpha-beta-gamma fabric (what an NCCL log's tree rows measure,
// cost/collective_features.hpp; the MPI executor's own tree is all_reduce's): one node, the
// double binary tree on `intra`; several, NCCL's shape, a chain inside each node and the double
// binary tree across nodes (tuning.cc: latency 2((g-1) alpha_intra + ceil(lg N) alpha_nic)),
// the pipeline at its slowest stage: 2 n intra.beta (chain) vs nccl_tree_bandwidth_factor(N) n
// inter.beta.
[[nodiscard]] constexpr double nccl_tree_all_reduce(const fabric& f, double n) noexcept {
  if (f.p <= 1) return 0.0;
  if (f.nodes <= 1) return nccl_tree_all_reduce(f.p, n, f.intra.alpha, f.intra.beta, f.gamma);
  const double lat = 2.0 * ((f.g - 1) * f.intra.alpha + ceil_log2(f.nodes) * f.inter.alpha);
  const double chain = f.g > 1 ? 2.0 * n * f.intra.beta : 0.0;
  const double net = nccl_tree_bandwidth_factor(f.nodes) * n * f.inter.beta;
  return lat + std::max(chain, net) + nccl_tree_reduce_factor(f.p) * n * f.gamma;
}

// The all-reduce lower bound on this fabric (see the header comment).
// NCCL backend: every GPU receives (p-1)/p n from the others through its link, every node's NICs
// carry the node-level cut 2(N-1)/N n (n with in-network reduction, CollNet) at the transport's
// rate — below every algorithm of cost/nccl_model.hpp, hierarchical compositions included.
[[nodiscard]] constexpr double lower_bound(const fabric& f, double n) noexcept {
  if (f.p <= 1) return 0.0;
  if (f.nccl) {
    const auto& w = f.world();
    const double rank = f.g > 1 ? detail::frac(f.p) * n / w.bw_intra : 0.0;
    const double node = f.nodes > 1 ? (w.collnet ? 1.0 : 2.0 * detail::frac(f.nodes)) * n / w.bw_net : 0.0;
    return std::max(rank, node);
  }
  const double rank = f.g > 1 ? all_reduce_lower_bound(f.p, n, f.intra.beta) : 0.0;
  const double node = f.nodes > 1 ? all_reduce_lower_bound(f.nodes, n, f.inter.beta) : 0.0;
  return std::max(rank, node);
}
// How long a lane-0 collective of n bytes keeps every node's NICs busy: the node-level cut of
// the all-reduce bound (0 on one node), the node term of lower_bound (on an NCCL fabric at the
// transport's rate, as lower_bound: the NICs' line rate x the transport's efficiency). Shared
// with parameter-server traffic (estimate.hpp, 8) and the report's NIC time (search/report.hpp).
[[nodiscard]] constexpr double nic_occupancy(const fabric& f, double n) noexcept {
  if (f.nodes <= 1) return 0.0;
  if (f.nccl) return (f.world().collnet ? 1.0 : 2.0 * detail::frac(f.nodes)) * n / f.world().bw_net;
  return all_reduce_lower_bound(f.nodes, n, f.inter.beta);
}
// How long a lane-0 collective of n bytes keeps every rank's own link busy: the rank term of
// lower_bound (0 with one rank per node).
[[nodiscard]] constexpr double link_occupancy(const fabric& f, double n) noexcept {
  if (f.p <= 1 || f.g <= 1) return 0.0;
  if (f.nccl) return detail::frac(f.p) * n / f.world().bw_intra;
  return all_reduce_lower_bound(f.p, n, f.intra.beta);
}
// The same for a sparse all-gather: the other nodes' (N-1)/N of p x n bytes come in through the NICs.
[[nodiscard]] constexpr double sparse_all_gather_nic_occupancy(const fabric& f, double n) noexcept {
  return f.nodes > 1 ? (f.nodes - 1.0) / f.nodes * f.p * n * f.inter.beta : 0.0;
}
// How long a parameter-server transfer to server s keeps worker node k's NICs busy, per byte
// on that server (estimate.hpp, step 4). NICs are full duplex: max(out, in) x beta_k, and a
// transfer's out and in are equal on every node:
//   node k hosts s (co-located)   (copies - own) beta_k   pushes in from, pulls out to the others
//   any other worker node         c_k beta_k              its c_k pushes out, c_k pulls in
// copies = N nodes with local replication, else p ranks; c_k (and own, on the host) = 1 with
// local replication, else node k's ranks: the host's own copies never cross its NICs.
[[nodiscard]] constexpr double ps_nic_unit(const fabric& f, std::size_t s, bool local, std::size_t k) noexcept {
  const auto& w = f.workers[k];
  const double c = local ? 1.0 : static_cast<double>(w.ranks);
  if (f.servers[s].worker != static_cast<int>(k)) return c * w.nic.beta;
  return ((local ? f.nodes : f.p) - c) * w.nic.beta;
}
// The sparse all-gather's bound: (p-1) n bytes into every rank through its own link.
[[nodiscard]] constexpr double sparse_all_gather_lower_bound(const fabric& f, double n) noexcept {
  if (f.p <= 1) return 0.0;
  return (f.p - 1) * n * (f.g > 1 ? f.intra.beta : f.inter.beta);
}

}  // namespace autosync::cost
