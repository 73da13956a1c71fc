// The executor on MPI (run with mpirun -np N, N in 2 3 4 8): random small models (odd sizes,
// one-element tensors, primes, non-multiples of the rank count, 2-D tensors partitioned along
// axis 1, sparse embeddings) under random strategies drawn over every architecture x topology
// x partitioner x placement x replication x fusion cap x schedule x compression x packing
// (automatic, never: buckets summed on the tensors where they lie, always), with
// ranks_per_node 1 and 2, co-located and dedicated servers:
//   - integer-valued gradients: every bucket (compressed ones too: the values are exact in the
//     wire formats) gives exactly the reference sum, two iterations in a row, whatever order
//     each rank calls ready() in;
//   - real-valued gradients through fp16 / bf16: within compress.hpp's compressed_sum_bound;
//   - averaging;
//   - a strategy, a model or a layout that differs on one rank: setup() throws on EVERY rank,
//     naming the rank and the group, and the ranks go on (no hang);
//   - argument errors name their field.
// Every rank computes every rank's gradients (a hash of rank, tensor, element, iteration), so
// the reference sum needs no communication. Runs on the tests/mpi harness (harness.hpp).
#include "harness.hpp"

#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>

// GCC 12 reports a false -Wrestrict on `"x" + std::string` once inlined (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "../common/random_strategies.hpp"
#include "../common/element_bytes.hpp"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

// CHECK with a printf-style message (the harness' CHECK prints the expression only).
#define EXPECT(cond, ...)                                                                  \
  do {                                                                                     \
    ++::autosync::mpitest::st().checks;                                                    \
    if (!(cond)) {                                                                         \
      char autosync_msg_[600];                                                             \
      std::snprintf(autosync_msg_, sizeof autosync_msg_, __VA_ARGS__);                     \
      ::autosync::mpitest::fail(__FILE__, __LINE__, std::string("EXPECT(" #cond ") failed: ") + autosync_msg_); \
    }                                                                                      \
  } while (0)

// --- models, clusters, strategies -------------------------------------------------------------
using namespace autosync::testing;

// --- gradients ----------------------------------------------------------------------------------
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
std::uint64_t key(std::uint64_t seed, int rank, std::size_t t, std::int64_t e, int iter) {
  return mix(mix(mix(mix(seed + 1) ^ static_cast<std::uint64_t>(rank)) ^ t) ^ static_cast<std::uint64_t>(e) ^ (static_cast<std::uint64_t>(iter) << 40));
}
// Rank `rank`'s gradient element: an integer in [-4, 4] (sparse: zero on untouched rows), or a
// real value in (-8, 8) when `real`.
double value(std::uint64_t seed, int rank, const tensor& t, std::size_t ti, std::int64_t e, int iter, bool real) {
  if (t.sparse) {
    const auto row = e / t.slice_elements(0);
    if (key(seed, rank, ti, -1 - row, iter) % 3 == 0) return 0.0;  // untouched row (differs per rank)
  }
  const auto k = key(seed, rank, ti, e, iter);
  if (real) return static_cast<double>(static_cast<float>((static_cast<double>(k >> 11) / 9007199254740992.0 - 0.5) * 16.0));
  return static_cast<double>(static_cast<int>(k % 9) - 4);
}

struct buffers {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<gradient> grads;
};


buffers fill(const model_spec& m, std::uint64_t seed, int rank, int iter, bool real) {
  buffers b;
  for (std::size_t t = 0; t < m.tensors.size(); ++t) {
    const auto& x = m.tensors[t];
    const auto n = x.elements();
    b.bytes.emplace_back(static_cast<std::size_t>(n) * size_of(x.type));
    for (std::int64_t e = 0; e < n; ++e)
      store(b.bytes.back().data() + static_cast<std::size_t>(e) * size_of(x.type), x.type, value(seed, rank, x, t, e, iter, real));
  }
  for (std::size_t t = 0; t < m.tensors.size(); ++t)
    b.grads.push_back(gradient{b.bytes[t].data(), m.tensors[t].type, m.tensors[t].elements()});
  return b;
}

// Marks every tensor ready: in backward order, or (per rank) shuffled.
template <class E>
void backward(E& ex, const model_spec& m, std::mt19937& rng, bool shuffle) {
  auto order = m.backward_order();
  if (shuffle) std::shuffle(order.begin(), order.end(), rng);
  for (auto t : order) ex.ready(t);
}

using mcomms = comms<mpi_backend>;

// What the random cases exercised (checked at the end: the draws must reach every path).
struct coverage {
  int kinds[4] = {}, topologies[4] = {}, compressed = 0, strided = 0, packed = 0, in_place = 0, ps_local = 0,
      ps_remote_server = 0, priority = 0, dedicated = 0, unpacked = 0, unpacked_strided = 0;
};

// One random case: `iters` iterations, checked against the reference.
void run_case(mcomms& c, std::uint64_t seed, int dedicated, bool real, bool average, coverage& g_cov) {
  const int p = c.world.size(), r = c.world.rank(), rpn = c.ranks_per_node;
  std::mt19937 rng(static_cast<std::uint32_t>(seed));  // the same draws on every rank
  const auto cl = make_cluster(p / rpn, rpn, dedicated);
  const auto rc = random_strategy(rng, cl.server_count(), real);
  const auto pl = compile_plan(rc.model, cl, rc.strategy, layout{p, rpn});
  // packing: automatic (the small random tensors mostly pack), never (every qualifying bucket
  // runs on the tensors where they lie), always
  const auto pk = static_cast<packing>(seed % 3);
  executor<mpi_backend> ex(c, rc.model, pl, executor_options{0.0, !real, average, pk});
  ex.setup();
  for (std::size_t i = 0; i < pl.buckets.size(); ++i) {
    const auto& b = pl.buckets[i];
    EXPECT(ex.unpacked(i) == executor<mpi_backend>::direct(b, pk) && (pk != packing::always || !ex.unpacked(i)), "seed %llu bucket %zu",
           (unsigned long long)seed, i);
    if (ex.unpacked(i)) {
      ++g_cov.unpacked;
      for (const auto& sg : b.segments) g_cov.unpacked_strided += !sg.contiguous();
    }
    ++g_cov.kinds[static_cast<int>(b.kind)];
    if (b.kind == step_kind::all_reduce || b.kind == step_kind::sharded) ++g_cov.topologies[static_cast<int>(b.topology.kind)];
    g_cov.compressed += b.compressed;
    g_cov.in_place += b.in_place();
    g_cov.packed += !b.in_place();
    for (const auto& sg : b.segments) g_cov.strided += !sg.contiguous();
    g_cov.ps_local += b.local;
    g_cov.ps_remote_server += b.server_rank > 0;
  }
  g_cov.priority += pl.any_priority;
  g_cov.dedicated += dedicated > 0;
  std::mt19937 local(static_cast<std::uint32_t>(seed * 31 + static_cast<std::uint64_t>(r)));  // differs per rank
  const int iters = real ? 1 : 2;
  for (int it = 0; it < iters; ++it) {
    auto b = fill(rc.model, seed, r, it, real);
    ex.begin_iteration(std::span<const gradient>(b.grads));
    backward(ex, rc.model, local, local() % 2 == 0);
    const auto timing = ex.finish();
    EXPECT(timing.buckets == pl.buckets.size(), "seed %llu: %zu buckets run, plan has %zu", (unsigned long long)seed, timing.buckets,
           pl.buckets.size());
    EXPECT(timing.sync >= 0.0 && timing.exposed >= 0.0 && timing.total >= timing.exposed, "seed %llu: timing", (unsigned long long)seed);
    EXPECT(pl.any_priority == (timing.rounds > 0), "seed %llu: rounds %zu", (unsigned long long)seed, timing.rounds);
    // the wire dtype of each tensor element (for the bound)
    for (std::size_t t = 0; t < rc.model.tensors.size(); ++t) {
      const auto& x = rc.model.tensors[t];
      std::vector<std::int8_t> wire(static_cast<std::size_t>(x.elements()), -1);
      for (auto bi : pl.feeds[t])
        for (const auto& sg : pl.buckets[bi].segments)
          if (sg.tensor == t)
            for (std::int64_t k = 0; k < sg.blocks; ++k)
              for (std::int64_t e = 0; e < sg.block; ++e)
                wire[static_cast<std::size_t>(sg.offset + k * sg.stride + e)] =
                    pl.buckets[bi].compressed ? static_cast<std::int8_t>(pl.buckets[bi].wire) : -1;
      int reported = 0;
      for (std::int64_t e = 0; e < x.elements(); ++e) {
        double sum = 0.0, sum_abs = 0.0;
        for (int q = 0; q < p; ++q) {
          const double v = value(seed, q, x, t, e, it, real);
          sum += v;
          sum_abs += std::fabs(v);
        }
        const double got = load(b.bytes[t].data() + static_cast<std::size_t>(e) * size_of(x.type), x.type);
        double want = average ? sum / p : sum;
        double tol = 0.0;
        if (average) tol = 1e-6 * std::fabs(want) + (x.type == dtype::f16 || x.type == dtype::bf16 ? 0.01 * std::fabs(want) : 0.0);
        const auto w = wire[static_cast<std::size_t>(e)];
        if (real && w >= 0) {
          tol = compressed_sum_bound(static_cast<dtype>(w), p, sum_abs);
          if (average) tol = tol / p + 1e-6 * std::fabs(want);
        }
        const bool ok = std::fabs(got - want) <= tol;
        if (ok || reported++ < 3)  // the first three failures of a tensor are printed
          EXPECT(ok, "seed %llu rpn %d iter %d tensor %zu (%s %s) element %lld: got %.9g, want %.9g (tol %.3g)",
                 (unsigned long long)seed, rpn, it, t, x.sparse ? "sparse" : "dense", std::string(name_of(x.type)).c_str(),
                 (long long)e, got, want, tol);
      }
    }
  }
}

// Ranks given different strategies: setup() throws on every rank, naming rank and group.
void check_mismatch(mcomms& c) {
  const int p = c.world.size(), r = c.world.rank(), rpn = c.ranks_per_node;
  model_spec m;
  m.name = "mm";
  for (int i = 0; i < 5; ++i) {
    tensor t;
    t.name = "w" + std::to_string(i);
    t.shape = {3 + i, 2};
    m.tensors.push_back(t);
  }
  const auto cl = make_cluster(p / rpn, rpn, 0);
  strategy_desc s;
  s.name = "four";
  s.groups.resize(4);
  s.groups[1].topology = topo::tree::value;
  s.groups[2].architecture = architecture_kind::parameter_server;
  s.groups[3].fusion = {unbounded_bytes, unbounded_bytes};
  for (int i = 0; i < 5; ++i) s.assignments.push_back({"w" + std::to_string(i), i % 4, 0, {}});
  const int odd = p - 1;  // the rank that differs

  for (int v = 0; v < 5; ++v) {
    auto ms = s;
    auto mm = m;
    std::string expect;
    switch (v) {
      case 0:  // group 3's fusion cap differs
        if (r == odd) ms.groups[3].fusion = {1000, 1000};
        expect = "strategy mismatch: rank " + std::to_string(odd) + " differs from rank 0 at group 3";
        break;
      case 1:  // w1 moved from group 1 to group 2: group 1 differs first
        if (r == odd) ms.assignments[1].group = 2;
        expect = "strategy mismatch: rank " + std::to_string(odd) + " differs from rank 0 at group 1";
        break;
      case 2:  // one group more, holding w4 (which leaves group 0: group 0 differs first)
        if (r == odd) {
          ms.groups.push_back(group_desc{});
          ms.assignments[4].group = 4;
        }
        expect = "strategy mismatch: rank " + std::to_string(odd) + " differs from rank 0 at group 0";
        break;
      case 3:  // a model shape differs
        if (r == odd) mm.tensors[2].shape = {5, 3};
        expect = "model mismatch: rank " + std::to_string(odd) + " differs from rank 0";
        break;
      case 4:  // rank 0 is the odd one: the reference is the record most ranks share (rank 1's)
        if (r == 0) ms.groups[3].fusion = {1000, 1000};
        expect = p == 2 ? "strategy mismatch: rank 1 differs from rank 0 at group 3" : "strategy mismatch: rank 0 differs from rank 1 at group 3";
        break;
    }
    const auto pl = compile_plan(mm, cl, ms, layout{p, rpn});
    executor<mpi_backend> ex(c, mm, pl, {});
    std::string got = "no error";
    try {
      ex.setup();
    } catch (const autosync::error& e) {
      got = e.what();
    }
    EXPECT(got.find(expect) != std::string::npos, "mismatch variant %d: got \"%s\", want \"%s\"", v, got.c_str(), expect.c_str());
    c.world.barrier();  // every rank got here: nobody hangs
  }
  // identical inputs: no error, and a plain iteration afterwards works
  const auto pl = compile_plan(m, cl, s, layout{p, rpn});
  executor<mpi_backend> ex(c, m, pl, {});
  ex.setup();
  std::vector<std::vector<float>> g(m.tensors.size());
  std::vector<gradient> gr;
  for (std::size_t t = 0; t < m.tensors.size(); ++t) {
    g[t].assign(static_cast<std::size_t>(m.tensors[t].elements()), static_cast<float>(r + 1));
    gr.push_back(gradient{g[t].data(), dtype::f32, m.tensors[t].elements()});
  }
  ex.begin_iteration(std::span<const gradient>(gr));
  for (std::size_t t = 0; t < m.tensors.size(); ++t) ex.ready(t);
  (void)ex.finish();
  const float want = static_cast<float>(p * (p + 1) / 2);
  for (const auto& v : g)
    for (float x : v) EXPECT(x == want, "after the handshake: got %g want %g", x, want);
}

// Argument errors name their field (no communication involved).
void check_errors(mcomms& c) {
  const int p = c.world.size(), rpn = c.ranks_per_node;
  model_spec m;
  m.name = "err";
  tensor t;
  t.name = "x";
  t.shape = {7};
  m.tensors.push_back(t);
  const auto cl = make_cluster(p / rpn, rpn, 0);
  const auto s = uniform_strategy(m, group_desc{}, "u");
  const auto pl = compile_plan(m, cl, s, layout{p, rpn});
  auto field = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const autosync::error& e) {
      return e.field();
    }
    return "no error";
  };
  const auto other = compile_plan(m, cl, s, layout{p, p == rpn ? 1 : (p % 2 == 0 && rpn == 1 ? 2 : 1)});
  if (!(other.ranks == pl.ranks)) EXPECT(field([&] { executor<mpi_backend> e(c, m, other, {}); }) == "comms", "layout check");
  model_spec m2 = m;
  m2.tensors[0].shape = {8};
  EXPECT(field([&] { executor<mpi_backend> e(c, m2, pl, {}); }) == "plan", "model check");
  std::vector<float> buf(7, 1.0f);
  std::vector<gradient> g{gradient{buf.data(), dtype::f32, 7}};
  {
    // a gradient that does not fit fails the executor: the other ranks may have begun the
    // iteration, and this rank's next one would meet it (a later begin_iteration throws)
    executor<mpi_backend> e1(c, m, pl, {});
    EXPECT(field([&] { e1.begin_iteration(std::span<const gradient>(g)); }) == "setup", "begin before setup");
    e1.setup();
    std::vector<gradient> bad{gradient{buf.data(), dtype::f32, 6}};
    EXPECT(field([&] { e1.begin_iteration(std::span<const gradient>(bad)); }) == "grads[0].count", "count");
    EXPECT(field([&] { e1.begin_iteration(std::span<const gradient>(g)); }) == "executor", "failed after a bad count");
  }
  {
    executor<mpi_backend> e2(c, m, pl, {});
    e2.setup();
    std::vector<gradient> bad{gradient{buf.data(), dtype::f64, 7}};
    EXPECT(field([&] { e2.begin_iteration(std::span<const gradient>(bad)); }) == "grads[0].type", "type");
  }
  executor<mpi_backend> ex(c, m, pl, {});
  ex.setup();
  EXPECT(field([&] { ex.ready(0); }) == "ready", "ready outside an iteration");
  EXPECT(field([&] { (void)ex.finish(); }) == "finish", "finish outside an iteration");
  // the span<span<T>> form
  std::vector<std::span<float>> spans{std::span<float>(buf)};
  ex.begin_iteration(std::span<std::span<float>>(spans));
  EXPECT(field([&] { ex.ready(1); }) == "tensor", "ready of a tensor that does not exist");
  ex.ready(0);
  (void)ex.finish();
  for (float x : buf) EXPECT(x == static_cast<float>(p), "span form sum: %g", x);
}

// ready() twice for one tensor abandons the iteration before it throws: the rest of the iteration
// is refused (ready, finish) and the executor is failed. One bucket holds both tensors, so no
// bucket is ready when the second call comes, on any rank (the ranks agree on what ran: nothing).
void check_ready_twice(mcomms& c) {
  const int p = c.world.size(), rpn = c.ranks_per_node;
  model_spec m;
  m.name = "twice";
  for (int i = 0; i < 2; ++i) {
    tensor t;
    t.name = i == 0 ? "a" : "b";
    t.shape = {5};
    m.tensors.push_back(t);
  }
  group_desc g;
  g.fusion = {unbounded_bytes, unbounded_bytes};
  const auto pl = compile_plan(m, make_cluster(p / rpn, rpn, 0), uniform_strategy(m, g, "one"), layout{p, rpn});
  REQUIRE(pl.buckets.size() == 1);
  executor<mpi_backend> ex(c, m, pl, {});
  ex.setup();
  std::vector<float> a(5, 1.0f), b(5, 2.0f);
  std::vector<gradient> gr{gradient{a.data(), dtype::f32, 5}, gradient{b.data(), dtype::f32, 5}};
  ex.begin_iteration(std::span<const gradient>(gr));
  ex.ready(0);
  std::string what = "no error", fld;
  try {
    ex.ready(0);
  } catch (const autosync::error& e) {
    what = e.what();
    fld = e.field();
  }
  EXPECT(fld == "tensor" && what.find("tensor 'a' was already marked ready") != std::string::npos &&
             what.find("abandoned") != std::string::npos,
         "ready twice: '%s'", what.c_str());
  auto field = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const autosync::error& e) {
      return e.field();
    }
    return "no error";
  };
  EXPECT(field([&] { ex.ready(1); }) == "ready", "ready() after the abandoned iteration");
  EXPECT(field([&] { (void)ex.finish(); }) == "finish", "finish() after the abandoned iteration");
  EXPECT(field([&] { ex.begin_iteration(std::span<const gradient>(gr)); }) == "executor", "the executor is failed");
  for (float x : a) EXPECT(x == 1.0f, "a was touched: %g", x);
  for (float x : b) EXPECT(x == 2.0f, "b was touched: %g", x);
  c.world.barrier();
}

int world_size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// Every case runs with ranks_per_node 1 and, when it divides the world, 2.
template <class F>
void for_each_layout(F f) {
  const int p = world_size();
  for (int rpn : {1, 2}) {
    if (p % rpn != 0) continue;
    CONTEXT("ranks_per_node " << rpn);
    auto c = mcomms::make(mpi_backend::world(), rpn);
    f(c, rpn);
  }
}

// The draws must reach every path they claim to test.
void check_coverage(const coverage& v, bool real) {
  for (int k = 0; k < 4; ++k) EXPECT(v.kinds[k] > 0, "no bucket of step kind %s ran", std::string(name_of(static_cast<step_kind>(k))).c_str());
  for (int k = 0; k < 4; ++k) EXPECT(v.topologies[k] > 0, "no bucket of topology %d ran", k);
  EXPECT(v.compressed > 0 && v.strided > 0 && v.packed > 0 && v.ps_local > 0 && v.ps_remote_server > 0 && v.priority > 0 &&
             v.dedicated > 0 && (real || (v.in_place > 0 && v.unpacked > 0 && v.unpacked_strided > 0)),
         "coverage: compressed %d strided %d packed %d in place %d local %d remote server %d priority %d dedicated %d unpacked %d "
         "(strided %d)",
         v.compressed, v.strided, v.packed, v.in_place, v.ps_local, v.ps_remote_server, v.priority, v.dedicated, v.unpacked,
         v.unpacked_strided);
}

}  // namespace

TEST_CASE("executor: argument errors name their field") {
  for_each_layout([](mcomms& c, int) { check_errors(c); });
}

TEST_CASE("executor: ready() twice abandons the iteration before it throws") {
  for_each_layout([](mcomms& c, int) { check_ready_twice(c); });
}

TEST_CASE("executor: a strategy or model that differs on one rank fails setup() on every rank, no hang") {
  for_each_layout([](mcomms& c, int) { check_mismatch(c); });
}

// packing::automatic by hand: a bucket of 4 tensors of 16 Ki f32 (64 KiB runs) runs on the
// tensors where they lie, one of 64 tensors of 16 f32 (64-byte runs) is packed; a tree bucket and
// a compressed bucket are packed whatever the runs; packing::always packs. Exact sums each time.
void check_packing_choice(mcomms& c) {
  const int p = c.world.size(), r = c.world.rank(), rpn = c.ranks_per_node;
  struct variant {
    int tensors;
    std::int64_t elements;
    topology_value topo;
    packing pk;
    bool unpacked;
  };
  const topology_value ring{topology_kind::ring, topology_kind::ring, topology_kind::ring};
  const topology_value hd{topology_kind::halving_doubling, topology_kind::ring, topology_kind::ring};
  const topology_value tree{topology_kind::tree, topology_kind::ring, topology_kind::ring};
  const topology_value hier{topology_kind::hierarchical, topology_kind::ring, topology_kind::halving_doubling};
  for (const variant v : {variant{4, 16384, ring, packing::automatic, true}, variant{4, 16384, hd, packing::automatic, true},
                          variant{4, 16384, hier, packing::automatic, true}, variant{64, 16, ring, packing::automatic, false},
                          variant{64, 16, ring, packing::never, true}, variant{4, 16384, tree, packing::never, false},
                          variant{4, 16384, ring, packing::always, false}}) {
    CONTEXT("tensors " << v.tensors << " x " << v.elements << " topology " << static_cast<int>(v.topo.kind) << " packing "
                       << static_cast<int>(v.pk));
    model_spec m;
    m.name = "pack";
    for (int i = 0; i < v.tensors; ++i) {
      tensor t;
      t.name = std::to_string(i);
      t.name.insert(0, 1, 'w');  // (not "w" + ...: GCC 12 warns falsely about that, -Wrestrict)
      t.shape = {v.elements};
      m.tensors.push_back(t);
    }
    group_desc g;
    g.topology = v.topo;
    g.fusion = {unbounded_bytes, unbounded_bytes};
    const auto pl = compile_plan(m, make_cluster(p / rpn, rpn, 0), uniform_strategy(m, g, "one"), layout{p, rpn});
    REQUIRE(pl.buckets.size() == 1);
    executor<mpi_backend> ex(c, m, pl, executor_options{0.0, true, false, v.pk});
    ex.setup();
    EXPECT(ex.unpacked(0) == v.unpacked, "unpacked %d, want %d", int(ex.unpacked(0)), int(v.unpacked));
    std::vector<std::vector<float>> g2(m.tensors.size());
    std::vector<gradient> gr;
    for (std::size_t t = 0; t < g2.size(); ++t) {
      g2[t].resize(static_cast<std::size_t>(v.elements));
      for (std::size_t e = 0; e < g2[t].size(); ++e) g2[t][e] = static_cast<float>((r + 1) * static_cast<int>(1 + (t + e) % 5));
      gr.push_back(gradient{g2[t].data(), dtype::f32, v.elements});
    }
    ex.begin_iteration(std::span<const gradient>(gr));
    for (std::size_t t = 0; t < g2.size(); ++t) ex.ready(t);
    (void)ex.finish();
    long bad = 0;
    for (std::size_t t = 0; t < g2.size(); ++t)
      for (std::size_t e = 0; e < g2[t].size(); ++e) bad += g2[t][e] != static_cast<float>(p * (p + 1) / 2 * static_cast<int>(1 + (t + e) % 5));
    EXPECT(bad == 0, "%ld wrong sums", bad);
  }
}

TEST_CASE("executor: packing choice (runs on the tensors where they lie, or packed) and exact sums either way") {
  for_each_layout([](mcomms& c, int) { check_packing_choice(c); });
}

TEST_CASE("executor: random strategies, integer gradients: exact sums (two iterations, any ready() order)") {
  coverage cov;
  const int n = world_size() >= 8 ? 80 : 120;
  for_each_layout([&](mcomms& c, int rpn) {
    for (int k = 0; k < n; ++k) {
      const std::uint64_t seed = 1000u * static_cast<std::uint64_t>(rpn) + static_cast<std::uint64_t>(k);
      CONTEXT("seed " << seed);
      run_case(c, seed, k % 3 == 0 ? 1 + k % 2 : 0, false, k % 5 == 4, cov);  // a third with dedicated servers; some averaged
    }
  });
  check_coverage(cov, false);
}

TEST_CASE("executor: random strategies, real gradients through fp16/bf16: within compressed_sum_bound") {
  coverage cov;
  const int n = world_size() >= 8 ? 30 : 40;
  for_each_layout([&](mcomms& c, int rpn) {
    for (int k = 0; k < n; ++k) {
      const std::uint64_t seed = 5000u + 1000u * static_cast<std::uint64_t>(rpn) + static_cast<std::uint64_t>(k);
      CONTEXT("seed " << seed);
      run_case(c, seed, k % 4 == 0 ? 2 : 0, true, k % 3 == 2, cov);
    }
  });
  check_coverage(cov, true);
}
