// autosync/cost/default_correction.hpp — the embedded learned correction.
//
// include/autosync/gbt/default_model.hpp is a constexpr forest written by gbt::emit_header from
// a model `autosync learn` trained on the measured trial records of tests/data/trials/ (its
// header comment names the files and the command that regenerates it), with the evidence box of
// its training rows (gbt/evidence_box.hpp). `default_correction` makes the two a
// cost::Correction, so zero-trial use already corrects the analytical model: the forest's output
// clamped to the range of the training targets, and shrunk toward 0 (no correction) where a row
// lies outside the training rows' feature ranges (a machine, strategy or size the records do not
// cover):
//
//   const cost::corrected_evaluator ev{cost::default_correction{}};
//   double t = ev(model, cluster, strategy).iteration;   // executor estimate x exp(bounded forest(features))
//
// The analytical model stays the default of cost::estimate (constexpr, law-tested,
// explainable); `search::optimize` re-ranks its best candidates with a correction when one is
// given (`autosync optimize` gives this one on MPI clusters), and `autosync tune` ranks with this
// one until it has trials of its own to fit.
//
// The forest reads exactly cost::feature_count features: a change of the feature set fails to
// compile here until the model is regenerated.
#pragma once

#include <autosync/cost/correction.hpp>
#include <autosync/cost/features.hpp>
#include <autosync/gbt/default_model.hpp>

#include <cstddef>
#include <span>

namespace autosync::cost {

static_assert(gbt::default_model.num_features() == feature_count && gbt::default_model_box.num_features() == feature_count,
              "autosync::cost::default_correction: the embedded model (gbt/default_model.hpp) was trained on another feature "
              "set than cost::compute_features makes: regenerate it with `autosync learn --emit-header`");

using default_correction = bounded_embedded_correction<gbt::default_model, gbt::default_model_box>;

}  // namespace autosync::cost
