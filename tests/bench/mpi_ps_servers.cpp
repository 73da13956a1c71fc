// Parameter servers side by side: one gradient split over k server ranks, synchronized for real
// on MPI, against what the cost model predicts for k servers.
//
//   mpirun -np 4 bench_mpi_ps_servers [--mib 16] [--iters 10] [--warmup 2]
//
// The cluster is local-<ranks> (one host) plus k dedicated server nodes (exec/plan.hpp: server s
// runs on rank floor(s x ranks / k), so k <= ranks distinct ranks); the strategy is one
// parameter-server group, the tensor split evenly into k shards, round robin over the servers, no
// local replication, no compression: one fusion bucket whose k pieces the executor runs as one
// batch (exec::ps_push_pull_concurrent: every server sums its piece at the same time). For
// k = 1 .. ranks it prints the measured synchronization time (median over --iters of the max
// over ranks), cost::estimate's prediction (server lanes in parallel) and search::serial_replay's
// (the iteration as the executor runs it), and whether the measured order of the k agrees with
// the predicted one. No compute is simulated (the gradient is ready at once), so the iteration is
// the synchronization. The first iteration of every k checks the exact sums (a wrong one ends the job, exit 2).
// Timings need a quiet machine: on a loaded one, read the order only.
#include <autosync/cost/estimate.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/model.hpp>
#include <autosync/search/serial.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/zoo/clusters.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace autosync;
using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

cluster_spec with_servers(int ranks, int k) {
  auto c = zoo::local(ranks);
  const auto nic = c.nodes.at(0).nic;
  for (int s = 0; s < k; ++s) {
    node_spec n;
    n.name = "s" + std::to_string(s);
    n.devices = 0;
    n.server_only = true;
    n.nic = nic;
    c.nodes.push_back(n);
  }
  c.name += "+" + std::to_string(k) + "ps";
  return c;
}

int run(int argc, char** argv) {
  double mib = 16;
  int iters = 10, warmup = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const double v = std::atof(argv[i + 1]);
    if (a == "--mib" && v > 0) mib = v;
    else if (a == "--iters" && v >= 1) iters = static_cast<int>(v);
    else if (a == "--warmup" && v >= 0) warmup = static_cast<int>(v);
    else throw error(a, "unknown option or bad value (--mib X > 0, --iters N >= 1, --warmup N >= 0)");
  }
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  model_spec m;
  m.name = "one-tensor";
  tensor t;
  t.name = "w";
  const auto elements = static_cast<std::int64_t>(mib * 1024 * 1024 / 4);
  t.shape = {elements};
  m.tensors.push_back(t);
  auto c = exec::comms<exec::mpi_backend>::make(exec::mpi_backend::world(), p);
  std::vector<float> g(static_cast<std::size_t>(elements));
  const exec::gradient view{g.data(), dtype::f32, elements};
  if (rank == 0)
    std::printf("bench_mpi_ps_servers: %.1f MiB over k servers, %d ranks (local-%d + k server nodes)\n%3s %12s %14s %14s\n", mib, p, p, "k",
                "measured ms", "model ms", "as run ms");
  std::vector<double> meas, model, as_run;
  for (int k = 1; k <= p; ++k) {
    const auto cl = with_servers(p, k);
    strategy_desc s;
    s.name = "ps-" + std::to_string(k);
    s.groups.resize(1);
    s.groups[0].architecture = architecture_kind::parameter_server;
    s.groups[0].partitioner = partitioner_value{partitioner_kind::even, k, 0, 0};
    s.groups[0].placement = placement_value{placement_kind::round_robin, 0};
    s.groups[0].fusion = fusion_value{unbounded_bytes, unbounded_bytes};
    s.assignments.push_back({"w", 0, 0, {}});
    s.validate(m, cl);
    exec::executor<exec::mpi_backend> ex(c, m, exec::compile_plan(m, cl, s, exec::layout{p, p}));
    ex.setup();
    auto iteration = [&] {
      ex.begin_iteration(std::span<const exec::gradient>(&view, 1));
      ex.ready(0);
      return ex.finish();
    };
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>((rank + 1) * static_cast<int>(1 + i % 5));
    (void)iteration();
    long wrong = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] != static_cast<float>(p * (p + 1) / 2 * static_cast<int>(1 + i % 5))) ++wrong;
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrong != 0) throw error("sums", std::to_string(wrong) + " wrong elements with " + std::to_string(k) + " servers");
    for (int w = 0; w < warmup; ++w) (void)iteration();
    std::vector<double> ts(static_cast<std::size_t>(iters));
    for (int it = 0; it < iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = clock_type::now();
      (void)iteration();
      ts[static_cast<std::size_t>(it)] = std::chrono::duration<double>(clock_type::now() - t0).count();
    }
    MPI_Allreduce(MPI_IN_PLACE, ts.data(), iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    meas.push_back(median(ts));
    model.push_back(cost::estimate(m, cl, s).iteration);
    as_run.push_back(search::serial_replay(m, cl, s).iteration);
    if (rank == 0) std::printf("%3d %12.3f %14.3f %14.3f\n", k, meas.back() * 1e3, model.back() * 1e3, as_run.back() * 1e3);
  }
  if (rank == 0) {
    int agree = 0, pairs = 0;
    for (std::size_t a = 0; a < meas.size(); ++a)
      for (std::size_t b = a + 1; b < meas.size(); ++b) {
        ++pairs;
        agree += (meas[a] < meas[b]) == (model[a] < model[b]) ? 1 : 0;
      }
    std::printf("pairs of k ordered as the model orders them: %d of %d (re-take on a quiet machine)\n", agree, pairs);
  }
  return 0;
}

}  // namespace

// An error on one rank ends the whole job (exec::run_mpi_job): the others would wait in a collective.
int main(int argc, char** argv) {
  return autosync::exec::run_mpi_job(argc, argv, "bench_mpi_ps_servers", [&] { return run(argc, argv); });
}
