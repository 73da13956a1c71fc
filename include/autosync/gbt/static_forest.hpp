// autosync/gbt/static_forest.hpp — the evaluation rules of a gradient-boosted forest, shared by
// the runtime `gbt::forest` and the `constexpr` forests that `gbt::emit_header` writes.
//
// A forest is flat (structure of arrays). Internal nodes are numbered 0..N-1 over all trees; a
// reference to a node is an int32: n >= 0 is internal node n, n < 0 is leaf ~n. Node n's two
// children are children[2n] (left) and children[2n + 1] (right), so a step is one load indexed by
// the comparison. A row goes left when
//
//     value is missing ? default_left : value < threshold
//
// where "missing" is NaN, or, for a node flagged zero_is_missing (LightGBM's missing type Zero),
// also -1e-35 <= value <= 1e-35 (IsZero of LightGBM 4; 3.x left out -1e-35 itself). This is XGBoost's rule; the LightGBM loader rewrites LightGBM's
// `value <= threshold` (in double) into it exactly (see lightgbm.hpp).
//
// Accumulation follows the library the model came from: XGBoost adds tree outputs to the base
// margin in float, tree by tree; LightGBM adds in double. The output transform maps the margin to
// the prediction: identity; sigmoid, 1 / (1 + exp(-scale·margin)) (XGBoost evaluates it in float
// with the exponent capped at 88.7, LightGBM in double); or exp (XGBoost's count:poisson,
// reg:gamma, reg:tweedie; LightGBM's poisson, gamma, tweedie).
//
// Everything here is constexpr. At compile time exp() is evaluated by detail::constexpr_exp (a
// double-precision series, within 1 ulp of the true value), so a transformed prediction in a
// static_assert may differ from the run-time one in the last bit; margins are bit-exact.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

namespace autosync::gbt {

enum class output_transform : std::uint8_t { identity, sigmoid, exp };
enum class accumulation : std::uint8_t { f32, f64 };

namespace node_flag {
inline constexpr std::uint8_t default_left = 1;     // a missing value goes left
inline constexpr std::uint8_t zero_is_missing = 2;  // -zero_threshold <= value <= zero_threshold is missing too
}  // namespace node_flag

// LightGBM's kZeroThreshold.
inline constexpr float zero_threshold = 1e-35f;

namespace detail {

constexpr bool is_nan(float x) noexcept { return x != x; }

constexpr bool goes_left(float x, float threshold, std::uint8_t flags) noexcept {
  const bool missing = is_nan(x) || ((flags & node_flag::zero_is_missing) != 0 && x >= -zero_threshold && x <= zero_threshold);
  return missing ? (flags & node_flag::default_left) != 0 : x < threshold;
}

// exp for constant evaluation: x = k·ln2 + r with |r| <= ln2/2, a Taylor series for exp(r), then
// scaling by 2^k. Within about 1 ulp of the true value in double.
constexpr double constexpr_exp(double x) noexcept {
  if (x != x) return x;
  if (x > 709.8) return std::numeric_limits<double>::infinity();
  if (x < -745.2) return 0.0;
  constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  const double kf = x / (ln2_hi + ln2_lo);
  const auto k = static_cast<long long>(kf < 0 ? kf - 0.5 : kf + 0.5);
  const double r = (x - static_cast<double>(k) * ln2_hi) - static_cast<double>(k) * ln2_lo;
  double term = 1.0, sum = 1.0;
  for (int i = 1; i < 30; ++i) {
    term *= r / i;
    sum += term;
  }
  double scale = 1.0;
  if (k > 0) {
    for (long long i = 0; i < k; ++i) scale *= 2.0;
    return sum * scale;
  }
  // Scale down in two steps so that results near the subnormal range keep their precision.
  for (long long i = 0; i < -k / 2; ++i) scale *= 0.5;
  double rest = 1.0;
  for (long long i = 0; i < -k - (-k / 2); ++i) rest *= 0.5;
  return sum * scale * rest;
}

inline constexpr float exp_f(float x) noexcept {
  if (std::is_constant_evaluated()) return static_cast<float>(constexpr_exp(x));
  return std::exp(x);  // expf: what XGBoost calls
}
inline constexpr double exp_d(double x) noexcept {
  if (std::is_constant_evaluated()) return constexpr_exp(x);
  return std::exp(x);
}

// The prediction from a margin. For f32 forests the margin is a float value.
constexpr float transform(output_transform t, accumulation a, double margin, double sigmoid_scale) noexcept {
  if (a == accumulation::f32) {
    const auto m = static_cast<float>(margin);
    switch (t) {
      case output_transform::identity: return m;
      case output_transform::sigmoid: {
        // XGBoost's common::Sigmoid: the exponent is capped at 88.7 (expf stays finite, so very
        // negative margins give a tiny positive value, not 0), then 1 / (e + 1 + 1e-16).
        const float e = -m < 88.7f ? -m : 88.7f;
        return 1.0f / (exp_f(e) + 1.0f + 1e-16f);
      }
      case output_transform::exp: return exp_f(m);
    }
    return m;
  }
  switch (t) {
    case output_transform::identity: return static_cast<float>(margin);
    case output_transform::sigmoid: return static_cast<float>(1.0 / (1.0 + exp_d(-sigmoid_scale * margin)));
    case output_transform::exp: return static_cast<float>(exp_d(margin));
  }
  return static_cast<float>(margin);
}

// A borrowed view of the flat arrays; both forest kinds evaluate through it.
struct forest_view {
  std::span<const std::int32_t> roots;     // per tree: a node reference (see above)
  std::span<const std::uint32_t> feature;  // per internal node
  std::span<const float> threshold;        // per internal node
  std::span<const std::int32_t> children;  // 2 per internal node
  std::span<const std::uint8_t> flags;     // per internal node
  std::span<const double> leaf_value;      // per leaf
  double base_margin = 0.0;
  accumulation acc = accumulation::f32;

  // The leaf a row reaches from node reference `n`.
  constexpr std::size_t leaf(std::int32_t n, const float* row) const noexcept {
    while (n >= 0) {
      const auto u = static_cast<std::size_t>(n);
      n = children[2 * u + (goes_left(row[feature[u]], threshold[u], flags[u]) ? 0u : 1u)];
    }
    return static_cast<std::size_t>(~n);
  }

  // The margin of one row: base margin plus every tree's leaf, in tree order, in the forest's
  // accumulation type.
  constexpr double margin(const float* row) const noexcept {
    if (acc == accumulation::f32) {
      auto sum = static_cast<float>(base_margin);
      for (const std::int32_t r : roots) sum += static_cast<float>(leaf_value[leaf(r, row)]);
      return sum;
    }
    double sum = base_margin;
    for (const std::int32_t r : roots) sum += leaf_value[leaf(r, row)];
    return sum;
  }
};

}  // namespace detail

// A forest whose arrays are compile-time constants: what gbt::emit_header writes. Aggregate, so an
// emitted header initializes it with designated initializers; every member function is constexpr.
template <std::size_t Features, std::size_t Trees, std::size_t Nodes, std::size_t Leaves>
struct static_forest {
  static_assert(Trees > 0, "autosync::gbt::static_forest: a forest needs at least one tree");
  static_assert(Leaves >= Trees, "autosync::gbt::static_forest: every tree needs at least one leaf");

  std::array<std::int32_t, Trees> roots{};
  std::array<std::uint32_t, Nodes> feature{};
  std::array<float, Nodes> threshold{};
  std::array<std::int32_t, 2 * Nodes> children{};
  std::array<std::uint8_t, Nodes> flags{};
  std::array<double, Leaves> leaf_value{};
  double base_margin = 0.0;
  output_transform transform = output_transform::identity;
  accumulation acc = accumulation::f32;
  double sigmoid_scale = 1.0;

  static constexpr std::size_t num_features() noexcept { return Features; }
  static constexpr std::size_t num_trees() noexcept { return Trees; }

  constexpr detail::forest_view view() const noexcept {
    return {roots, feature, threshold, children, flags, leaf_value, base_margin, acc};
  }
  // The margin (before the output transform) and the prediction of one row of Features values.
  constexpr float predict_margin(std::span<const float, Features> row) const noexcept {
    return static_cast<float>(view().margin(row.data()));
  }
  constexpr float predict(std::span<const float, Features> row) const noexcept {
    return detail::transform(transform, acc, view().margin(row.data()), sigmoid_scale);
  }
  constexpr float predict_margin(const std::array<float, Features>& row) const noexcept {
    return predict_margin(std::span<const float, Features>(row));
  }
  constexpr float predict(const std::array<float, Features>& row) const noexcept {
    return predict(std::span<const float, Features>(row));
  }
};

}  // namespace autosync::gbt
