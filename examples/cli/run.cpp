// `autosync run`: execute a strategy for real on the MPI ranks (exec::executor on
// exec::mpi_backend) and record what it measured.
//
//   every rank: load model, cluster (default local-<N>), strategy ─> compile_plan ─> setup()
//     per iteration: synthetic integer gradients (exec/synthetic.hpp); simulated forward;
//       backward in ready order (sleep backward_flops / device_flops x compute-scale, then
//       ready(t)); finish()
//     iteration 1: every rank checks the exact sum of every element (integers: exact in
//       f32/f64/f16/bf16), a wrong sum stops every rank
//   rank 0: gathers sync / exposed / iteration time of every rank and iteration, prints the
//     table and cost::estimate's prediction, appends a trial record (learn/run_record.hpp)
//
// Any failure on any rank (bad file, strategy that does not fit the model, wrong sum, timeout)
// is agreed on before the ranks go on, so every rank exits with 1 and none hangs. A build
// without MPI answers `run` with an error (exit 1).
#include "cli.hpp"

#include <cstdint>
#include <memory>
#include <string>

#ifdef AUTOSYNC_HAS_MPI
#include "mpi.hpp"

#include <autosync/cost/estimate.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/exec/synthetic.hpp>
#include <autosync/io/report.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/learn/run_record.hpp>

#include <mpi.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <span>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>
#endif

namespace autosync_cli {
namespace {

struct run_opts {
  std::string strategy, records, model = "bert-large", cluster;  // cluster "": local-<world size>
  double scale = 1.0, compute_scale = 0.0;
  int ranks_per_node = 0;  // 0: from the cluster
  int iters = 10, warmup = 2;
  std::uint64_t seed = 1;
};

#ifdef AUTOSYNC_HAS_MPI

using exec::mpi_backend;
using io::format_ms;

int run_run(const run_opts& ro, program& prog) {
  exec::mpi_session session(prog.argc, prog.argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  // 1. inputs: every rank loads them; any failure stops every rank
  learn::model_source src;
  cluster_spec c;
  strategy_desc s;
  int rpn = 0;
  exec::plan pl;
  std::vector<double> backward_s;  // per tensor: simulated backward compute on this rank
  double forward_s = 0.0;
  std::string failure;
  try {
    if (ro.iters < 1) throw error("--iters", "must be >= 1, got " + std::to_string(ro.iters));
    if (ro.warmup < 0) throw error("--warmup", "must be >= 0, got " + std::to_string(ro.warmup));
    if (!(ro.compute_scale >= 0.0) || !std::isfinite(ro.compute_scale))
      throw error("--compute-scale", "must be a finite number >= 0");
    if (looks_like_file(ro.model)) {
      if (ro.scale != 1.0) throw error("--scale", "applies to zoo models only; '" + ro.model + "' is a file");
      src = learn::model_source::inline_model(io::load_model_file(ro.model));
    } else {
      src = learn::model_source::from_zoo(ro.model, ro.scale);
    }
    c = ro.cluster.empty() ? zoo::make_cluster("local-" + std::to_string(p)) : load_cluster(ro.cluster);
    s = io::load_strategy_file(ro.strategy);
    try {
      s.validate(src.spec, c);
    } catch (const error& e) {
      throw error("strategy '" + ro.strategy + "' does not fit model '" + src.spec.name + "' on cluster '" + c.name + "': " + e.what());
    }
    rpn = ro.ranks_per_node;
    if (rpn == 0) rpn = c.world_size() == p ? c.max_devices_per_node() : p;
    if (rpn < 1 || p % rpn != 0)
      throw error("--ranks-per-node", std::to_string(rpn) + " ranks per node do not divide the " + std::to_string(p) +
                                          " ranks of this run" + (ro.ranks_per_node == 0 ? " (from the cluster; pass --ranks-per-node)" : ""));
    pl = exec::compile_plan(src.spec, c, s, exec::layout{p, rpn});
    // the node this rank stands for: its own when the cluster has exactly these ranks
    const int node = c.world_size() == p ? c.node_of_rank(rank) : c.node_of_rank(0);
    const double flops = c.nodes[static_cast<std::size_t>(node)].device_flops;
    if (ro.compute_scale > 0.0 && !(flops > 0.0))
      throw error("--compute-scale", "cluster '" + c.name + "' states no device_flops: there is no compute to simulate");
    const double per_flop = ro.compute_scale > 0.0 ? ro.compute_scale / flops : 0.0;
    for (const auto& t : src.spec.tensors) backward_s.push_back(t.backward_flops * per_flop);
    forward_s = src.spec.forward_flops * per_flop;
    if (rank == 0 && !ro.records.empty()) {  // fail now, not after the run
      const int fd = ::open(ro.records.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) throw error("--records", "cannot open '" + ro.records + "' to append: " + std::strerror(errno));
      ::close(fd);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;

  // 2. the run
  const auto& m = src.spec;
  const int total = ro.warmup + ro.iters;
  std::vector<double> mine;  // per measured iteration: sync, exposed, iteration
  std::size_t buckets = 0;
  try {
    auto cm = exec::comms<mpi_backend>::make(mpi_backend::world(), rpn);
    exec::executor<mpi_backend> ex(cm, m, pl, {});
    ex.setup();
    buckets = ex.compiled().buckets.size();
    exec::synthetic_gradients grads(m, ro.seed);
    const auto order = m.backward_order();
    using clock = std::chrono::steady_clock;
    auto until = [](clock::time_point tp) {
      if (tp > clock::now()) std::this_thread::sleep_until(tp);
    };
    auto secs = [](double x) { return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(x)); };
    for (int it = 0; it < total; ++it) {
      grads.fill(rank, it);  // fresh gradients every iteration (the last one holds sums)
      const auto t0 = clock::now();
      auto deadline = t0 + secs(forward_s);
      until(deadline);
      ex.begin_iteration(grads.gradients());
      for (auto t : order) {
        deadline += secs(backward_s[t]);
        until(deadline);
        ex.ready(t);
      }
      const auto timing = ex.finish();
      const double iteration = std::chrono::duration<double>(clock::now() - t0).count();
      if (it == 0) {  // every rank checks the exact sums; any mismatch fails every rank
        const std::string bad = grads.first_wrong_sum(p, it);
        if (!bad.empty())  // one write: the ranks' lines do not interleave
          std::cerr << ("autosync: rank " + std::to_string(rank) + ": wrong sum after the first iteration: " + bad + "\n") << std::flush;
        std::int32_t wrong = bad.empty() ? 0 : 1;
        cm.world.all_reduce(&wrong, 1, dtype::i32);
        if (wrong > 0)
          throw error("the first iteration gave wrong sums on " + std::to_string(wrong) + " rank(s) (see above): strategy '" + s.name +
                      "' did not synchronize the gradients correctly");
      }
      if (it >= ro.warmup) mine.insert(mine.end(), {timing.sync, timing.exposed, iteration});
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;

  // 3. rank 0 gathers, prints, records
  std::vector<double> all(rank == 0 ? mine.size() * static_cast<std::size_t>(p) : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()), MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  if (rank != 0) return 0;
  learn::trial_record rec;
  rec.model = src;
  rec.cluster = c;
  rec.ranks_per_node = rpn;
  rec.strategy = s;
  rec.settings = {ro.warmup, ro.compute_scale, ro.seed};
  rec.iterations = learn::iterations_from_ranks(all, p, ro.iters);
  const auto pred = cost::estimate(m, c, s);
  rec.predicted_iteration = pred.iteration;
  rec.predicted_exposed = pred.exposed;
  rec.environment =
      learn::host_environment(p, exec::mpi_library_version(), exec::thread_level_name(session.thread_level()), AUTOSYNC_VERSION);

  std::cout << "autosync run: " << m.name << " (" << m.tensors.size() << " tensors, " << io::human_bytes(double(m.total_bytes()))
            << ") on " << c.name << ", " << p << " ranks (" << rpn << " per node); strategy '" << s.name << "': " << s.groups.size()
            << " group(s), " << buckets << " bucket(s)\n"
            << "first iteration: every sum exact on every rank\n";
  learn::print_iterations(std::cout, rec.iterations);
  std::cout << "predicted (cost model on " << c.name << "): iteration " << format_ms(pred.iteration) << ", exposed "
            << format_ms(pred.exposed)
            << (ro.compute_scale == 0.0   ? " (this run simulated no compute: --compute-scale 1 to compare iterations)"
                : ro.compute_scale == 1.0 ? ""
                                          : " (this run scaled compute by --compute-scale)")
            << "\n";
  if (!ro.records.empty()) {
    learn::append_record(ro.records, rec);
    std::cout << "appended a record to " << ro.records << "\n";
  }
  return 0;
}

#else  // no MPI

int run_run(const run_opts&, program&) {
  throw error("`autosync run` needs MPI: this autosync was built without it (install OpenMPI, e.g. Debian's libopenmpi-dev, "
              "and rebuild: the command links autosync::mpi when CMake finds MPI)");
}

#endif

}  // namespace

subcommand add_run(CLI::App& app) {
  auto ro = std::make_shared<run_opts>();
  auto* sub = app.add_subcommand("run", "execute a strategy on the MPI ranks (under mpirun) and record the timings");
  sub->add_option("--strategy", ro->strategy, "strategy JSON file")->required();
  sub->add_option("--model", ro->model, "zoo model name or model JSON file")->capture_default_str();
  sub->add_option("--scale", ro->scale, "scale a zoo model's dim 0 (zoo::make_model_scaled) to fit a small machine")->capture_default_str();
  sub->add_option("--cluster", ro->cluster, "cluster preset name or cluster JSON file (default: local-<ranks>)");
  sub->add_option("--ranks-per-node", ro->ranks_per_node, "ranks per node of the layout (default: from the cluster)");
  sub->add_option("--iters", ro->iters, "measured iterations")->capture_default_str();
  sub->add_option("--warmup", ro->warmup, "iterations before the measured ones")->capture_default_str();
  sub->add_option("--compute-scale", ro->compute_scale, "simulate backward compute: backward_flops / device_flops x this (0: none)")
      ->capture_default_str();
  sub->add_option("--records", ro->records, "append a trial record (JSON Lines) to this file");
  sub->add_option("--seed", ro->seed, "seed of the synthetic gradients")->capture_default_str();
  return {sub, [ro](program& prog) { return run_run(*ro, prog); }};
}

}  // namespace autosync_cli
