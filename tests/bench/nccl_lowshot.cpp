// The NCCL collective model (cost/nccl_model.hpp) against every nccl-tests log of
// tests/data/collectives/nccl_cases.json, and low-shot calibration (cost/nccl_calibrate.hpp) judged
// leave-one-machine-out: the median relative error over all of a log's sizes of
//   alpha-beta   the alpha-beta-gamma forms (the cluster as an MPI-backend one; the old model)
//   sheet        the NCCL model with data-sheet constants, nothing fitted
//   ring         the same with NCCL's algorithm forced to ring (NCCL_ALGO=RING)
//   k=1..5       after fitting the machine's constants from k of its own sizes
// and the median of each column over the logs; then the same fitted to the CLI's default data
// sheet (dgx-h100-x1's node, whatever the machine), with its transport and with --transport auto.
// Deterministic (no timing).
// Usage: bench_nccl_lowshot [manifest]
#include <autosync/cost/nccl_calibrate.hpp>
#include <autosync/zoo/clusters.hpp>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

#include "../unit/nccl_lowshot.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  using namespace autosync;
  const std::string path = argc > 1 ? argv[1] : lowshot::data_dir() + "nccl_cases.json";
  const auto m = learn::load_collective_cases(path);
  std::printf("# median relative error over all sizes of each log; k = measured sizes the machine was fitted from\n");
  std::printf("%-40s %5s %10s %7s %7s", "case", "rows", "alpha-beta", "sheet", "ring");
  for (int k = 1; k <= 5; ++k) std::printf("   k=%d ", k);
  std::printf("\n");
  std::vector<std::vector<double>> cols(8);
  for (const auto& c : m.cases) {
    const auto pts = lowshot::points(c);
    auto ring = c;
    ring.algorithm = cost::collective_algorithm::ring;
    const double v[8] = {lowshot::alpha_beta_error(c), lowshot::lowshot_error(c, 0), lowshot::lowshot_error(ring, 0),
                         lowshot::lowshot_error(c, 1), lowshot::lowshot_error(c, 2), lowshot::lowshot_error(c, 3),
                         lowshot::lowshot_error(c, 4), lowshot::lowshot_error(c, 5)};
    std::printf("%-40s %5zu %10.3f %7.3f %7.3f", c.label.c_str(), pts.size(), v[0], v[1], v[2]);
    for (int i = 3; i < 8; ++i) std::printf(" %7.3f", v[i]);
    std::printf("\n");
    for (int i = 0; i < 8; ++i) cols[static_cast<std::size_t>(i)].push_back(v[i]);
  }
  std::printf("%-40s %5s %10.3f %7.3f %7.3f", "median over logs", "", lowshot::median(cols[0]), lowshot::median(cols[1]),
              lowshot::median(cols[2]));
  for (int i = 3; i < 8; ++i) std::printf(" %7.3f", lowshot::median(cols[static_cast<std::size_t>(i)]));
  std::printf("\n%-40s %5s %10s %7s %7s", "worst log", "", "", "", "");
  for (int i = 3; i < 8; ++i) std::printf(" %7.3f", *std::max_element(cols[static_cast<std::size_t>(i)].begin(), cols[static_cast<std::size_t>(i)].end()));
  std::printf("\n");

  // What `autosync calibrate --nccl-tests LOG --nodes N --devices-per-node G` does with no --cluster:
  // the data sheet of dgx-h100-x1's node (RDMA, 8 x 400 Gb/s, NVLink SHARP) whatever the machine,
  // with its transport, and with --transport auto (cost::calibrate_transport: every kind fitted,
  // the best kept, from 4 sizes on 2 nodes or more)
  std::printf("\n# the same with the CLI's default data sheet (dgx-h100-x1's node): its transport / --transport auto\n");
  std::printf("%-40s", "case");
  for (int k = 1; k <= 5; ++k) std::printf("        k=%d    ", k);
  std::printf("\n");
  std::vector<std::vector<double>> dflt(5), any(5);
  for (const auto& c : m.cases) {
    const auto pts = lowshot::points(c);
    const auto t = lowshot::target_of(c);
    const cluster_spec sheet = cost::datasheet_machine(zoo::dgx_h100(1), c.cluster.worker_nodes(), c.cluster.nodes.front().devices);
    std::printf("%-40s", c.label.c_str());
    for (std::size_t k = 1; k <= 5; ++k) {
      std::vector<cost::calibration_point> few;
      for (auto i : cost::pick_sizes(pts.size(), k)) few.push_back(pts[i]);
      const double a = lowshot::error_on(cost::calibrate(sheet, few, t).cluster, t, pts);
      const double b = lowshot::error_on(cost::calibrate_transport(sheet, few, t).cluster, t, pts);
      dflt[k - 1].push_back(a);
      any[k - 1].push_back(b);
      std::printf("  %.3f / %.3f", a, b);
    }
    std::printf("\n");
  }
  std::printf("%-40s", "worst log");
  for (std::size_t k = 0; k < 5; ++k)
    std::printf("  %.3f / %.3f", *std::max_element(dflt[k].begin(), dflt[k].end()), *std::max_element(any[k].begin(), any[k].end()));
  std::printf("\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_nccl_lowshot: %s\n", e.what());
  return 1;
}
