// autosync/learn/train.hpp — samples in, a correction out.
//
//   fit_correction(samples, params)   XGBoost on (row, log(measured / analytical)); the
//                                     result ranks through cost::corrected_evaluator
//   train_bounded_booster(samples)    the same booster with the evidence box of its training
//                                     rows (gbt/evidence_box.hpp): what `autosync learn` ships
//   default_trainer(params)           the same as a learn::trainer for learn::autotune
//   fit_linear(samples)               the AutoSync baseline (learn/linear.hpp) on the same rows
//   rank_held_out(train, test, params) the analytical, corrected and linear models' ranking
//                                     of strategies held out of the fit (learn/metrics.hpp)
//
// Without XGBoost (the optional autosync::xgboost component) fit_correction does not exist and
// default_trainer returns an empty trainer: autotune then ranks analytically, and a model
// trained elsewhere (gbt::forest, the embedded default) still corrects.
#pragma once

#include <autosync/cost/corrected.hpp>
#include <autosync/cost/features.hpp>
#include <autosync/learn/autotune.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/linear.hpp>
#include <autosync/learn/matrix.hpp>
#include <autosync/learn/metrics.hpp>
#include <autosync/learn/xgboost.hpp>

#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace autosync::learn {

[[nodiscard]] inline linear_model fit_linear(std::span<const sample> ss) {
  std::vector<cost::autosync_row> x;
  std::vector<double> y;
  for (const auto& s : ss) {
    x.push_back(s.autosync);
    y.push_back(s.measured);
  }
  return linear_model::fit(x, y);
}

#if defined(AUTOSYNC_HAS_XGBOOST)

[[nodiscard]] inline xgb_booster train_booster(std::span<const sample> ss, const xgb_params& p = {}) {
  const auto x = feature_matrix(ss);
  const auto y = targets(ss);
  return xgb_booster::train(x, ss.size(), cost::feature_count, y, p);
}

// Where a strategy-level correction trained on `ss` has evidence: its rows' feature ranges and
// its targets' range (gbt/evidence_box.hpp).
[[nodiscard]] inline gbt::evidence_box<cost::feature_count> strategy_evidence(std::span<const sample> ss) {
  return gbt::evidence_box<cost::feature_count>::of(feature_matrix(ss), targets(ss));
}

// A booster bounded by its training rows' evidence box (learn/xgboost.hpp): what `autosync
// learn --emit-header` ships (cost::default_correction) and what bench_learn_eval judges held
// out by machine.
using bounded_booster = bounded_xgb_booster<cost::feature_count>;
[[nodiscard]] inline bounded_booster train_bounded_booster(std::span<const sample> ss, const xgb_params& p = {}) {
  return {train_booster(ss, p), strategy_evidence(ss)};
}

// A copyable handle on a trained booster (cost::Correction).
struct shared_booster {
  std::shared_ptr<const xgb_booster> b;
  [[nodiscard]] float predict(std::span<const float> row) const { return b->predict(row); }
  [[nodiscard]] std::size_t num_features() const noexcept { return b->num_features(); }
};

[[nodiscard]] inline cost::corrected_evaluator fit_correction(std::span<const sample> ss, const xgb_params& p = {}) {
  return cost::corrected_evaluator(shared_booster{std::make_shared<const xgb_booster>(train_booster(ss, p))});
}

[[nodiscard]] inline trainer default_trainer(xgb_params p = {}) {
  return [p](std::span<const sample> ss) { return fit_correction(ss, p); };
}

// How three predictors rank strategies they were not fitted on: the analytical model, the
// analytical model corrected by a booster trained on `train` (bounded by its evidence box), and the linear model on
// AutoSync's 12 features fitted on `train` — each judged on `test` (learn/metrics.hpp).
struct holdout_rankings {
  ranking analytical, corrected, linear;
};
[[nodiscard]] inline holdout_rankings rank_held_out(std::span<const sample> train, std::span<const sample> test, const xgb_params& p = {}) {
  const auto b = train_bounded_booster(train, p);  // bounded, as it ships
  const auto lin = fit_linear(train);
  std::vector<double> meas, ana, cor, linp;
  std::vector<std::string> groups;
  for (const auto& s : test) {
    meas.push_back(s.measured);
    ana.push_back(s.analytical);
    cor.push_back(s.analytical * std::exp(static_cast<double>(b.predict(s.row))));
    linp.push_back(lin.predict(s.autosync));
    groups.push_back(s.group);
  }
  return {ranking_of(ana, meas, groups), ranking_of(cor, meas, groups), ranking_of(linp, meas, groups)};
}

#else

[[nodiscard]] inline trainer default_trainer() { return {}; }

#endif

}  // namespace autosync::learn
