// tests/mpi/collective_checks.hpp — backend-neutral bodies of the collective tests.
//
// Every check is a template over exec::Backend and takes the comms of one rank, so the MPI
// tests (collectives.cpp) and a later NCCL test instantiate the same bodies. Inputs are small
// integers chosen so that every partial sum is exact in the dtype (|v| <= 15 for f16/bf16, so
// 8 ranks stay below 2^8; 2^20 for f32 so sums stay below 2^24), hence every topology must give
// the exact sum and the checks compare bit for bit.
#pragma once

#include "harness.hpp"

#include <autosync/exec/collectives.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace autosync::mpitest {

inline constexpr dtype float_dtypes[] = {dtype::f32, dtype::f64, dtype::bf16, dtype::f16};

[[nodiscard]] constexpr std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The largest |value| per dtype such that 8 ranks' partial sums stay exact.
[[nodiscard]] constexpr std::int64_t value_range(dtype t) noexcept {
  switch (t) {
    case dtype::f16:
    case dtype::bf16: return 15;
    case dtype::f32: return std::int64_t{1} << 20;
    case dtype::f64: return std::int64_t{1} << 40;
    case dtype::i32: return std::int64_t{1} << 26;
    case dtype::i64: return std::int64_t{1} << 50;
  }
  return 1;
}

// Element i of rank r's input in test `salt`.
[[nodiscard]] constexpr std::int64_t value(int r, std::size_t i, dtype t, std::uint64_t salt) noexcept {
  const std::int64_t range = value_range(t);
  const std::uint64_t h = mix(salt * 0x100000001b3ull ^ mix(static_cast<std::uint64_t>(r) << 40 ^ i));
  return static_cast<std::int64_t>(h % static_cast<std::uint64_t>(2 * range + 1)) - range;
}

inline void encode(std::int64_t v, dtype t, unsigned char* out) noexcept {
  switch (t) {
    case dtype::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      break;
    }
    case dtype::f64: {
      const double d = static_cast<double>(v);
      std::memcpy(out, &d, 8);
      break;
    }
    case dtype::f16: {
      const std::uint16_t h = exec::f32_to_f16(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case dtype::bf16: {
      const std::uint16_t h = exec::f32_to_bf16(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case dtype::i32: {
      const auto x = static_cast<std::int32_t>(v);
      std::memcpy(out, &x, 4);
      break;
    }
    case dtype::i64: std::memcpy(out, &v, 8); break;
  }
}

[[nodiscard]] inline std::string name_of(const topology_value& t) {
  std::string s(enum_names<topology_kind>::names[static_cast<std::size_t>(t.kind)]);
  if (t.kind == topology_kind::hierarchical)
    s += "<" + std::string(enum_names<topology_kind>::names[static_cast<std::size_t>(t.intra)]) + "," +
         std::string(enum_names<topology_kind>::names[static_cast<std::size_t>(t.inter)]) + ">";
  return s;
}

// ring, tree, halving_doubling, then hierarchical<I, O> for the 9 flat pairs.
[[nodiscard]] inline std::vector<topology_value> all_topologies(bool flat = true, bool hierarchical = true) {
  constexpr topology_kind kinds[] = {topology_kind::ring, topology_kind::tree, topology_kind::halving_doubling};
  std::vector<topology_value> out;
  if (flat)
    for (auto k : kinds) out.push_back({k, topology_kind::ring, topology_kind::ring});
  if (hierarchical)
    for (auto i : kinds)
      for (auto o : kinds) out.push_back({topology_kind::hierarchical, i, o});
  return out;
}

// A rank's input: value(r, i) for every element.
[[nodiscard]] inline std::vector<unsigned char> input(int r, std::size_t n, dtype t, std::uint64_t salt) {
  const std::size_t es = size_of(t);
  std::vector<unsigned char> b(n * es);
  for (std::size_t i = 0; i < n; ++i) encode(value(r, i, t, salt), t, b.data() + i * es);
  return b;
}

// Element i of the sum over p ranks, encoded.
[[nodiscard]] inline std::vector<unsigned char> expected_sum(int p, std::size_t n, dtype t, std::uint64_t salt) {
  const std::size_t es = size_of(t);
  std::vector<unsigned char> b(n * es);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t s = 0;
    for (int r = 0; r < p; ++r) s += value(r, i, t, salt);
    encode(s, t, b.data() + i * es);
  }
  return b;
}

// Compare elements [a, b) of got and want; one failure message naming the first bad element.
inline bool same_elements(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want, std::size_t a,
                          std::size_t b, dtype t, const char* file, int line) {
  const std::size_t es = size_of(t);
  ++st().checks;
  if (b <= a || std::memcmp(got.data() + a * es, want.data() + a * es, (b - a) * es) == 0) return true;
  std::size_t bad = 0, first = b;
  for (std::size_t i = a; i < b; ++i)
    if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0) {
      ++bad;
      if (first == b) first = i;
    }
  fail(file, line, std::to_string(bad) + " of " + std::to_string(b - a) + " elements differ, first at " + std::to_string(first));
  return false;
}
#define AUTOSYNC_CHECK_ELEMENTS(got, want, a, b, t) ::autosync::mpitest::same_elements(got, want, a, b, t, __FILE__, __LINE__)

// The input and the expected result depend on (dtype, n, op) only, so they are computed once
// and every topology runs on the same data.
inline std::uint64_t salt_of(dtype t, std::size_t n, std::uint64_t op) {
  return mix(op << 56 ^ static_cast<std::uint64_t>(t) << 48 ^ n);
}

// all_reduce: every rank ends with the exact sum, for every topology x dtype x size.
template <exec::Backend B>
void check_all_reduce(exec::comms<B>& c, std::span<const topology_value> topos, std::span<const dtype> types,
                      std::span<const std::size_t> sizes) {
  const int p = c.world.size(), r = c.world.rank();
  for (dtype t : types)
    for (std::size_t n : sizes) {
      const auto salt = salt_of(t, n, 1);
      const auto in = input(r, n, t, salt), want = expected_sum(p, n, t, salt);
      for (const auto& topo : topos) {
        CONTEXT("all_reduce " << name_of(topo) << " " << autosync::name_of(t) << " n=" << n << " ranks_per_node=" << c.ranks_per_node);
        auto buf = in;
        exec::all_reduce(c, buf.data(), n, t, topo);
        AUTOSYNC_CHECK_ELEMENTS(buf, want, 0, n, t);
      }
    }
}

// reduce_scatter: world rank r's block even_shard(n, p, r) holds the exact sum.
template <exec::Backend B>
void check_reduce_scatter(exec::comms<B>& c, std::span<const topology_value> topos, std::span<const dtype> types,
                          std::span<const std::size_t> sizes) {
  const int p = c.world.size(), r = c.world.rank();
  for (dtype t : types)
    for (std::size_t n : sizes) {
      const auto salt = salt_of(t, n, 2);
      const auto in = input(r, n, t, salt), want = expected_sum(p, n, t, salt);
      const auto blk = even_shard(static_cast<std::int64_t>(n), p, r);
      for (const auto& topo : topos) {
        CONTEXT("reduce_scatter " << name_of(topo) << " " << autosync::name_of(t) << " n=" << n << " ranks_per_node=" << c.ranks_per_node);
        auto buf = in;
        exec::reduce_scatter(c, buf.data(), n, t, topo);
        AUTOSYNC_CHECK_ELEMENTS(buf, want, static_cast<std::size_t>(blk.begin), static_cast<std::size_t>(blk.end), t);
      }
    }
}

// all_gather: rank r brings block r (the rest of its buffer is junk); everyone ends with all.
template <exec::Backend B>
void check_all_gather(exec::comms<B>& c, std::span<const topology_value> topos, std::span<const dtype> types,
                      std::span<const std::size_t> sizes) {
  const int p = c.world.size(), r = c.world.rank();
  for (dtype t : types)
    for (std::size_t n : sizes) {
      const auto salt = salt_of(t, n, 3);
      const std::size_t es = size_of(t);
      std::vector<unsigned char> want(n * es), in(n * es, 0xa5);
      for (int q = 0; q < p; ++q) {
        const auto blk = even_shard(static_cast<std::int64_t>(n), p, q);
        for (auto i = static_cast<std::size_t>(blk.begin); i < static_cast<std::size_t>(blk.end); ++i) {
          encode(value(q, i, t, salt), t, want.data() + i * es);
          if (q == r) encode(value(q, i, t, salt), t, in.data() + i * es);
        }
      }
      for (const auto& topo : topos) {
        CONTEXT("all_gather " << name_of(topo) << " " << autosync::name_of(t) << " n=" << n << " ranks_per_node=" << c.ranks_per_node);
        auto buf = in;
        exec::all_gather(c, buf.data(), n, t, topo);
        AUTOSYNC_CHECK_ELEMENTS(buf, want, 0, n, t);
      }
    }
}

// ps_push_pull: every server rank, with and without local replication; everyone gets the sum.
template <exec::Backend B>
void check_ps_push_pull(exec::comms<B>& c, std::span<const dtype> types, std::span<const std::size_t> sizes) {
  const int p = c.world.size(), r = c.world.rank();
  for (int server = 0; server < p; ++server)
    for (bool local : {false, true})
      for (dtype t : types)
        for (std::size_t n : sizes) {
          CONTEXT("ps_push_pull server=" << server << " local_replication=" << local << " " << autosync::name_of(t) << " n=" << n
                                         << " ranks_per_node=" << c.ranks_per_node);
          const auto salt = mix(static_cast<std::uint64_t>(server) << 32 ^ static_cast<std::uint64_t>(local) << 31 ^
                                static_cast<std::uint64_t>(t) << 24 ^ n ^ static_cast<std::uint64_t>(c.ranks_per_node) << 50);
          auto buf = input(r, n, t, salt);
          exec::ps_push_pull(c, buf.data(), n, t, server, local);
          AUTOSYNC_CHECK_ELEMENTS(buf, expected_sum(p, n, t, salt), 0, n, t);
        }
}

// Which rows rank r touches in sparse pattern `pattern`: 0 about a third (the last rank none),
// 1 every row on rank 0 and every other row elsewhere, 2 one row per rank (a rank's own index).
[[nodiscard]] inline std::vector<std::int64_t> touched_rows(int r, int p, std::size_t rows, int pattern) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < rows; ++i) {
    bool on = false;
    switch (pattern) {
      case 0: on = r != p - 1 && mix(static_cast<std::uint64_t>(r) << 32 ^ i) % 3 == 0; break;
      case 1: on = r == 0 || (i + static_cast<std::size_t>(r)) % 2 == 0; break;
      default: on = i == static_cast<std::size_t>(r) % rows; break;
    }
    if (on) out.push_back(static_cast<std::int64_t>(i));
  }
  return out;
}

// sparse_all_gather: every rank ends with the per-row sums over the ranks that touched the row.
template <exec::Backend B>
void check_sparse_all_gather(exec::comms<B>& c, std::span<const dtype> types) {
  const int p = c.world.size(), r = c.world.rank();
  for (std::size_t rows : {std::size_t{1}, std::size_t{5}, std::size_t{37}})
    for (std::size_t width : {std::size_t{1}, std::size_t{3}, std::size_t{16}})
      for (int pattern = 0; pattern < 3; ++pattern)
        for (dtype t : types) {
          CONTEXT("sparse_all_gather rows=" << rows << " row_elems=" << width << " pattern=" << pattern << " " << autosync::name_of(t));
          const std::size_t es = size_of(t), n = rows * width;
          const auto salt = mix(rows << 40 ^ width << 20 ^ static_cast<std::size_t>(pattern) << 8 ^ static_cast<std::size_t>(t));
          std::vector<unsigned char> buf(n * es, 0x5a);  // untouched rows hold junk: it must not leak
          const auto mine = touched_rows(r, p, rows, pattern);
          for (auto row : mine)
            for (std::size_t j = 0; j < width; ++j) {
              const std::size_t i = static_cast<std::size_t>(row) * width + j;
              encode(value(r, i, t, salt), t, buf.data() + i * es);
            }
          std::vector<std::int64_t> sum(n, 0);
          for (int q = 0; q < p; ++q)
            for (auto row : touched_rows(q, p, rows, pattern))
              for (std::size_t j = 0; j < width; ++j) {
                const std::size_t i = static_cast<std::size_t>(row) * width + j;
                sum[i] += value(q, i, t, salt);
              }
          std::vector<unsigned char> want(n * es);
          for (std::size_t i = 0; i < n; ++i) encode(sum[i], t, want.data() + i * es);
          exec::sparse_all_gather(c, buf.data(), rows, width, t, mine);
          AUTOSYNC_CHECK_ELEMENTS(buf, want, 0, n, t);
        }
}

// Run lengths that cut n elements into pieces of varied sizes (1, 2, 3, ... up to thousands),
// like a bucket of tensors of odd shapes.
[[nodiscard]] inline std::vector<std::size_t> run_lengths(std::size_t n, std::uint64_t salt) {
  constexpr std::size_t L[] = {1, 3, 2, 17, 64, 5, 1000, 7, 250};
  std::vector<std::size_t> out;
  for (std::size_t left = n, k = 0; left > 0; ++k) {
    const std::size_t x = std::min(left, L[(salt + k) % 9] * (1 + n / 4000));
    out.push_back(x);
    left -= x;
  }
  return out;
}

// The topologies a segmented buffer runs on: ring and halving-doubling, flat or (all_reduce) as
// both hierarchical levels.
[[nodiscard]] inline bool segmented_topology(const topology_value& t, bool hierarchical_ok) {
  auto flat = [](topology_kind k) { return k == topology_kind::ring || k == topology_kind::halving_doubling; };
  return flat(t.kind) || (hierarchical_ok && t.kind == topology_kind::hierarchical && flat(t.intra) && flat(t.inter));
}

// Segmented buffers (each run its own allocation): all_reduce, and reduce_scatter + all_gather
// (the sharded step), give every rank the exact sum in every run.
template <exec::Backend B>
void check_segmented(exec::comms<B>& c, std::span<const topology_value> topos, std::span<const dtype> types,
                     std::span<const std::size_t> sizes) {
  const int p = c.world.size(), r = c.world.rank();
  for (dtype t : types)
    for (std::size_t n : sizes) {
      const std::size_t es = size_of(t);
      const auto salt = salt_of(t, n, 4);
      const auto in = input(r, n, t, salt), want = expected_sum(p, n, t, salt);
      const auto lens = run_lengths(n, salt);
      for (const auto& topo : topos)
        for (int sharded = 0; sharded < 2; ++sharded) {
          if (!segmented_topology(topo, sharded == 0)) continue;
          CONTEXT((sharded ? "reduce_scatter+all_gather " : "all_reduce ") << name_of(topo) << " segmented " << autosync::name_of(t)
                                                                            << " n=" << n << " runs=" << lens.size()
                                                                            << " ranks_per_node=" << c.ranks_per_node);
          std::vector<std::vector<unsigned char>> runs;
          exec::segmented sv(t);
          std::size_t o = 0;
          for (std::size_t len : lens) {
            runs.emplace_back(in.begin() + static_cast<std::ptrdiff_t>(o * es), in.begin() + static_cast<std::ptrdiff_t>((o + len) * es));
            sv.append(runs.back().data(), len);
            o += len;
          }
          if (sharded) {
            exec::reduce_scatter(c, sv, topo);
            exec::all_gather(c, sv, topo);
          } else {
            exec::all_reduce(c, sv, topo);
          }
          std::vector<unsigned char> got;
          for (const auto& x : runs) got.insert(got.end(), x.begin(), x.end());
          AUTOSYNC_CHECK_ELEMENTS(got, want, 0, n, t);
        }
    }
}

}  // namespace autosync::mpitest
