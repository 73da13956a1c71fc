// `autosync run`: execute a strategy for real on the MPI ranks (autosync::session on
// exec::mpi_backend) and record what it measured.
//
//   every rank: load model, cluster (default local-<N>); the session: rank 0 reads the strategy,
//     broadcasts it, every rank checks it against the model and what it was made for (cluster,
//     fingerprint, ranks, ranks per node) and compiles the plan; the executor's handshake
//     per iteration: synthetic integer gradients (exec/synthetic.hpp); simulated forward;
//       backward in ready order (sleep backward_flops / device_flops x compute-scale, then
//       ready(t)); finish() (reduction::sum: the sums are checked)
//     iteration 1: every rank checks the exact sum of every element (integers: exact in
//       f32/f64/f16/bf16), a wrong sum stops every rank
//   a strategy with a registered lossy compressor (int8, qsgd, topk, powersgd, ...): before the
//     timed iterations every compressor is run against its own guarantee
//     (compressors::check_guarantees: exact sums, error feedback's conservation, int8's bound,
//     QSGD's unbiased mean, PowerSGD's exactness on low-rank gradients); a broken guarantee
//     stops every rank, and the first timed iteration's exact-sum check is left out
//   learn::record_trial gathers sync / exposed / iteration time of every rank and iteration;
//   rank 0 prints the table and cost::estimate's prediction, appends the trial record
//   --bucket-times FILE: when every plan bucket finished on every rank in every timed iteration
//     (session::on_bucket_done, seconds from the iteration's start), gathered to rank 0 as JSON:
//       {"strategy": ..., "model": ..., "cluster": ..., "ranks": p, "ranks_per_node": g,
//        "buckets": [{"index": 0, "group": 0, "tensors": 12}, ...],            plan order
//        "iterations": [[[b0, b1, ...] rank 0, [..] rank 1, ...], ...]}        timed ones
//     to hold the executor against the cost model's timeline bucket by bucket
//
// Any failure on any rank (bad file, strategy that does not fit the model or was made for another
// cluster or layout, wrong sum, timeout) is agreed on before the ranks go on, so every rank exits
// with 1 and none hangs. A build without MPI answers `run` with an error (exit 1).
#include "cli.hpp"

#include <autosync/exec/executor_options.hpp>

#include <cstdint>
#include <memory>
#include <string>

#ifdef AUTOSYNC_HAS_MPI
#include "mpi.hpp"

#include <autosync/compressors/guarantee.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/exec/synthetic.hpp>
#include <autosync/io/report.hpp>
#include <autosync/learn/record_trial.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/learn/run_record.hpp>
#include <autosync/session_impl.hpp>

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
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
  std::string pack = "automatic";  // exec::packing_from_name
  std::string bucket_times;        // "": not written
};

#ifdef AUTOSYNC_HAS_MPI

using exec::mpi_backend;
using io::format_ms;

int run_run(const run_opts& ro, program& prog) {
  exec::mpi_session mpi(prog.argc, prog.argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  // 1. inputs: every rank loads the model and the cluster; any failure stops every rank
  learn::model_source src;
  cluster_spec c;
  int rpn = 0;
  std::vector<double> backward_s;  // per tensor: simulated backward compute on this rank
  double forward_s = 0.0;
  std::string failure;
  try {
    if (!(ro.compute_scale >= 0.0) || !std::isfinite(ro.compute_scale))
      throw error("--compute-scale", "must be a finite number >= 0");
    if (looks_like_file(ro.model)) {
      if (ro.scale != 1.0) throw error("--scale", "applies to zoo models only; '" + ro.model + "' is a file");
      src = learn::model_source::inline_model(io::load_model_file(ro.model));
    } else {
      src = learn::model_source::from_zoo(ro.model, ro.scale);
    }
    c = ro.cluster.empty() ? zoo::make_cluster("local-" + std::to_string(p)) : load_cluster(ro.cluster);
    rpn = ro.ranks_per_node;
    if (rpn == 0) rpn = c.world_size() == p ? c.max_devices_per_node() : p;
    if (rpn < 1 || p % rpn != 0)
      throw error("--ranks-per-node", std::to_string(rpn) + " ranks per node do not divide the " + std::to_string(p) +
                                          " ranks of this run" + (ro.ranks_per_node == 0 ? " (from the cluster; pass --ranks-per-node)" : ""));
    // the node this rank stands for: its own when the cluster has exactly these ranks
    const int node = c.world_size() == p ? c.node_of_rank(rank) : c.node_of_rank(0);
    const double flops = c.nodes[static_cast<std::size_t>(node)].device_flops;
    if (ro.compute_scale > 0.0 && !(flops > 0.0))
      throw error("--compute-scale", "cluster '" + c.name + "' states no device_flops: there is no compute to simulate");
    const double per_flop = ro.compute_scale > 0.0 ? ro.compute_scale / flops : 0.0;
    for (const auto& t : src.spec.tensors) backward_s.push_back(t.backward_flops * per_flop);
    forward_s = src.spec.forward_flops * per_flop;
    // the output files: fail now, not after the run
    auto openable = [&](const std::string& path, const char* option, int mode, const char* what) {
      if (rank != 0 || path.empty()) return;
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0644);
      if (fd < 0) throw error(option, "cannot open '" + path + "' to " + what + ": " + std::strerror(errno));
      ::close(fd);
    };
    openable(ro.records, "--records", O_APPEND, "append");
    openable(ro.bucket_times, "--bucket-times", 0, "write");
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;

  // 2. the session (every rank throws alike when the strategy cannot run here), then the run
  const auto& m = src.spec;
  const int total = ro.warmup + ro.iters;
  auto world = mpi_backend::world();
  std::unique_ptr<session<mpi_backend>> run;
  std::vector<learn::step_measure> mine;  // per measured iteration
  std::vector<double> done_at;            // --bucket-times: this iteration's bucket ends (seconds from its start)
  std::vector<double> mine_done;          // --bucket-times: done_at of every measured iteration, one after another
  std::vector<std::uint32_t> bucket_group;
  std::vector<std::size_t> bucket_tensors;
  bool lossy = false;                     // a group uses a registered lossy compressor
  compressors::guarantee_report guarantees;
  try {
    session_options so;
    so.cluster = c;
    so.ranks_per_node = rpn;
    so.reduce = reduction::sum;  // the synthetic gradients' sums are checked
    so.pack = exec::packing_from_name(ro.pack).value_or(exec::packing::automatic);  // checked by the option
    run = std::make_unique<session<mpi_backend>>(world, m, strategy_file{ro.strategy}, so);
    auto& s = *run;
    for (const auto& g : s.strategy().groups) lossy = lossy || (is_extension_id(g.compression.id) && !compression_lossless(g.compression.id));
    if (lossy) {  // every compressor against its own guarantee, before the timed iterations
      guarantees = compressors::check_guarantees(s);
      if (!guarantees.ok()) {
        std::string why;
        for (const auto& l : guarantees.lines)
          if (!l.ok) why += (why.empty() ? "" : "; ") + l.compressor + ": " + std::string(compressors::name_of(l.kind)) + " broken: " + l.detail;
        throw error("strategy '" + s.strategy().name + "' broke a compressor's guarantee: " + why);
      }
    }
    exec::synthetic_gradients grads(m, ro.seed);
    const auto order = m.backward_order();
    using clock = std::chrono::steady_clock;
    auto until = [](clock::time_point tp) {
      if (tp > clock::now()) std::this_thread::sleep_until(tp);
    };
    auto secs = [](double x) { return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(x)); };
    clock::time_point t0{};  // the iteration's start, read by the bucket callback
    if (!ro.bucket_times.empty()) {
      done_at.assign(s.buckets(), std::nan(""));
      bucket_group.assign(s.buckets(), 0);
      bucket_tensors.assign(s.buckets(), 0);
      // on the communication thread, between begin() (which orders t0 before it) and finish()
      s.on_bucket_done([&](const bucket_info& b) {
        done_at[b.index] = std::chrono::duration<double>(clock::now() - t0).count();
        bucket_group[b.index] = b.group;
        bucket_tensors[b.index] = b.tensors.size();
      });
    }
    for (int it = 0; it < total; ++it) {
      grads.fill(rank, it);  // fresh gradients every iteration (the last one holds sums)
      t0 = clock::now();
      auto deadline = t0 + secs(forward_s);
      until(deadline);
      s.begin(grads.gradients());
      for (auto t : order) {
        deadline += secs(backward_s[t]);
        until(deadline);
        s.ready(t);
      }
      const auto timing = s.finish();
      const double iteration = std::chrono::duration<double>(clock::now() - t0).count();
      if (it == 0 && !lossy) {  // every rank checks the exact sums; any mismatch fails every rank
        const std::string bad = grads.first_wrong_sum(p, it);
        if (!bad.empty())  // one write: the ranks' lines do not interleave
          std::cerr << ("autosync: rank " + std::to_string(rank) + ": wrong sum after the first iteration: " + bad + "\n") << std::flush;
        std::int32_t wrong = bad.empty() ? 0 : 1;
        s.communicator().all_reduce(&wrong, 1, dtype::i32);
        if (wrong > 0)
          throw error("the first iteration gave wrong sums on " + std::to_string(wrong) + " rank(s) (see above): strategy '" +
                      s.strategy().name + "' did not synchronize the gradients correctly");
      }
      if (it >= ro.warmup) {
        mine.push_back({timing.sync, timing.exposed, iteration});
        mine_done.insert(mine_done.end(), done_at.begin(), done_at.end());
      }
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;

  // 3. every rank's timings gathered into the record; rank 0 prints and appends it
  learn::trial_context ctx;
  ctx.model = src;
  ctx.settings = {ro.warmup, ro.compute_scale, ro.seed};
  ctx.comm_library = exec::mpi_library_version();
  ctx.thread_level = exec::thread_level_name(mpi.thread_level());
  ctx.autosync_version = AUTOSYNC_VERSION;
  const learn::trial_record rec = learn::record_trial(*run, mine, ctx);
  std::vector<double> all_done;  // --bucket-times: every rank's mine_done, rank after rank
  if (!ro.bucket_times.empty()) {
    all_done.resize(mine_done.size() * static_cast<std::size_t>(p));
    if (!mine_done.empty()) run->communicator().all_gather(mine_done.data(), all_done.data(), mine_done.size(), dtype::f64);
  }
  if (rank != 0) return 0;
  const auto& s = rec.strategy;

  std::cout << "autosync run: " << m.name << " (" << m.tensors.size() << " tensors, " << io::human_bytes(double(m.total_bytes()))
            << ") on " << c.name << ", " << p << " ranks (" << rpn << " per node); strategy '" << s.name << "': " << s.groups.size()
            << " group(s), " << run->buckets() << " bucket(s)\n"
            << (lossy ? "" : "first iteration: every sum exact on every rank\n");
  if (lossy) {
    std::cout << "compressor guarantees (" << guarantees.iterations << " iterations before the timed ones):\n";
    for (const auto& l : guarantees.lines)
      std::cout << "  " << (l.ok ? "ok   " : "FAIL ") << l.compressor << " (" << l.tensors << " tensors): " << compressors::name_of(l.kind) << ": "
                << l.detail << "\n";
  }
  learn::print_iterations(std::cout, rec.iterations);
  std::cout << "predicted (cost model on " << c.name << "): iteration " << format_ms(rec.predicted_iteration) << ", exposed "
            << format_ms(rec.predicted_exposed)
            << (ro.compute_scale == 0.0   ? " (this run simulated no compute: --compute-scale 1 to compare iterations)"
                : ro.compute_scale == 1.0 ? ""
                                          : " (this run scaled compute by --compute-scale)")
            << "\n";
  if (!ro.records.empty()) {
    learn::append_record(ro.records, rec);
    std::cout << "appended a record to " << ro.records << "\n";
  }
  if (!ro.bucket_times.empty()) {
    nlohmann::ordered_json j;
    j["strategy"] = s.name;
    j["model"] = m.name;
    j["cluster"] = c.name;
    j["ranks"] = p;
    j["ranks_per_node"] = rpn;
    auto& bs = j["buckets"] = nlohmann::ordered_json::array();
    const std::size_t nb = done_at.size();
    for (std::size_t b = 0; b < nb; ++b) bs.push_back({{"index", b}, {"group", bucket_group[b]}, {"tensors", bucket_tensors[b]}});
    auto& its = j["iterations"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < mine.size(); ++i) {
      auto& ranks = its.emplace_back(nlohmann::ordered_json::array());
      for (int r = 0; r < p; ++r) {
        const double* at = all_done.data() + (static_cast<std::size_t>(r) * mine.size() + i) * nb;
        ranks.push_back(std::vector<double>(at, at + nb));  // a bucket that never finished: NaN, written as null
      }
    }
    std::ofstream f(ro.bucket_times, std::ios::binary | std::ios::trunc);
    f << j.dump() << "\n";
    if (!f) throw error("--bucket-times", "cannot write '" + ro.bucket_times + "'");
    std::cout << "wrote when each of the " << nb << " buckets finished on each rank to " << ro.bucket_times << "\n";
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
  sub->add_option("--ranks-per-node", ro->ranks_per_node, "ranks per node of the layout (default: from the cluster)")->check(whole_number(1, 1'000'000));
  sub->add_option("--iters", ro->iters, "measured iterations")->check(whole_number(1, 1'000'000))->capture_default_str();
  sub->add_option("--warmup", ro->warmup, "iterations before the measured ones")->check(whole_number(0, 1'000'000))->capture_default_str();
  sub->add_option("--compute-scale", ro->compute_scale, "simulate backward compute: backward_flops / device_flops x this (0: none)")
      ->capture_default_str();
  sub->add_option("--records", ro->records, "append a trial record (JSON Lines) to this file");
  sub->add_option("--seed", ro->seed, "seed of the synthetic gradients")->check(whole_number())->capture_default_str();
  sub->add_option("--bucket-times", ro->bucket_times,
                  "write when each plan bucket finished on each rank in every timed iteration (seconds from the iteration's "
                  "start) to this JSON file");
  sub->add_option("--pack", ro->pack,
                  "how a fused bucket reaches the wire: automatic (summed where the tensors lie when their runs are large "
                  "enough), always (packed into one buffer), never (always where they lie)")
      ->check(CLI::IsMember({"automatic", "always", "never"}))
      ->capture_default_str();
  return {sub, [ro](program& prog) { return run_run(*ro, prog); }};
}

}  // namespace autosync_cli
