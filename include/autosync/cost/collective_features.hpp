// autosync/cost/collective_features.hpp — one collective as NCCL runs it, what a learned
// correction sees of it, and the corrected time.
//
// The strategy-level correction (cost/features.hpp, cost/corrected.hpp) learns the error of a
// whole iteration. This is the same idea one level down: the error of one collective of the
// α-β-γ model (cost/collectives.hpp on a cost/fabric.hpp fabric) against measured nccl-tests
// rows (tests/data/collectives/, learn/collectives.hpp reads them and trains):
//
//     y = log(measured / analytical)          corrected = analytical x exp(correction(row))
//
// A collective is an operation, the algorithm NCCL ran and a size:
//
//   operation   all_reduce | reduce_scatter | all_gather
//   algorithm   ring          NCCL_ALGO=RING (NCCL still picks the protocol)
//               tree          NCCL_ALGO=TREE, all_reduce only (double binary tree)
//               pat           NCCL_ALGO=PAT, reduce_scatter / all_gather only (costed as
//                             halving-doubling, as the tuner plugin maps it)
//               nccl_default  NCCL's own selection: costed as the faster of the operation's
//                             two (ring vs tree, ring vs pat), the choice NCCL's tuner makes
//                             with the same form of model
//   bytes       the whole vector (nccl-tests' "size" column)
//
// The row (`collective_feature_names`, log-scaled where magnitudes span decades, so trees split
// on ratios, not units) holds the analytical terms and the fabric:
//
//   log2_bytes, log2_bytes_per_rank   n and n / p (a ring step's message)
//   log2_ranks, log2_nodes, ranks_per_node
//   log10_analytical                  seconds of the costed algorithm
//   latency_share, bandwidth_share    the α part (recomputed with β = γ = 0) and the β + γ part
//                                     (recomputed with α = 0), each over the analytical time
//   log10_intra_bw, log10_inter_bw    bytes/s of fabric::intra and of a node's NICs together
//   log10_intra_lat, log10_inter_lat  seconds
//   operation                         0 all_reduce, 1 reduce_scatter, 2 all_gather
//   logarithmic                       1 when the costed algorithm is tree / pat, 0 for ring
//   log10_alternative_over_ring       the op's other algorithm over its ring (tree / ring, pat / ring)
//   bound_share                       the fabric's lower bound (cost::lower_bound, half of it for
//                                     reduce_scatter / all_gather) over the analytical time
//
// The row says which algorithm was costed, not whether NCCL was forced to it: NCCL runs the
// same tree whether NCCL_ALGO=TREE forced it or its own selection picked it (and picks the
// protocol either way), so a log of NCCL's default selection teaches the correction of the
// algorithm the model expects NCCL to pick. (Where NCCL's selection ran something the model
// does not have — NVLS, CollNet — that time is learned as the costed algorithm's.) This is what
// lets the shipped logs, which hold NCCL_ALGO=RING runs and default runs but no forced tree,
// correct a tree too: the tuner plugin compares the corrected ring with the corrected tree.
//
// The corrected time (opt-in: cost::all_reduce and cost::estimate stay analytical):
//   corrected_collective_time(fabric, collective, correction)   any cost::Correction
//   corrected_all_reduce(fabric, topology, bytes, correction)    ring or tree, as NCCL is steered
//   collective_correction                                        a copyable, optional correction
//                                                                (none: the analytical time)
// cost/default_collective_correction.hpp has the embedded one, trained on the shipped logs.
//
// Everything is a pure function of (fabric, collective): the same inputs give bit-identical rows.
#pragma once

#include <autosync/cost/collectives.hpp>
#include <autosync/cost/correction.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/error.hpp>
#include <autosync/policy/slots.hpp>
#include <autosync/policy/topology.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace autosync::cost {
enum class collective_op : std::uint8_t { all_reduce, reduce_scatter, all_gather };
enum class collective_algorithm : std::uint8_t { ring, tree, pat, nccl_default };
}  // namespace autosync::cost

namespace autosync {
template <>
struct enum_names<cost::collective_op> {
  static constexpr std::array<std::string_view, 3> names{"all_reduce", "reduce_scatter", "all_gather"};
};
template <>
struct enum_names<cost::collective_algorithm> {
  static constexpr std::array<std::string_view, 4> names{"ring", "tree", "pat", "nccl_default"};
};
}  // namespace autosync

namespace autosync::cost {

// One collective: what ran, how NCCL ran it, how many bytes.
struct collective {
  collective_op op = collective_op::all_reduce;
  collective_algorithm algorithm = collective_algorithm::ring;
  double bytes = 0.0;
  friend constexpr bool operator==(const collective&, const collective&) = default;
};

// Throws autosync::error naming the field: an algorithm NCCL does not have for the operation
// (tree is all-reduce only, pat reduce-scatter / all-gather only), a negative or non-finite size.
inline void validate(const collective& c) {
  if (!(std::isfinite(c.bytes) && c.bytes >= 0.0)) throw error("bytes", "must be a finite non-negative number of bytes");
  const bool ar = c.op == collective_op::all_reduce;
  if ((c.algorithm == collective_algorithm::tree && !ar) || (c.algorithm == collective_algorithm::pat && ar))
    throw error("algorithm", std::string("NCCL has no '") + std::string(name_of(c.algorithm)) + "' algorithm for " +
                                 std::string(name_of(c.op)) + " (tree: all_reduce only; pat: reduce_scatter and all_gather only)");
}

// The model's time of `op` over `n` bytes with flat topology `k` on f.
[[nodiscard]] constexpr double collective_time(const fabric& f, collective_op op, topology_kind k, double n) noexcept {
  const topology_value t{k};
  switch (op) {
    case collective_op::reduce_scatter: return reduce_scatter(f, t, n);
    case collective_op::all_gather: return all_gather(f, t, n);
    case collective_op::all_reduce: break;
  }
  return all_reduce(f, t, n);
}

// The op's logarithmic algorithm: the double binary tree for all-reduce, halving-doubling
// (NCCL's PAT) for reduce-scatter / all-gather.
[[nodiscard]] constexpr topology_kind logarithmic_topology(collective_op op) noexcept {
  return op == collective_op::all_reduce ? topology_kind::tree : topology_kind::halving_doubling;
}

// The topology the analytical model costs for c: ring, the logarithmic one, or for
// nccl_default the faster of the two (ring on a tie).
[[nodiscard]] constexpr topology_kind costed_topology(const fabric& f, const collective& c) noexcept {
  switch (c.algorithm) {
    case collective_algorithm::ring: return topology_kind::ring;
    case collective_algorithm::tree:
    case collective_algorithm::pat: return logarithmic_topology(c.op);
    case collective_algorithm::nccl_default: break;
  }
  const auto lg = logarithmic_topology(c.op);
  return collective_time(f, c.op, lg, c.bytes) < collective_time(f, c.op, topology_kind::ring, c.bytes) ? lg : topology_kind::ring;
}

// The NCCL model's pick for c on an NCCL fabric (cost/nccl_model.hpp): ring / tree / pat steer
// NCCL to that algorithm (it still picks the protocol), nccl_default is NCCL's own selection.
[[nodiscard]] constexpr nccl::choice nccl_choice(const fabric& f, const collective& c) noexcept {
  const auto op = c.op == collective_op::all_reduce       ? nccl::operation::all_reduce
                  : c.op == collective_op::reduce_scatter ? nccl::operation::reduce_scatter
                                                          : nccl::operation::all_gather;
  unsigned allowed = nccl::all_algorithms;
  switch (c.algorithm) {
    case collective_algorithm::ring: allowed = nccl::only(nccl::algorithm::ring); break;
    case collective_algorithm::tree: allowed = nccl::only(nccl::algorithm::tree); break;
    case collective_algorithm::pat: allowed = nccl::only(nccl::algorithm::pat); break;
    case collective_algorithm::nccl_default: break;
  }
  return nccl::select(f.world, op, c.bytes, allowed);
}

// The analytical time of c on f (seconds): the NCCL model on an NCCL fabric, the alpha-beta-gamma
// form of the costed topology on an MPI one.
[[nodiscard]] constexpr double analytical_time(const fabric& f, const collective& c) noexcept {
  if (f.nccl) return f.p <= 1 ? 0.0 : nccl_choice(f, c).time;
  return collective_time(f, c.op, costed_topology(f, c), c.bytes);
}

// --- the feature row -------------------------------------------------------------------------
inline constexpr std::array<std::string_view, 16> collective_feature_names{
    "log2_bytes",       "log2_bytes_per_rank", "log2_ranks",      "log2_nodes",     "ranks_per_node",
    "log10_analytical", "latency_share",       "bandwidth_share", "log10_intra_bw", "log10_inter_bw",
    "log10_intra_lat",  "log10_inter_lat",     "operation",       "logarithmic",    "log10_alternative_over_ring",
    "bound_share"};
inline constexpr std::size_t collective_feature_count = collective_feature_names.size();

using collective_row = std::array<float, collective_feature_count>;

struct collective_estimate {
  double analytical = 0.0;   // seconds, the costed algorithm
  double latency = 0.0;      // its α part: recomputed with β = γ = 0
  double bandwidth = 0.0;    // its β + γ part: recomputed with α = 0
  topology_kind topology = topology_kind::ring;  // what was costed
  collective_row row{};      // the correction's input
};

namespace detail::coll {
[[nodiscard]] inline float lg10(double v) noexcept { return static_cast<float>(std::log10(std::max(v, 1e-30))); }
[[nodiscard]] inline float lg2(double v) noexcept { return static_cast<float>(std::log2(std::max(v, 1e-30))); }
[[nodiscard]] inline double share(double part, double whole) noexcept { return whole > 0.0 ? part / whole : 0.0; }
}  // namespace detail::coll

// The analytical terms and the row of c on f. Throws autosync::error as validate(c) does, and
// "fabric" for a fabric without ranks.
[[nodiscard]] inline collective_estimate collective_features(const fabric& f, const collective& c) {
  validate(c);
  if (f.p < 1 || f.nodes < 1 || f.g < 1) throw error("fabric", "has no ranks (cost::make_fabric of a valid cluster)");
  using detail::coll::lg10;
  using detail::coll::lg2;
  using detail::coll::share;
  collective_estimate e;
  e.topology = costed_topology(f, c);
  e.analytical = collective_time(f, c.op, e.topology, c.bytes);
  fabric no_beta = f, no_alpha = f;
  no_beta.intra.beta = no_beta.inter.beta = no_beta.gamma = 0.0;
  no_alpha.intra.alpha = no_alpha.inter.alpha = 0.0;
  e.latency = collective_time(no_beta, c.op, e.topology, c.bytes);
  e.bandwidth = collective_time(no_alpha, c.op, e.topology, c.bytes);
  const double ring = collective_time(f, c.op, topology_kind::ring, c.bytes);
  const double alt = collective_time(f, c.op, logarithmic_topology(c.op), c.bytes);
  const double bound = lower_bound(f, c.bytes) * (c.op == collective_op::all_reduce ? 1.0 : 0.5);
  std::size_t i = 0;
  auto put = [&](double v) { e.row[i++] = static_cast<float>(v); };
  put(lg2(c.bytes));
  put(lg2(c.bytes / f.p));
  put(std::log2(static_cast<double>(f.p)));
  put(std::log2(static_cast<double>(f.nodes)));
  put(f.g);
  put(lg10(e.analytical));
  put(share(e.latency, e.analytical));
  put(share(e.bandwidth, e.analytical));
  put(lg10(inverse(f.intra.beta)));
  put(lg10(inverse(f.inter.beta)));
  put(lg10(f.intra.alpha));
  put(lg10(f.inter.alpha));
  put(static_cast<double>(c.op));
  put(e.topology == topology_kind::ring ? 0.0 : 1.0);
  put(ring > 0.0 && alt > 0.0 ? std::log10(alt / ring) : 0.0);
  put(share(bound, e.analytical));
  return e;
}

// --- the corrected time ----------------------------------------------------------------------
struct corrected_collective {
  collective_estimate estimate;  // analytical terms and the row
  double log_factor = 0.0;       // the correction's output: log(measured / analytical) predicted
  double time = 0.0;             // estimate.analytical x exp(log_factor)
};

namespace detail::coll {
[[nodiscard]] inline std::string describe(const collective& c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", c.bytes);
  return std::string(name_of(c.op)) + " of " + buf + " B (" + std::string(name_of(c.algorithm)) + ")";
}
inline void check_width(std::size_t n) {
  if (n != collective_feature_count)
    throw error("correction", "the model reads " + std::to_string(n) + " features, cost::collective_features makes " +
                                  std::to_string(collective_feature_count) + " (a model trained on another feature set)");
}
[[nodiscard]] inline corrected_collective apply(collective_estimate e, double log_factor, const collective& c) {
  if (!std::isfinite(log_factor)) throw error("correction", "predicted a non-finite log factor for " + describe(c));
  corrected_collective r;
  r.estimate = std::move(e);
  r.log_factor = log_factor;
  r.time = r.estimate.analytical * std::exp(log_factor);
  return r;
}
}  // namespace detail::coll

// The corrected time of c on f with any cost::Correction. Throws autosync::error("correction")
// when the correction does not read collective_feature_count features or predicts a non-finite
// value, and as collective_features does for a bad collective.
template <class F>
[[nodiscard]] corrected_collective corrected_collective_time(const fabric& f, const collective& c, const F& correction) {
  static_assert(Correction<F>, "cost::corrected_collective_time: the correction type must satisfy cost::Correction "
                               "(float predict(std::span<const float>) const; std::size_t num_features() const)");
  detail::coll::check_width(static_cast<std::size_t>(correction.num_features()));
  auto e = collective_features(f, c);
  const auto y = static_cast<double>(correction.predict(std::span<const float>(e.row)));
  return detail::coll::apply(std::move(e), y, c);
}

// The all-reduce NCCL runs when steered to topology t: ring or tree, the two NCCL all-reduce
// algorithms the model has; other topologies throw autosync::error("topology").
[[nodiscard]] inline collective nccl_all_reduce(const topology_value& t, double bytes) {
  if (t.kind != topology_kind::ring && t.kind != topology_kind::tree)
    throw error("topology", "the collective correction knows NCCL's ring and tree all-reduce, not '" + std::string(name_of(t.kind)) + "'");
  return {collective_op::all_reduce, t.kind == topology_kind::ring ? collective_algorithm::ring : collective_algorithm::tree, bytes};
}

// The opt-in corrected all-reduce of the cost model API (ring or tree, see nccl_all_reduce);
// cost::all_reduce stays the analytical default. Also takes a collective_correction (below).
template <class F>
[[nodiscard]] corrected_collective corrected_all_reduce(const fabric& f, const topology_value& t, double bytes, const F& correction) {
  return corrected_collective_time(f, nccl_all_reduce(t, bytes), correction);
}

// A collective's time, analytical or corrected: copyable, the correction held by value in a
// std::function (the collective counterpart of cost::corrected_evaluator). Without one it is
// the analytical model (factor 1), so callers with an optional correction never branch on it.
class collective_correction {
 public:
  collective_correction() = default;
  template <class F>
  explicit collective_correction(F f) {
    static_assert(Correction<F>, "cost::collective_correction: the correction type must satisfy cost::Correction");
    detail::coll::check_width(static_cast<std::size_t>(f.num_features()));
    predict_ = [g = std::move(f)](std::span<const float> row) { return static_cast<double>(g.predict(row)); };
  }
  [[nodiscard]] bool corrected() const noexcept { return static_cast<bool>(predict_); }

  [[nodiscard]] corrected_collective operator()(const fabric& f, const collective& c) const {
    auto e = collective_features(f, c);
    const double y = predict_ ? predict_(std::span<const float>(e.row)) : 0.0;
    return detail::coll::apply(std::move(e), y, c);
  }

 private:
  std::function<double(std::span<const float>)> predict_;
};

[[nodiscard]] inline corrected_collective corrected_all_reduce(const fabric& f, const topology_value& t, double bytes,
                                                               const collective_correction& correction) {
  return correction(f, nccl_all_reduce(t, bytes));
}

}  // namespace autosync::cost
