// tests/mpi/fault/random_faults.cpp — one random job with one random fault (a property test; the
// driver random-faults.sh runs many seeds and checks the property).
//
//   autosync_mpi_random_faults --describe --seed S        prints "ranks N fault F victim V" (no MPI)
//   mpirun -np N autosync_mpi_random_faults --seed S --dir D
//
// Everything is drawn from the seed, the same on every rank: a random small model and a random
// valid strategy (tests/common/random_strategies.hpp: every architecture, topology, partitioner,
// placement, fusion cap, schedule and compression), 2..8 ranks, 1 or 2 per node, 0 or 1
// dedicated server, 2..4 iterations of integer-valued gradients (exact in every wire dtype), and
// one fault on one rank (the victim), fault = seed % 6:
//   delay       before ready() of a random tensor of a random iteration, the victim sleeps
//               2 * AUTOSYNC_TIMEOUT_S + 1 s: its peers' waits time out first;
//   kill        raise(SIGKILL) before ready() of a random tensor, or before finish();
//   strategy    the victim's strategy differs in one field of one group (fusion cap, schedule
//               or compression): setup()'s handshake;
//   truncated   every rank writes the strategy with io::save_strategy_file and loads it back with
//               io::load_strategy_file; the victim's file is cut short at a random byte first;
//   twice       the victim calls ready() again for a tensor already ready (at a random later
//               point of the iteration);
//   never       the victim never calls ready() for one tensor, then calls finish().
// Each rank checks every element of every iteration against the exact sum (computed locally:
// every rank knows every rank's gradients). Output, one line each, for the driver:
//   "rank R: fault F injected at E"   (E: seconds since the epoch, when the victim injects)
//   "rank R: exact sums, I iterations" (a rank that finished and checked every sum)
//   "rank R: WRONG SUM ..."            (a rank whose sums differ: the property is broken)
//   "rank R: failed after T s: <error>" then Backend::abort (the job ends non-zero; after a
//                                      timeout 1 s later, so every rank that timed out reports)
#include <autosync/error.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/io/json.hpp>

// GCC 12 reports a false -Wrestrict on `"x" + std::string` once inlined (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "../../common/random_strategies.hpp"
#include "../../common/element_bytes.hpp"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace autosync;
using namespace autosync::exec;
using autosync::testing::load;
using autosync::testing::store;

enum class fault { delay, kill, strategy, truncated, twice, never };
constexpr const char* fault_names[] = {"delay", "kill", "strategy", "truncated", "twice", "never"};

// The job a seed describes (every rank draws the same).
struct job {
  std::uint64_t seed = 0;
  int ranks = 2, rpn = 1, dedicated = 0, iterations = 2;
  fault f = fault::delay;
  int victim = 0;
  int at_iteration = 0;     // delay, kill, twice, never
  std::size_t at_tensor = 0;  // index into the backward order; kill: == tensors means before finish()
  std::size_t again = 0;    // twice: the second ready() comes before backward position `again`
  testing::random_case rc;
  strategy_desc other;      // strategy: the victim's
  std::size_t cut = 0;      // truncated: bytes kept (set once the text is known)
  std::uint32_t cut_draw = 0;
};

job draw(std::uint64_t seed) {
  job j;
  j.seed = seed;
  std::mt19937 rng(static_cast<std::uint32_t>(seed * 2654435761u + 17u));
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  j.f = static_cast<fault>(seed % 6);
  j.ranks = 2 + pick(7);
  j.rpn = (j.ranks % 2 == 0 && pick(2) == 0) ? 2 : 1;
  j.dedicated = pick(3) == 0 ? 1 : 0;
  j.iterations = 2 + pick(3);
  j.victim = pick(j.ranks);
  const auto cl = testing::make_cluster(j.ranks / j.rpn, j.rpn, j.dedicated);
  j.rc = testing::random_strategy(rng, cl.server_count());
  const auto T = j.rc.model.tensors.size();
  j.at_iteration = pick(j.iterations);
  // kill may also strike before finish(); the others need a tensor to act on
  j.at_tensor = static_cast<std::size_t>(pick(static_cast<int>(j.f == fault::kill ? T + 1 : T)));
  if (j.at_tensor < T) j.again = j.at_tensor + 1 + static_cast<std::size_t>(pick(static_cast<int>(T - j.at_tensor)));  // in (at, T]
  j.cut_draw = static_cast<std::uint32_t>(rng());
  if (j.f == fault::strategy) {
    // one field of one group differs (the plan's strategy fingerprint must change)
    const auto base = compile_plan(j.rc.model, cl, j.rc.strategy, layout{j.ranks, j.rpn}).strategy_fingerprint;
    const std::uint64_t caps[] = {0, 16, 100, 1000, unbounded_bytes};
    for (int tries = 0;; ++tries) {
      j.other = j.rc.strategy;
      auto& g = j.other.groups[static_cast<std::size_t>(pick(static_cast<int>(j.other.groups.size())))];
      switch (pick(3)) {
        case 0: g.fusion.cap_bytes = g.fusion.first_cap_bytes = caps[pick(5)]; break;
        case 1: g.schedule = static_cast<schedule_kind>(1 - static_cast<int>(g.schedule)); break;
        default: g.compression = static_cast<compression_id>((static_cast<int>(g.compression) + 1 + pick(2)) % 3); break;
      }
      if (compile_plan(j.rc.model, cl, j.other, layout{j.ranks, j.rpn}).strategy_fingerprint != base) break;
      if (tries > 100) throw error("seed", "no different strategy found for seed " + std::to_string(seed));
    }
  }
  return j;
}

// --- gradients: integers in [-4, 4] (zero on a sparse tensor's untouched rows) -----------------
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
int value(std::uint64_t seed, int rank, const tensor& t, std::size_t ti, std::int64_t e, int iter) {
  auto key = [&](std::int64_t x) {
    return mix(mix(mix(mix(seed + 1) ^ static_cast<std::uint64_t>(rank)) ^ ti) ^ static_cast<std::uint64_t>(x) ^
               (static_cast<std::uint64_t>(iter) << 40));
  };
  if (t.sparse && key(-1 - e / t.slice_elements(0)) % 3 == 0) return 0;
  return static_cast<int>(key(e) % 9) - 4;
}

double epoch_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void injected(const job& j, int r) {
  std::printf("rank %d: fault %s injected at %.3f\n", r, fault_names[static_cast<int>(j.f)], epoch_now());
  std::fflush(stdout);
}

struct options {
  std::uint64_t seed = 1;
  bool describe = false;
  std::string dir = ".";
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--describe") { o.describe = true; continue; }
    if (i + 1 >= argc) throw error(a, "needs a value");
    const std::string v = argv[++i];
    if (a == "--seed") o.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--dir") o.dir = v;
    else throw error(a, "unknown option (--seed, --dir, --describe)");
  }
  return o;
}

// Seconds a rank whose wait timed out lets pass before it ends the job. Waits form chains (rank 2
// waits for rank 4, which waits for the stuck rank 5); the first to time out may be rank 2, which
// names rank 4. Holding the abort a moment lets every survivor that timed out report, rank 4's
// error naming rank 5 among them.
constexpr double report_grace = 1.0;

// Prints the failure and ends the job: called where the executor is still alive (its destructor
// would join the communication thread, which may be waiting on a peer for up to the timeout; the
// report would come that much later). A timeout (the field names a rank) ends the job after
// report_grace, any other error at once.
[[noreturn]] void fail(comms<mpi_backend>& c, std::chrono::steady_clock::time_point t0, const autosync::error& e) {
  const int r = c.world.rank();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("rank %d: failed after %.3f s: %s\n", r, s, e.what());
  std::fflush(stdout);
  if (e.field().rfind("rank ", 0) == 0) std::this_thread::sleep_for(std::chrono::duration<double>(report_grace));
  c.world.abort("rank " + std::to_string(r) + " cannot go on: " + e.field());
}

// The iterations, on a set-up executor; throws autosync::error (reported by the caller while the
// executor is alive).
void body(const job& j, comms<mpi_backend>& c, executor<mpi_backend>& ex, int r, int p, bool victim) {
  const auto& m = j.rc.model;
  ex.setup();
  const auto order = m.backward_order();
  for (int it = 0; it < j.iterations; ++it) {
    std::vector<std::vector<unsigned char>> bytes;
    std::vector<gradient> grads;
    for (std::size_t t = 0; t < m.tensors.size(); ++t) {
      const auto& x = m.tensors[t];
      bytes.emplace_back(static_cast<std::size_t>(x.elements()) * size_of(x.type));
      for (std::int64_t e = 0; e < x.elements(); ++e)
        store(bytes.back().data() + static_cast<std::size_t>(e) * size_of(x.type), x.type, value(j.seed, r, x, t, e, it));
    }
    for (std::size_t t = 0; t < m.tensors.size(); ++t) grads.push_back(gradient{bytes[t].data(), m.tensors[t].type, m.tensors[t].elements()});
    ex.begin_iteration(std::span<const gradient>(grads));
    const bool here = victim && it == j.at_iteration;
    for (std::size_t k = 0; k <= order.size(); ++k) {
      if (here && k == j.at_tensor) {
        if (j.f == fault::delay) {
          injected(j, r);
          std::this_thread::sleep_for(std::chrono::duration<double>(2.0 * mpi_detail::default_timeout() + 1.0));
        } else if (j.f == fault::kill) {
          injected(j, r);
          std::raise(SIGKILL);
        }
      }
      if (here && j.f == fault::twice && k == j.again) {
        injected(j, r);
        ex.ready(order[j.at_tensor]);  // the second time
      }
      if (k == order.size()) break;
      if (here && j.f == fault::never && k == j.at_tensor) {
        injected(j, r);
        continue;
      }
      ex.ready(order[k]);
    }
    (void)ex.finish();
    for (std::size_t t = 0; t < m.tensors.size(); ++t) {
      const auto& x = m.tensors[t];
      for (std::int64_t e = 0; e < x.elements(); ++e) {
        int want = 0;
        for (int q = 0; q < p; ++q) want += value(j.seed, q, x, t, e, it);
        const double got = load(bytes[t].data() + static_cast<std::size_t>(e) * size_of(x.type), x.type);
        if (got != static_cast<double>(want)) {
          std::printf("rank %d: WRONG SUM seed %llu iteration %d tensor %s element %lld: got %.9g, want %d\n", r,
                      static_cast<unsigned long long>(j.seed), it, x.name.c_str(), static_cast<long long>(e), got, want);
          std::fflush(stdout);
          c.world.abort("rank " + std::to_string(r) + " computed a wrong sum");
        }
      }
    }
  }
}

// The job on this rank; returns normally only when every sum of every iteration was exact.
void run(const job& j, const options& o, comms<mpi_backend>& c, std::chrono::steady_clock::time_point t0) {
  const int p = c.world.size(), r = c.world.rank();
  if (p != j.ranks) throw error("ranks", "seed " + std::to_string(j.seed) + " wants " + std::to_string(j.ranks) + " ranks, the job has " + std::to_string(p));
  const bool victim = r == j.victim;
  const auto& m = j.rc.model;
  const auto cl = testing::make_cluster(j.ranks / j.rpn, j.rpn, j.dedicated);
  strategy_desc s = victim && j.f == fault::strategy ? j.other : j.rc.strategy;
  if (j.f == fault::truncated) {
    // through the real writer and loader, one file per rank
    const auto path = std::filesystem::path(o.dir) / ("strategy." + std::to_string(j.seed) + "." + std::to_string(r) + ".json");
    io::save_strategy_file(path, s);
    if (victim) {
      std::string text;
      {
        std::ifstream in(path, std::ios::binary);
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
      const auto last = text.find_last_of('}');  // keep at most everything before the final brace
      const auto keep = static_cast<std::size_t>(j.cut_draw % (last + 1));
      std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(keep));
      std::printf("rank %d: %s cut to %zu of %zu bytes\n", r, path.filename().string().c_str(), keep, text.size());
      injected(j, r);
    }
    s = io::load_strategy_file(path, m, cl);
    std::filesystem::remove(path);
  }
  if (victim && j.f == fault::strategy) injected(j, r);
  executor<mpi_backend> ex(c, m, compile_plan(m, cl, s, layout{j.ranks, j.rpn}));
  try {
    body(j, c, ex, r, p, victim);
  } catch (const autosync::error& e) {
    fail(c, t0, e);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    if (o.describe) {
      const job j = draw(o.seed);
      std::printf("ranks %d fault %s victim %d\n", j.ranks, fault_names[static_cast<int>(j.f)], j.victim);
      return 0;
    }
    mpi_session session(argc, argv);
    const job j = draw(o.seed);
    auto c = comms<mpi_backend>::make(mpi_backend::world(), j.rpn);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      run(j, o, c, t0);
    } catch (const autosync::error& e) {
      fail(c, t0, e);
    }
    std::printf("rank %d: exact sums, %d iterations\n", c.world.rank(), j.iterations);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "random_faults: %s\n", e.what());
    return 2;
  }
}
