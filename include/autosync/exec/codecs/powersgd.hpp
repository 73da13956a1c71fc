// autosync/exec/codecs/powersgd.hpp — PowerSGD (Vogels, Karimireddy, Jaggi, NeurIPS 2019) on
// the CPU, as PyTorch's powerSGD_hook runs it: rank r, warm start, error feedback.
//
// A gradient is viewed as a matrix of shape[0] rows and the product of the other dimensions
// as columns (a conv kernel (out, in, kh, kw) is out x in*kh*kw). Per step, per matrix:
//
//   rank  M = G + E                            E: this rank's error (zero at first)
//         P = M Q                              Q: cols x r, warm-started (shared first draw)
//   all   P = sum over ranks of P              all-reduce 1 (rows x r)
//   rank  P = orthonormalize(P)                Gram-Schmidt, column by column (in double)
//         Q = M^T P                            (cols x r)
//   all   Q = sum over ranks of Q              all-reduce 2 (cols x r), kept for the next step
//   rank  S = P Q^T                            the decompressed SUM over ranks (the executor's
//                                              semantics; a session that averages divides)
//         E = M - S / p                        error feedback against this rank's share
//
// Exactness: when the sum over ranks of the M's has rank <= r and Q is not orthogonal to its
// row space, P spans its column space and S = P P^T (sum M) = sum M: PowerSGD is exact up to
// float rounding (what `autosync run` checks on rank-r gradients). Error feedback conserves
// the sum: sum over steps of S + sum over ranks of E = sum of every rank's gradients.
//
// Which matrices are compressed (PyTorch's test): (rows + cols) r min_compression_rate <
// rows cols, default rate 2; 1-D tensors (rows x 1) and small matrices travel uncompressed.
// Wire elements per compressed matrix: (rows + cols) r, two dependent all-reduces.
//
// The first Q: uniform in [-1, 1) from the shared stream (exec/codecs/random.hpp) of the seed
// and the matrix, identical on every rank, then orthonormalized (PyTorch draws N(0, 1); any
// draw of full column rank serves, and a uniform one needs no libm, so every platform draws
// the same bits). A zero or dependent column of P becomes zero instead of noise (orthonormalize),
// and a warm-start Q with a zero column is drawn again on the next step.
#pragma once

#include <autosync/exec/codecs/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace autosync::exec::codecs::powersgd {

struct options {
  int rank = 1;                        // PyTorch's matrix_approximation_rank
  double min_compression_rate = 2.0;   // compress only if (rows + cols) r rate < rows cols
  std::int64_t start_iteration = 1000; // plain all-reduce before (PyTorch's start_powerSGD_iter)
  bool error_feedback = true;
  bool warm_start = true;
  std::uint64_t seed = 0;              // PyTorch's random_seed
};

[[nodiscard]] constexpr int effective_rank(std::size_t rows, std::size_t cols, int r) noexcept {
  return static_cast<int>(std::min<std::size_t>({rows, cols, static_cast<std::size_t>(std::max(r, 1))}));
}
[[nodiscard]] constexpr bool should_compress(std::size_t rows, std::size_t cols, int r, double rate = 2.0) noexcept {
  const auto k = static_cast<double>(effective_rank(rows, cols, r));
  return (static_cast<double>(rows) + static_cast<double>(cols)) * k * rate < static_cast<double>(rows) * static_cast<double>(cols);
}
// Elements on the wire for one matrix: (rows + cols) r compressed, rows cols otherwise.
[[nodiscard]] constexpr std::size_t wire_elements(std::size_t rows, std::size_t cols, int r, double rate = 2.0) noexcept {
  return should_compress(rows, cols, r, rate) ? (rows + cols) * static_cast<std::size_t>(effective_rank(rows, cols, r)) : rows * cols;
}

// One matrix's state on one rank.
struct state {
  std::size_t rows = 0, cols = 0;
  int r = 0;
  std::vector<float> q;      // cols x r, column-major: the warm start (the last all-reduced Q)
  std::vector<float> m;      // rows x cols: M = G + E during a step, E between steps
  bool started = false;      // q holds a draw
  friend bool operator==(const state&, const state&) = default;
};

namespace detail {

// Orthonormalizes the r columns (each of length n, column-major) by modified Gram-Schmidt,
// accumulating in double, with a second projection pass ("twice is enough": one pass leaves a
// nearly dependent column far from orthogonal, and P P^T M then is not M). A column whose norm
// falls below `dependent` of its norm before the projections is dependent on the columns
// before it (a sum of rank below r) and becomes zero, as does a zero column.
inline constexpr double dependent = 1e-4;
inline void orthonormalize(float* a, std::size_t n, int r) noexcept {
  for (int k = 0; k < r; ++k) {
    float* ck = a + static_cast<std::size_t>(k) * n;
    double s0 = 0.0;
    for (std::size_t i = 0; i < n; ++i) s0 += static_cast<double>(ck[i]) * ck[i];
    for (int pass = 0; pass < 2; ++pass)
      for (int j = 0; j < k; ++j) {
        const float* cj = a + static_cast<std::size_t>(j) * n;
        double d = 0.0;
        for (std::size_t i = 0; i < n; ++i) d += static_cast<double>(ck[i]) * cj[i];
        const auto f = static_cast<float>(d);
        for (std::size_t i = 0; i < n; ++i) ck[i] -= f * cj[i];
      }
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(ck[i]) * ck[i];
    if (s > 0.0 && s > dependent * dependent * s0) {
      const auto inv = static_cast<float>(1.0 / std::sqrt(s));
      for (std::size_t i = 0; i < n; ++i) ck[i] *= inv;
    } else {
      std::fill(ck, ck + n, 0.0f);
    }
  }
}

}  // namespace detail

// Step 1 on this rank: M = G + E, and P = M Q into p (rows x r, column-major; each element
// summed in double). `matrix` names
// the matrix for the first draw of Q (the same on every rank).
inline void compute_p(std::span<const float> g, std::size_t rows, std::size_t cols, state& st, const options& o,
                      std::uint64_t matrix, std::span<float> p) {
  const int r = effective_rank(rows, cols, o.rank);
  if (st.rows != rows || st.cols != cols || st.r != r) {
    st = state{rows, cols, r, std::vector<float>(cols * static_cast<std::size_t>(r)), std::vector<float>(rows * cols, 0.0f), false};
  }
  if (o.error_feedback)
    for (std::size_t i = 0; i < rows * cols; ++i) st.m[i] += g[i];
  else
    std::copy(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(rows * cols), st.m.begin());
  // A warm start with a zero column (a zero gradient, or a sum of rank below r: that column of
  // P was dependent and zeroed, so Q's is zero) would keep that column zero at every later
  // step: Q is drawn again. Every rank holds the same all-reduced Q, so every rank decides alike.
  bool dead = false;
  for (int k = 0; st.started && k < r && !dead; ++k) {
    const auto c0 = st.q.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(k) * cols);
    dead = std::all_of(c0, c0 + static_cast<std::ptrdiff_t>(cols), [](float v) { return v == 0.0f; });
  }
  if (!st.started || !o.warm_start || dead) {
    const counter_rng rng(o.seed, matrix);
    for (std::size_t i = 0; i < st.q.size(); ++i) st.q[i] = 2.0f * rng.uniform(i) - 1.0f;
    detail::orthonormalize(st.q.data(), cols, r);
    st.started = true;
  }
  for (int k = 0; k < r; ++k) {
    const float* qk = st.q.data() + static_cast<std::size_t>(k) * cols;
    float* pk = p.data() + static_cast<std::size_t>(k) * rows;
    for (std::size_t i = 0; i < rows; ++i) {
      const float* mi = st.m.data() + i * cols;
      // accumulated in double: with a fresh random Q nearly orthogonal to M's rows, M Q is a sum
      // of large terms that cancel, and a float sum over thousands of columns loses ~1e-4 of it
      double s = 0.0;
      for (std::size_t j = 0; j < cols; ++j) s += static_cast<double>(mi[j]) * qk[j];
      pk[i] = static_cast<float>(s);
    }
  }
}

// Step 2, after the all-reduce of P: orthonormalizes p in place and writes Q = M^T P into q
// (cols x r, column-major).
inline void compute_q(state& st, std::span<float> p, std::span<float> q) {
  const std::size_t rows = st.rows, cols = st.cols;
  detail::orthonormalize(p.data(), rows, st.r);
  std::fill(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(cols * static_cast<std::size_t>(st.r)), 0.0f);
  for (int k = 0; k < st.r; ++k) {
    float* qk = q.data() + static_cast<std::size_t>(k) * cols;
    const float* pk = p.data() + static_cast<std::size_t>(k) * rows;
    for (std::size_t i = 0; i < rows; ++i) {
      const float w = pk[i];
      const float* mi = st.m.data() + i * cols;
      for (std::size_t j = 0; j < cols; ++j) qk[j] += w * mi[j];
    }
  }
}

// Step 3, after the all-reduce of Q: out = P Q^T (the sum over the `ranks` ranks), the error
// E = M - out / ranks stays in the state, and Q is kept for the next step's warm start.
//
// A NaN or infinity in any rank's M reaches every rank's all-reduced Q (through P, or as 0 x inf
// in M^T P), the same bits on every rank. That step's sum is then undefined: out is NaN, and the
// state starts afresh (E = 0, Q drawn again), on every rank alike. Kept, the non-finite values
// stayed in E and the warm start, and every later step was NaN or 0.
inline void decompress(state& st, std::span<const float> p, std::span<const float> q, int ranks, std::span<float> out,
                       const options& o) {
  const std::size_t rows = st.rows, cols = st.cols;
  const auto qn = static_cast<std::ptrdiff_t>(cols * static_cast<std::size_t>(st.r));
  if (!std::all_of(q.begin(), q.begin() + qn, [](float v) { return std::isfinite(v); })) {
    std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(rows * cols), std::numeric_limits<float>::quiet_NaN());
    std::fill(st.m.begin(), st.m.end(), 0.0f);
    st.started = false;
    return;
  }
  const float share = 1.0f / static_cast<float>(std::max(ranks, 1));
  for (std::size_t i = 0; i < rows; ++i) {
    float* oi = out.data() + i * cols;
    std::fill(oi, oi + cols, 0.0f);
    for (int k = 0; k < st.r; ++k) {
      const float w = p[static_cast<std::size_t>(k) * rows + i];
      const float* qk = q.data() + static_cast<std::size_t>(k) * cols;
      for (std::size_t j = 0; j < cols; ++j) oi[j] += w * qk[j];
    }
    float* mi = st.m.data() + i * cols;
    if (o.error_feedback)
      for (std::size_t j = 0; j < cols; ++j) mi[j] -= oi[j] * share;
    else
      std::fill(mi, mi + cols, 0.0f);
  }
  std::copy(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(cols * static_cast<std::size_t>(st.r)), st.q.begin());
}

}  // namespace autosync::exec::codecs::powersgd
