// A fused-bucket all-reduce through autosync against plain MPI_Allreduce on the same bytes.
//
//   mpirun -np 4 bench_mpi_fused_allreduce [--min-bytes 1024] [--max-bytes 268435456]
//                                          [--budget-s 8] [--min-reps 3] [--max-reps 200]
//
// For every size S = 1 KiB, 4 KiB, ..., 256 MiB (x4 steps) three ways of summing S bytes of f32
// over the world are timed, interleaved repetition by repetition so that a noisy neighbour
// (other processes on the machine) hurts them alike:
//
//   exec_ring  the whole autosync path: a model of 4 f32 tensors that together fill S bytes,
//              one group {all_reduce, ring, bucket cap S} compiled to a plan of ONE fused
//              bucket; per repetition begin_iteration(), ready() in backward order, finish():
//              hand-off to the communication thread, ring all-reduce on the four tensors where
//              they lie ('direct': from 128 KiB, runs of >= 32 KiB) or packed ('packed', below).
//   exec_hd    the same with {all_reduce, halving_doubling}.
//   ring       exec::all_reduce(comms, buf, n, f32, topo::ring) on one contiguous buffer:
//              the ring schedule alone (backend send/recv steps, no packing, no thread).
//   MPI        MPI_Allreduce(MPI_IN_PLACE, ...) on MPI_COMM_WORLD (Open MPI picks its own
//              algorithm).
//
//   repetition k:  barrier | exec_ring | barrier | exec_hd | barrier | ring | barrier | MPI |
//                           ^ each rank times its own call; the repetition's time is the
//                             MAX over ranks (the collective ends when the last rank is done)
//
// Reported: the median over repetitions, in microseconds, and the ratios MPI/exec_ring,
// MPI/exec_hd and MPI/ring (1.0: as fast as MPI; the target is >= 0.95 from 1 MiB up for the
// better executor topology: a fused bucket through autosync costs at most 5% more than handing
// the same bytes to MPI directly).
//
// Before timing, every size is checked once: integer-valued inputs, exact sums on every rank
// for all three paths (the program exits 1 on a wrong sum). Repetitions per size: as many as
// fit in --budget-s seconds (estimated from a second warm-up of each path), clamped to
// [--min-reps, --max-reps]; every rank uses the count rank 0 computed.
#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/fusion.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/zoo/clusters.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace autosync;
using clock_type = std::chrono::steady_clock;

constexpr int tensors_per_bucket = 4;
enum method : int { m_executor, m_executor_hd, m_ring, m_mpi, methods };
constexpr std::array<const char*, methods> method_names{"executor", "executor_hd", "ring", "MPI_Allreduce"};

struct options {
  std::uint64_t min_bytes = 1024, max_bytes = std::uint64_t{256} << 20;
  double budget_s = 8.0;
  int min_reps = 3, max_reps = 200;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw error(a, "needs a value");
      return argv[++i];
    };
    auto number = [&](const std::string& v) {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(d > 0)) throw error(a, "'" + v + "' is not a positive number");
      return d;
    };
    if (a == "--min-bytes") o.min_bytes = static_cast<std::uint64_t>(number(value()));
    else if (a == "--max-bytes") o.max_bytes = static_cast<std::uint64_t>(number(value()));
    else if (a == "--budget-s") o.budget_s = number(value());
    else if (a == "--min-reps") o.min_reps = static_cast<int>(number(value()));
    else if (a == "--max-reps") o.max_reps = static_cast<int>(number(value()));
    else throw error(a, "unknown option (--min-bytes, --max-bytes, --budget-s, --min-reps, --max-reps)");
  }
  if (o.min_bytes < 4 * tensors_per_bucket) throw error("--min-bytes", "must be at least " + std::to_string(4 * tensors_per_bucket));
  if (o.max_bytes < o.min_bytes) throw error("--max-bytes", "must be >= --min-bytes");
  if (o.max_reps < o.min_reps) throw error("--max-reps", "must be >= --min-reps");
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string human(std::uint64_t b) {
  char s[32];
  if (b >= (1u << 20)) std::snprintf(s, sizeof s, "%llu MiB", static_cast<unsigned long long>(b >> 20));
  else std::snprintf(s, sizeof s, "%llu KiB", static_cast<unsigned long long>(b >> 10));
  return s;
}

// `tensors_per_bucket` f32 tensors of n / tensors_per_bucket elements (the last takes the rest).
model_spec bucket_model(std::size_t n) {
  model_spec m;
  m.name = "fused-" + std::to_string(n * 4);
  const std::size_t each = n / tensors_per_bucket;
  for (int t = 0; t < tensors_per_bucket; ++t) {
    tensor x;
    x.name = "t" + std::to_string(t);
    x.shape = {static_cast<std::int64_t>(t + 1 < tensors_per_bucket ? each : n - each * (tensors_per_bucket - 1))};
    m.tensors.push_back(x);
  }
  return m;
}

// One group: all-reduce on `topology`, every tensor in one bucket of exactly `bytes`.
strategy_desc one_bucket(const model_spec& m, std::uint64_t bytes, topology_value topology) {
  group_desc g;
  g.architecture = architecture_kind::all_reduce;
  g.topology = topology;
  g.fusion = fusion_value{bytes, bytes};
  return uniform_strategy(m, g, "fused-ring");
}

// Rank r's element i: small integers, so every partial sum is exact in f32.
float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(1 + i % 7)); }
float expected(int p, std::size_t i) { return static_cast<float>(p * (p + 1) / 2 * static_cast<int>(1 + i % 7)); }

template <class F>
double timed(F&& f) {
  const auto t0 = clock_type::now();
  f();
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

int run(int argc, char** argv) {
  const options o = parse(argc, argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm mpi_comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm);  // MPI's own path gets a communicator of its own
  auto c = exec::comms<exec::mpi_backend>::make(exec::mpi_backend::world(), p);
  const cluster_spec cluster = zoo::local(p);

  if (rank == 0) {
    std::printf("# fused-bucket all-reduce, %d ranks, f32, median of max-over-ranks per repetition (us)\n", p);
    std::printf("# exec_ring / exec_hd: the executor, %d tensors in one bucket, ring / halving-doubling (thread hand-off,\n"
                "#   the bucket summed on the tensors where they lie: 'direct', or packed: 'packed'); ring: exec::all_reduce\n"
                "#   on one contiguous buffer; MPI: MPI_Allreduce (Open MPI's own choice of algorithm)\n",
                tensors_per_bucket);
    std::printf("# ratio = MPI time / autosync time (>= 1: autosync faster; target >= 0.95 from 1 MiB up, best executor topology)\n");
    std::printf("# the last two columns: the same ratios on the fastest repetition of each (less sensitive to neighbours)\n");
    std::printf("%10s %6s %7s %12s %12s %12s %12s %9s %9s %9s   %9s %9s\n", "size", "reps", "bucket", "exec_ring_us", "exec_hd_us",
                "ring_us", "MPI_us", "MPI/ering", "MPI/ehd", "MPI/ring", "min:ering", "min:ehd");
    std::fflush(stdout);
  }

  bool target_met = true;
  for (std::uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
    const std::size_t n = static_cast<std::size_t>(bytes / 4);
    const model_spec m = bucket_model(n);
    exec::plan pl = exec::compile_plan(m, cluster, one_bucket(m, bytes, topo::ring::value), exec::layout{p, p});
    exec::plan pl_hd = exec::compile_plan(m, cluster, one_bucket(m, bytes, topo::halving_doubling::value), exec::layout{p, p});
    if (pl.buckets.size() != 1 || pl.buckets[0].in_place() || pl_hd.buckets.size() != 1)
      throw error("plan", "expected one bucket of several tensors for " + human(bytes) + ", got " + std::to_string(pl.buckets.size()));
    exec::executor<exec::mpi_backend> ex(c, m, std::move(pl)), ex_hd(c, m, std::move(pl_hd));
    ex.setup();
    ex_hd.setup();
    const bool unpacked = ex.unpacked(0);

    std::vector<float> grads(n), flat(n);
    std::vector<exec::gradient> views;
    std::size_t off = 0;
    for (const auto& t : m.tensors) {
      views.push_back({grads.data() + off, dtype::f32, t.elements()});
      off += static_cast<std::size_t>(t.elements());
    }
    const auto order = m.backward_order();
    auto run_executor = [&](exec::executor<exec::mpi_backend>& e) {
      e.begin_iteration(std::span<const exec::gradient>(views));
      for (auto t : order) e.ready(t);
      (void)e.finish();
    };
    auto run_ring = [&] { exec::all_reduce(c, flat.data(), n, dtype::f32, topo::ring::value); };
    auto run_mpi = [&] {
      if (MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, mpi_comm) != MPI_SUCCESS)
        throw error("MPI_Allreduce", "failed");
    };
    auto run_method = [&](int k) {
      if (k == m_executor) run_executor(ex);
      else if (k == m_executor_hd) run_executor(ex_hd);
      else if (k == m_ring) run_ring();
      else run_mpi();
    };

    // correctness (and warm-up): exact sums on every rank, every path
    std::array<double, methods> warm{};
    long wrong = 0;
    for (int k = 0; k < methods; ++k) {
      std::vector<float>& buf = k == m_executor || k == m_executor_hd ? grads : flat;
      for (std::size_t i = 0; i < n; ++i) buf[i] = value(rank, i);
      MPI_Barrier(MPI_COMM_WORLD);
      warm[static_cast<std::size_t>(k)] = timed([&] { run_method(k); });
      for (std::size_t i = 0; i < n; ++i)
        if (buf[i] != expected(p, i)) {
          if (wrong++ == 0)
            std::fprintf(stderr, "rank %d: %s, %s: element %zu is %g, expected %g\n", rank, method_names[static_cast<std::size_t>(k)],
                         human(bytes).c_str(), i, static_cast<double>(buf[i]), static_cast<double>(expected(p, i)));
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrong != 0) {
      if (rank == 0) std::fprintf(stderr, "wrong sums at %s: %ld elements over all ranks\n", human(bytes).c_str(), wrong);
      MPI_Comm_free(&mpi_comm);
      return 1;
    }
    // timing inputs: zeros stay zeros (no overflow, no denormals over hundreds of repetitions)
    std::fill(grads.begin(), grads.end(), 0.0f);
    std::fill(flat.begin(), flat.end(), 0.0f);

    // the first calls paid for page faults and connection set-up: estimate from a second round
    for (int k = 0; k < methods; ++k) {
      MPI_Barrier(MPI_COMM_WORLD);
      warm[static_cast<std::size_t>(k)] = timed([&] { run_method(k); });
    }
    MPI_Allreduce(MPI_IN_PLACE, warm.data(), methods, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double per_rep = 0;
    for (double w : warm) per_rep += w;
    int reps = static_cast<int>(std::clamp(o.budget_s / std::max(per_rep, 1e-9), double(o.min_reps), double(o.max_reps)));
    MPI_Bcast(&reps, 1, MPI_INT, 0, MPI_COMM_WORLD);

    std::vector<double> t(static_cast<std::size_t>(reps) * methods);
    for (int r = 0; r < reps; ++r)
      for (int k = 0; k < methods; ++k) {
        MPI_Barrier(MPI_COMM_WORLD);
        t[static_cast<std::size_t>(r) * methods + static_cast<std::size_t>(k)] = timed([&] { run_method(k); });
      }
    MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      std::array<double, methods> med{}, best{};
      for (int k = 0; k < methods; ++k) {
        std::vector<double> v;
        for (int r = 0; r < reps; ++r) v.push_back(t[static_cast<std::size_t>(r) * methods + static_cast<std::size_t>(k)]);
        med[static_cast<std::size_t>(k)] = median(v) * 1e6;
        best[static_cast<std::size_t>(k)] = *std::min_element(v.begin(), v.end()) * 1e6;
      }
      const double r_exec = med[m_mpi] / med[m_executor], r_hd = med[m_mpi] / med[m_executor_hd], r_ring = med[m_mpi] / med[m_ring];
      const bool checked = bytes >= (1u << 20), low = std::max(r_exec, r_hd) < 0.95;
      if (checked && low) target_met = false;
      std::printf("%10s %6d %7s %12.1f %12.1f %12.1f %12.1f %9.3f %9.3f %9.3f   %9.3f %9.3f%s\n", human(bytes).c_str(), reps,
                  unpacked ? "direct" : "packed", med[m_executor], med[m_executor_hd], med[m_ring], med[m_mpi], r_exec, r_hd, r_ring,
                  best[m_mpi] / best[m_executor], best[m_mpi] / best[m_executor_hd], checked && low ? "  < 0.95" : "");
      std::fflush(stdout);
    }
    if (bytes > o.max_bytes / 4) break;  // the next step would pass max_bytes (and must not overflow)
  }
  if (rank == 0)
    std::printf("# target MPI/executor >= 0.95 from 1 MiB up (best of ring, halving-doubling): %s\n",
                target_met ? "met" : "NOT met (rows marked < 0.95)");
  MPI_Comm_free(&mpi_comm);
  return 0;
}

}  // namespace

// An error on one rank ends the whole job (exec::run_mpi_job): the others would wait in a collective.
int main(int argc, char** argv) {
  return autosync::exec::run_mpi_job(argc, argv, "bench_mpi_fused_allreduce", [&] { return run(argc, argv); });
}
