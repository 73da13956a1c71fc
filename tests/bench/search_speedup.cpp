// The search, measured: wall time of a full `optimize` on gpt2-xl (580 tensors) over 16 x 8
// GPUs against the 2 s target, and the predicted speedup of the found strategy over the best
// baseline for every zoo model on three presets. Prints tables; passes or fails nothing.
#include <autosync/search/optimizer.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <chrono>
#include <cstdio>
#include <string>

using namespace autosync;

int main() {
  {
    const auto m = zoo::make_model("gpt2-xl");
    std::printf("search wall time (default options, seed 1)\n");
    std::printf("  %-12s %-16s %8s %12s %10s %8s\n", "model", "cluster", "tensors", "evaluated", "seconds", "target");
    for (const char* cn : {"dgx-a100-x16", "dgx-h100-x16"}) {
      const auto c = zoo::make_cluster(cn);
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = search::optimize(m, c);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  %-12s %-16s %8zu %12zu %10.3f %8.1f   ratio %.2f\n", m.name.c_str(), cn, m.tensors.size(), r.evaluated, s, 2.0,
                  s / 2.0);
    }
  }
  std::printf("\npredicted iteration time: best baseline vs autosync (lossless search, seed 1)\n");
  std::printf("  %-12s %-16s %-26s %12s %12s %8s\n", "model", "cluster", "best baseline", "baseline ms", "autosync ms", "speedup");
  for (const char* cn : {"autosync-b", "p3.16xlarge-x4", "dgx-a100-x4"}) {
    const auto c = zoo::make_cluster(cn);
    for (auto mn : zoo::model_names()) {
      const auto m = zoo::make_model(mn);
      const auto r = search::optimize(m, c);
      double best = 1e300;
      std::string best_name;
      for (const auto& b : r.baselines)
        if (b.prediction.iteration < best) {
          best = b.prediction.iteration;
          best_name = b.name;
        }
      std::printf("  %-12s %-16s %-26s %12.2f %12.2f %7.2fx\n", std::string(mn).c_str(), cn, best_name.c_str(), best * 1e3,
                  r.prediction.iteration * 1e3, best / r.prediction.iteration);
    }
  }
}
