// autosync/cost/default_collective_correction.hpp — the embedded collective-level correction.
//
// include/autosync/gbt/default_collective_model.hpp is a constexpr forest written by
// gbt::emit_header from a model `autosync learn --collectives` trained on the real nccl-tests
// logs of tests/data/collectives/ (nccl_cases.json pairs each with its cluster; every machine is
// calibrated from 4 of its own sizes, cost/nccl_calibrate.hpp, and the forest learns what the
// calibrated NCCL model still misses, from machine-relative features), with the evidence box of
// its training rows (gbt/evidence_box.hpp). `default_collective_correction` makes the two a
// cost::Correction over cost::collective_features rows: the forest's output clamped to the
// training residuals' range and shrunk toward 0 (no correction) outside the training features'
// ranges:
//
//   const cost::collective_correction corr{cost::default_collective_correction{}};
//   double t = corr(calibrated_fabric, {cost::collective_op::all_reduce, cost::collective_algorithm::ring, bytes}).time;
//
// What it is worth, leave one machine out (each log's machine never in the training rows; `autosync
// learn --collectives` and tests/unit/learn_collectives.cpp print the table, the header of the
// forest states the figures): it lowers the median over logs of the per-log median relative error
// but raises it over all rows, better on some machines and worse on others. It does not reliably
// help a machine it has not seen, so it is off by default: cost::all_reduce and cost::estimate
// stay analytical, the NCCL tuner plugin uses it only when AUTOSYNC_TUNER_CORRECTION=default.
// Always apply it on the calibrated cluster (`autosync calibrate`): its features are relative to
// the machine's constants.
//
// The forest reads exactly cost::collective_feature_count features: a change of the feature
// set fails to compile here until the model is regenerated.
#pragma once

#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/correction.hpp>
#include <autosync/gbt/default_collective_model.hpp>

#include <cstddef>
#include <span>

namespace autosync::cost {

static_assert(gbt::default_collective_model.num_features() == collective_feature_count &&
                  gbt::default_collective_model_box.num_features() == collective_feature_count,
              "autosync::cost::default_collective_correction: the embedded model (gbt/default_collective_model.hpp) was trained "
              "on another feature set than cost::collective_features makes: regenerate it with `build/bin/autosync learn "
              "--collectives tests/data/collectives/nccl_cases.json --emit-header include/autosync/gbt/default_collective_model.hpp "
              "--name autosync::gbt::default_collective_model`");

using default_collective_correction = bounded_embedded_correction<gbt::default_collective_model, gbt::default_collective_model_box>;

}  // namespace autosync::cost
