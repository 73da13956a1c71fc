// tests/mpi/codecs.cpp — the compressed sums of exec/collectives/compressed.hpp on the MPI
// backend, each against its guarantee, at every rank count of the suite, on odd sizes:
//   int8_sum        within the two quantizations' bound of the exact sum, identical on all ranks
//   gathered_sum    top-k / random-k with error feedback: what was summed over the iterations plus
//                   every rank's residual equals the sum of all gradients, exactly (integers)
//   gathered_sum    QSGD: the mean over seeds of the decoded sum approaches the exact sum
//   powersgd_sum    exact (to float rounding) on gradients whose sum has rank r
#include "harness.hpp"
#include "same_bits.hpp"

#include <autosync/exec/codecs/qsgd.hpp>
#include <autosync/exec/codecs/sparsify.hpp>
#include <autosync/exec/collectives/compressed.hpp>
#include <autosync/exec/mpi/backend.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using namespace autosync;
using namespace autosync::exec;
using namespace autosync::mpitest;
namespace cx = autosync::exec::codecs;

namespace {

// The same pseudo-random values on every rank for (seed, rank): each rank can compute the
// others' inputs and so the exact sum without communication.
std::vector<float> gaussian(std::size_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
std::vector<float> integers(std::size_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(-40, 40);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(g));
  return v;
}

}  // namespace

TEST_CASE("int8_sum: within the bound of two quantizations, the same bits on every rank") {
  auto b = mpi_backend::world();
  const int p = b.size();
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, static_cast<std::size_t>(p + 1), std::size_t{3001}, std::size_t{10007}}) {
    for (std::size_t chunk : {std::size_t{5}, std::size_t{1024}}) {
      CONTEXT("n = " << n << ", chunk = " << chunk);
      auto x = gaussian(n, 10u + static_cast<std::uint32_t>(b.rank()));
      std::vector<double> exact(n, 0.0);
      double range_sum = 0.0, abs_sum = 0.0;
      for (int r = 0; r < p; ++r) {
        const auto xr = gaussian(n, 10u + static_cast<std::uint32_t>(r));
        for (std::size_t i = 0; i < n; ++i) exact[i] += xr[i];
        float mn = xr[0], mx = xr[0];
        for (float v : xr) mn = std::min(mn, v), mx = std::max(mx, v);
        range_sum += static_cast<double>(mx) - mn;
      }
      for (double e : exact) abs_sum = std::max(abs_sum, std::abs(e));
      int8_sum(b, std::span<float>(x), chunk);
      // per-rank quantization: (range of a chunk) / 510 <= (range of the rank's bucket) / 510;
      // the re-quantized sum: its range <= 2 max |sum| (+ the first errors), / 510
      const double bound = range_sum / 510.0 + (2.0 * abs_sum + range_sum / 255.0) / 510.0 + 1e-4;
      double worst = 0.0;
      for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(static_cast<double>(x[i]) - exact[i]));
      CHECK(worst <= bound);
      CHECK(mpitest::same_on_every_rank(b, std::span<const float>(x)));
    }
  }
}

TEST_CASE("gathered_sum: top-k and random-k with error feedback conserve the sum exactly") {
  auto b = mpi_backend::world();
  const int p = b.size(), me = b.rank();
  for (bool random : {false, true}) {
    CONTEXT("random = " << random);
    const std::size_t n = 1013;
    const cx::sparsify::options o{.density = 0.02, .random = random};
    cx::sparsify::state st;
    std::vector<double> summed(n, 0.0), given(n, 0.0);
    for (int it = 0; it < 12; ++it) {
      const auto g = integers(n, static_cast<std::uint32_t>(100 * it + me));
      for (int r = 0; r < p; ++r) {
        const auto gr = integers(n, static_cast<std::uint32_t>(100 * it + r));
        for (std::size_t i = 0; i < n; ++i) given[i] += gr[i];
      }
      const std::size_t k = cx::sparsify::k_of(n, o.density);
      std::vector<float> x(n);
      gathered_sum(
          b, std::span<float>(x), k * cx::sparsify::pair_bytes,
          [&](std::span<unsigned char> out) {
            std::vector<std::uint32_t> idx;
            std::vector<float> val;
            cx::sparsify::select(g, st, o, cx::counter_rng(9, cx::stream_of(0, static_cast<std::uint64_t>(it))), idx, val);
            cx::sparsify::pack_pairs(idx, val, out);
          },
          [&](std::span<const unsigned char> in, std::span<float> acc) { (void)cx::sparsify::scatter_add(in, k, acc); });
      CHECK(mpitest::same_on_every_rank(b, std::span<const float>(x)));
      for (std::size_t i = 0; i < n; ++i) summed[i] += x[i];
    }
    std::vector<float> left = st.residual;
    b.all_reduce(left.data(), left.size(), dtype::f32);  // integers far below 2^24: exact
    long wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += summed[i] + left[i] != given[i];
    CHECK_EQ(wrong, 0L);
  }
}

TEST_CASE("gathered_sum: QSGD's decoded sum is unbiased over seeds") {
  auto b = mpi_backend::world();
  const int p = b.size(), me = b.rank();
  const std::size_t n = 301, bucket = 128;
  const auto lv = cx::qsgd::uniform_levels(4);
  const auto x = gaussian(n, 77u + static_cast<std::uint32_t>(me));
  std::vector<double> exact(n, 0.0), mean(n, 0.0);
  double var_bound = 0.0;
  for (int r = 0; r < p; ++r) {
    const auto xr = gaussian(n, 77u + static_cast<std::uint32_t>(r));
    double nn = 0.0;
    for (std::size_t i = 0; i < n; ++i) exact[i] += xr[i], nn += static_cast<double>(xr[i]) * xr[i];
    var_bound += nn * (0.25 * 0.25) / 4.0;  // per element: norm^2 gap^2 / 4 (a generous bound over buckets)
  }
  const int seeds = 400;
  const std::size_t bytes = cx::qsgd::wire_bytes(n, lv.count(), bucket);
  for (int s = 0; s < seeds; ++s) {
    std::vector<float> y(n);
    gathered_sum(
        b, std::span<float>(y), bytes,
        [&](std::span<unsigned char> out) {
          cx::qsgd::encode(x, out, lv, cx::counter_rng(static_cast<std::uint64_t>(s), cx::stream_of(0, 0, static_cast<std::uint64_t>(me))),
                           bucket);
        },
        [&](std::span<const unsigned char> in, std::span<float> acc) { cx::qsgd::decode(in, acc, lv, bucket, /*add=*/true); });
    for (std::size_t i = 0; i < n; ++i) mean[i] += y[i];
  }
  const double se = std::sqrt(var_bound / seeds);
  long outside = 0;
  for (std::size_t i = 0; i < n; ++i) outside += std::abs(mean[i] / seeds - exact[i]) > 6.0 * se;
  CHECK_EQ(outside, 0L);
}

TEST_CASE("powersgd_sum: exact on gradients whose sum has rank r; small matrices all-reduced") {
  auto b = mpi_backend::world();
  const int p = b.size(), me = b.rank();
  for (int r : {1, 3}) {
    CONTEXT("rank " << r);
    const std::size_t rows = 29, cols = 41;
    const auto v = gaussian(cols * static_cast<std::size_t>(r), 5);  // shared row space
    auto make = [&](int k) {
      const auto u = gaussian(rows * static_cast<std::size_t>(r), 50u + static_cast<std::uint32_t>(k));
      std::vector<float> m(rows * cols, 0.0f);
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
          for (int c = 0; c < r; ++c) m[i * cols + j] += u[static_cast<std::size_t>(c) * rows + i] * v[static_cast<std::size_t>(c) * cols + j];
      return m;
    };
    std::vector<double> exact(rows * cols, 0.0);
    for (int k = 0; k < p; ++k) {
      const auto m = make(k);
      for (std::size_t i = 0; i < m.size(); ++i) exact[i] += m[i];
    }
    double scale = 0.0;
    for (double e : exact) scale = std::max(scale, std::abs(e));
    cx::powersgd::state st;
    std::vector<float> out(rows * cols);
    powersgd_sum(b, make(me), rows, cols, st, {.rank = r}, 3, std::span<float>(out));
    double worst = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - exact[i]));
    CHECK(worst <= 1e-4 * scale);
    CHECK(mpitest::same_on_every_rank(b, std::span<const float>(out)));
  }
  // a 1-D tensor: all-reduced exactly
  std::vector<float> bias(17, static_cast<float>(me + 1)), out(17);
  cx::powersgd::state st;
  powersgd_sum(b, bias, 17, 1, st, {.rank = 2}, 4, std::span<float>(out));
  CHECK(out[16] == static_cast<float>(p * (p + 1) / 2));
}
