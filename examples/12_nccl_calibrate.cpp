// 12 — fit the cost model to this GPU machine from a few NCCL all-reduces (low-shot calibration
// through the NCCL backend; the CPU form is `autosync calibrate` under mpirun, the log form
// `autosync calibrate --nccl-tests LOG`).
//
//   mpirun -np 16 ./example_12_nccl_calibrate --ranks-per-node 8 [--cluster dgx-h100-x1]
//          [--transport rdma|efa|slingshot|gpudirect_tcp|tcp] [--sizes 1048576,67108864,1073741824]
//          [--out cluster.json]
//
// One rank per GPU (device = local rank mod the node's devices). Every rank measures the sizes
// (exec/nccl/calibrate.hpp: CUDA events around back-to-back all-reduces, averaged over ranks);
// rank 0 fits the data-sheet machine (the --cluster preset's node, N x G, cost::datasheet_machine)
// to them (cost::calibrate: k = 1 fits the bandwidth, 2 adds the latency, 3+ the per-message
// overhead), prints measured / data sheet / calibrated per size and writes the calibrated
// cluster, which `autosync optimize --cluster cluster.json` and the tuner plugin
// (AUTOSYNC_TUNER_CLUSTER) take.
#include <autosync/cost/nccl_calibrate.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/nccl/backend.hpp>
#include <autosync/exec/nccl/calibrate.hpp>
#include <autosync/io/json.hpp>
#include <autosync/zoo/clusters.hpp>

#include "trainer_args.hpp"

#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct args {
  int ranks_per_node = 0;
  std::string cluster = "dgx-h100-x1", transport, out = "cluster.json";
  std::vector<std::size_t> sizes;
};

std::vector<std::size_t> parse_sizes(const char* flag, const std::string& list) {
  std::vector<std::size_t> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const auto comma = list.find(',', at);
    const std::string item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v % 4 != 0 || v > (1ull << 34))
      throw autosync::error(flag, "expects byte counts that are positive multiples of 4 up to 16 GiB, got '" + item + "'");
    out.push_back(static_cast<std::size_t>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

args parse(int argc, char** argv) {
  args a;
  const examples::arg_reader in{argc, argv};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--ranks-per-node")) a.ranks_per_node = static_cast<int>(in.number(i, 1, 1024));
    else if (!std::strcmp(argv[i], "--cluster")) a.cluster = in.value(i);
    else if (!std::strcmp(argv[i], "--transport")) a.transport = in.value(i);
    else if (!std::strcmp(argv[i], "--out")) a.out = in.value(i);
    else if (!std::strcmp(argv[i], "--sizes")) a.sizes = parse_sizes("--sizes", in.value(i));
    else throw autosync::error(argv[i], "unknown option (valid: --ranks-per-node --cluster --transport --sizes --out)");
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autosync;
  using namespace autosync::exec;
  int rank = 0;
  try {
    mpi_session session(argc, argv);
    auto boot = mpi_backend::world();
    rank = boot.rank();
    const int p = boot.size();
    const args a = parse(argc, argv);
    const int rpn = a.ranks_per_node > 0 ? a.ranks_per_node : p;
    if (p % rpn != 0) throw error("--ranks-per-node", std::to_string(rpn) + " does not divide the " + std::to_string(p) + " ranks");
    if (p < 2) throw error("ranks", "a collective needs at least 2 ranks (mpirun -np N, one per GPU)");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) throw error("device", "no CUDA device on this node");
    const cluster_spec sheet = cost::datasheet_machine(zoo::make_cluster(a.cluster), p / rpn, rpn, a.transport);

    auto world = nccl_backend::bootstrap(boot, (rank % rpn) % devices);
    world.set_job_abort([](std::string_view) { MPI_Abort(MPI_COMM_WORLD, 1); });
    nccl::measure_options mo;
    if (!a.sizes.empty()) mo.sizes = a.sizes;
    const auto pts = nccl::measure_all_reduce(world, boot, mo);

    if (rank == 0) {
      const cost::calibration_target t{};  // all_reduce, NCCL's own algorithm choice
      const auto r = cost::calibrate(sheet, pts, t);
      const auto f0 = cost::make_fabric(sheet), f1 = cost::make_fabric(r.cluster);
      std::printf("%d x %d %s, %s: fitted %d constant(s) from %zu size(s)\n", p / rpn, rpn, sheet.device.c_str(),
                  std::string(name_of(sheet.transport.kind)).c_str(), r.fitted, pts.size());
      std::printf("%14s %13s %14s %14s\n", "bytes", "measured_us", "data_sheet_us", "calibrated_us");
      for (const auto& q : pts)
        std::printf("%14.0f %13.2f %14.2f %14.2f\n", q.bytes, q.seconds * 1e6, cost::predict(f0, t, q.bytes) * 1e6,
                    cost::predict(f1, t, q.bytes) * 1e6);
      std::printf("bandwidth x%.3f, latency x%.3f, message overhead x%.3f; median error over the points %.3f\n", r.bandwidth_scale,
                  r.latency_scale, r.overhead_scale, r.median_error);
      std::ofstream o(a.out);
      if (!(o << io::to_json_text(r.cluster))) throw error("--out", "cannot write '" + a.out + "'");
      std::printf("wrote %s\n", a.out.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
