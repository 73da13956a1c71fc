// Prints, for every nccl-tests log in tests/data/collectives/, the measured all-reduce time per
// size next to the analytical model's (cost::analytical_time on a fabric built from the log's HW
// line; the cases are tests/data/collectives/cases.json, their bounds
// tests/unit/cost_calibration_cases.hpp), and the median relative error per file:
//   raw     |model - measured| / measured with the data-sheet constants as they are
//   shape   the same after one scale factor per file (the median of measured/model): what is
//           left when only the size dependence of the alpha-beta form is judged — the part a
//           learned correction cannot fix with a constant.
// With XGBoost (autosync::xgboost) it then prints the collective-level learned correction
// (learn/collectives.hpp) judged on held-out rows, per case, side by side:
//   analytical       the raw median above
//   case left out    corrected by a model trained on the other cases only (an unseen machine or
//                    algorithm)
//   5-fold           corrected by a model trained on the other four fifths of the rows (unseen
//                    sizes of seen machines)
// and the embedded default (gbt/default_collective_model.hpp) on all rows, which it was trained
// on (an in-sample figure, for reference only).
// Usage: bench_cost_calibration [manifest]   (default: the source tree's tests/data/collectives/cases.json)
#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/default_collective_correction.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/nccl_tests_log.hpp>
#include <autosync/learn/collectives.hpp>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

#include "../unit/cost_calibration_cases.hpp"

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  using namespace autosync;
  const std::string path = argc > 1 ? argv[1] : calibration::manifest_path();
  const auto m = learn::load_collective_cases(path);
  const auto rows = learn::load_collective_samples(m);
  std::printf("# analytical all-reduce model vs real nccl-tests logs (out-of-place time)\n");
  std::printf("%-40s %14s %12s %12s %8s\n", "case", "bytes", "measured_us", "model_us", "rel_err");
  struct summary { std::size_t n = 0; std::vector<double> err, ratio, pred, meas; };
  std::vector<summary> sums(m.cases.size());
  for (const auto& r : rows) {
    auto& s = sums[r.case_index];
    ++s.n;
    s.err.push_back(std::abs(r.analytical - r.measured) / r.measured);
    s.ratio.push_back(r.measured / r.analytical);
    s.pred.push_back(r.analytical);
    s.meas.push_back(r.measured);
    std::printf("%-40s %14.0f %12.1f %12.1f %8.3f\n", m.cases[r.case_index].label.c_str(), r.what.bytes, r.measured * 1e6,
                r.analytical * 1e6, s.err.back());
  }
  std::printf("\n# median relative error per file\n%-40s %5s %10s %12s %12s\n", "case", "rows", "raw", "scale", "shape");
  for (std::size_t c = 0; c < sums.size(); ++c) {
    const auto& s = sums[c];
    const double k = learn::median(s.ratio);
    std::vector<double> shape;
    for (std::size_t i = 0; i < s.pred.size(); ++i) shape.push_back(std::abs(k * s.pred[i] - s.meas[i]) / s.meas[i]);
    std::printf("%-40s %5zu %10.3f %12.3f %12.3f\n", m.cases[c].label.c_str(), s.n, learn::median(s.err), k, learn::median(shape));
  }

  // the embedded default, in sample
  std::vector<double> embedded;
  for (const auto& r : rows) embedded.push_back(static_cast<double>(cost::default_collective_correction{}.predict(r.row)));
  auto in_sample = learn::median_errors(m, rows, embedded);
#if defined(AUTOSYNC_HAS_XGBOOST)
  const auto p = learn::collective_xgb_params();
  const auto y_loco = learn::leave_one_case_out(rows, p), y_kf = learn::k_fold(rows, 5, p);
  auto loco = learn::median_errors(m, rows, y_loco), kf = learn::median_errors(m, rows, y_kf);
  loco.push_back(learn::overall_errors(rows, y_loco));
  kf.push_back(learn::overall_errors(rows, y_kf));
  in_sample.push_back(learn::overall_errors(rows, embedded));
  std::printf("\n# collective correction (XGBoost, %d rounds, depth %d, eta %.2f): median relative error on held-out rows\n", p.rounds,
              p.max_depth, p.eta);
  std::printf("%-40s %5s %11s %14s %8s %21s\n", "case", "rows", "analytical", "case left out", "5-fold", "embedded (in-sample)");
  for (std::size_t c = 0; c < loco.size(); ++c)
    std::printf("%-40s %5zu %11.3f %14.3f %8.3f %21.3f\n", loco[c].label.c_str(), loco[c].rows, loco[c].analytical, loco[c].corrected,
                kf[c].corrected, in_sample[c].corrected);
#else
  std::printf("\n# collective correction: held-out figures need XGBoost (cmake/setup-deps.sh --xgboost); the embedded default,\n"
              "# in sample (it was trained on these rows):\n%-40s %5s %11s %21s\n", "case", "rows", "analytical", "embedded (in-sample)");
  in_sample.push_back(learn::overall_errors(rows, embedded));
  for (const auto& e : in_sample) std::printf("%-40s %5zu %11.3f %21.3f\n", e.label.c_str(), e.rows, e.analytical, e.corrected);
#endif
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_cost_calibration: %s\n", e.what());
  return 1;
}
