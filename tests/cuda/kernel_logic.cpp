// tests/cuda/kernel_logic.cpp — the per-element logic of the CUDA bucket kernels, on the host.
//
// exec/nccl/elementwise.hpp is the code the kernels of exec/nccl/kernels.cuh run per element.
// Here the host compiler runs the same functions and they are checked bit for bit against the
// CPU reference the MPI path uses (exec/compress.hpp, the executor's pack/unpack/average):
//   - narrow/widen against to_f16/to_bf16/from_f16/from_bf16 on every 16-bit pattern and on
//     random doubles of every magnitude (subnormal, overflow, NaN, inf, ties);
//   - encode/decode with error feedback against exec::encode/exec::decode over iterations;
//   - the kernels' tile walk over the segment table (locate + advance + tensor_element) against
//     the executor's memcpy pack/unpack on plans compiled from random strategies (strided
//     axis-k shards, odd sizes and offsets), for several thread/tile shapes.
// No GPU needed; runs in CI.
#include <doctest/doctest.h>

#include <autosync/exec/compress.hpp>
#include <autosync/exec/nccl/elementwise.hpp>
#include <autosync/exec/plan.hpp>

#include "../common/random_strategies.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace ew = autosync::exec::nccl::ew;
using autosync::dtype;

namespace {

std::uint32_t fbits(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint64_t dbits(double d) { return std::bit_cast<std::uint64_t>(d); }

// A double of random sign, mantissa and exponent in [lo, hi] (powers of two), with some exact
// ties of the 16-bit formats (mantissa bits below the kept ones = 100..0) and specials.
double random_double(std::mt19937_64& rng, int lo, int hi) {
  const auto kind = rng() % 16;
  if (kind == 0) return std::numeric_limits<double>::infinity() * ((rng() & 1) ? 1 : -1);
  if (kind == 1) return std::numeric_limits<double>::quiet_NaN();
  if (kind == 2) return (rng() & 1) ? 0.0 : -0.0;
  const int e = lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  std::uint64_t man = rng() & ((std::uint64_t{1} << 52) - 1);
  if (kind == 3) man = (man & ~((std::uint64_t{1} << 42) - 1)) | (std::uint64_t{1} << 41);  // f16 tie
  if (kind == 4) man = (man & ~((std::uint64_t{1} << 45) - 1)) | (std::uint64_t{1} << 44);  // bf16 tie
  const double m = 1.0 + static_cast<double>(man) * 0x1p-52;
  return ((rng() & 1) ? -1.0 : 1.0) * std::ldexp(m, e);
}

// The kernels' walk (kernels.cuh for_each_element) on the host: the grid loop around the same
// per-thread ew::walk_tile the kernels run.
template <class Op>
void walk(const std::vector<ew::segment_row>& rows, std::int64_t n, int threads, int items, int grid, Op op) {
  const std::int64_t tile = static_cast<std::int64_t>(threads) * items;
  const int nrows = static_cast<int>(rows.size());
  for (int block = 0; block < grid; ++block)
    for (int tid = 0; tid < threads; ++tid)
      for (std::int64_t start = block * tile; start < n; start += grid * tile)
        ew::walk_tile(rows.data(), nrows, n, start, threads, items, tid, op);
}

std::vector<ew::segment_row> rows_of(const autosync::exec::plan_bucket& b) {
  std::vector<ew::segment_row> rows;
  for (const auto& s : b.segments) rows.push_back({s.fused, s.offset, s.block, s.stride, s.blocks, s.tensor, 0});
  return rows;
}

}  // namespace

TEST_CASE("widen matches from_f16 / from_bf16 on every 16-bit pattern") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto x = static_cast<std::uint16_t>(h);
    REQUIRE(fbits(ew::widen(x, ew::wire16::f16)) == fbits(autosync::exec::from_f16(x)));
    REQUIRE(fbits(ew::widen(x, ew::wire16::bf16)) == fbits(autosync::exec::from_bf16(x)));
  }
}

TEST_CASE("narrow matches to_f16 / to_bf16 (double, both overflow modes) on random doubles") {
  using autosync::exec::overflow_mode;
  std::mt19937_64 rng(20261123);
  const int ranges[][2] = {{-30, 20}, {-140, -120}, {-1074, -1000}, {100, 130}, {-2, 2}, {14, 17}};
  for (const auto& rg : ranges)
    for (int i = 0; i < 40000; ++i) {
      const double x = random_double(rng, rg[0], rg[1]);
      for (bool sat : {false, true}) {
        const auto mode = sat ? overflow_mode::saturate : overflow_mode::to_infinity;
        REQUIRE(ew::narrow(x, ew::wire16::f16, sat) == autosync::exec::to_f16(x, mode));
        REQUIRE(ew::narrow(x, ew::wire16::bf16, sat) == autosync::exec::to_bf16(x, mode));
      }
    }
  // hand-picked: the f16 max finite, the overflow midpoint, a tie to even, half the min subnormal
  CHECK(ew::narrow(65504.0, ew::wire16::f16, false) == 0x7bff);
  CHECK(ew::narrow(65520.0, ew::wire16::f16, false) == 0x7c00);
  CHECK(ew::narrow(65520.0, ew::wire16::f16, true) == 0x7bff);
  CHECK(ew::narrow(1.0 + 0x1p-11, ew::wire16::f16, false) == 0x3c00);        // tie -> even (1.0)
  CHECK(ew::narrow(1.0 + 3 * 0x1p-11, ew::wire16::f16, false) == 0x3c02);    // tie -> even (up)
  CHECK(ew::narrow(0x1p-25, ew::wire16::f16, false) == 0x0000);              // tie -> even (0)
  CHECK(ew::narrow(0x1p-25 * 1.5, ew::wire16::f16, false) == 0x0001);
}

TEST_CASE("encode_one / decode_one match exec::encode / exec::decode with error feedback") {
  std::mt19937_64 rng(7);
  for (dtype wire : {dtype::f16, dtype::bf16})
    for (int ranks : {1, 3, 8}) {
      const double scale = autosync::exec::wire_scale(wire, ranks);
      const auto w = wire == dtype::f16 ? ew::wire16::f16 : ew::wire16::bf16;
      const std::size_t n = 1000 + static_cast<std::size_t>(rng() % 37);  // odd sizes
      std::vector<double> r_ref(n, 0.0), r_dev(n, 0.0);
      std::vector<float> xf(n);
      std::vector<double> xd(n);
      for (int iter = 0; iter < 4; ++iter) {
        for (std::size_t i = 0; i < n; ++i) {
          xd[i] = random_double(rng, iter == 3 ? 14 : -30, iter == 3 ? 20 : 10);  // the last: saturation
          xf[i] = static_cast<float>(xd[i]);
        }
        std::vector<std::uint16_t> ref(n), dev(n);
        autosync::exec::encode(xf.data(), r_ref.data(), ref.data(), n, wire, scale);
        for (std::size_t i = 0; i < n; ++i) dev[i] = ew::encode_one(static_cast<double>(xf[i]), &r_dev[i], w, scale);
        for (std::size_t i = 0; i < n; ++i) {
          REQUIRE(dev[i] == ref[i]);
          REQUIRE(dbits(r_dev[i]) == dbits(r_ref[i]));
        }
        // double gradients, no feedback
        autosync::exec::encode(xd.data(), nullptr, ref.data(), n, wire, scale);
        for (std::size_t i = 0; i < n; ++i) REQUIRE(ew::encode_one(xd[i], nullptr, w, scale) == ref[i]);
        // decode with the average over `ranks`
        const double factor = 1.0 / ranks;
        std::vector<float> of(n);
        std::vector<double> od(n);
        autosync::exec::decode(ref.data(), of.data(), n, wire, scale, factor);
        autosync::exec::decode(ref.data(), od.data(), n, wire, scale, factor);
        const double k = factor / scale;
        for (std::size_t i = 0; i < n; ++i) {
          REQUIRE(fbits(static_cast<float>(ew::decode_one(ref[i], w, k))) == fbits(of[i]));
          REQUIRE(dbits(ew::decode_one(ref[i], w, k)) == dbits(od[i]));
        }
      }
    }
}

TEST_CASE("average of uncompressed elements is the executor's rounding") {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const double x = random_double(rng, -20, 20);
    const double factor = 1.0 / static_cast<double>(1 + rng() % 9);
    const float f = static_cast<float>(x);
    CHECK(fbits(ew::average_f32(f, factor)) == fbits(static_cast<float>(f * factor)));
    const auto h = autosync::exec::to_f16(x), b = autosync::exec::to_bf16(x);
    REQUIRE(ew::average_16(h, ew::wire16::f16, factor) == autosync::exec::to_f16(static_cast<double>(autosync::exec::from_f16(h)) * factor));
    REQUIRE(ew::average_16(b, ew::wire16::bf16, factor) ==
            autosync::exec::to_bf16(static_cast<double>(autosync::exec::from_bf16(b)) * factor));
  }
}

TEST_CASE("the kernels' tile walk packs and unpacks plan buckets like the executor's memcpy loops") {
  std::mt19937 rng(2026);
  std::size_t buckets = 0, strided = 0;
  for (int trial = 0; trial < 150; ++trial) {
    auto rc = autosync::testing::random_strategy(rng, 2);
    const auto cluster = autosync::testing::make_cluster(2, 2);
    const auto p = autosync::exec::compile_plan(rc.model, cluster, rc.strategy, {4, 2});
    // tensors filled with distinct 64-bit words (every element size is checked through bytes)
    std::vector<std::vector<unsigned char>> tensors;
    for (std::size_t t = 0; t < rc.model.tensors.size(); ++t) {
      const auto& x = rc.model.tensors[t];
      std::vector<unsigned char> bytes(static_cast<std::size_t>(x.bytes()));
      for (auto& c : bytes) c = static_cast<unsigned char>(rng());
      tensors.push_back(std::move(bytes));
    }
    for (const auto& b : p.buckets) {
      ++buckets;
      const std::size_t es = autosync::size_of(b.type);
      const auto rows = rows_of(b);
      for (const auto& s : b.segments) strided += s.blocks > 1;
      // the executor's pack (exec/executor.hpp)
      std::vector<unsigned char> ref(static_cast<std::size_t>(b.elements) * es);
      for (const auto& s : b.segments)
        for (std::int64_t k = 0; k < s.blocks; ++k)
          std::memcpy(ref.data() + static_cast<std::size_t>(s.fused + k * s.block) * es,
                      tensors[s.tensor].data() + static_cast<std::size_t>(s.offset + k * s.stride) * es, static_cast<std::size_t>(s.block) * es);
      for (auto [threads, items, grid] : {std::array<int, 3>{256, 8, 3}, {32, 1, 1}, {7, 3, 2}}) {
        std::vector<unsigned char> got(ref.size(), 0);
        std::vector<int> hits(static_cast<std::size_t>(b.elements), 0);
        walk(rows, b.elements, threads, items, grid, [&](std::int64_t e, const ew::segment_row& s) {
          ++hits[static_cast<std::size_t>(e)];
          std::memcpy(got.data() + static_cast<std::size_t>(e) * es,
                      tensors[s.tensor].data() + static_cast<std::size_t>(ew::tensor_element(s, e)) * es, es);
        });
        for (auto h : hits) REQUIRE(h == 1);  // every fused element exactly once
        REQUIRE(got == ref);
        // unpack into zeroed tensors: exactly the bytes the executor's unpack writes
        std::vector<std::vector<unsigned char>> back, back_ref;
        for (const auto& t : tensors) {
          back.emplace_back(t.size(), 0);
          back_ref.emplace_back(t.size(), 0);
        }
        for (const auto& s : b.segments)
          for (std::int64_t k = 0; k < s.blocks; ++k)
            std::memcpy(back_ref[s.tensor].data() + static_cast<std::size_t>(s.offset + k * s.stride) * es,
                        ref.data() + static_cast<std::size_t>(s.fused + k * s.block) * es, static_cast<std::size_t>(s.block) * es);
        walk(rows, b.elements, threads, items, grid, [&](std::int64_t e, const ew::segment_row& s) {
          std::memcpy(back[s.tensor].data() + static_cast<std::size_t>(ew::tensor_element(s, e)) * es,
                      ref.data() + static_cast<std::size_t>(e) * es, es);
        });
        REQUIRE(back == back_ref);
      }
    }
  }
  CHECK(buckets > 300);
  CHECK(strided > 20);  // axis-1 shards were exercised
}

TEST_CASE("locate finds the last row starting at or before the element") {
  std::vector<ew::segment_row> rows{{0, 0, 3, 3, 1, 0, 0}, {3, 5, 1, 4, 2, 1, 0}, {5, 0, 7, 7, 1, 2, 0}};
  const int expect[] = {0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2};
  for (int e = 0; e < 12; ++e) CHECK(ew::locate(rows.data(), 3, e) == expect[e]);
  // row 1: blocks of 1 element, stride 4 from offset 5: fused 3 -> 5, fused 4 -> 9
  CHECK(ew::tensor_element(rows[1], 3) == 5);
  CHECK(ew::tensor_element(rows[1], 4) == 9);
}
