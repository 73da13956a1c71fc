// autosync/cost/correction.hpp — what a learned correction is, for every level it corrects.
//
// A correction maps a fixed-width row of features to log(measured / analytical): any type with
// `float predict(std::span<const float>) const` and `std::size_t num_features() const`.
// gbt::forest and gbt::static_forest's wrappers (the embedded defaults), learn::xgb_booster
// while training, or a user's own model all are. Two levels use it:
//
//   strategy    cost/corrected.hpp            row = cost::compute_features (cost/features.hpp)
//   collective  cost/collective_features.hpp  row = cost::collective_features
//
// `embedded_correction<Model>` makes a constexpr forest written by gbt::emit_header (a
// gbt::static_forest) a Correction: cost::default_correction and
// cost::default_collective_correction are the shipped ones.
//
// This header is light on purpose (no cost model): the NCCL tuner plugin and other callers of
// the collective level include it without the strategy estimate.
#pragma once

#include <autosync/error.hpp>

#include <concepts>
#include <cstddef>
#include <span>
#include <string>

namespace autosync::cost {

template <class F>
concept Correction = requires(const F& f, std::span<const float> row) {
  { f.predict(row) } -> std::convertible_to<float>;
  { f.num_features() } -> std::convertible_to<std::size_t>;
};

// A constexpr forest (gbt::static_forest, an `inline constexpr` variable) as a Correction.
// predict() throws autosync::error("correction") on a row of another width.
template <const auto& Model>
struct embedded_correction {
  static constexpr std::size_t width = Model.num_features();
  [[nodiscard]] static constexpr std::size_t num_features() noexcept { return width; }
  [[nodiscard]] static constexpr std::size_t num_trees() noexcept { return Model.num_trees(); }
  [[nodiscard]] float predict(std::span<const float> row) const {
    if (row.size() != width)
      throw error("correction", "the embedded model reads " + std::to_string(width) + " features, got " + std::to_string(row.size()));
    return Model.predict(std::span<const float, width>(row.data(), width));
  }
};

// An embedded forest bounded by the evidence box of its training rows (a gbt::evidence_box, also
// written by `autosync learn --emit-header`): the forest's output clamped to the training
// targets' range and shrunk toward 0 (no correction) as the row leaves the training features'
// ranges. cost::default_correction and cost::default_collective_correction are two.
template <const auto& Model, const auto& Box>
struct bounded_embedded_correction {
  using forest = embedded_correction<Model>;
  [[nodiscard]] static constexpr std::size_t num_features() noexcept { return forest::num_features(); }
  [[nodiscard]] static constexpr std::size_t num_trees() noexcept { return forest::num_trees(); }
  // The forest's own output (unbounded), what XGBoost predicts.
  [[nodiscard]] float predict_unbounded(std::span<const float> row) const { return forest{}.predict(row); }
  // The bounded correction. Throws autosync::error("correction") on a row of another width.
  [[nodiscard]] float predict(std::span<const float> row) const { return Box.bound(predict_unbounded(row), row); }
};

}  // namespace autosync::cost
