// autosync/exec/codecs/sparsify.hpp — top-k and random-k sparsification with error feedback,
// and DGC's options (momentum correction, warm-up density schedule, local clipping).
//
// Error feedback (Stich, Cordonnier, Jaggi, NeurIPS 2018), per rank, per bucket:
//   a = e + g;   s = select_k(a);   e = a - s;   send s
// so sum over iterations of what was sent + e = sum of the gradients, exactly (every element
// of a is either sent whole or kept whole: no rounding at all), which is what `autosync run`
// checks on integer-valued data.
//
//   top-k     the k largest |a_i| (ties: the lower index), chosen by each rank on its own: the
//             pairs (index, value) of the ranks differ, so they travel by all-gather (k pairs of
//             4 + 4 bytes per rank) and each rank scatter-adds p payloads. Against a ring
//             all-reduce of fp32 it wins only below density k/n = 1/p (the cost model knows).
//   random-k  k indices drawn from the shared stream of (seed, bucket, iteration): the same on
//             every rank, so only the k values travel and they sum in the network (an
//             all-reduce of k elements).
//
// DGC (Lin et al., ICLR 2018), as options of top-k:
//   momentum correction  u = m u + g; v = v + u; select on v; then v and u are zeroed where sent
//                        (momentum factor masking): the momentum moves into the compressor and
//                        the trainer's optimizer runs without momentum.
//   local clipping       g is clipped to the norm `clip / sqrt(p)` before accumulation.
//   warm-up              the density follows DGC's schedule over the first epochs:
//                        0.25, 0.0625, 0.015625, 0.004, then the target (0.001 by default).
#pragma once

#include <autosync/exec/codecs/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>
#include <vector>

namespace autosync::exec::codecs::sparsify {

inline constexpr std::size_t pair_bytes = sizeof(std::uint32_t) + sizeof(float);

// k for a density in (0, 1] over n elements: at least 1 for n > 0.
[[nodiscard]] constexpr std::size_t k_of(std::size_t n, double density) noexcept {
  if (n == 0) return 0;
  const double k = std::ceil(density * static_cast<double>(n));
  return static_cast<std::size_t>(std::clamp(k, 1.0, static_cast<double>(n)));
}
[[nodiscard]] constexpr std::size_t topk_wire_bytes(std::size_t n, double density) noexcept { return k_of(n, density) * pair_bytes; }
[[nodiscard]] constexpr std::size_t randk_wire_bytes(std::size_t n, double density) noexcept { return k_of(n, density) * sizeof(float); }

// DGC's warm-up: density at `epoch` (0-based) with `warmup_epochs` epochs of warm-up.
[[nodiscard]] constexpr double dgc_density(int epoch, int warmup_epochs, double target = 0.001) noexcept {
  constexpr double schedule[] = {0.25, 0.0625, 0.015625, 0.004};
  if (warmup_epochs <= 0 || epoch >= warmup_epochs) return target;
  // spread the schedule over the warm-up epochs, never below the target
  const int step = static_cast<int>(static_cast<long long>(epoch) * 4 / warmup_epochs);
  return std::max(target, schedule[std::min(step, 3)]);
}

// Indices of the k largest |a_i| (ties: the lower index), ascending. The k-th largest
// magnitude is found by nth_element on a copy of the magnitudes (no index indirection); one
// scan then takes every element above it and the lowest-indexed ones equal to it. NaN
// magnitudes are never selected (they stay in the residual, visible there).
[[nodiscard]] inline std::vector<std::uint32_t> top_k_indices(std::span<const float> a, std::size_t k) {
  k = std::min(k, a.size());
  std::vector<std::uint32_t> idx;
  if (k == 0) return idx;
  std::vector<float> mag;
  mag.reserve(a.size());
  for (float v : a)
    if (!std::isnan(v)) mag.push_back(std::abs(v));
  k = std::min(k, mag.size());
  if (k == 0) return idx;
  std::nth_element(mag.begin(), mag.begin() + static_cast<std::ptrdiff_t>(k - 1), mag.end(), std::greater<float>());
  const float t = mag[k - 1];
  std::size_t above = 0;
  for (std::size_t i = 0; i < k - 1; ++i) above += mag[i] > t;
  std::size_t ties = k - above;  // how many elements equal to t to take, lowest index first
  idx.reserve(k);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float m = std::abs(a[i]);
    if (m > t) idx.push_back(static_cast<std::uint32_t>(i));
    else if (m == t && ties > 0) {
      idx.push_back(static_cast<std::uint32_t>(i));
      --ties;
    }
  }
  return idx;
}

// k distinct indices in [0, n), ascending, from a shared stream (Floyd's algorithm over the
// stream's numbers: the same set on every rank for the same rng).
[[nodiscard]] inline std::vector<std::uint32_t> random_k_indices(std::size_t n, std::size_t k, counter_rng rng) {
  k = std::min(k, n);
  std::vector<std::uint32_t> out;
  out.reserve(k);
  if (k * 2 > n) {  // dense: a partial Fisher-Yates shuffle
    std::vector<std::uint32_t> all(n);
    std::iota(all.begin(), all.end(), 0u);
    for (std::size_t i = 0; i < k; ++i) std::swap(all[i], all[i + rng.below(i, n - i)]);
    out.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k));
  } else {
    std::vector<char> taken(n, 0);
    for (std::size_t j = n - k, c = 0; j < n; ++j, ++c) {
      auto t = static_cast<std::uint32_t>(rng.below(c, j + 1));
      if (taken[t]) t = static_cast<std::uint32_t>(j);
      taken[t] = 1;
      out.push_back(t);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The per-rank, per-bucket state of error feedback (and of DGC's momentum correction).
struct state {
  std::vector<float> residual;  // e (error feedback) or v (DGC's accumulated velocity)
  std::vector<float> momentum;  // u (DGC's momentum correction only)
  void resize(std::size_t n, bool dgc) {
    residual.assign(n, 0.0f);
    momentum.assign(dgc ? n : 0, 0.0f);
  }
  friend bool operator==(const state&, const state&) = default;
};

struct options {
  double density = 0.01;     // k / n
  bool random = false;       // random-k (shared indices) instead of top-k
  double momentum = 0.0;     // DGC momentum correction factor m (0: plain error feedback)
  double clip_norm = 0.0;    // DGC local clipping: the global clip norm (0: off); per rank / sqrt(p)
  int ranks = 1;             // p, for the clipping threshold
};

// One step of a bucket: accumulates g into the state and writes the selected (index, value)
// pairs; the state keeps what was not sent. For random-k the indices depend only on `rng`.
inline void select(std::span<const float> g, state& st, const options& o, counter_rng rng, std::vector<std::uint32_t>& idx,
                   std::vector<float>& val) {
  const std::size_t n = g.size();
  const bool dgc = o.momentum > 0.0;
  if (st.residual.size() != n || (dgc && st.momentum.size() != n)) st.resize(n, dgc);
  float clip = 1.0f;
  if (o.clip_norm > 0.0) {
    double s = 0.0;
    for (float x : g) s += static_cast<double>(x) * x;
    const double limit = o.clip_norm / std::sqrt(static_cast<double>(std::max(o.ranks, 1)));
    if (std::sqrt(s) > limit) clip = static_cast<float>(limit / std::sqrt(s));
  }
  auto& a = st.residual;
  if (dgc) {
    const auto m = static_cast<float>(o.momentum);
    for (std::size_t i = 0; i < n; ++i) {
      st.momentum[i] = m * st.momentum[i] + clip * g[i];
      a[i] += st.momentum[i];
    }
  } else if (clip != 1.0f) {
    for (std::size_t i = 0; i < n; ++i) a[i] += clip * g[i];
  } else {
    for (std::size_t i = 0; i < n; ++i) a[i] += g[i];
  }
  const std::size_t k = k_of(n, o.density);
  idx = o.random ? random_k_indices(n, k, rng) : top_k_indices(a, k);
  val.resize(idx.size());
  for (std::size_t j = 0; j < idx.size(); ++j) {
    val[j] = a[idx[j]];
    a[idx[j]] = 0.0f;                       // sent whole: e = a - s exactly
    if (dgc) st.momentum[idx[j]] = 0.0f;    // momentum factor masking
  }
}

// Pairs on the wire: k uint32 indices then k float values (little-endian, as memcpy writes them).
inline void pack_pairs(std::span<const std::uint32_t> idx, std::span<const float> val, std::span<unsigned char> out) noexcept {
  std::memcpy(out.data(), idx.data(), idx.size_bytes());
  std::memcpy(out.data() + idx.size_bytes(), val.data(), val.size_bytes());
}
// x[idx] += val for one rank's payload of k pairs; indices beyond x are ignored (a corrupt
// payload cannot write outside the bucket) and counted in the return value.
inline std::size_t scatter_add(std::span<const unsigned char> in, std::size_t k, std::span<float> x) noexcept {
  std::size_t bad = 0;
  for (std::size_t j = 0; j < k; ++j) {
    std::uint32_t i;
    float v;
    std::memcpy(&i, in.data() + j * sizeof i, sizeof i);
    std::memcpy(&v, in.data() + k * sizeof i + j * sizeof v, sizeof v);
    if (i < x.size()) x[i] += v;
    else ++bad;
  }
  return bad;
}

}  // namespace autosync::exec::codecs::sparsify
