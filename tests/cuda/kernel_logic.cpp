// tests/cuda/kernel_logic.cpp — the per-element logic of the CUDA bucket kernels, on the host.
//
// exec/nccl/elementwise.hpp is the code the kernels of exec/nccl/kernels.cuh run per element.
// Here the host compiler runs the same functions and they are checked bit for bit against the
// CPU reference the MPI path uses (exec/compress.hpp, the executor's pack/unpack/average):
//   - narrow/widen against to_f16/to_bf16/from_f16/from_bf16 on every 16-bit pattern and on
//     random doubles of every magnitude (subnormal, overflow, NaN, inf, ties);
//   - encode/decode with error feedback against exec::encode/exec::decode over iterations;
//   - the kernels' walk (exec/nccl/bucket_walk.hpp: 128-bit vectors, funnel shifts for misaligned
//     tensors, elements at row edges and across rows, the scalar tail) for every kernel (pack,
//     unpack, unpack+average, pack+encode, decode+unpack, the in-place average) against the
//     executor's memcpy pack/unpack on plans compiled from random strategies (strided axis-k
//     shards, odd sizes, tensors off a 16-byte boundary), for several grid shapes, with a host
//     memory policy that rejects any access outside the bucket's bytes and counts every store.
// No GPU needed; runs in CI.
#include <doctest/doctest.h>

#include <autosync/exec/compress.hpp>
#include <autosync/exec/nccl/bucket_walk.hpp>
#include <autosync/exec/nccl/elementwise.hpp>
#include <autosync/exec/plan.hpp>

#include "../common/random_strategies.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace ew = autosync::exec::nccl::ew;
using autosync::dtype;

namespace {

std::uint32_t fbits(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint64_t dbits(double d) { return std::bit_cast<std::uint64_t>(d); }

// A double of random sign, mantissa and exponent in [lo, hi] (powers of two), with some exact
// ties of the 16-bit formats (mantissa bits below the kept ones = 100..0) and specials.
template <class Rng>
double random_double(Rng& rng, int lo, int hi) {
  const auto kind = static_cast<std::uint64_t>(rng()) % 16;
  if (kind == 0) return std::numeric_limits<double>::infinity() * ((rng() & 1) ? 1 : -1);
  if (kind == 1) return std::numeric_limits<double>::quiet_NaN();
  if (kind == 2) return (rng() & 1) ? 0.0 : -0.0;
  const int e = lo + static_cast<int>(static_cast<std::uint64_t>(rng()) % static_cast<std::uint64_t>(hi - lo + 1));
  std::uint64_t man = static_cast<std::uint64_t>(rng());
  if constexpr (sizeof(typename Rng::result_type) < 8) man = (man << 32) | static_cast<std::uint64_t>(rng());
  man &= (std::uint64_t{1} << 52) - 1;
  if (kind == 3) man = (man & ~((std::uint64_t{1} << 42) - 1)) | (std::uint64_t{1} << 41);  // f16 tie
  if (kind == 4) man = (man & ~((std::uint64_t{1} << 45) - 1)) | (std::uint64_t{1} << 44);  // bf16 tie
  const double m = 1.0 + static_cast<double>(man) * 0x1p-52;
  return ((rng() & 1) ? -1.0 : 1.0) * std::ldexp(m, e);
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
        for (std::size_t i = 0; i < n; ++i) dev[i] = ew::encode_one(static_cast<double>(xf[i]), &r_dev[i], w, scale, 1.0 / scale);
        for (std::size_t i = 0; i < n; ++i) {
          REQUIRE(dev[i] == ref[i]);
          REQUIRE(dbits(r_dev[i]) == dbits(r_ref[i]));
        }
        // double gradients, no feedback
        autosync::exec::encode(xd.data(), nullptr, ref.data(), n, wire, scale);
        for (std::size_t i = 0; i < n; ++i) REQUIRE(ew::encode_one(xd[i], nullptr, w, scale, 1.0 / scale) == ref[i]);
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

// ---- the bucket walk (exec/nccl/bucket_walk.hpp) on host memory, every access checked ----------
// The regions a kernel may touch: each tensor's bytes inside the bucket's segments, and the
// fused-side arrays. A vector access must be 16-byte aligned, an element access aligned to its
// size, and every byte inside an allowed range; every store is counted per byte.
struct region {
  const unsigned char* base = nullptr;
  std::size_t size = 0;
  std::vector<unsigned char> allowed;  // per byte
  std::vector<int> writes;             // per byte
};
struct walk_log {
  std::vector<region> regions;
  std::size_t tensor_vectors = 0, tensor_elements = 0;
};
walk_log* g_log = nullptr;

void check_access(const void* p, std::size_t len, bool store, bool vector) {
  const auto* c = static_cast<const unsigned char*>(p);
  if (vector && (reinterpret_cast<std::uintptr_t>(c) & 15u) != 0) throw std::runtime_error("misaligned 16-byte access");
  if (!vector && (reinterpret_cast<std::uintptr_t>(c) % len) != 0) throw std::runtime_error("misaligned element access");
  for (std::size_t ri = 0; ri < g_log->regions.size(); ++ri) {
    auto& r = g_log->regions[ri];
    if (c < r.base || c + len > r.base + r.size) continue;
    const auto o = static_cast<std::size_t>(c - r.base);
    for (std::size_t i = 0; i < len; ++i) {
      if (!r.allowed[o + i]) throw std::runtime_error("access outside the bucket's bytes");
      if (store) ++r.writes[o + i];
    }
    return;
  }
  throw std::runtime_error("access outside every buffer");
}

struct host_mem {
  static ew::vec16 ld16(const void* p) {
    check_access(p, 16, false, true);
    ew::vec16 v;
    std::memcpy(v.w, p, 16);
    return v;
  }
  static void st16(void* p, const ew::vec16& v) {
    check_access(p, 16, true, true);
    std::memcpy(p, v.w, 16);
  }
  template <class T>
  static T ld(const T* p) {
    check_access(p, sizeof(T), false, false);
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  template <class T>
  static void st(T* p, T v) {
    check_access(p, sizeof(T), true, false);
    std::memcpy(p, &v, sizeof v);
  }
};

// A byte buffer whose data starts `off` bytes after a 16-byte boundary.
struct buffer {
  std::vector<unsigned char> storage;
  unsigned char* data = nullptr;
  std::size_t size = 0;
  buffer(std::size_t bytes, std::size_t off) : storage(bytes + 32 + off), size(bytes) {
    auto a = reinterpret_cast<std::uintptr_t>(storage.data());
    a = (a + 15u) & ~std::uintptr_t{15};
    data = reinterpret_cast<unsigned char*>(a) + off;
  }
};

// Every block and thread of a grid, one after another (each element is touched by one thread).
template <class Op>
void run_grid(const Op& op, int threads, int grid) {
  for (int block = 0; block < grid; ++block)
    for (int tid = 0; tid < threads; ++tid) ew::run_thread<host_mem>(op, block, grid, threads, tid);
}

template <class T>
T load_as(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One bucket of a compiled plan with its tensors on (possibly misaligned) host buffers.
struct bucket_fixture {
  const autosync::exec::plan_bucket& b;
  std::size_t es;
  std::vector<ew::segment_row> rows;
  std::vector<buffer> tensors;  // the gradients (inputs of gather)
  std::vector<void*> ptrs;
  std::vector<std::vector<unsigned char>> allowed;  // per tensor: bytes inside this bucket's segments

  // the executor's pack / unpack (exec/executor.hpp: one memcpy per block)
  template <class F>
  void for_blocks(F f) const {
    for (const auto& s : b.segments)
      for (std::int64_t k = 0; k < s.blocks; ++k)
        f(s.tensor, static_cast<std::size_t>(s.offset + k * s.stride) * es, static_cast<std::size_t>(s.fused + k * s.block) * es,
          static_cast<std::size_t>(s.block) * es);
  }
  std::vector<unsigned char> pack_ref() const {
    std::vector<unsigned char> ref(static_cast<std::size_t>(b.elements) * es);
    for_blocks([&](std::uint32_t t, std::size_t to, std::size_t fo, std::size_t len) { std::memcpy(ref.data() + fo, tensors[t].data + to, len); });
    return ref;
  }
  // the tensors' bytes after unpacking `fused` into tensors filled with 0xa5
  std::vector<std::vector<unsigned char>> unpack_ref(const std::vector<unsigned char>& fused) const {
    std::vector<std::vector<unsigned char>> out;
    for (const auto& t : tensors) out.emplace_back(t.size, 0xa5);
    for_blocks([&](std::uint32_t t, std::size_t to, std::size_t fo, std::size_t len) { std::memcpy(out[t].data() + to, fused.data() + fo, len); });
    return out;
  }
  void poison() {
    for (auto& t : tensors) std::memset(t.data, 0xa5, t.size);
  }
  std::vector<std::vector<unsigned char>> tensor_bytes() const {
    std::vector<std::vector<unsigned char>> out;
    for (const auto& t : tensors) out.emplace_back(t.data, t.data + t.size);
    return out;
  }
  // registers the regions: tensors (reads and writes inside the segments only) and side arrays
  void regions(walk_log& log, std::initializer_list<std::pair<unsigned char*, std::size_t>> sides) const {
    log.regions.clear();
    for (std::size_t t = 0; t < tensors.size(); ++t)
      log.regions.push_back({tensors[t].data, tensors[t].size, allowed[t], std::vector<int>(tensors[t].size, 0)});
    for (const auto& [p, n] : sides) log.regions.push_back({p, n, std::vector<unsigned char>(n, 1), std::vector<int>(n, 0)});
  }
  template <class Op>
  Op view() const {
    Op op;
    op.rows = rows.data();
    op.nrows = static_cast<int>(rows.size());
    op.tensors = ptrs.data();
    op.n = b.elements;
    return op;
  }
};

// After a gather: the side arrays written exactly once per byte, the tensors never.
void require_gather_writes(const walk_log& log, std::size_t ntensors) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < log.regions.size(); ++i)
    for (int w : log.regions[i].writes) bad += w != (i < ntensors ? 0 : 1);
  REQUIRE(bad == 0);
}
// After a scatter: every segment byte written exactly once, the side arrays never.
void require_scatter_writes(const walk_log& log, std::size_t ntensors) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < log.regions.size(); ++i)
    for (std::size_t k = 0; k < log.regions[i].writes.size(); ++k)
      bad += log.regions[i].writes[k] != (i < ntensors ? static_cast<int>(log.regions[i].allowed[k]) : 0);
  REQUIRE(bad == 0);
}

template <class TS>
void check_raw(bucket_fixture& f, walk_log& log, int threads, int grid, std::size_t side_off) {
  const auto ref = f.pack_ref();
  buffer fused(ref.size(), side_off);
  std::memset(fused.data, 0x5a, fused.size);
  f.regions(log, {{fused.data, fused.size}});
  auto pk = f.view<ew::pack_op<TS>>();
  pk.fused = reinterpret_cast<TS*>(fused.data);
  REQUIRE_NOTHROW(run_grid(pk, threads, grid));
  REQUIRE(std::memcmp(fused.data, ref.data(), ref.size()) == 0);
  require_gather_writes(log, f.tensors.size());

  const auto inputs = f.tensor_bytes();
  f.poison();
  f.regions(log, {{fused.data, fused.size}});
  auto up = f.view<ew::unpack_op<TS>>();
  up.fused = reinterpret_cast<const TS*>(fused.data);
  REQUIRE_NOTHROW(run_grid(up, threads, grid));
  REQUIRE(f.tensor_bytes() == f.unpack_ref(ref));
  require_scatter_writes(log, f.tensors.size());
  for (std::size_t t = 0; t < inputs.size(); ++t) std::memcpy(f.tensors[t].data, inputs[t].data(), inputs[t].size());
}

// unpack with the average, the fused elements mapped by `avg` (the per-element function the
// kernels run, checked against the executor above) before the executor's unpack.
template <class Op, class TS, class Avg>
void check_average(bucket_fixture& f, walk_log& log, Op op, int threads, int grid, std::size_t side_off, Avg avg) {
  const auto ref = f.pack_ref();
  std::vector<unsigned char> expect_fused(ref.size());
  for (std::size_t i = 0; i < ref.size(); i += sizeof(TS)) {
    const TS y = avg(load_as<TS>(ref.data() + i));
    std::memcpy(expect_fused.data() + i, &y, sizeof y);
  }
  buffer fused(ref.size(), side_off);
  std::memcpy(fused.data, ref.data(), ref.size());
  const auto inputs = f.tensor_bytes();
  f.poison();
  f.regions(log, {{fused.data, fused.size}});
  op.fused = reinterpret_cast<decltype(op.fused)>(fused.data);
  REQUIRE_NOTHROW(run_grid(op, threads, grid));
  REQUIRE(f.tensor_bytes() == f.unpack_ref(expect_fused));
  require_scatter_writes(log, f.tensors.size());
  for (std::size_t t = 0; t < inputs.size(); ++t) std::memcpy(f.tensors[t].data, inputs[t].data(), inputs[t].size());
}

// pack+encode (with and without error feedback) and decode+unpack of an f32 / f64 bucket
// against encode_one / decode_one element by element in fused order.
template <class T>
void check_compressed(bucket_fixture& f, walk_log& log, std::mt19937& rng, int threads, int grid, std::size_t side_off) {
  using TS = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const auto ref = f.pack_ref();
  const auto n = static_cast<std::size_t>(f.b.elements);
  for (const auto w : {ew::wire16::f16, ew::wire16::bf16})
    for (const bool feedback : {true, false}) {
      const double scale = w == ew::wire16::f16 ? 0x1p-3 : 1.0;
      std::vector<std::uint16_t> wire_ref(n);
      std::vector<double> res0(n), res_ref(n);
      for (auto& r : res0) r = std::ldexp(static_cast<double>(rng() % 2001) - 1000.0, -20);
      res_ref = res0;
      for (std::size_t i = 0; i < n; ++i)
        wire_ref[i] = ew::encode_one(static_cast<double>(load_as<T>(ref.data() + i * sizeof(T))), feedback ? &res_ref[i] : nullptr, w, scale,
                                     1.0 / scale);
      buffer wire(n * 2, side_off ? 2 : 0), res(n * 8, side_off ? 8 : 0);
      std::memset(wire.data, 0x5a, wire.size);
      std::memcpy(res.data, res0.data(), res.size);
      f.regions(log, {{wire.data, wire.size}, {res.data, res.size}});
      auto op = f.view<ew::pack_encode_op<T>>();
      op.wire = reinterpret_cast<std::uint16_t*>(wire.data);
      op.residual = feedback ? reinterpret_cast<double*>(res.data) : nullptr;
      op.w = w;
      op.scale = scale;
      op.inv_scale = 1.0 / scale;
      REQUIRE_NOTHROW(run_grid(op, threads, grid));
      REQUIRE(std::memcmp(wire.data, wire_ref.data(), wire.size) == 0);
      REQUIRE(std::memcmp(res.data, (feedback ? res_ref : res0).data(), res.size) == 0);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < f.tensors.size(); ++i)
        for (int x : log.regions[i].writes) bad += x != 0;
      for (std::size_t i = 0; i < wire.size; ++i) bad += log.regions[f.tensors.size()].writes[i] != 1;
      for (std::size_t i = 0; i < res.size; ++i) bad += log.regions[f.tensors.size() + 1].writes[i] != (feedback ? 1 : 0);
      REQUIRE(bad == 0);

      // decode + unpack into poisoned tensors: k = factor / scale
      const double k = (1.0 / 3.0) / scale;
      std::vector<unsigned char> dec(n * sizeof(T));
      for (std::size_t i = 0; i < n; ++i) {
        const T y = static_cast<T>(ew::decode_one(wire_ref[i], w, k));
        std::memcpy(dec.data() + i * sizeof(T), &y, sizeof y);
      }
      const auto inputs = f.tensor_bytes();
      f.poison();
      f.regions(log, {{wire.data, wire.size}});
      auto du = f.view<ew::decode_unpack_op<T>>();
      du.wire = reinterpret_cast<const std::uint16_t*>(wire.data);
      du.w = w;
      du.k = k;
      REQUIRE_NOTHROW(run_grid(du, threads, grid));
      REQUIRE(f.tensor_bytes() == f.unpack_ref(dec));
      require_scatter_writes(log, f.tensors.size());
      for (std::size_t t = 0; t < inputs.size(); ++t) std::memcpy(f.tensors[t].data, inputs[t].data(), inputs[t].size());
    }
  (void)sizeof(TS);
}

TEST_CASE("the bucket walk packs, unpacks, averages, encodes and decodes plan buckets like the executor, misaligned tensors too") {
  std::mt19937 rng(2026);
  walk_log log;
  g_log = &log;
  std::size_t buckets = 0, strided = 0, misaligned = 0;
  for (int trial = 0; trial < 120; ++trial) {
    auto rc = autosync::testing::random_strategy(rng, 2);
    const auto cluster = autosync::testing::make_cluster(2, 2);
    const auto p = autosync::exec::compile_plan(rc.model, cluster, rc.strategy, {4, 2});
    for (const auto& b : p.buckets) {
      ++buckets;
      bucket_fixture f{b, autosync::size_of(b.type), rows_of(b), {}, {}, {}};
      // tensors at a random element offset from a 16-byte boundary (a tensor inside a larger
      // allocation), filled with values of their type
      for (std::size_t t = 0; t < rc.model.tensors.size(); ++t) {
        const auto& x = rc.model.tensors[t];
        const std::size_t es = autosync::size_of(x.type);
        const std::size_t off = es * (rng() % (16 / es));
        misaligned += off != 0;
        f.tensors.emplace_back(static_cast<std::size_t>(x.bytes()), off);
        auto& buf = f.tensors.back();
        for (std::size_t i = 0; i < buf.size; i += es) {
          if (es == 4) {
            const auto v = static_cast<float>(random_double(rng, -30, 10));
            std::memcpy(buf.data + i, &v, 4);
          } else if (es == 8) {
            const double v = random_double(rng, -30, 10);
            std::memcpy(buf.data + i, &v, 8);
          } else {
            const auto v = static_cast<std::uint16_t>(rng());
            std::memcpy(buf.data + i, &v, 2);
          }
        }
        f.ptrs.push_back(buf.data);
        f.allowed.emplace_back(buf.size, 0);
      }
      f.for_blocks([&](std::uint32_t t, std::size_t to, std::size_t, std::size_t len) { std::memset(f.allowed[t].data() + to, 1, len); });
      for (const auto& s : b.segments) strided += s.blocks > 1;
      const std::size_t side_off = (trial % 4 == 3) ? f.es : 0;  // now and then a misaligned fused side
      const double factor = 1.0 / 3.0;
      for (auto [threads, grid] : {std::array<int, 2>{256, 3}, {32, 1}, {7, 2}}) {
        switch (f.es) {
          case 2: check_raw<std::uint16_t>(f, log, threads, grid, side_off); break;
          case 4: check_raw<std::uint32_t>(f, log, threads, grid, side_off); break;
          default: check_raw<std::uint64_t>(f, log, threads, grid, side_off); break;
        }
        if (b.type == dtype::f32) {
          auto op = f.view<ew::unpack_average_op<float>>();
          op.factor = factor;
          check_average<decltype(op), std::uint32_t>(f, log, op, threads, grid, side_off, [&](std::uint32_t u) {
            return fbits(ew::average_f32(std::bit_cast<float>(u), factor));
          });
          check_compressed<float>(f, log, rng, threads, grid, side_off);
        } else if (b.type == dtype::f64) {
          auto op = f.view<ew::unpack_average_op<double>>();
          op.factor = factor;
          check_average<decltype(op), std::uint64_t>(f, log, op, threads, grid, side_off, [&](std::uint64_t u) {
            return dbits(ew::average_f64(std::bit_cast<double>(u), factor));
          });
          check_compressed<double>(f, log, rng, threads, grid, side_off);
        } else if (b.type == dtype::f16 || b.type == dtype::bf16) {
          auto op = f.view<ew::unpack_average16_op>();
          op.w = b.type == dtype::f16 ? ew::wire16::f16 : ew::wire16::bf16;
          op.factor = factor;
          check_average<decltype(op), std::uint16_t>(f, log, op, threads, grid, side_off,
                                                      [&](std::uint16_t u) { return ew::average_16(u, op.w, factor); });
        }
      }
    }
  }
  g_log = nullptr;
  CHECK(buckets > 250);
  CHECK(strided > 20);      // axis-1 shards were exercised
  CHECK(misaligned > 100);  // tensors off a 16-byte boundary were exercised
}

TEST_CASE("the walk's access kinds: vectors, funnel-shifted vectors, elements at a row's edges and across rows") {
  // f32, G = 4. Tensor 0: 40 elements at a boundary; tensor 1: 60 elements at 4 bytes past one,
  // its row from element 1 (so the row starts 8 bytes past a boundary); tensor 2: strided.
  walk_log log;
  g_log = &log;
  buffer t0(160, 0), t1(240, 4), t2(64, 0);
  for (std::size_t i = 0; i < 160; ++i) t0.data[i] = static_cast<unsigned char>(i);
  for (std::size_t i = 0; i < 240; ++i) t1.data[i] = static_cast<unsigned char>(200 + i);
  for (std::size_t i = 0; i < 64; ++i) t2.data[i] = static_cast<unsigned char>(100 + i);
  void* ptrs[] = {t0.data, t1.data, t2.data};
  const std::vector<ew::segment_row> rows{{0, 0, 40, 40, 1, 0, 0}, {40, 1, 50, 50, 1, 1, 0}, {90, 0, 2, 5, 3, 2, 0}};
  const std::int64_t n = 96;
  log.regions.push_back({t0.data, 160, std::vector<unsigned char>(160, 1), std::vector<int>(160, 0)});
  log.regions.push_back({t1.data, 240, std::vector<unsigned char>(240, 1), std::vector<int>(240, 0)});
  log.regions.push_back({t2.data, 64, std::vector<unsigned char>(64, 1), std::vector<int>(64, 0)});
  auto kind = [&](std::int64_t e0, int count, std::uint32_t* w) {
    ew::access how{};
    ew::load_tensor<host_mem, std::uint32_t, 4>(rows.data(), 3, ptrs, n, e0, count, 0, w, &how);
    return how;
  };
  auto expect = [&](std::int64_t e0, const std::uint32_t* w) {  // element by element
    for (int k = 0; k < 4 && e0 + k < n; ++k) {
      const std::int64_t e = e0 + k;
      const auto& s = rows[static_cast<std::size_t>(ew::locate(rows.data(), 3, e))];
      std::uint32_t v;
      std::memcpy(&v, static_cast<unsigned char*>(ptrs[s.tensor]) + 4 * ew::tensor_element(s, e), 4);
      REQUIRE(w[k] == v);
    }
  };
  std::uint32_t w[4];
  CHECK(kind(0, 4, w) == ew::access::vector);
  expect(0, w);
  CHECK(kind(40, 4, w) == ew::access::elements_in_row);  // the aligned block before p starts before the row
  expect(40, w);
  CHECK(kind(44, 4, w) == ew::access::funnel);  // p 8 bytes past a boundary, the blocks inside the row
  expect(44, w);
  CHECK(kind(84, 4, w) == ew::access::funnel);  // the row ends on a 16-byte boundary: the last block is inside
  expect(84, w);
  CHECK(kind(88, 4, w) == ew::access::elements);  // crosses into the strided row
  expect(88, w);
  CHECK(kind(92, 4, w) == ew::access::elements);  // a strided row
  expect(92, w);
  g_log = nullptr;
  // the grid: one full wave at most, never zero blocks
  CHECK(ew::grid_blocks(0, 256, 4, 528) == 1);
  CHECK(ew::grid_blocks(1024, 256, 4, 528) == 1);
  CHECK(ew::grid_blocks(1025, 256, 4, 528) == 2);
  CHECK(ew::grid_blocks(1 << 24, 256, 4, 528) == 528);
  CHECK(ew::grid_blocks(1 << 24, 256, 4, 0) == 1);
}

TEST_CASE("the in-place average walks any alignment: a scalar head, vectors, a scalar tail") {
  walk_log log;
  g_log = &log;
  std::mt19937 rng(5);
  const double factor = 0.125 * 3;
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 3000);
    const std::size_t off = 4 * (rng() % 4);
    buffer b(static_cast<std::size_t>(n) * 4, off);
    std::vector<std::uint32_t> x(static_cast<std::size_t>(n)), expect(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto v = static_cast<float>(random_double(rng, -20, 20));
      x[i] = fbits(v);
      expect[i] = fbits(ew::average_f32(v, factor));
    }
    std::memcpy(b.data, x.data(), b.size);
    log.regions.clear();
    log.regions.push_back({b.data, b.size, std::vector<unsigned char>(b.size, 1), std::vector<int>(b.size, 0)});
    const int threads = trial % 2 ? 256 : 7, grid = 1 + trial % 3;
    for (int block = 0; block < grid; ++block)
      for (int tid = 0; tid < threads; ++tid)
        REQUIRE_NOTHROW(ew::run_scale_thread<host_mem, std::uint32_t, 4>(reinterpret_cast<std::uint32_t*>(b.data), n, ew::average_f32_bits{factor},
                                                                         block, grid, threads, tid));
    REQUIRE(std::memcmp(b.data, expect.data(), b.size) == 0);
    REQUIRE(std::count(log.regions[0].writes.begin(), log.regions[0].writes.end(), 1) == static_cast<std::ptrdiff_t>(b.size));
    CHECK(ew::head_elements<std::uint32_t>(b.data, n) == std::min<std::int64_t>(n, off ? static_cast<std::int64_t>((16 - off) / 4) : 0));
  }
  g_log = nullptr;
}

TEST_CASE("locate finds the last row starting at or before the element") {
  std::vector<ew::segment_row> rows{{0, 0, 3, 3, 1, 0, 0}, {3, 5, 1, 4, 2, 1, 0}, {5, 0, 7, 7, 1, 2, 0}};
  const int expect[] = {0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2};
  for (int e = 0; e < 12; ++e) CHECK(ew::locate(rows.data(), 3, e) == expect[e]);
  // row 1: blocks of 1 element, stride 4 from offset 5: fused 3 -> 5, fused 4 -> 9
  CHECK(ew::tensor_element(rows[1], 3) == 5);
  CHECK(ew::tensor_element(rows[1], 4) == 9);
}
