// autosync/cost/collective_features.hpp — one collective as NCCL runs it, what a learned
// correction sees of it, and the corrected time.
//
// The strategy-level correction (cost/features.hpp, cost/corrected.hpp) learns the error of a
// whole iteration. This is the same idea one level down: the error of one collective of the
// model (cost::analytical_time: the NCCL model of cost/nccl_model.hpp on an NCCL fabric, the
// alpha-beta-gamma forms of cost/collectives.hpp on an MPI one) against measured nccl-tests rows
// (tests/data/collectives/, learn/collectives.hpp reads them and trains):
//
//     y = log(measured / model)          corrected = model x exp(correction(row))
//
// where the model runs on the machine's calibrated cluster (cost/nccl_calibrate.hpp: a few of
// its measured sizes fit its bandwidth, latency and message overhead), so the correction learns
// only the shape the calibrated model misses, in the machine's own terms.
//
// A collective is an operation, the algorithm NCCL ran and a size:
//
//   operation   all_reduce | reduce_scatter | all_gather
//   algorithm   ring          NCCL_ALGO=RING (NCCL still picks the protocol)
//               tree          NCCL_ALGO=TREE, all_reduce only (double binary tree)
//               pat           NCCL_ALGO=PAT, reduce_scatter / all_gather only
//               nccl_default  NCCL's own selection (nccl::select on an NCCL fabric; the faster of
//                             the op's two algorithms on an alpha-beta-gamma fabric)
//   bytes       the whole vector (nccl-tests' "size" column)
//
// The row (`collective_feature_names`, documented at `collective_features`) holds no absolute
// bandwidth, latency or time: sizes over the machine's bandwidth-delay product, shares of the
// latency floor and of the bandwidth bound in the modelled time, the algorithm and protocol the
// model expects NCCL to pick, ranks and nodes, and ratios of the machine's own constants.
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

// The model's time of NCCL's `op` over `n` bytes with flat topology `k` on f. On an
// alpha-beta-gamma fabric, NCCL's tree is fabric.hpp's nccl_tree_all_reduce, not the MPI
// executor's tree that cost::all_reduce prices (ring and halving-doubling are the same formulas).
[[nodiscard]] constexpr double collective_time(const fabric& f, collective_op op, topology_kind k, double n) noexcept {
  const topology_value t{k};
  switch (op) {
    case collective_op::reduce_scatter: return reduce_scatter(f, t, n);
    case collective_op::all_gather: return all_gather(f, t, n);
    case collective_op::all_reduce: break;
  }
  if (k == topology_kind::tree && !f.nccl) return nccl_tree_all_reduce(f, n);
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
  return nccl::select(f.world_select, op, c.bytes, allowed);
}

// The analytical time of c on f (seconds): the NCCL model on an NCCL fabric, the alpha-beta-gamma
// form of the costed topology on an MPI one.
[[nodiscard]] constexpr double analytical_time(const fabric& f, const collective& c) noexcept {
  if (f.nccl) return f.p <= 1 ? 0.0 : nccl_choice(f, c).time;
  return collective_time(f, c.op, costed_topology(f, c), c.bytes);
}

// --- the feature row -------------------------------------------------------------------------
// Every feature is relative to the machine's own constants (no bandwidth, latency or second in
// absolute units), so a correction learned on some machines reads a new machine's row in the
// same terms once its constants are calibrated (cost/nccl_calibrate.hpp).
inline constexpr std::array<std::string_view, 12> collective_feature_names{
    "log2_size_over_bdp", "latency_share", "bound_share",   "log2_ranks",    "log2_nodes",           "ranks_per_node",
    "operation",          "algorithm",     "protocol",      "channel_share", "log2_intra_over_net", "log2_ring_over_model"};
inline constexpr std::size_t collective_feature_count = collective_feature_names.size();

using collective_row = std::array<float, collective_feature_count>;

struct collective_estimate {
  double analytical = 0.0;   // seconds: cost::analytical_time (the NCCL model on an NCCL fabric)
  double floor = 0.0;        // seconds: the same collective of floor_bytes (the latency floor)
  double bound = 0.0;        // seconds: the bandwidth-only bound of the size (no latency, every channel)
  topology_kind topology = topology_kind::ring;  // alpha-beta-gamma fabrics: what was costed
  nccl::choice choice{};     // NCCL fabrics: the algorithm and protocol the model expects NCCL to run
  collective_row row{};      // the correction's input
};

// The size whose time is the latency floor of a collective (nccl-tests' smallest all-reduce).
inline constexpr double floor_bytes = 8.0;

namespace detail::coll {
[[nodiscard]] inline float lg2(double v) noexcept { return static_cast<float>(std::log2(std::max(v, 1e-30))); }
[[nodiscard]] inline double share(double part, double whole) noexcept { return whole > 0.0 ? part / whole : 0.0; }
[[nodiscard]] constexpr nccl::operation nccl_op(collective_op op) noexcept {
  return op == collective_op::all_reduce ? nccl::operation::all_reduce : op == collective_op::reduce_scatter ? nccl::operation::reduce_scatter
                                                                                                             : nccl::operation::all_gather;
}
}  // namespace detail::coll

// The model's terms and the row of c on f (pass the calibrated cluster's fabric: the row is
// relative to its constants):
//
//   log2_size_over_bdp    bytes over the machine's bandwidth-delay product (the bandwidth bound's
//                         rate x the latency floor): < 0 latency-bound, > 0 bandwidth-bound
//   latency_share         floor / time          bound_share    bandwidth bound / time
//   log2_ranks, log2_nodes, ranks_per_node
//   operation             0 all_reduce, 1 reduce_scatter, 2 all_gather
//   algorithm, protocol   NCCL's algorithm (nccl::algorithm: 0 tree, 1 ring, ... 6 pat) and
//                         protocol (0 LL, 1 LL128, 2 Simple) the model expects NCCL to run; on an
//                         alpha-beta-gamma fabric the costed topology (tree 0, ring 1, halving-
//                         doubling 6) and 2
//   channel_share         channels NCCL runs this size on over the communicator's (1 off NCCL)
//   log2_intra_over_net   a node's GPU links together over its NICs together (0 on one node)
//   log2_ring_over_model  the ring's time over the model's (how much NCCL's pick beats the ring)
//
// Throws autosync::error as validate(c) does, and "fabric" for a fabric without ranks.
[[nodiscard]] inline collective_estimate collective_features(const fabric& f, const collective& c) {
  validate(c);
  if (f.p < 1 || f.nodes < 1 || f.g < 1) throw error("fabric", "has no ranks (cost::make_fabric of a valid cluster)");
  using detail::coll::lg2;
  using detail::coll::share;
  collective_estimate e;
  const collective tiny{c.op, c.algorithm, std::min(floor_bytes, c.bytes)};
  const collective ring{c.op, collective_algorithm::ring, c.bytes};
  double ring_time = 0.0, alg_index = 1.0, proto_index = 2.0, channel_share = 1.0, intra_over_net = 0.0;
  if (f.nccl) {
    const auto op = detail::coll::nccl_op(c.op);
    e.choice = f.p <= 1 ? nccl::choice{} : nccl_choice(f, c);
    e.analytical = e.choice.time;
    e.floor = analytical_time(f, tiny);
    e.bound = nccl::bound(f.world(), op, c.bytes);
    ring_time = analytical_time(f, ring);
    alg_index = static_cast<double>(e.choice.algo);
    proto_index = static_cast<double>(e.choice.proto);
    if (f.world().channels > 0 && f.p > 1)
      channel_share = static_cast<double>(nccl::channels_for(f.world(), e.choice.algo, e.choice.proto, c.bytes)) / f.world().channels;
    if (f.nodes > 1 && f.world().bw_net > 0.0) intra_over_net = std::log2(f.world().g * f.world().bw_intra / f.world().bw_net);
    if (f.nodes > 1 && f.world().g <= 1) intra_over_net = 0.0;
  } else {
    e.topology = costed_topology(f, c);
    e.analytical = collective_time(f, c.op, e.topology, c.bytes);
    e.floor = collective_time(f, c.op, e.topology, tiny.bytes);
    e.bound = lower_bound(f, c.bytes) * (c.op == collective_op::all_reduce ? 1.0 : 0.5);
    ring_time = collective_time(f, c.op, topology_kind::ring, c.bytes);
    alg_index = e.topology == topology_kind::ring ? 1.0 : e.topology == topology_kind::tree ? 0.0 : 6.0;
    if (f.nodes > 1 && f.g > 1 && f.intra.beta > 0.0 && f.inter.beta > 0.0) intra_over_net = std::log2(f.g * f.inter.beta / f.intra.beta);
  }
  // the machine's bandwidth-delay product: the bound's rate (bytes per second) x the floor
  const double rate = e.bound > 0.0 ? c.bytes / e.bound : 0.0;
  const double bdp = rate * e.floor;
  std::size_t i = 0;
  auto put = [&](double v) { e.row[i++] = static_cast<float>(v); };
  put(bdp > 0.0 && c.bytes > 0.0 ? std::log2(c.bytes / bdp) : -30.0);
  put(share(e.floor, e.analytical));
  put(share(e.bound, e.analytical));
  put(std::log2(static_cast<double>(f.p)));
  put(std::log2(static_cast<double>(f.nodes)));
  put(f.g);
  put(static_cast<double>(c.op));
  put(alg_index);
  put(proto_index);
  put(channel_share);
  put(intra_over_net);
  put(ring_time > 0.0 && e.analytical > 0.0 ? lg2(ring_time / e.analytical) : 0.0f);
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
