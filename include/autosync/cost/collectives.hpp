// autosync/cost/collectives.hpp — alpha-beta-gamma cost formulas of the collectives.
//
// Pure constexpr formulas, no model or cluster types: every function takes
//   p      ranks taking part
//   n      bytes of the whole vector (what one rank contributes / ends with)
//   alpha  seconds per message (latency), beta seconds per byte on the link,
//   gamma  seconds per byte reduced (summed) in memory
// and returns seconds. One step of a collective costs alpha + bytes*beta (+ bytes*gamma
// where it reduces), the form of Thakur, Rabenseifner & Gropp, "Optimization of Collective
// Communication Operations in MPICH" (IJHPCA 2005) — and of NCCL's tuner
// (src/graph/tuning.cc: time = latency * steps + bytes / bandwidth), so the constants map
// onto NCCL's tables. cost/fabric.hpp maps these onto a cluster (which link, how many flows).
//
//   ring (Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of
//   workstations"): reduce-scatter in p-1 steps of n/p bytes, then all-gather in p-1 steps.
//
//        step 1          step 2          ...  after p-1 steps rank i owns block i+1 summed
//     r0 -[b0]-> r1    r0 -[b3]-> r1
//     r1 -[b1]-> r2    r1 -[b0]-> r2
//     r2 -[b2]-> r3    r2 -[b1]-> r3
//     r3 -[b3]-> r0    r3 -[b2]-> r0
//
//     reduce_scatter = (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma
//     all_gather     = (p-1) alpha + (p-1)/p n beta
//     all_reduce     = 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma
//
//   halving-doubling (Rabenseifner; Thakur et al. 2005 §4.4): recursive-halving
//   reduce-scatter (lg p steps, n/2, n/4, ... bytes) then recursive-doubling all-gather.
//     all_reduce (p = 2^k) = 2 lg p alpha + 2(p-1)/p n beta + (p-1)/p n gamma
//   p not a power of two (p' = 2^floor(lg p), r = p - p' extra ranks): the extra ranks first
//   hand their whole vector to a partner, which sums it (alpha + n beta + n gamma), the p'
//   ranks run the power-of-two algorithm, and the partners hand the result back
//   (alpha + n beta). Reduce-scatter alone ends with the partner handing the extra rank its
//   n/p block (alpha + n/p beta); all-gather alone starts with the extra rank handing its
//   block to the partner (alpha + n/p beta) and ends with the whole vector (alpha + n beta).
//
//   NCCL's double binary tree (Sanders, Speck & Traeff 2009; NCCL 2.4), what an NCCL log's
//   tree rows measure: the vector is split in two halves, each reduced up one binary tree and
//   broadcast down it, pipelined in chunks, sends and receives at once; every rank is an inner
//   node of at most one tree. A step costs its latency once per tree level and the slowest
//   rank moves 2n bytes (it forwards n/2 up and 2 x n/2 down in its inner tree, n/2 up in its
//   leaf tree):
//     nccl_tree_all_reduce = 2 ceil(lg p) alpha + 2 n beta + n gamma      (p > 2)
//   NCCL's own tree model (algbw = busbw / 2, latency per tree level). With p = 2 the trees
//   degenerate to one exchange and the cost equals the ring's. cost/collective_features.hpp
//   prices NCCL's tree on an alpha-beta-gamma cluster with it.
//
//   tree (the double binary tree as the CPU executor runs it, exec/collectives/tree.hpp; NCCL's
//   two trees, Sanders, Speck & Traeff 2009: every rank an inner node of at most one). Half of
//   the vector runs on each tree, one tree after the other. All-reduce: the half is reduced up,
//   then broadcast down, in chunks of tree_chunk_bytes with blocking sends and receives, so a
//   rank does one chunk's operations one after another (up: receive and sum from each child,
//   then send to the parent; down: receive from the parent, then send to each child). Each
//   phase is a pipeline: one period per chunk plus depth - 1 periods of the largest chunk to fill
//   and drain it, a period being the busiest rank's work on one chunk of c bytes:
//     up:   ops (alpha + c beta) + kids c gamma          down:   ops (alpha + c beta)
//   ops = 3, kids = 2 for p >= 4 (an inner node: two children and a parent); ops = 2, kids = 1
//   for p = 3; ops = 1, kids = 1 for p = 2; depth = ceil(lg p). For long vectors
//     all_reduce -> 6 n beta + 2 n gamma   (p >= 4; p = 2: 2 n beta + n gamma)
//   three times the ring's bandwidth term: the price of blocking operations, which NCCL's
//   tree does not pay (it sends and receives at once: 2 n beta; cost/nccl_model.hpp prices NCCL
//   clusters). Reduce-scatter is the reduce-up, then a scatter down; all-gather a gather up,
//   then the broadcast down. Scatter and gather move each subtree's blocks whole, level by
//   level: ceil(lg p) alpha + 2 (p-1)/p h beta for a half of h bytes (the busiest rank sends or
//   receives its two subtrees' blocks one after the other). `tree_reduce` / `tree_broadcast`
//   are those two (a hierarchical<tree, X> intra phase).
//
//   broadcast / reduce (MPICH, Thakur et al. 2005 §4.1/§4.5): binomial tree
//     ceil(lg p)(alpha + n beta [+ n gamma]); for long vectors van de Geijn's
//     scatter + all-gather broadcast (ceil(lg p) + p - 1) alpha + 2(p-1)/p n beta and
//     Rabenseifner's reduce-scatter + gather reduce 2 ceil(lg p) alpha + 2(p-1)/p n beta
//     + (p-1)/p n gamma. `broadcast` / `reduce` take the faster, as MPICH switches by size.
//
//   hierarchical<Intra, Inter> (Horovod / NCCL 2-level): g ranks per node, N nodes:
//     Intra reduce-scatter on g ranks (n) + Inter all-reduce on N nodes (n/g per rank, the g
//     ranks of a node run g inter-node collectives side by side) + Intra all-gather (n).
//     Ring/ring: 2(g-1)/g n beta_intra + 2(N-1)/N (n/g) beta_flow + latencies, which is
//     the classic 2(g-1)/g S/B_intra + 2(N-1)/N (S/g)/B_nic when each rank has a NIC.
//
//   lower bound (Patarasuk & Yuan 2009, Thm. 1): any all-reduce of n bytes on p ranks whose
//   links carry 1/beta bytes/s moves at least 2(p-1)/p n bytes through every rank's link:
//     all_reduce_lower_bound = 2(p-1)/p n beta.
// Every all-reduce formula here is >= that bound (tests/laws/cost_laws.cpp).
#pragma once

#include <autosync/policy/topology.hpp>

#include <algorithm>

namespace autosync::cost {

// One link: alpha seconds per message, beta seconds per byte.
struct link_cost {
  double alpha = 0.0;
  double beta = 0.0;
  friend constexpr bool operator==(const link_cost&, const link_cost&) = default;
};

// --- integer helpers (constexpr, no <cmath>) -------------------------------------------------
[[nodiscard]] constexpr bool is_pow2(int p) noexcept { return p > 0 && (p & (p - 1)) == 0; }
// floor(lg p) for p >= 1 (0 for p <= 1).
[[nodiscard]] constexpr int floor_log2(int p) noexcept {
  int k = 0;
  while (p > 1) { p >>= 1; ++k; }
  return k;
}
// ceil(lg p) for p >= 1 (0 for p <= 1).
[[nodiscard]] constexpr int ceil_log2(int p) noexcept { return p <= 1 ? 0 : floor_log2(p - 1) + 1; }
// The largest power of two <= p (1 for p <= 1).
[[nodiscard]] constexpr int floor_pow2(int p) noexcept { return p <= 1 ? 1 : 1 << floor_log2(p); }

namespace detail {
[[nodiscard]] constexpr double frac(int p) noexcept { return p <= 1 ? 0.0 : static_cast<double>(p - 1) / p; }  // (p-1)/p
}  // namespace detail

// --- the lower bound -------------------------------------------------------------------------
[[nodiscard]] constexpr double all_reduce_lower_bound(int p, double n, double beta) noexcept {
  return 2.0 * detail::frac(p) * n * beta;
}

// --- ring ------------------------------------------------------------------------------------
[[nodiscard]] constexpr double ring_reduce_scatter(int p, double n, double alpha, double beta, double gamma) noexcept {
  if (p <= 1) return 0.0;
  return (p - 1) * alpha + detail::frac(p) * n * (beta + gamma);
}
[[nodiscard]] constexpr double ring_all_gather(int p, double n, double alpha, double beta) noexcept {
  if (p <= 1) return 0.0;
  return (p - 1) * alpha + detail::frac(p) * n * beta;
}
[[nodiscard]] constexpr double ring_all_reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  return ring_reduce_scatter(p, n, alpha, beta, gamma) + ring_all_gather(p, n, alpha, beta);
}

// --- halving-doubling (Rabenseifner) ----------------------------------------------------------
[[nodiscard]] constexpr double halving_doubling_reduce_scatter(int p, double n, double alpha, double beta, double gamma) noexcept {
  if (p <= 1) return 0.0;
  const int q = floor_pow2(p);
  const double core = floor_log2(q) * alpha + detail::frac(q) * n * (beta + gamma);
  if (q == p) return core;
  return (alpha + n * (beta + gamma)) + core + (alpha + n / p * beta);
}
[[nodiscard]] constexpr double halving_doubling_all_gather(int p, double n, double alpha, double beta) noexcept {
  if (p <= 1) return 0.0;
  const int q = floor_pow2(p);
  const double core = floor_log2(q) * alpha + detail::frac(q) * n * beta;
  if (q == p) return core;
  return (alpha + n / p * beta) + core + (alpha + n * beta);
}
[[nodiscard]] constexpr double halving_doubling_all_reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  if (p <= 1) return 0.0;
  const int q = floor_pow2(p);
  const double core = 2.0 * floor_log2(q) * alpha + 2.0 * detail::frac(q) * n * beta + detail::frac(q) * n * gamma;
  if (q == p) return core;
  return (alpha + n * (beta + gamma)) + core + (alpha + n * beta);
}

// --- NCCL's double binary tree ----------------------------------------------------------------
// Bytes the busiest rank sends per byte of the vector, and bytes it sums.
[[nodiscard]] constexpr double nccl_tree_bandwidth_factor(int p) noexcept { return p <= 2 ? 2.0 * detail::frac(p) : 2.0; }
[[nodiscard]] constexpr double nccl_tree_reduce_factor(int p) noexcept { return p <= 2 ? detail::frac(p) : 1.0; }
[[nodiscard]] constexpr double nccl_tree_all_reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  if (p <= 1) return 0.0;
  return 2.0 * ceil_log2(p) * alpha + nccl_tree_bandwidth_factor(p) * n * beta + nccl_tree_reduce_factor(p) * n * gamma;
}

// --- double binary tree, as the CPU executor runs it ----------------------------------------
// exec/collectives/tree.hpp's tree_chunk_bytes: the pipeline's chunk.
inline constexpr double tree_chunk_bytes = 131072.0;
namespace detail {
// The busiest rank of one tree on p ranks: operations per chunk and children it sums.
struct tree_busiest {
  int ops = 0, kids = 0;
};
[[nodiscard]] constexpr tree_busiest tree_busy(int p) noexcept {
  if (p >= 4) return {3, 2};
  if (p == 3) return {2, 1};
  return {1, 1};
}
// One pipelined phase over a half of h bytes (gamma: 0 for the broadcast down): every chunk's
// period, full chunks of tree_chunk_bytes and the rest, plus depth - 1 periods of the largest
// chunk to fill and drain the pipeline (monotone in h).
// The chunks' periods sum to chunks x ops alpha + h (ops beta + kids gamma).
[[nodiscard]] constexpr double tree_pipeline(int p, double h, double alpha, double beta, double gamma) noexcept {
  if (p <= 1 || !(h > 0.0)) return 0.0;
  const auto b = tree_busy(p);
  const double full = static_cast<double>(static_cast<long long>(h / tree_chunk_bytes));  // floor, h > 0
  const double chunks = full + (h > full * tree_chunk_bytes ? 1.0 : 0.0);
  const double largest = full > 0.0 ? tree_chunk_bytes : h;
  const double per_byte = b.ops * beta + b.kids * gamma;
  return chunks * b.ops * alpha + h * per_byte + (ceil_log2(p) - 1) * (b.ops * alpha + largest * per_byte);
}
// One unchunked scatter down or gather up of a half of h bytes, level by level.
[[nodiscard]] constexpr double tree_level_by_level(int p, double h, double alpha, double beta) noexcept {
  if (p <= 1 || !(h > 0.0)) return 0.0;
  return ceil_log2(p) * alpha + 2.0 * frac(p) * h * beta;
}
}  // namespace detail

[[nodiscard]] constexpr double tree_all_reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  if (p <= 1) return 0.0;
  const double h = 0.5 * n;
  return 2.0 * (detail::tree_pipeline(p, h, alpha, beta, gamma) + detail::tree_pipeline(p, h, alpha, beta, 0.0));
}
// Reduce-scatter on the trees: the reduce up, then the scatter down.
[[nodiscard]] constexpr double tree_reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  if (p <= 1) return 0.0;
  const double h = 0.5 * n;
  return 2.0 * (detail::tree_pipeline(p, h, alpha, beta, gamma) + detail::tree_level_by_level(p, h, alpha, beta));
}
// All-gather on the trees: the gather up, then the broadcast down.
[[nodiscard]] constexpr double tree_broadcast(int p, double n, double alpha, double beta) noexcept {
  if (p <= 1) return 0.0;
  const double h = 0.5 * n;
  return 2.0 * (detail::tree_level_by_level(p, h, alpha, beta) + detail::tree_pipeline(p, h, alpha, beta, 0.0));
}

// --- broadcast / reduce (rooted) ---------------------------------------------------------------
[[nodiscard]] constexpr double binomial_broadcast(int p, double n, double alpha, double beta) noexcept {
  return ceil_log2(p) * (alpha + n * beta);
}
[[nodiscard]] constexpr double binomial_reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  return ceil_log2(p) * (alpha + n * (beta + gamma));
}
[[nodiscard]] constexpr double scatter_allgather_broadcast(int p, double n, double alpha, double beta) noexcept {
  if (p <= 1) return 0.0;
  return (ceil_log2(p) + p - 1) * alpha + 2.0 * detail::frac(p) * n * beta;
}
[[nodiscard]] constexpr double rabenseifner_reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  if (p <= 1) return 0.0;
  return 2.0 * ceil_log2(p) * alpha + 2.0 * detail::frac(p) * n * beta + detail::frac(p) * n * gamma;
}
[[nodiscard]] constexpr double broadcast(int p, double n, double alpha, double beta) noexcept {
  return std::min(binomial_broadcast(p, n, alpha, beta), scatter_allgather_broadcast(p, n, alpha, beta));
}
[[nodiscard]] constexpr double reduce(int p, double n, double alpha, double beta, double gamma) noexcept {
  return std::min(binomial_reduce(p, n, alpha, beta, gamma), rabenseifner_reduce(p, n, alpha, beta, gamma));
}

// --- dispatch on a flat topology kind ----------------------------------------------------------
// `tree` has no reduce-scatter of its own: its reduce-scatter / all-gather are the reduce-up /
// broadcast-down halves (what a hierarchical<tree, X> intra phase does).
[[nodiscard]] constexpr double all_reduce(topology_kind k, int p, double n, link_cost l, double gamma) noexcept {
  switch (k) {
    case topology_kind::tree: return tree_all_reduce(p, n, l.alpha, l.beta, gamma);
    case topology_kind::halving_doubling: return halving_doubling_all_reduce(p, n, l.alpha, l.beta, gamma);
    case topology_kind::ring:
    case topology_kind::hierarchical: break;  // hierarchical needs two levels: hierarchical_all_reduce
  }
  return ring_all_reduce(p, n, l.alpha, l.beta, gamma);
}
[[nodiscard]] constexpr double reduce_scatter(topology_kind k, int p, double n, link_cost l, double gamma) noexcept {
  switch (k) {
    case topology_kind::tree: return tree_reduce(p, n, l.alpha, l.beta, gamma);
    case topology_kind::halving_doubling: return halving_doubling_reduce_scatter(p, n, l.alpha, l.beta, gamma);
    case topology_kind::ring:
    case topology_kind::hierarchical: break;
  }
  return ring_reduce_scatter(p, n, l.alpha, l.beta, gamma);
}
[[nodiscard]] constexpr double all_gather(topology_kind k, int p, double n, link_cost l) noexcept {
  switch (k) {
    case topology_kind::tree: return tree_broadcast(p, n, l.alpha, l.beta);
    case topology_kind::halving_doubling: return halving_doubling_all_gather(p, n, l.alpha, l.beta);
    case topology_kind::ring:
    case topology_kind::hierarchical: break;
  }
  return ring_all_gather(p, n, l.alpha, l.beta);
}

// --- hierarchical<Intra, Inter> ----------------------------------------------------------------
// g ranks per node on `intra`, `nodes` nodes; `inter` is the link one of the g side-by-side
// inter-node collectives sees (cost/fabric.hpp: its share of the node's NICs).
[[nodiscard]] constexpr double hierarchical_reduce_scatter(topology_kind intra_kind, topology_kind inter_kind, int g, int nodes,
                                                           double n, link_cost intra, link_cost inter, double gamma) noexcept {
  return reduce_scatter(intra_kind, g, n, intra, gamma) + reduce_scatter(inter_kind, nodes, n / std::max(g, 1), inter, gamma);
}
[[nodiscard]] constexpr double hierarchical_all_gather(topology_kind intra_kind, topology_kind inter_kind, int g, int nodes,
                                                       double n, link_cost intra, link_cost inter) noexcept {
  return all_gather(inter_kind, nodes, n / std::max(g, 1), inter) + all_gather(intra_kind, g, n, intra);
}
[[nodiscard]] constexpr double hierarchical_all_reduce(topology_kind intra_kind, topology_kind inter_kind, int g, int nodes,
                                                       double n, link_cost intra, link_cost inter, double gamma) noexcept {
  return reduce_scatter(intra_kind, g, n, intra, gamma) + all_reduce(inter_kind, nodes, n / std::max(g, 1), inter, gamma) +
         all_gather(intra_kind, g, n, intra);
}
// The same with the two levels as template arguments (mirrors topo::hierarchical<I, O>).
template <topology_kind Intra, topology_kind Inter>
struct hierarchical {
  static_assert(Intra != topology_kind::hierarchical && Inter != topology_kind::hierarchical,
                "autosync: cost::hierarchical<Intra, Inter>: both levels must be flat (ring, tree, halving_doubling)");
  [[nodiscard]] static constexpr double all_reduce(int g, int nodes, double n, link_cost intra, link_cost inter, double gamma) noexcept {
    return hierarchical_all_reduce(Intra, Inter, g, nodes, n, intra, inter, gamma);
  }
  [[nodiscard]] static constexpr double reduce_scatter(int g, int nodes, double n, link_cost intra, link_cost inter, double gamma) noexcept {
    return hierarchical_reduce_scatter(Intra, Inter, g, nodes, n, intra, inter, gamma);
  }
  [[nodiscard]] static constexpr double all_gather(int g, int nodes, double n, link_cost intra, link_cost inter) noexcept {
    return hierarchical_all_gather(Intra, Inter, g, nodes, n, intra, inter);
  }
};

}  // namespace autosync::cost
