// Prints, for every nccl-tests log in tests/data/collectives/, the measured all-reduce time per
// size next to the analytical model's (cost::all_reduce on a fabric built from the log's HW
// line, tests/unit/cost_calibration_cases.hpp), and the median relative error per file:
//   raw     |model - measured| / measured with the data-sheet constants as they are
//   shape   the same after one scale factor per file (the median of measured/model): what is
//           left when only the size dependence of the alpha-beta form is judged — the part a
//           learned correction cannot fix with a constant.
// Usage: bench_cost_calibration [data-dir]   (default: the source tree's tests/data/collectives)
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/nccl_tests_log.hpp>

#include "../unit/cost_calibration_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace autosync;
  const std::string dir = argc > 1 ? argv[1] : std::string(AUTOSYNC_SOURCE_DIR) + "/tests/data/collectives";
  std::printf("# analytical all-reduce model vs real nccl-tests logs (out-of-place time)\n");
  std::printf("%-40s %14s %12s %12s %8s\n", "case", "bytes", "measured_us", "model_us", "rel_err");
  struct summary { std::string label; std::size_t n; double raw, shape, scale; };
  std::vector<summary> sums;
  for (const auto& c : calibration::cases()) {
    const auto log = cost::nccl_tests::load(dir + "/" + std::string(c.file));
    const cost::nccl_tests::section* sec = nullptr;
    for (const auto& s : log.sections)
      if (c.section.empty() || s.title.starts_with(c.section)) { sec = &s; break; }
    if (!sec) { std::fprintf(stderr, "%s: no section '%s'\n", std::string(c.file).c_str(), std::string(c.section).c_str()); return 1; }
    const auto f = cost::make_fabric(c.cluster);
    std::vector<double> err, ratio, pred, meas;
    for (const auto& r : sec->rows) {
      const double m = r.seconds(), p = calibration::predict(c, f, static_cast<double>(r.bytes));
      pred.push_back(p);
      meas.push_back(m);
      err.push_back(std::abs(p - m) / m);
      ratio.push_back(m / p);
      std::printf("%-40s %14lld %12.1f %12.1f %8.3f\n", std::string(c.label).c_str(), static_cast<long long>(r.bytes), m * 1e6, p * 1e6,
                  err.back());
    }
    const double k = median(ratio);
    std::vector<double> shape;
    for (std::size_t i = 0; i < pred.size(); ++i) shape.push_back(std::abs(k * pred[i] - meas[i]) / meas[i]);
    sums.push_back({std::string(c.label), sec->rows.size(), median(err), median(shape), k});
  }
  std::printf("\n# median relative error per file\n%-40s %5s %10s %12s %12s\n", "case", "rows", "raw", "scale", "shape");
  for (const auto& s : sums) std::printf("%-40s %5zu %10.3f %12.3f %12.3f\n", s.label.c_str(), s.n, s.raw, s.scale, s.shape);
  return 0;
}
