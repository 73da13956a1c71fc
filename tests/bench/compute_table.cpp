// The compute model (cost/compute.hpp) against measured GPUs: predicted vs measured forward and
// backward per row of tests/common/compute_measurements.hpp, before (FLOPs over the cluster
// preset's device_flops, the model without layers) and after (the roofline of the zoo's layers).
// Deterministic: no timing is taken here, the measured figures are recorded ones.
//
//   cmake --build build --target bench_compute_table && build/tests/bench/bench_compute_table
//
// --exported DIR: models exported with their layers (tests/bench/export_heldout.py: DIR/<model>-
// <precision>.json) against DIR/measured.jsonl (tests/bench/compute_measure.py's lines: the
// device's busy time of forward and backward), on the device each line names (H100 or H200):
// the layers as examples/export_pytorch_model.py traced them, against the same files' FLOPs alone.
#include "../common/compute_measurements.hpp"
#include "../common/exported_measurements.hpp"

#include <autosync/cost/compute.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

using namespace autosync;

namespace {

int exported(const std::filesystem::path& dir) {
  std::printf("%-20s %-13s %-12s | %23s | %23s | %19s\n", "model (exported)", "precision", "device", "forward ms pred/meas",
              "backward ms pred/meas", "FLOPs only fwd/bwd");
  std::vector<double> fwd, bwd;
  for (auto& r : test::exported_measurements(dir)) {
    const auto c = cost::compute(r.spec, *r.compute, 0.0);
    r.spec.layers.clear();
    const auto before = cost::compute(r.spec, *r.compute, 0.0);
    const double f = c.forward * 1e3, b = c.backward_total() * 1e3;
    std::printf("%-20s %-13s %-12s | %7.2f / %7.2f (%4.2f) | %7.2f / %7.2f (%4.2f) | %8.3f / %8.3f\n", r.model.c_str(),
                r.precision.c_str(), r.compute == &zoo::hw::h200_sxm ? "H200" : "H100", f, r.forward_ms, f / r.forward_ms, b,
                r.backward_ms, b / r.backward_ms, before.forward * 1e3, before.backward_total() * 1e3);
    fwd.push_back(std::abs(f / r.forward_ms - 1.0));
    bwd.push_back(std::abs(b / r.backward_ms - 1.0));
  }
  auto within = [](const std::vector<double>& v, double bound) {
    return static_cast<int>(std::count_if(v.begin(), v.end(), [&](double x) { return x <= bound; }));
  };
  std::printf("\nexported layers: backward within 25 %% in %d of %zu, forward in %d of %zu\n", within(bwd, 0.25), bwd.size(),
              within(fwd, 0.25), fwd.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--exported") return exported(argv[2]);
  if (argc != 1) {
    std::fprintf(stderr, "usage: bench_compute_table [--exported DIR]\n");
    return 2;
  }
  // the model column: the zoo name, "@<seq>" at another sequence length, "+sdpa" with SDPA attention
  auto label = [](const test::compute_measurement& r) {
    std::string s = r.model;
    if (r.seq > 0) s += "@" + std::to_string(r.seq);
    if (r.sdpa) s += "+sdpa";
    return s;
  };
  std::printf("%-16s %5s %-15s %-13s %-4s | %21s | %21s | %21s\n", "model", "batch", "device", "precision", "nhwc",
              "forward ms pred/meas", "backward ms pred/meas", "before fwd/bwd ms");
  std::vector<double> anchor_bwd, held, device_bwd, device_fwd;
  struct priced {
    const test::compute_measurement* row;
    double f, b;  // predicted forward, backward ms
  };
  std::vector<priced> apart;  // the rows measured apart, with their predictions
  const auto rows = test::compute_measurements();
  for (const auto& r : rows) {
    const auto m = test::model_of(r);
    const auto c = cost::compute(m, r.compute, r.preset_flops);
    const auto before = cost::compute(m, device_compute{}, r.preset_flops);
    const double f = c.forward * 1e3, b = c.backward_total() * 1e3;
    if (r.backward_ms > 0 && r.held_out) apart.push_back(priced{&r, f, b});
    std::printf("%-16s %5lld %-15s %-13s %-4s | ", label(r).c_str(), static_cast<long long>(m.batch_per_device), r.device,
                std::string(name_of(r.prec)).c_str(), r.channels_last ? "yes" : "no");
    if (r.backward_ms > 0) {
      std::printf("%6.2f / %6.2f (%4.2f) | %6.2f / %6.2f (%4.2f) | %6.2f / %6.2f\n", f, r.forward_ms, f / r.forward_ms, b,
                  r.backward_ms, b / r.backward_ms, before.forward * 1e3, before.backward_total() * 1e3);
      (r.held_out ? device_bwd : anchor_bwd).push_back(std::abs(b / r.backward_ms - 1.0));
      if (r.held_out) device_fwd.push_back(std::abs(f / r.forward_ms - 1.0));
    } else {
      std::printf("iteration %7.2f / %7.2f ms (%4.2f)%s | %7.4f / %7.4f   [%s]\n", f + b, r.iteration_ms, (f + b) / r.iteration_ms,
                  r.held_out ? " held-out" : "", before.forward * 1e3, before.backward_total() * 1e3, r.source);
      if (r.held_out) held.push_back(std::abs((f + b) / r.iteration_ms - 1.0));
    }
  }
  auto worst = [](const std::vector<double>& v) {
    double w = 0.0;
    for (double x : v) w = std::max(w, x);
    return w;
  };
  auto within = [](const std::vector<double>& v, double bound) {
    return static_cast<int>(std::count_if(v.begin(), v.end(), [&](double x) { return x <= bound; }));
  };
  std::printf("\nanchor rows: worst backward error %.0f %% (target 25 %%); held-out iterations: worst %.0f %%\n",
              100.0 * worst(anchor_bwd), 100.0 * worst(held));
  std::printf("held-out rows measured apart: backward within 25 %% in %d of %zu (worst %.0f %%), forward in %d of %zu\n",
              within(device_bwd, 0.25), device_bwd.size(), 100.0 * worst(device_bwd), within(device_fwd, 0.25), device_fwd.size());

  // The same model, precision and software on two devices (measured by compute_measure.py on both):
  // how much faster the second device is, measured against predicted. A software stack that runs
  // a model slower than the anchors' cancels out of the ratio; what is left is how the model
  // carries over from one device to another.
  std::printf("\nthe same stack on two devices: %s over %s, time ratio (predicted / measured)\n", "H200-SXM", "H100-SXM5");
  std::printf("%-16s %-13s | %21s | %21s\n", "model", "precision", "forward pred/meas", "backward pred/meas");
  std::vector<double> ratio_err;
  for (const auto& lo : apart) {
    if (std::string(lo.row->device) != "H100-SXM5") continue;
    for (const auto& hi : apart) {
      if (std::string(hi.row->device) != "H200-SXM" || std::string(hi.row->model) != lo.row->model || hi.row->prec != lo.row->prec ||
          hi.row->batch != lo.row->batch || hi.row->channels_last != lo.row->channels_last || hi.row->seq != lo.row->seq ||
          hi.row->sdpa != lo.row->sdpa)
        continue;
      const double pf = hi.f / lo.f, mf = hi.row->forward_ms / lo.row->forward_ms;
      const double pb = hi.b / lo.b, mb = hi.row->backward_ms / lo.row->backward_ms;
      std::printf("%-16s %-13s | %5.3f / %5.3f (%4.2f) | %5.3f / %5.3f (%4.2f)\n", label(*lo.row).c_str(), std::string(name_of(lo.row->prec)).c_str(),
                  pf, mf, pf / mf, pb, mb, pb / mb);
      ratio_err.push_back(std::abs(pb / mb - 1.0));
    }
  }
  if (!ratio_err.empty())
    std::printf("backward ratio: predicted within 10 %% of measured in %d of %zu pairs (worst %.0f %%)\n", within(ratio_err, 0.10),
                ratio_err.size(), 100.0 * worst(ratio_err));
}
