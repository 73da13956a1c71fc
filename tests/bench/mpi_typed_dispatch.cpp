// One strategy run both ways on MPI: the runtime executor (each group's descriptor dispatched
// once, when the runner is built, into host_bucket_runner::run_as<Arch, Topo, Comp>; a function
// per bucket) against exec::typed_executor<strategy_t> (run_as of the static strategy's group
// types, chosen by a fold over the group index: no dispatch). Target: typed >= 1.0x the speed
// of dispatched (typed is not slower).
//
//   mpirun -np 4 bench_mpi_typed_dispatch [--model resnet50] [--scale 0.25] [--iters 31] [--warmup 3] [--seed 1]
//
// The strategy: seven groups, the model's tensors dealt round-robin (sparse tensors to the
// all_gather group): ring, tree, halving-doubling, hierarchical<ring, ring> with bf16,
// sharded ring, hierarchical<halving_doubling, tree> with fp16, a parameter server with local
// replication; 1 MiB buckets. ranks_per_node = 2 for an even rank count (1 otherwise) on the
// local-<ranks> cluster. Both executors run the same plan on the same communicators, one after
// the other (which goes first alternates per iteration), on the same random gradients (random
// f32 in [-1, 1), redrawn every iteration, outside the timed region); every iteration checks
// that both produced the same bytes (exit 1 otherwise). An iteration's time is the max over
// ranks of barrier-to-finish wall time; printed: the medians, their ratio, and the median of
// the per-iteration ratios (the pairs run back to back, so the load of the machine cancels).
// Timings on a shared machine are noisy: take the figure on a quiet one.
#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/exec/mpi/session.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/exec/typed_executor.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/static_strategy.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace autosync;
using clock_type = std::chrono::steady_clock;

using cap = fuse::bucket_cap<1u << 20>;
using strategy_t = static_strategy<strategy<topo::ring, cap>,                                                     //
                                   strategy<topo::tree, cap>,                                                     //
                                   strategy<topo::halving_doubling, cap>,                                         //
                                   strategy<topo::hierarchical<topo::ring, topo::ring>, comp::bf16, cap>,         //
                                   strategy<arch::sharded, topo::ring, cap>,                                      //
                                   strategy<topo::hierarchical<topo::halving_doubling, topo::tree>, comp::fp16, cap>,
                                   strategy<arch::parameter_server, repl::local, cap>,                           //
                                   strategy<arch::all_gather, cap>>;
constexpr std::int32_t dense_groups = 7, sparse_group = 7;

struct options {
  std::string model = "resnet50";
  double scale = 0.25;
  int iters = 31, warmup = 3;
  std::uint64_t seed = 1;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw error(a, "needs a value (--model, --scale, --iters, --warmup, --seed)");
    const std::string v = argv[++i];
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    const bool num = end != v.c_str() && *end == '\0' && d > 0;
    if (a == "--model") o.model = v;
    else if (a == "--scale" && num) o.scale = d;
    else if (a == "--iters" && num) o.iters = static_cast<int>(d);
    else if (a == "--warmup" && (num || v == "0")) o.warmup = static_cast<int>(d);
    else if (a == "--seed" && (num || v == "0")) o.seed = static_cast<std::uint64_t>(d);
    else throw error(a, "unknown option or bad value '" + v + "' (--model, --scale, --iters, --warmup, --seed)");
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

strategy_desc make_strategy(const model_spec& m) {
  strategy_desc s;
  s.name = "typed-dispatch bench";
  s.groups = to_descriptor<strategy_t>(std::array<static_assignment, 0>{}).groups;
  std::int32_t next = 0;
  for (const auto& t : m.tensors) {
    const std::int32_t g = t.sparse ? sparse_group : next++ % dense_groups;
    s.assignments.push_back(assignment{t.name, g, 0, {}});
  }
  return s;
}

struct buffers {
  std::vector<float> data;
  std::vector<exec::gradient> views;
  explicit buffers(const model_spec& m) {
    std::size_t n = 0;
    for (const auto& t : m.tensors) n += static_cast<std::size_t>(t.elements());
    data.resize(n);
    std::size_t off = 0;
    for (const auto& t : m.tensors) {
      views.push_back({data.data() + off, dtype::f32, t.elements()});
      off += static_cast<std::size_t>(t.elements());
    }
  }
};

template <class E>
double iteration(E& ex, const model_spec& m, buffers& b) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock_type::now();
  ex.begin_iteration(std::span<const exec::gradient>(b.views));
  for (auto t : m.backward_order()) ex.ready(t);
  (void)ex.finish();
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

int run(int argc, char** argv) {
  const options o = parse(argc, argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int rpn = p % 2 == 0 ? 2 : 1;
  auto m = zoo::make_model_scaled(o.model, o.scale);
  for (auto& t : m.tensors) t.type = dtype::f32;
  const auto cl = zoo::local(p);
  const auto s = make_strategy(m);
  const auto pl = exec::compile_plan(m, cl, s, exec::layout{p, rpn});
  auto c = exec::comms<exec::mpi_backend>::make(exec::mpi_backend::world(), rpn);
  exec::executor<exec::mpi_backend> dispatched(c, m, pl);
  exec::typed_executor<strategy_t, exec::mpi_backend> typed(c, m, pl);
  dispatched.setup();
  typed.setup();

  buffers a(m), b(m);
  std::mt19937 rng(static_cast<std::uint32_t>(o.seed * 1000 + static_cast<std::uint64_t>(rank)));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<double> t(2 * static_cast<std::size_t>(o.iters));
  long differ = 0;
  for (int k = -o.warmup; k < o.iters; ++k) {
    for (auto& x : a.data) x = u(rng);
    b.data = a.data;
    double td = 0, tt = 0;
    if ((k & 1) == 0) {
      td = iteration(dispatched, m, a);
      tt = iteration(typed, m, b);
    } else {
      tt = iteration(typed, m, b);
      td = iteration(dispatched, m, a);
    }
    differ += std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) != 0;
    if (k >= 0) {
      t[2 * static_cast<std::size_t>(k)] = td;
      t[2 * static_cast<std::size_t>(k) + 1] = tt;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &differ, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (differ != 0) throw error("result", "the typed and dispatched executors produced different bytes in " + std::to_string(differ) + " rank-iterations");
  std::vector<double> td, tt, ratio;
  for (int k = 0; k < o.iters; ++k) {
    td.push_back(t[2 * static_cast<std::size_t>(k)]);
    tt.push_back(t[2 * static_cast<std::size_t>(k) + 1]);
    ratio.push_back(td.back() / tt.back());
  }
  if (rank == 0) {
    std::size_t bytes = 0;
    for (const auto& bk : pl.buckets) bytes += static_cast<std::size_t>(bk.elements) * size_of(bk.type);
    std::printf("bench_mpi_typed_dispatch: %s (scale %.3g, %zu tensors, %.1f MiB), %d ranks (%d per node), %zu buckets in %zu groups, "
                "%d iterations after %d warm-up\n",
                m.name.c_str(), o.scale, m.tensors.size(), static_cast<double>(bytes) / (1 << 20), p, rpn, pl.buckets.size(),
                static_cast<std::size_t>(strategy_t::size), o.iters, o.warmup);
    std::printf("  dispatched (runtime executor)   median %9.3f ms\n", 1e3 * median(td));
    std::printf("  typed (typed_executor)          median %9.3f ms\n", 1e3 * median(tt));
    std::printf("  speed typed / dispatched = %.3fx (medians), %.3fx (median of per-iteration pairs)   target >= 1.0x\n",
                median(td) / median(tt), median(ratio));
    std::printf("  the same bytes on both paths in every iteration; re-take the figure on a quiet machine\n");
  }
  return 0;
}

}  // namespace

// An error on one rank ends the whole job (exec::run_mpi_job): the others would wait in a collective.
int main(int argc, char** argv) {
  return autosync::exec::run_mpi_job(argc, argv, "bench_mpi_typed_dispatch", [&] { return run(argc, argv); });
}
