// `autosync calibrate` (under mpirun): exec::calibrate on the MPI ranks, then rank 0 prints the
// measurements next to the fit and the local-<N> preset, and writes the cluster JSON that
// `optimize` and `run` take with --cluster.
#include "cli.hpp"

#include <cstdint>
#include <memory>
#include <string>

#ifdef AUTOSYNC_HAS_MPI
#include "mpi.hpp"

#include <autosync/exec/calibrate.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/io/report.hpp>
#include <autosync/learn/run_record.hpp>

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#endif

namespace autosync_cli {
namespace {

struct calibrate_opts {
  std::string out;
  std::uint64_t max_bytes = std::uint64_t{16} << 20;
  double budget_s = 1.5;
};

#ifdef AUTOSYNC_HAS_MPI

using exec::mpi_backend;

int run_calibrate(const calibrate_opts& co, program& prog) {
  exec::mpi_session session(prog.argc, prog.argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::string failure;
  exec::calibrate_options o;
  try {
    if (co.out.empty()) throw error("--out", "needs a file name for the cluster JSON");
    if (p < 2) throw error("ranks", "calibrate measures the link between ranks: run it under mpirun with at least 2 ranks");
    if (co.max_bytes < 4096) throw error("--max-bytes", "must be at least 4096");
    if (!(co.budget_s > 0.0) || !std::isfinite(co.budget_s)) throw error("--budget-s", "must be a positive number of seconds");
    o.budget_s = co.budget_s;
    o.sizes.clear();
    for (std::uint64_t b = 4096; b <= co.max_bytes; b *= 4) o.sizes.push_back(static_cast<std::size_t>(b));
    if (o.sizes.size() < 2) throw error("--max-bytes", "must be at least 16384 (two sizes to fit)");
    if (rank == 0) {  // fail now, not after the measurement
      std::ofstream f(co.out, std::ios::app);
      if (!f) throw error("--out", "cannot open '" + co.out + "' to write");
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;
  exec::calibration k;
  try {
    auto cm = exec::comms<mpi_backend>::make(mpi_backend::world(), p);
    k = exec::calibrate(cm, o);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;
  if (rank != 0) return 0;
  const auto env = learn::host_environment(p, exec::mpi_library_version(), exec::thread_level_name(session.thread_level()), AUTOSYNC_VERSION);
  const cluster_spec c = exec::calibrated_cluster(k, "host " + env.hostname + ", " + env.timestamp);
  const cluster_spec preset = zoo::local(p);
  const auto& pn = preset.nodes[0];
  char line[200];
  std::cout << "autosync calibrate: " << p << " ranks on " << env.hostname << " (" << env.mpi_library.substr(0, env.mpi_library.find(',')) << ")\n";
  std::snprintf(line, sizeof line, "  reduction (sum_into f32, every rank at once): %.2f GB/s per rank\n", k.reduce_bandwidth / 1e9);
  std::cout << line << "  ring all-reduce (exec::all_reduce, f32)      measured      fitted   fit/measured\n";
  for (const auto& x : k.samples) {
    std::snprintf(line, sizeof line, "    %12s  %5d reps              %10s  %10s   %6.2f\n", io::human_bytes(double(x.bytes)).c_str(), x.reps,
                  io::format_ms(x.measured).c_str(), io::format_ms(x.fitted).c_str(), x.fitted / x.measured);
    std::cout << line;
  }
  std::snprintf(line, sizeof line, "  fitted:  latency %.2f us per ring step, link %.2f GB/s, reduction %.2f GB/s\n", k.latency * 1e6,
                k.bandwidth / 1e9, k.reduce_bandwidth / 1e9);
  std::cout << line;
  std::snprintf(line, sizeof line, "  preset %s: latency %.2f us, link %.2f GB/s, reduction %.2f GB/s\n", preset.name.c_str(),
                pn.intra.latency * 1e6, pn.intra.bandwidth / 1e9, pn.reduce_bandwidth / 1e9);
  std::cout << line;
  io::save_cluster_file(co.out, c);
  std::cout << "wrote cluster '" << c.name << "' to " << co.out << " (use: --cluster " << co.out << ")\n";
  return 0;
}

#else  // no MPI

int run_calibrate(const calibrate_opts&, program&) {
  throw error("`autosync calibrate` needs MPI: this autosync was built without it (install OpenMPI, e.g. Debian's libopenmpi-dev, "
              "and rebuild)");
}

#endif

}  // namespace

subcommand add_calibrate(CLI::App& app) {
  auto co = std::make_shared<calibrate_opts>();
  auto* sub = app.add_subcommand("calibrate", "measure this host's MPI transport (under mpirun) and write a cluster JSON");
  sub->add_option("--out", co->out, "cluster JSON file to write")->required();
  sub->add_option("--max-bytes", co->max_bytes, "largest ring all-reduce measured (sizes 4 KiB x4 up to this)")->capture_default_str();
  sub->add_option("--budget-s", co->budget_s, "seconds of repetitions per size")->capture_default_str();
  return {sub, [co](program& prog) { return run_calibrate(*co, prog); }};
}

}  // namespace autosync_cli
