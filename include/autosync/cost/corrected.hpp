// autosync/cost/corrected.hpp — the analytical estimate, corrected by a learned model.
//
//   corrected iteration = executor iteration x exp(correction.predict(features.row))
//
// where the executor iteration is max(estimate, cost::serial_replay) (features::executor: what
// the executors run, one bucket at a time) and the correction was trained (learn/) on
// y = log(measured / executor iteration) over trial records, and features.row is cost::compute_features (cost/features.hpp). Any type with
// `float predict(std::span<const float>) const` and `std::size_t num_features() const` is a
// correction (`cost::Correction`, cost/correction.hpp): gbt::forest (the tree evaluator, no
// XGBoost needed at inference), learn::xgb_booster while training, or a user's own model.
//
// The correction is an option: `corrected_evaluator` without one is the analytical model
// (factor 1), so callers that take an optional correction never branch on it.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/correction.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/cost/features.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <span>
#include <string>

namespace autosync::cost {

struct corrected_prediction {
  prediction analytical;     // cost::estimate (with its timeline)
  double executor = 0.0;     // max(analytical.iteration, cost::serial_replay) (without a correction: the estimate)
  double log_factor = 0.0;   // the correction's output: log(measured / executor) predicted
  double iteration = 0.0;    // executor x exp(log_factor)
};

namespace detail {

template <Correction F>
void check_width(const F& f) {
  if (static_cast<std::size_t>(f.num_features()) != feature_count)
    throw error("correction", "the model reads " + std::to_string(static_cast<std::size_t>(f.num_features())) +
                                  " features, cost::compute_features makes " + std::to_string(feature_count) +
                                  " (a model trained on another feature set)");
}

}  // namespace detail

// The corrected estimate of one strategy. Throws autosync::error when the correction does not
// read cost::feature_count features or predicts a non-finite value.
template <class F>
[[nodiscard]] corrected_prediction corrected_estimate(const model_spec& m, const cluster_spec& c, const strategy_desc& s, const F& f) {
  static_assert(Correction<F>, "cost::corrected_estimate: the correction type must satisfy cost::Correction "
                               "(float predict(std::span<const float>) const; std::size_t num_features() const)");
  detail::check_width(f);
  const auto ft = compute_features(m, c, s);
  corrected_prediction r;
  r.analytical = ft.analytical;
  r.executor = ft.executor;
  r.log_factor = static_cast<double>(f.predict(std::span<const float>(ft.row)));
  if (!std::isfinite(r.log_factor)) throw error("correction", "predicted a non-finite log factor for strategy '" + s.name + "'");
  r.iteration = r.executor * std::exp(r.log_factor);
  return r;
}

// The estimate a search or the autotune loop ranks by: analytical, or corrected when a
// correction is set. Copyable; the correction is held by value in a std::function.
class corrected_evaluator {
 public:
  corrected_evaluator() = default;
  template <class F>
  explicit corrected_evaluator(F f) {
    static_assert(Correction<F>, "cost::corrected_evaluator: the correction type must satisfy cost::Correction");
    detail::check_width(f);
    predict_ = [g = std::move(f)](std::span<const float> row) { return static_cast<double>(g.predict(row)); };
  }
  [[nodiscard]] bool corrected() const noexcept { return static_cast<bool>(predict_); }

  [[nodiscard]] corrected_prediction operator()(const model_spec& m, const cluster_spec& c, const strategy_desc& s) const {
    corrected_prediction r;
    if (!predict_) {
      r.analytical = estimate(m, c, s);
      r.executor = r.iteration = r.analytical.iteration;
      return r;
    }
    const auto ft = compute_features(m, c, s);
    r.analytical = ft.analytical;
    r.executor = ft.executor;
    r.log_factor = predict_(std::span<const float>(ft.row));
    if (!std::isfinite(r.log_factor)) throw error("correction", "predicted a non-finite log factor for strategy '" + s.name + "'");
    r.iteration = r.executor * std::exp(r.log_factor);
    return r;
  }

 private:
  std::function<double(std::span<const float>)> predict_;
};

}  // namespace autosync::cost
