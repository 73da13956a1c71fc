// The compression codecs of exec/codecs/: each one's guarantee, on odd sizes, with p ranks
// simulated in one process (the sum a collective would form is formed here by hand).
#include <autosync/exec/codecs/accordion.hpp>
#include <autosync/exec/codecs/int8_minmax.hpp>
#include <autosync/exec/codecs/powersgd.hpp>
#include <autosync/exec/codecs/qsgd.hpp>
#include <autosync/exec/codecs/random.hpp>
#include <autosync/exec/codecs/sparsify.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace cx = autosync::exec::codecs;

namespace {
std::vector<float> gaussian(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
std::vector<float> integers(std::size_t n, std::uint32_t seed, int range = 50) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(-range, range);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(g));
  return v;
}
}  // namespace

TEST_CASE("codecs: the counter-based stream is reproducible and order-free") {
  const cx::counter_rng a(7, cx::stream_of(3, 11, 2)), b(7, cx::stream_of(3, 11, 2)), c(7, cx::stream_of(3, 11, 1));
  int differ = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    CHECK(a.bits(i) == b.bits(i));
    differ += a.bits(i) != c.bits(i);
    const float u = a.uniform(i);
    CHECK(u >= 0.0f);
    CHECK(u < 1.0f);
    CHECK(a.below(i, 17) < 17u);
  }
  CHECK(differ == 1000);
  // the mean of 100k uniforms is 1/2 within 5 standard errors (sd 1/sqrt(12 * 1e5) = 9.1e-4)
  double s = 0.0;
  for (std::uint64_t i = 0; i < 100000; ++i) s += a.uniform(i);
  CHECK(std::abs(s / 1e5 - 0.5) < 5 * 9.2e-4);
}

TEST_CASE("int8 min-max: every element within (max - min) / 510 of its value, odd sizes") {
  namespace q8 = cx::int8_minmax;
  for (std::size_t n : {1u, 7u, 1023u, 1024u, 1025u, 5000u}) {
    for (std::size_t chunk : {1u, 3u, 512u, 1024u}) {
      CAPTURE(n);
      CAPTURE(chunk);
      auto x = gaussian(n, static_cast<std::uint32_t>(n + chunk), 3.0f);
      x[0] += 1000.0f;  // an offset far from zero: the min-relative form keeps its precision
      std::vector<unsigned char> w(q8::wire_bytes(n, chunk));
      CHECK(w.size() == n + 8 * ((n + chunk - 1) / chunk));
      q8::encode(x, w, chunk);
      std::vector<float> y(n);
      q8::decode(w, y, chunk);
      for (std::size_t c0 = 0; c0 < n; c0 += chunk) {
        const std::size_t k = std::min(chunk, n - c0);
        const float mn = *std::min_element(x.begin() + static_cast<long>(c0), x.begin() + static_cast<long>(c0 + k));
        const float mx = *std::max_element(x.begin() + static_cast<long>(c0), x.begin() + static_cast<long>(c0 + k));
        for (std::size_t i = c0; i < c0 + k; ++i) CHECK(std::abs(static_cast<double>(y[i]) - x[i]) <= q8::error_bound(mn, mx));
        // the chunk's extremes are exact
        CHECK(*std::min_element(y.begin() + static_cast<long>(c0), y.begin() + static_cast<long>(c0 + k)) == mn);
      }
    }
  }
}

TEST_CASE("int8 min-max: constant chunks are exact, non-finite chunks decode to NaN, add mode adds") {
  namespace q8 = cx::int8_minmax;
  std::vector<float> x(10, 2.5f);
  x[7] = std::numeric_limits<float>::infinity();
  std::vector<unsigned char> w(q8::wire_bytes(10, 5));
  q8::encode(x, w, 5);
  std::vector<float> y(10, 1.0f);
  q8::decode(w, y, 5, /*add=*/true);
  for (int i = 0; i < 5; ++i) CHECK(y[i] == 3.5f);
  for (int i = 5; i < 10; ++i) CHECK(std::isnan(y[i]));
}

TEST_CASE("int8 min-max: a three-rank scatter-gather sum stays within the two quantizations' bound") {
  namespace q8 = cx::int8_minmax;
  const std::size_t n = 3001, chunk = 1000;
  const int p = 3;
  std::vector<std::vector<float>> x;
  for (int r = 0; r < p; ++r) x.push_back(gaussian(n, 100u + static_cast<std::uint32_t>(r)));
  std::vector<float> sum(n, 0.0f), exact(n, 0.0);
  double bound1 = 0.0;
  for (int r = 0; r < p; ++r) {
    std::vector<unsigned char> w(q8::wire_bytes(n, chunk));
    q8::encode(x[static_cast<std::size_t>(r)], w, chunk);
    bound1 += q8::max_error_bound(w, n, chunk);
    q8::decode(w, sum, chunk, true);
    for (std::size_t i = 0; i < n; ++i) exact[i] += x[static_cast<std::size_t>(r)][i];
  }
  std::vector<unsigned char> w(q8::wire_bytes(n, chunk));
  q8::encode(sum, w, chunk);  // the requantized shard sums
  const double bound = bound1 + q8::max_error_bound(w, n, chunk) + 1e-5;
  std::vector<float> out(n);
  q8::decode(w, out, chunk);
  for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(static_cast<double>(out[i]) - exact[i]) <= bound);
}

TEST_CASE("QSGD / NUQSGD: levels, wire size, decoded values on the levels, unbiased over seeds") {
  namespace qs = cx::qsgd;
  CHECK(qs::uniform_levels(4).l == std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f, 1.0f});
  CHECK(qs::exponential_levels(3).l == std::vector<float>{0.0f, 0.25f, 0.5f, 1.0f});
  CHECK(qs::bits_per_element(4) == 4);  // sign + 3 bits for 5 levels
  CHECK(qs::bits_per_element(7) == 4);  // 8 levels
  // 8192 elements at 3 bits + a float norm: 3.004 bits per element (the reference's figure)
  CHECK(qs::wire_bytes(8192, 3, 8192) == 4 + 3 * 8192 / 8);
  for (const auto& lv : {qs::uniform_levels(4), qs::exponential_levels(5)}) {
    const std::size_t n = 1001, bucket = 256;
    const auto x = gaussian(n, 5);
    std::vector<double> mean(n, 0.0);
    const int seeds = 4000;
    std::vector<unsigned char> w(qs::wire_bytes(n, lv.count(), bucket));
    std::vector<float> y(n);
    for (int s = 0; s < seeds; ++s) {
      qs::encode(x, w, lv, cx::counter_rng(static_cast<std::uint64_t>(s), 1), bucket);
      qs::decode(w, y, lv, bucket);
      for (std::size_t i = 0; i < n; ++i) mean[i] += y[i];
    }
    // mean over seeds -> x: each draw has variance <= norm^2 (l_j+1 - l_j)^2 / 4, so the mean of
    // 4000 draws is within 6 standard errors of x
    for (std::size_t b0 = 0; b0 < n; b0 += bucket) {
      const std::size_t k = std::min(bucket, n - b0);
      double nn = 0.0;
      for (std::size_t i = b0; i < b0 + k; ++i) nn += static_cast<double>(x[i]) * x[i];
      double gap = 0.0;
      for (std::size_t j = 1; j < lv.l.size(); ++j) gap = std::max(gap, static_cast<double>(lv.l[j] - lv.l[j - 1]));
      const double se = std::sqrt(nn) * gap / 2.0 / std::sqrt(static_cast<double>(seeds));
      for (std::size_t i = b0; i < b0 + k; ++i) CHECK(std::abs(mean[i] / seeds - x[i]) <= 6.0 * se + 1e-6);
    }
  }
}

TEST_CASE("QSGD: a zero bucket decodes to zeros, a non-finite one to NaN") {
  namespace qs = cx::qsgd;
  const auto lv = qs::uniform_levels(2);
  std::vector<float> x(10, 0.0f);
  x[9] = NAN;
  std::vector<unsigned char> w(qs::wire_bytes(10, 2, 5));
  qs::encode(x, w, lv, cx::counter_rng(1, 2), 5);
  std::vector<float> y(10, 7.0f);
  qs::decode(w, y, lv, 5);
  for (int i = 0; i < 5; ++i) CHECK(y[i] == 0.0f);
  for (int i = 5; i < 10; ++i) CHECK(std::isnan(y[i]));
}

TEST_CASE("ALQ / AMQ: fitted levels lower the expected variance of the sample they fit") {
  namespace qs = cx::qsgd;
  const auto x = gaussian(20000, 9);
  const auto u = qs::normalized_sample(x, 2048);
  const auto init = qs::exponential_levels(7);
  const auto alq = qs::fit_alq(u, init);
  CHECK(qs::valid(alq));
  CHECK(qs::expected_variance(u, alq) < qs::expected_variance(u, init));
  double m = 0.0;
  const auto amq = qs::fit_amq(u, 7, &m);
  CHECK(qs::valid(amq));
  CHECK(qs::expected_variance(u, amq) <= qs::expected_variance(u, init) * (1 + 1e-9));
  CHECK(m > 0.05);
  CHECK(m < 0.95);
  // ALQ's free levels do at least as well as AMQ's one multiplier, from AMQ's start
  CHECK(qs::expected_variance(u, qs::fit_alq(u, amq)) <= qs::expected_variance(u, amq) * (1 + 1e-9));
  CHECK(qs::refit_due(100));
  CHECK(qs::refit_due(2000));
  CHECK(qs::refit_due(30000));
  CHECK(!qs::refit_due(2500));
}

TEST_CASE("top-k and random-k: error feedback conserves the sum exactly on integer data, at 2, 3, 4 and 8 ranks") {
  namespace sp = cx::sparsify;
  for (int p : {2, 3, 4, 8}) {
    for (bool random : {false, true}) {
      CAPTURE(p);
      CAPTURE(random);
      const std::size_t n = 777;
      sp::options o{.density = 0.03, .random = random};
      std::vector<sp::state> st(static_cast<std::size_t>(p));
      std::vector<double> sent(n, 0.0), given(n, 0.0);
      for (int it = 0; it < 20; ++it) {
        std::vector<std::uint32_t> first;
        for (int r = 0; r < p; ++r) {
          const auto g = integers(n, static_cast<std::uint32_t>(1000 * it + r));
          for (std::size_t i = 0; i < n; ++i) given[i] += g[i];
          std::vector<std::uint32_t> idx;
          std::vector<float> val;
          sp::select(g, st[static_cast<std::size_t>(r)], o, cx::counter_rng(3, cx::stream_of(0, static_cast<std::uint64_t>(it))), idx, val);
          CHECK(idx.size() == sp::k_of(n, 0.03));
          CHECK(std::is_sorted(idx.begin(), idx.end()));
          if (random) {  // shared indices: the same set on every rank
            if (r == 0) first = idx;
            else CHECK(idx == first);
          }
          std::vector<unsigned char> w(idx.size() * sp::pair_bytes);
          sp::pack_pairs(idx, val, w);
          std::vector<float> acc(n, 0.0f);
          CHECK(sp::scatter_add(w, idx.size(), acc) == 0);
          for (std::size_t i = 0; i < n; ++i) sent[i] += acc[i];
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        double left = 0.0;
        for (const auto& s : st) left += s.residual[i];
        CHECK(sent[i] + left == given[i]);
      }
    }
  }
}

TEST_CASE("top-k picks the largest magnitudes (ties: lower index); DGC's warm-up and momentum masking") {
  namespace sp = cx::sparsify;
  const std::vector<float> a{1, -5, 3, 5, 0, -2};
  CHECK(sp::top_k_indices(a, 2) == std::vector<std::uint32_t>{1, 3});
  CHECK(sp::top_k_indices(a, 3) == std::vector<std::uint32_t>{1, 2, 3});
  CHECK(sp::dgc_density(0, 4) == 0.25);
  CHECK(sp::dgc_density(3, 4) == 0.004);
  CHECK(sp::dgc_density(4, 4) == 0.001);
  CHECK(sp::dgc_density(0, 0) == 0.001);
  sp::state st;
  std::vector<std::uint32_t> idx;
  std::vector<float> val;
  const std::vector<float> g{1, 10, 2, 3};
  sp::select(g, st, {.density = 0.25, .momentum = 0.9}, cx::counter_rng(0, 0), idx, val);
  CHECK(idx == std::vector<std::uint32_t>{1});
  CHECK(val == std::vector<float>{10});
  CHECK(st.momentum[1] == 0.0f);  // factor masking
  CHECK(st.momentum[0] == 1.0f);
  CHECK(st.residual[3] == 3.0f);
  // a corrupt index is ignored, not written
  const std::vector<std::uint32_t> bad{99};
  const std::vector<float> v{1.0f};
  std::vector<unsigned char> w(sp::pair_bytes);
  sp::pack_pairs(bad, v, w);
  std::vector<float> x(4, 0.0f);
  CHECK(sp::scatter_add(w, 1, x) == 1);
}

TEST_CASE("PowerSGD: exact on rank-r sums at 2, 3, 4 and 8 ranks; error feedback conserves the sum") {
  namespace ps = cx::powersgd;
  for (int p : {2, 3, 4, 8}) {
    for (int r : {1, 2}) {
      CAPTURE(p);
      CAPTURE(r);
      const std::size_t rows = 37, cols = 53;
      // every rank's M = U_rank V^T with a shared V (cols x r): the sum has rank r
      const auto v = gaussian(cols * static_cast<std::size_t>(r), 17);
      std::vector<std::vector<float>> m(static_cast<std::size_t>(p), std::vector<float>(rows * cols, 0.0f));
      std::vector<double> exact(rows * cols, 0.0);
      for (int k = 0; k < p; ++k) {
        const auto u = gaussian(rows * static_cast<std::size_t>(r), 40u + static_cast<std::uint32_t>(k));
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < cols; ++j) {
            float s = 0.0f;
            for (int c = 0; c < r; ++c) s += u[static_cast<std::size_t>(c) * rows + i] * v[static_cast<std::size_t>(c) * cols + j];
            m[static_cast<std::size_t>(k)][i * cols + j] = s;
            exact[i * cols + j] += s;
          }
      }
      CHECK(ps::should_compress(rows, cols, r));
      const ps::options o{.rank = r};
      std::vector<ps::state> st(static_cast<std::size_t>(p));
      std::vector<float> psum(rows * static_cast<std::size_t>(r), 0.0f), qsum(cols * static_cast<std::size_t>(r), 0.0f);
      std::vector<float> pk(psum.size()), qk(qsum.size());
      for (int k = 0; k < p; ++k) {
        ps::compute_p(m[static_cast<std::size_t>(k)], rows, cols, st[static_cast<std::size_t>(k)], o, 5, pk);
        for (std::size_t i = 0; i < pk.size(); ++i) psum[i] += pk[i];
      }
      std::vector<std::vector<float>> pr(static_cast<std::size_t>(p), psum);
      for (int k = 0; k < p; ++k) {
        ps::compute_q(st[static_cast<std::size_t>(k)], pr[static_cast<std::size_t>(k)], qk);
        for (std::size_t i = 0; i < qk.size(); ++i) qsum[i] += qk[i];
      }
      double scale = 0.0;
      for (double e : exact) scale = std::max(scale, std::abs(e));
      std::vector<double> left(rows * cols, 0.0);
      for (int k = 0; k < p; ++k) {
        std::vector<float> out(rows * cols);
        ps::decompress(st[static_cast<std::size_t>(k)], pr[static_cast<std::size_t>(k)], qsum, p, out, o);
        for (std::size_t i = 0; i < out.size(); ++i) CHECK(std::abs(out[i] - exact[i]) <= 1e-4 * scale);
        // identical on every rank
        if (k > 0) CHECK(st[static_cast<std::size_t>(k)].q == st[0].q);
        for (std::size_t i = 0; i < out.size(); ++i) left[i] += st[static_cast<std::size_t>(k)].m[i];
        // sum + errors = the gradients' sum (to float rounding)
        if (k == p - 1)
          for (std::size_t i = 0; i < out.size(); ++i) CHECK(std::abs(out[i] + left[i] - exact[i]) <= 1e-4 * scale);
      }
    }
  }
}

TEST_CASE("PowerSGD: a NaN or infinity makes that step NaN on every rank, and the next step is exact again") {
  namespace ps = cx::powersgd;
  const std::size_t rows = 24, cols = 16;
  const int p = 2, r = 1;
  const ps::options o{.rank = r};
  std::vector<ps::state> st(p);
  // one step of the codec over p ranks (sums in rank order, the same on every rank)
  auto step = [&](const std::vector<std::vector<float>>& g) {
    std::vector<float> psum(rows * r, 0.0f), qsum(cols * r, 0.0f), pk(psum.size()), qk(qsum.size());
    for (int k = 0; k < p; ++k) {
      ps::compute_p(g[static_cast<std::size_t>(k)], rows, cols, st[static_cast<std::size_t>(k)], o, 9, pk);
      for (std::size_t i = 0; i < pk.size(); ++i) psum[i] += pk[i];
    }
    std::vector<std::vector<float>> pr(p, psum);
    for (int k = 0; k < p; ++k) {
      ps::compute_q(st[static_cast<std::size_t>(k)], pr[static_cast<std::size_t>(k)], qk);
      for (std::size_t i = 0; i < qk.size(); ++i) qsum[i] += qk[i];
    }
    std::vector<std::vector<float>> out(p, std::vector<float>(rows * cols));
    for (int k = 0; k < p; ++k) ps::decompress(st[static_cast<std::size_t>(k)], pr[static_cast<std::size_t>(k)], qsum, p, out[static_cast<std::size_t>(k)], o);
    return out;
  };
  // rank-1 gradients with a shared row factor: their sum has rank 1, so a step is exact
  const auto u = gaussian(rows, 3), v0 = gaussian(cols, 4), v1 = gaussian(cols, 5);
  auto rank1 = [&](const std::vector<float>& v) {
    std::vector<float> m(rows * cols);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) m[i * cols + j] = u[i] * v[j];
    return m;
  };
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    CAPTURE(bad);
    st.assign(p, ps::state{});
    std::vector<std::vector<float>> g{rank1(v0), rank1(v1)};
    (void)step(g);
    g[0][5] = bad;
    const auto out = step(g);
    for (const auto& o_k : out)
      for (float x : o_k) CHECK(std::isnan(x));
    for (const auto& s_k : st) {
      CHECK_FALSE(s_k.started);
      for (float e : s_k.m) CHECK(e == 0.0f);
    }
    g[0][5] = rank1(v0)[5];
    const auto next = step(g);
    for (int k = 0; k < p; ++k)
      for (std::size_t i = 0; i < rows * cols; ++i) CHECK(std::abs(next[static_cast<std::size_t>(k)][i] - (g[0][i] + g[1][i])) <= 1e-4f);
  }
}

TEST_CASE("PowerSGD: 1-D and small tensors stay uncompressed; wire elements") {
  namespace ps = cx::powersgd;
  CHECK(!ps::should_compress(100, 1, 1));  // a bias
  CHECK(!ps::should_compress(4, 4, 1));    // (4 + 4) 1 2 = 16 = 16: not below
  CHECK(ps::should_compress(5, 5, 1));
  CHECK(ps::wire_elements(1024, 4096, 4) == (1024 + 4096) * 4);
  CHECK(ps::wire_elements(3, 2, 4) == 6);
}

TEST_CASE("Accordion: low compression first and when the norm moves by eta, high otherwise") {
  namespace ac = cx::accordion;
  ac::detector d;
  ac::decision x;
  const ac::options o{.eta = 0.5, .interval = 2};
  CHECK(!d.observe(4.0, o, x));
  REQUIRE(d.observe(5.0, o, x));  // norm 3, no history
  CHECK(x.chosen == ac::level::low_compression);
  CHECK(!d.observe(1.0, o, x));
  REQUIRE(d.observe(3.0, o, x));  // norm 2: |3 - 2| / 3 = 0.33 < 0.5
  CHECK(x.chosen == ac::level::high_compression);
  CHECK(x.ratio == doctest::Approx(1.0 / 3.0));
  CHECK(!d.observe(0.5, o, x));
  REQUIRE(d.observe(0.5, o, x));  // norm 1: |2 - 1| / 2 = 0.5 >= 0.5
  CHECK(x.chosen == ac::level::low_compression);
}
