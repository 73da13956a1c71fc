// Whole gradient sets of zoo models synchronized for real on MPI: the strategy autosync finds
// against the PyTorch-DDP baseline, measured and predicted.
//
//   mpirun -np 4 bench_mpi_models [--models resnet50,bert-base] [--scale 0.25] [--iters 10]
//                                 [--warmup 2] [--seed 1] [--model-out DIR] [--cluster FILE]
//
// For every model m = zoo::make_model_scaled(name, scale) (every tensor's dim 0 times `scale`:
// the same tensors in the same order, fewer bytes, so that 4 ranks on a small machine stay
// within memory and time) on the cluster "local-<ranks>" (zoo::local: one host, shared memory):
//
//   found   search::optimize(m, cluster) on rank 0 (lossless strategies only: the default
//           options), broadcast to every rank as strategy JSON (the search stops on a wall-clock
//           budget, so ranks searching on their own could disagree; setup() would catch it)
//   ddp     baselines::ddp(m): ring all-reduce, 25 MiB buckets, first bucket 1 MiB
//
// each compiled to a plan and run by exec::executor on every rank:
//
//   iteration:  barrier | begin_iteration | ready(t) for t in backward order | finish |
//               <--------------------------- wall ------------------------------->
//                                  comm thread: [b0][b1][b2]...   sync = sum of bucket times
//
// No backward compute is simulated (every gradient is ready at once), so the measured time is
// the pure synchronization time of the iteration; it is compared with cost::estimate's
// `communication` (the busy time of the collectives, which the executor runs one after the
// other) for the same (model, cluster, strategy). The search itself minimizes the predicted
// iteration time (backward compute + exposed communication), shown as pred_iter: a strategy
// that hides more communication behind compute can sync longer and still win there.
// An iteration's time is the max over ranks; the table shows the median over --iters
// iterations after --warmup untimed ones. The first iteration of every run uses
// integer-valued gradients and checks the exact sum on every rank (a wrong one ends the job, exit 2).
//
// Output: a table, plus one machine-readable line per (model, strategy) for
// tests/bench/run-mpi-benchmarks.sh:
//   result model=resnet50 strategy=found wall_ms=... sync_ms=... predicted_ms=... buckets=... bytes=...
// --cluster FILE: a cluster JSON for one node of exactly the job's ranks instead of the preset,
// e.g. what `autosync calibrate` wrote for this host; the search and the predictions use it.
// --model-out DIR: rank 0 writes DIR/<name>.json (io::save_model_file) for every model, the
// tensors tests/bench/ddp_torch.py then hands to PyTorch DDP.
#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/io/json.hpp>
#include <autosync/model.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace autosync;
using clock_type = std::chrono::steady_clock;

struct options {
  std::vector<std::string> models{"resnet50", "bert-base"};
  double scale = 0.25;
  int iters = 10, warmup = 2;
  std::uint64_t seed = 1;
  std::string model_out, cluster;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw error(a, "needs a value");
      return argv[++i];
    };
    auto number = [&](const std::string& v, double lo) {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(d >= lo)) throw error(a, "'" + v + "' is not a number >= " + std::to_string(lo));
      return d;
    };
    if (a == "--models") {
      o.models.clear();
      const std::string v = value();
      for (std::size_t b = 0; b <= v.size();) {
        const auto e = std::min(v.find(',', b), v.size());
        if (e > b) o.models.push_back(v.substr(b, e - b));
        b = e + 1;
      }
      if (o.models.empty()) throw error(a, "needs at least one model name");
    } else if (a == "--scale") o.scale = number(value(), 1e-9);
    else if (a == "--iters") o.iters = static_cast<int>(number(value(), 1));
    else if (a == "--warmup") o.warmup = static_cast<int>(number(value(), 0));
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(number(value(), 0));
    else if (a == "--model-out") o.model_out = value();
    else if (a == "--cluster") o.cluster = value();
    else throw error(a, "unknown option (--models, --scale, --iters, --warmup, --seed, --model-out, --cluster)");
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Rank r's element i: small integers, so every sum is exact in f32 (p (p+1)/2 * 5 < 2^24).
float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(1 + i % 5)); }
float expected(int p, std::size_t i) { return static_cast<float>(p * (p + 1) / 2 * static_cast<int>(1 + i % 5)); }

// The search runs on rank 0; the others receive its strategy as JSON text.
strategy_desc found_strategy(const model_spec& m, const cluster_spec& c, std::uint64_t seed, int rank, double& search_s) {
  std::string text;
  if (rank == 0) {
    search::options so;
    so.seed = seed;
    const auto t0 = clock_type::now();
    text = io::to_json_text(search::optimize(m, c, so).strategy);
    search_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  }
  long len = static_cast<long>(text.size());
  MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD);
  return io::parse_strategy(text, m, c, "<found strategy>");
}

struct measured {
  double wall = 0, sync = 0;  // medians of the per-iteration max over ranks, seconds
  std::size_t buckets = 0;
};

measured execute(exec::comms<exec::mpi_backend>& c, const model_spec& m, const cluster_spec& cl, const strategy_desc& s,
                 const options& o, std::vector<float>& storage, const std::string& label) {
  const int rank = c.world.rank(), p = c.world.size();
  exec::executor<exec::mpi_backend> ex(c, m, exec::compile_plan(m, cl, s, exec::layout{p, p}));
  ex.setup();
  std::vector<exec::gradient> views;
  std::size_t off = 0;
  for (const auto& t : m.tensors) {
    if (t.type != dtype::f32) throw error("model", "tensor '" + t.name + "' is not f32 (this benchmark fills f32 gradients)");
    views.push_back({storage.data() + off, dtype::f32, t.elements()});
    off += static_cast<std::size_t>(t.elements());
  }
  const auto order = m.backward_order();
  auto iteration = [&] {
    ex.begin_iteration(std::span<const exec::gradient>(views));
    for (auto t : order) ex.ready(t);
    return ex.finish();
  };

  for (std::size_t i = 0; i < off; ++i) storage[i] = value(rank, i);
  MPI_Barrier(MPI_COMM_WORLD);
  (void)iteration();
  long wrong = 0;
  for (std::size_t i = 0; i < off; ++i)
    if (storage[i] != expected(p, i) && wrong++ == 0)
      std::fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", rank, label.c_str(), i, static_cast<double>(storage[i]),
                   static_cast<double>(expected(p, i)));
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (wrong != 0) throw error(label, "wrong sums: " + std::to_string(wrong) + " elements over all ranks");
  std::fill(storage.begin(), storage.begin() + static_cast<std::ptrdiff_t>(off), 0.0f);  // zeros stay zeros

  for (int k = 0; k < o.warmup; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    (void)iteration();
  }
  std::vector<double> t(2 * static_cast<std::size_t>(o.iters));
  for (int k = 0; k < o.iters; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = clock_type::now();
    const auto timing = iteration();
    t[2 * static_cast<std::size_t>(k)] = std::chrono::duration<double>(clock_type::now() - t0).count();
    t[2 * static_cast<std::size_t>(k) + 1] = timing.sync;
  }
  MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::vector<double> wall, sync;
  for (int k = 0; k < o.iters; ++k) {
    wall.push_back(t[2 * static_cast<std::size_t>(k)]);
    sync.push_back(t[2 * static_cast<std::size_t>(k) + 1]);
  }
  return {median(wall), median(sync), ex.compiled().buckets.size()};
}

int run(int argc, char** argv) {
  const options o = parse(argc, argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  auto c = exec::comms<exec::mpi_backend>::make(exec::mpi_backend::world(), p);
  const cluster_spec cluster = o.cluster.empty() ? zoo::local(p) : io::load_cluster_file(o.cluster);
  if (cluster.world_size() != p || cluster.worker_nodes() != 1)
    throw error("--cluster", "'" + cluster.name + "' has " + std::to_string(cluster.world_size()) + " ranks on " +
                                 std::to_string(cluster.worker_nodes()) + " node(s); this benchmark runs one node of " + std::to_string(p));

  if (rank == 0) {
    std::printf("# zoo models on %s (%d ranks), scale %g, f32; median of %d iterations (max over ranks), %d warm-up\n",
                cluster.name.c_str(), p, o.scale, o.iters, o.warmup);
    std::printf("# no simulated compute: measured = pure synchronization time; predicted = cost::estimate communication\n");
    std::printf("# pred_iter: the search's objective (compute + exposed communication on the modelled cluster)\n");
    if (!o.cluster.empty())
      std::printf("# predicted on %s (from %s); preset_ms: the same strategy predicted on the preset %s\n", cluster.name.c_str(),
                  o.cluster.c_str(), zoo::local(p).name.c_str());
    std::printf("%-16s %-9s %9s %7s %8s %13s %12s %12s %10s %13s %10s\n", "model", "strategy", "MiB", "groups", "buckets", "predicted_ms",
                "measured_ms", "comm_thr_ms", "meas/pred", "pred_iter_ms", "preset_ms");
    std::fflush(stdout);
  }
  for (const auto& name : o.models) {
    const model_spec m = zoo::make_model_scaled(name, o.scale);
    if (rank == 0 && !o.model_out.empty()) {
      std::filesystem::create_directories(o.model_out);
      io::save_model_file(std::filesystem::path(o.model_out) / (name + ".json"), m);
    }
    double search_s = 0;
    const strategy_desc found = found_strategy(m, cluster, o.seed, rank, search_s);
    const strategy_desc ddp = baselines::ddp(m);
    std::vector<float> storage(static_cast<std::size_t>(m.total_elements()));
    const double mib = static_cast<double>(m.total_bytes()) / (1024.0 * 1024.0);
    struct row {
      const char* label;
      const strategy_desc* s;
    };
    for (const row r : {row{"found", &found}, row{"ddp", &ddp}}) {
      const auto pred = cost::estimate(m, cluster, *r.s);
      const auto pred_preset = cost::estimate(m, zoo::local(p), *r.s);
      const auto meas = execute(c, m, cluster, *r.s, o, storage, name + "/" + r.label);
      if (rank == 0) {
        std::printf("%-16s %-9s %9.1f %7zu %8zu %13.2f %12.2f %12.2f %10.2f %13.2f %10.2f\n", name.c_str(), r.label, mib,
                    r.s->groups.size(), meas.buckets, pred.communication * 1e3, meas.wall * 1e3, meas.sync * 1e3,
                    pred.communication > 0 ? meas.wall / pred.communication : 0.0, pred.iteration * 1e3, pred_preset.communication * 1e3);
        std::printf("result model=%s strategy=%s wall_ms=%.3f sync_ms=%.3f predicted_ms=%.3f preset_predicted_ms=%.3f buckets=%zu "
                    "bytes=%lld\n",
                    name.c_str(), r.label, meas.wall * 1e3, meas.sync * 1e3, pred.communication * 1e3, pred_preset.communication * 1e3,
                    meas.buckets, static_cast<long long>(m.total_bytes()));
        std::fflush(stdout);
      }
    }
    if (rank == 0) {
      std::printf("# %s: search %.2f s on rank 0; found strategy, %zu groups:\n", name.c_str(), search_s, found.groups.size());
      for (std::size_t g = 0; g < found.groups.size(); ++g) {
        std::size_t members = 0;
        for (const auto& a : found.assignments)
          if (a.split() ? std::count(a.shard_groups.begin(), a.shard_groups.end(), static_cast<std::int32_t>(g)) > 0
                        : a.group == static_cast<std::int32_t>(g))
            ++members;
        std::printf("#   group %zu (%zu tensors): %s\n", g, members, io::to_json(found.groups[g]).dump().c_str());
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

// An error on one rank ends the whole job (exec::run_mpi_job): the others would wait in a collective.
int main(int argc, char** argv) {
  return autosync::exec::run_mpi_job(argc, argv, "bench_mpi_models", [&] { return run(argc, argv); });
}
