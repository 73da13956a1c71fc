// examples/cli/compute_scale.hpp — `--compute-scale X` of optimize and sample: the model's compute
// as `autosync run --compute-scale X` simulates it (learn::scaled_compute), its errors naming the option.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/model.hpp>

#include <string>
#include <utility>

namespace autosync_cli {

[[nodiscard]] inline autosync::model_spec compute_as_run(autosync::model_spec m, const autosync::cluster_spec& c, double x) {
  try {
    return autosync::learn::scaled_compute(std::move(m), c, x);
  } catch (const autosync::error& e) {
    throw autosync::error("--compute-scale", e.message());
  }
}

}  // namespace autosync_cli
