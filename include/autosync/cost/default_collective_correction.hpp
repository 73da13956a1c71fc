// autosync/cost/default_collective_correction.hpp — the embedded collective-level correction.
//
// include/autosync/gbt/default_collective_model.hpp is a constexpr forest written by
// gbt::emit_header from a model `autosync learn --collectives` trained on the real nccl-tests
// logs of tests/data/collectives/ (cases.json pairs each with its cluster; the header comment
// names the logs and the command that regenerates it). `default_collective_correction` makes it
// a cost::Correction over cost::collective_features rows:
//
//   const cost::collective_correction corr{cost::default_collective_correction{}};
//   double t = corr(fabric, {cost::collective_op::all_reduce, cost::collective_algorithm::ring, bytes}).time;
//   auto r = cost::corrected_all_reduce(fabric, topology_value{topology_kind::ring}, bytes,
//                                       cost::default_collective_correction{});
//
// What it is worth (bench_cost_calibration and `autosync learn --collectives` print it): on
// held-out sizes of the machines it was trained on (5-fold over rows) the median relative error
// of an all-reduce drops from 0.21-0.70 per case to 0.03-0.12. On a machine left out of the
// training whole it helps only where the same machine is in the data with the other algorithm
// (H100 2x8 default and RING: 0.56 -> 0.23, 0.70 -> 0.35) and is worse than the analytical
// model where no similar machine is (A100 0.33 -> 0.75, GH200 0.42 -> 0.48). So it is opt-in
// everywhere: cost::all_reduce and cost::estimate stay analytical, the NCCL tuner plugin uses it
// when AUTOSYNC_TUNER_CORRECTION=default (on a machine like the logs' ones).
//
// The forest reads exactly cost::collective_feature_count features: a change of the feature
// set fails to compile here until the model is regenerated.
#pragma once

#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/correction.hpp>
#include <autosync/gbt/default_collective_model.hpp>

namespace autosync::cost {

static_assert(gbt::default_collective_model.num_features() == collective_feature_count,
              "autosync::cost::default_collective_correction: the embedded model (gbt/default_collective_model.hpp) was trained "
              "on another feature set than cost::collective_features makes: regenerate it with `build/bin/autosync learn "
              "--collectives tests/data/collectives/cases.json --emit-header include/autosync/gbt/default_collective_model.hpp "
              "--name autosync::gbt::default_collective_model`");

using default_collective_correction = embedded_correction<gbt::default_collective_model>;

}  // namespace autosync::cost
