// tests/mpi/fault/rank_failure.cpp — a job in which one rank dies or gets stuck mid-iteration.
//
//   mpirun -np 4 autosync_mpi_rank_failure --mode kill|stop|exit --victim 2 [--iteration 3]
//
// Every rank runs the executor on a model of 16 f32 tensors (64 Ki elements each), ring
// all-reduce in 1 MiB buckets, and checks each iteration's sums. In iteration --iteration the
// victim marks half of its tensors ready (its communication thread is then inside a bucket's
// ring) and
//   kill   raise(SIGKILL): the process is gone (mpirun sees the death and ends the job);
//   stop   raise(SIGSTOP): the process is alive but never answers again (nobody ends the job
//          but the survivors: their waits time out after AUTOSYNC_TIMEOUT_S and name the rank
//          they waited for, then they abort the job);
//   exit   std::_Exit(3): the process leaves without MPI_Finalize.
// A survivor prints "rank R: failed after T s: <error>" and calls Backend::abort, so the job ends
// non-zero; a rank that finishes every iteration (which must not happen) prints "completed".
// run_rank_failure.cmake runs the modes and checks the output and the wall time.
#include <autosync/error.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/fusion.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/zoo/clusters.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using namespace autosync;

struct options {
  std::string mode = "kill";
  int victim = 1, iteration = 3, iterations = 40;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw error(a, "needs a value");
    const std::string v = argv[++i];
    if (a == "--mode") o.mode = v;
    else if (a == "--victim") o.victim = std::atoi(v.c_str());
    else if (a == "--iteration") o.iteration = std::atoi(v.c_str());
    else throw error(a, "unknown option (--mode, --victim, --iteration)");
  }
  if (o.mode != "kill" && o.mode != "stop" && o.mode != "exit") throw error("--mode", "'" + o.mode + "': kill, stop or exit");
  if (o.iteration < 0 || o.iteration >= o.iterations) throw error("--iteration", "must be in [0, " + std::to_string(o.iterations) + ")");
  return o;
}

model_spec sixteen() {
  model_spec m;
  m.name = "sixteen";
  for (int t = 0; t < 16; ++t) {
    tensor x;
    x.name = std::to_string(t);
    x.name.insert(0, 1, 'w');  // (not "w" + ...: GCC 12 warns falsely about that, -Wrestrict)
    x.shape = {256, 256};
    m.tensors.push_back(x);
  }
  return m;
}

// The backend-neutral part: iterations of the executor until `fail_at` (called by the victim in
// iteration `at` after half its tensors are ready). Returns the iterations completed.
template <exec::Backend B, class Fail>
int iterate(exec::comms<B>& c, const model_spec& m, const exec::plan& pl, int iterations, bool victim, int at, Fail&& fail_at) {
  exec::executor<B> ex(c, m, pl);
  ex.setup();
  const int p = c.world.size(), r = c.world.rank();
  std::vector<std::vector<float>> g(m.tensors.size());
  std::vector<exec::gradient> views;
  for (std::size_t t = 0; t < g.size(); ++t) {
    g[t].resize(static_cast<std::size_t>(m.tensors[t].elements()));
    views.push_back({g[t].data(), dtype::f32, m.tensors[t].elements()});
  }
  const auto order = m.backward_order();
  for (int it = 0; it < iterations; ++it) {
    for (auto& x : g) std::fill(x.begin(), x.end(), static_cast<float>(r + 1));
    ex.begin_iteration(std::span<const exec::gradient>(views));
    for (std::size_t k = 0; k < order.size(); ++k) {
      if (victim && it == at && k == order.size() / 2) fail_at();
      ex.ready(order[k]);
    }
    (void)ex.finish();
    for (const auto& x : g)
      for (float v : x)
        if (v != static_cast<float>(p * (p + 1) / 2)) throw error("sum", "iteration " + std::to_string(it) + ": wrong sum");
  }
  return iterations;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    exec::mpi_session session(argc, argv);
    const options o = parse(argc, argv);
    auto c = exec::comms<exec::mpi_backend>::make(exec::mpi_backend::world(), 1);
    const int p = c.world.size(), r = c.world.rank();
    if (o.victim < 0 || o.victim >= p) throw error("--victim", std::to_string(o.victim) + " is not a rank of " + std::to_string(p));
    const model_spec m = sixteen();
    group_desc gd;
    gd.topology = topo::ring::value;
    gd.fusion = fusion_value{std::uint64_t{1} << 20, std::uint64_t{1} << 20};
    const auto pl = exec::compile_plan(m, zoo::local(p), uniform_strategy(m, gd, "ring-1MiB"), exec::layout{p, 1});
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const int n = iterate(c, m, pl, o.iterations, r == o.victim, o.iteration, [&] {
        std::printf("rank %d: %s now (pid %d)\n", r, o.mode == "kill" ? "SIGKILL" : o.mode == "stop" ? "SIGSTOP" : "_Exit(3)",
                    static_cast<int>(getpid()));
        std::fflush(stdout);
        if (o.mode == "kill") std::raise(SIGKILL);
        else if (o.mode == "stop") std::raise(SIGSTOP);
        else std::_Exit(3);
      });
      std::printf("rank %d: completed %d iterations\n", r, n);
      return 0;
    } catch (const autosync::error& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("rank %d: failed after %.1f s: %s\n", r, s, e.what());
      std::fflush(stdout);
      c.world.abort("rank " + std::to_string(r) + " cannot go on: " + e.field());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank_failure: %s\n", e.what());
    return 2;
  }
}
