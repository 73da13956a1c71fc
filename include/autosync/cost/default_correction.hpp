// autosync/cost/default_correction.hpp — the embedded learned correction.
//
// include/autosync/gbt/default_model.hpp is a constexpr forest written by gbt::emit_header from
// a model `autosync learn` trained on the measured trial records of tests/data/trials/ (its
// header comment names the files and the command that regenerates it). `default_correction`
// makes it a cost::Correction, so zero-trial use already corrects the analytical model:
//
//   const cost::corrected_evaluator ev{cost::default_correction{}};
//   double t = ev(model, cluster, strategy).iteration;   // analytical x exp(forest(features))
//
// The analytical model stays the default of cost::estimate and search::optimize (constexpr,
// law-tested, explainable); the correction is opt-in through corrected_evaluator, and
// `autosync tune` ranks with this one until it has trials of its own to fit.
//
// The forest reads exactly cost::feature_count features: a change of the feature set fails to
// compile here until the model is regenerated.
#pragma once

#include <autosync/cost/correction.hpp>
#include <autosync/cost/features.hpp>
#include <autosync/gbt/default_model.hpp>

namespace autosync::cost {

static_assert(gbt::default_model.num_features() == feature_count,
              "autosync::cost::default_correction: the embedded model (gbt/default_model.hpp) was trained on another feature "
              "set than cost::compute_features makes: regenerate it with `autosync learn --emit-header`");

using default_correction = embedded_correction<gbt::default_model>;

}  // namespace autosync::cost
