// tests/mpi/compressors.cpp — the registered compressor family (include/autosync/compressors/)
// run from a strategy through the executor on MPI (ctest mpi.compressors.npN), each against its
// own guarantee, on odd sizes, one bucket and several, with every rank's result compared bit
// for bit:
//   topk, randomk   error feedback conserves the sum exactly: integer-valued gradients for a
//                   few iterations, then zero gradients until the residuals drain; the summed
//                   results equal the summed gradients exactly.
//   int8            every element within sum_r range_r / 510 + range(sum) / 510 (+ float slack)
//   qsgd, nuqsgd,   unbiased: the mean of T iterations on the same gradients is within
//   alq, amq        6 sqrt(sum_r ||v_r||^2 gap^2 / 4 / T) of the sum (gap: the widest level
//                   step; 1 for alq and amq, which refit their levels twice during the T
//                   iterations, from every rank's sample: the bit comparison checks that every
//                   rank fitted the same levels)
//   powersgd        exact (relative 1e-4) on gradients whose sum has rank <= r, and plain
//                   all-reduce before start_iteration; 1-D tensors exact on integer data.
#include <autosync/compressors/all.hpp>

#include "harness.hpp"
#include "same_bits.hpp"

#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>

#include "../common/random_strategies.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

model_spec odd_model() {
  model_spec m;
  m.name = "compressors";
  m.forward_flops = 1e6;
  const std::vector<std::vector<std::int64_t>> shapes = {{37, 23}, {23}, {19, 41}, {41}, {5, 3, 3}, {7}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    tensor t;
    t.name = "t" + std::to_string(i);
    t.shape = shapes[i];
    t.type = dtype::f32;
    m.tensors.push_back(t);
  }
  return m;
}

struct runner {
  comms<mpi_backend>& c;
  model_spec m;
  plan pl;
  executor<mpi_backend> ex;
  std::vector<std::vector<float>> g;
  runner(comms<mpi_backend>& cc, const model_spec& mm, const group_desc& grp)
      : c(cc), m(mm), pl(compile_plan(m, testing::make_cluster(cc.world.size(), 1, 0), uniform_strategy(m, grp, "compressors"), layout{cc.world.size(), 1})),
        ex(cc, m, pl, {}) {
    ex.setup();
    g.resize(m.tensors.size());
    for (std::size_t t = 0; t < m.tensors.size(); ++t) g[t].assign(static_cast<std::size_t>(m.tensors[t].elements()), 0.0f);
  }
  // g[t][i] = f(t, i) on this rank, then one iteration; g holds the result after.
  template <class F>
  void step(F&& f) {
    std::vector<gradient> gr;
    for (std::size_t t = 0; t < m.tensors.size(); ++t) {
      for (std::size_t i = 0; i < g[t].size(); ++i) g[t][i] = f(t, i);
      gr.push_back(gradient{g[t].data(), dtype::f32, m.tensors[t].elements()});
    }
    ex.begin_iteration(std::span<const gradient>(gr));
    for (auto t : m.backward_order()) ex.ready(t);
    (void)ex.finish();
  }
  // Whether every rank holds the same bits in g.
  bool same_everywhere() { return mpitest::same_on_every_rank(c.world, g); }
};

group_desc with(compression_value cv, std::uint64_t cap) {
  group_desc g;
  g.compression = cv;
  g.fusion = {cap, cap};
  return g;
}
compression_value named(std::string_view name, param_list p) { return compression_value{stable_id(name), p}; }

float integer_value(int rank, std::size_t t, std::size_t i, int iter) {
  return static_cast<float>(static_cast<int>((rank + 3) * 11 + t * 7 + i * 5 + iter * 13) % 41 - 20);
}

}  // namespace

TEST_CASE("compressors: topk and randomk conserve the sum exactly through error feedback") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size(), r = c.world.rank();
  const auto m = odd_model();
  for (const char* name : {"topk", "randomk"})
    for (double density : {0.05, 0.3})
      for (std::uint64_t cap : {std::uint64_t{1} << 20, std::uint64_t{1024}}) {
        CONTEXT(name << " density " << density << " cap " << cap);
        runner x(c, m, with(named(name, {density, 0, 0}), cap));
        std::vector<std::vector<double>> got(m.tensors.size()), want(m.tensors.size());
        for (std::size_t t = 0; t < m.tensors.size(); ++t) got[t].assign(x.g[t].size(), 0.0), want[t].assign(x.g[t].size(), 0.0);
        bool same = true;
        const int iters = 3, flush = 200;
        int it = 0;
        for (; it < iters + flush; ++it) {
          const bool data = it < iters;
          for (std::size_t t = 0; t < m.tensors.size(); ++t)
            for (std::size_t i = 0; i < x.g[t].size(); ++i)
              for (int q = 0; q < p && data; ++q) want[t][i] += integer_value(q, t, i, it);
          x.step([&](std::size_t t, std::size_t i) { return data ? integer_value(r, t, i, it) : 0.0f; });
          same = same && x.same_everywhere();
          if (it == 0) {  // it did sparsify: at most p k elements per bucket are non-zero
            std::size_t nonzero = 0, most = 0;
            for (const auto& v : x.g)
              for (float e : v) nonzero += e != 0.0f;
            for (const auto& b : x.pl.buckets) most += static_cast<std::size_t>(p) * exec::codecs::sparsify::k_of(static_cast<std::size_t>(b.elements), density);
            CHECK(nonzero <= most);
          }
          long off = 0;
          for (std::size_t t = 0; t < m.tensors.size(); ++t)
            for (std::size_t i = 0; i < x.g[t].size(); ++i) {
              got[t][i] += x.g[t][i];
              off += got[t][i] != want[t][i];
            }
          if (!data && off == 0) break;  // drained
        }
        CHECK(same);
        CHECK(it < iters + flush);
        long wrong = 0;
        for (std::size_t t = 0; t < m.tensors.size(); ++t)
          for (std::size_t i = 0; i < got[t].size(); ++i) wrong += got[t][i] != want[t][i];
        CHECK_EQ(wrong, 0L);
      }
}

TEST_CASE("compressors: int8 scatter-gather stays within its two-quantization bound") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size(), r = c.world.rank();
  const auto m = odd_model();
  auto value = [](int q, std::size_t t, std::size_t i) { return static_cast<float>(std::sin(0.37 * static_cast<double>(i + 1) * (q + 1) + static_cast<double>(t))); };
  for (double chunk : {1024.0, 7.0}) {
    CONTEXT("chunk " << chunk);
    runner x(c, m, with(named("int8", {chunk, 0, 0}), std::uint64_t{1} << 20));
    x.step([&](std::size_t t, std::size_t i) { return value(r, t, i); });
    CHECK(x.same_everywhere());
    // ranges of every rank's whole bucket and of the sum: bounds of any chunk in it
    double ranges = 0.0, smin = 1e300, smax = -1e300, worst = 0.0, scale = 0.0;
    for (int q = 0; q < p; ++q) {
      double mn = 1e300, mx = -1e300;
      for (std::size_t t = 0; t < m.tensors.size(); ++t)
        for (std::size_t i = 0; i < x.g[t].size(); ++i) mn = std::min(mn, double(value(q, t, i))), mx = std::max(mx, double(value(q, t, i)));
      ranges += mx - mn;
      scale += std::max(std::abs(mn), std::abs(mx));
    }
    for (std::size_t t = 0; t < m.tensors.size(); ++t)
      for (std::size_t i = 0; i < x.g[t].size(); ++i) {
        double s = 0.0;
        for (int q = 0; q < p; ++q) s += value(q, t, i);
        smin = std::min(smin, s), smax = std::max(smax, s);
        worst = std::max(worst, std::abs(static_cast<double>(x.g[t][i]) - s));
      }
    const double bound = ranges / 510.0 + (smax - smin) / 510.0 + 1e-5 * (scale + p);
    CONTEXT("worst " << worst << " bound " << bound);
    CHECK(worst <= bound);
    CHECK(worst > 0.0);  // it did quantize
  }
}

TEST_CASE("compressors: qsgd, nuqsgd, alq and amq are unbiased (the mean over iterations converges to the sum)") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size(), r = c.world.rank();
  const auto m = odd_model();
  auto value = [](int q, std::size_t t, std::size_t i) { return static_cast<float>(std::cos(0.21 * static_cast<double>(i + 2) + q + 0.5 * static_cast<double>(t))); };
  for (const char* name : {"qsgd", "nuqsgd", "alq", "amq"}) {
    const int L = 3, bucket = 64, T = 300;
    CONTEXT(name);
    const bool fitted = name[0] == 'a';
    runner x(c, m, with(named(name, {double(L), double(bucket), fitted ? 5.0 : 0.0}), std::uint64_t{1} << 20));  // refits at 5 and 100
    std::vector<std::vector<double>> mean(m.tensors.size());
    for (std::size_t t = 0; t < m.tensors.size(); ++t) mean[t].assign(x.g[t].size(), 0.0);
    bool same = true;
    for (int it = 0; it < T; ++it) {
      x.step([&](std::size_t t, std::size_t i) { return value(r, t, i); });
      same = same && x.same_everywhere();
      for (std::size_t t = 0; t < m.tensors.size(); ++t)
        for (std::size_t i = 0; i < x.g[t].size(); ++i) mean[t][i] += x.g[t][i] / double(T);
    }
    CHECK(same);
    if (fitted) {  // the refits ran when scheduled, and noted it
      std::vector<std::int64_t> at;
      for (const auto& n : x.ex.exchange_notes()) at.push_back(n.iteration);
      CHECK(at == std::vector<std::int64_t>{5, 100});
    }
    // the norm of each rank's whole bucket bounds that of any of its QSGD buckets
    double norms = 0.0;
    for (int q = 0; q < p; ++q)
      for (std::size_t t = 0; t < m.tensors.size(); ++t)
        for (std::size_t i = 0; i < x.g[t].size(); ++i) norms += double(value(q, t, i)) * value(q, t, i);
    const double gap = std::string_view(name) == "qsgd" ? 1.0 / L : std::string_view(name) == "nuqsgd" ? 0.5 : 1.0;
    const double bound = 6.0 * std::sqrt(norms * gap * gap / 4.0 / T) + 1e-5;
    double worst = 0.0;
    for (std::size_t t = 0; t < m.tensors.size(); ++t)
      for (std::size_t i = 0; i < x.g[t].size(); ++i) {
        double s = 0.0;
        for (int q = 0; q < p; ++q) s += value(q, t, i);
        worst = std::max(worst, std::abs(mean[t][i] - s));
      }
    CONTEXT("worst " << worst << " bound " << bound);
    CHECK(worst <= bound);
    CHECK(worst > 0.0);  // the mean of random draws is not the sum to the bit
  }
}

TEST_CASE("compressors: powersgd is exact on rank-1 gradients and all-reduces before its start") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size(), r = c.world.rank();
  const auto m = odd_model();
  // every matrix gradient is a_r u v^T (their sum has rank 1); 1-D tensors integer-valued
  auto value = [&](int q, std::size_t t, std::size_t i, int it) -> float {
    const auto& sh = m.tensors[t].shape;
    if (sh.size() < 2) return integer_value(q, t, i, it);
    const std::int64_t cols = m.tensors[t].elements() / sh[0];
    const auto row = static_cast<double>(static_cast<std::int64_t>(i) / cols), col = static_cast<double>(static_cast<std::int64_t>(i) % cols);
    return static_cast<float>((q + 1 + it) * std::sin(0.3 * row + 1.0 + static_cast<double>(t)) * std::cos(0.17 * col + 0.2));
  };
  for (std::uint64_t cap : {std::uint64_t{1} << 20, std::uint64_t{2048}}) {
    CONTEXT("cap " << cap);
    runner x(c, m, with(named("powersgd", {1, 2, 2}), cap));
    bool same = true;
    for (int it = 0; it < 5; ++it) {
      CONTEXT("iteration " << it);
      x.step([&](std::size_t t, std::size_t i) { return value(r, t, i, it); });
      same = same && x.same_everywhere();
      double worst = 0.0, big = 0.0;
      long inexact_1d = 0;
      for (std::size_t t = 0; t < m.tensors.size(); ++t)
        for (std::size_t i = 0; i < x.g[t].size(); ++i) {
          double s = 0.0;
          for (int q = 0; q < p; ++q) s += value(q, t, i, it);
          if (m.tensors[t].shape.size() < 2) inexact_1d += x.g[t][i] != s;
          worst = std::max(worst, std::abs(x.g[t][i] - s));
          big = std::max(big, std::abs(s));
        }
      CHECK_EQ(inexact_1d, 0L);
      CHECK(worst <= 1e-4 * big);
    }
    // a full-rank gradient after the start is compressed: the result is not the sum
    x.step([&](std::size_t t, std::size_t i) { return integer_value(r, t, i, 9) + static_cast<float>(i % 3); });
    same = same && x.same_everywhere();
    double off = 0.0;
    for (std::size_t t = 0; t < m.tensors.size(); ++t)
      for (std::size_t i = 0; i < x.g[t].size(); ++i) {
        double s = 0.0;
        for (int q = 0; q < p; ++q) s += integer_value(q, t, i, 9) + static_cast<float>(i % 3);
        off = std::max(off, std::abs(x.g[t][i] - s));
      }
    CHECK(off > 1.0);
    CHECK(same);
  }
}

TEST_CASE("compressors: the executor's state survives a save and a load (same results after), and a foreign state is refused by name") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int r = c.world.rank();
  const auto m = odd_model();
  auto value = [&](std::size_t t, std::size_t i, int it) {
    return static_cast<float>(std::sin(0.29 * static_cast<double>(i) + 0.7 * it + r + 0.3 * static_cast<double>(t)) * ((i + t) % 17 == 0 ? 6.0 : 1.0));
  };
  const compression_value cases[] = {named("topk", {0.1, 0, 0}), named("randomk", {0.2, 0, 0}), named("powersgd", {1, 1, 2}),
                                     named("accordion_powersgd", {2, 1, 2}), named("alq", {3, 64, 2}), compression_value{compression_id{1}}};
  for (const auto& cv : cases) {
    CONTEXT(compression_name(cv));
    runner a(c, m, with(cv, 2048));  // several buckets
    for (int it = 0; it < 3; ++it) a.step([&](std::size_t t, std::size_t i) { return value(t, i, it); });
    const std::string st = a.ex.save_state();
    runner b(c, m, with(cv, 2048));
    b.ex.load_state(st);
    bool same = true;
    for (int it = 3; it < 7; ++it) {
      a.step([&](std::size_t t, std::size_t i) { return value(t, i, it); });
      b.step([&](std::size_t t, std::size_t i) { return value(t, i, it); });
      for (std::size_t t = 0; t < m.tensors.size(); ++t) same = same && std::memcmp(a.g[t].data(), b.g[t].data(), a.g[t].size() * sizeof(float)) == 0;
    }
    CHECK(same);
    CHECK(a.ex.save_state() == b.ex.save_state());
    // another strategy, another rank, damaged bytes: named errors, never a crash
    runner other(c, m, with(cv == named("topk", {0.1, 0, 0}) ? named("randomk", {0.1, 0, 0}) : named("topk", {0.1, 0, 0}), 2048));
    CHECK_THROWS_WITH(other.ex.load_state(st), "another strategy");
    std::string moved = st;
    const std::size_t rank_at = 8 + std::string_view("autosync.state").size() + 4 + 8 + 8 + 4;  // the saved rank (i32)
    const std::int32_t wrong = r + 1;
    std::memcpy(moved.data() + rank_at, &wrong, sizeof wrong);
    CHECK_THROWS_WITH(b.ex.load_state(moved), "saved by rank " + std::to_string(r + 1));
    // a failed load leaves the state as it was, even one that fails part-way through the buckets
    const std::string held = b.ex.save_state();
    for (std::size_t cut : {std::size_t{5}, st.size() / 2, st.size() - 1}) {
      CHECK_THROWS_WITH(b.ex.load_state(std::string_view(st).substr(0, cut)), "'state");
      CHECK(b.ex.save_state() == held);
    }
    CHECK_THROWS_WITH(b.ex.load_state(st + "x"), "'state");  // every bucket loads, then a stray byte
    CHECK(b.ex.save_state() == held);
    CHECK_THROWS_WITH(b.ex.load_state("not a state at all, but long enough to read"), "'state'");
  }
}
