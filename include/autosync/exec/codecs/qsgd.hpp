// autosync/exec/codecs/qsgd.hpp — stochastic quantization on magnitude levels: QSGD, NUQSGD,
// ALQ and AMQ.
//
// A bucket v of d elements (the last one shorter) travels as its norm (a float) and, per
// element, a sign bit and a level index: 1 + ceil(log2(L + 1)) bits, packed LSB first into
// little-endian 32-bit words (each bucket's payload padded to a whole word, so the CUDA kernels
// pack with 32-bit atomics; exec/codecs/element.hpp has the per-element code both use, and the
// norm's fixed summation order). The magnitude levels are 0 = l_0 < l_1 < ... < l_L = 1:
//
//   QSGD    (Alistarh et al., NeurIPS 2017)        l_j = j / s                    (L = s)
//   NUQSGD  (Ramezani-Kebrya et al., JMLR 2021)    0, m^(L-1), ..., m^2, m, 1     (m = 1/2)
//   ALQ     (Faghri et al., NeurIPS 2020)          every level fitted to the gradients
//   AMQ     (Faghri et al., NeurIPS 2020)          0, m^(L-1), ..., m, 1 with m fitted
//
//   u_i = |v_i| / ||v||                                      (L2 norm; max-norm as QSGDinf)
//   l_j <= u_i < l_j+1:  send j+1 with probability (u_i - l_j) / (l_j+1 - l_j), else j
//   v'_i = ||v|| sgn(v_i) l_sent                              E[v'_i] = v_i   (unbiased)
//   Var[v'_i] = ||v||^2 (l_j+1 - u_i)(u_i - l_j)
//
// A NaN or infinity in a bucket makes its norm NaN or infinite, so every element of that bucket
// (up to the bucket size, 8,192 by default) decodes as NaN on every rank: the step's sum there is
// undefined, as an uncompressed sum with that value would be at its own element.
//
// The random numbers come from exec/codecs/random.hpp with the caller's stream (each rank its
// own: the rounding errors of the ranks are independent), so an encoding is reproducible.
// Quantized payloads are not summable in the network: exec/ sends them by all-gather (every
// rank decodes and adds p payloads) or by the decode-sum-requantize path; the cost model picks.
//
// Level fitting (ALQ / AMQ) minimizes the expected variance sum_i (l_j+1 - u_i)(u_i - l_j) over
// a sample of normalized magnitudes. The papers fit a truncated-normal model of the
// coordinates and descend on its CDF; here the model is the empirical distribution of the
// sample itself (gathered from every rank, so every rank fits the same levels):
//   ALQ  coordinate descent, level by level: on [l_j-1, l_j+1] the variance's derivative in l_j
//        is sum_{u in [l_j-1, l_j]} (u - l_j-1) - sum_{u in [l_j, l_j+1]} (l_j+1 - u), increasing
//        in l_j, so its root is found by bisection (30 epochs over the levels, the reference's
//        nuq_cd_epochs).
//   AMQ  golden-section search of the multiplier m in [0.05, 0.95] (the variance is unimodal in
//        m on the samples we fit; the reference descends by gradient, lr 0.7, 50 epochs).
// Refit schedule (the reference's): at iterations 100 and 2000, then every 10,000.
#pragma once

#include <autosync/exec/codecs/element.hpp>
#include <autosync/exec/codecs/random.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace autosync::exec::codecs::qsgd {

enum class norm_kind : std::uint8_t { l2, max };

inline constexpr std::size_t default_bucket = 8192;  // the reference's CIFAR-10 grid (nuq_bucket_size)

// Magnitude levels 0 = l[0] < ... < l[L] = 1.
struct levels {
  std::vector<float> l{0.0f, 1.0f};
  [[nodiscard]] int count() const noexcept { return static_cast<int>(l.size()) - 1; }  // L
  friend bool operator==(const levels&, const levels&) = default;
};

[[nodiscard]] inline levels uniform_levels(int s) {
  levels r;
  r.l.resize(static_cast<std::size_t>(std::max(s, 1)) + 1);
  for (std::size_t j = 0; j < r.l.size(); ++j) r.l[j] = static_cast<float>(static_cast<double>(j) / static_cast<double>(r.l.size() - 1));
  return r;
}
[[nodiscard]] inline levels exponential_levels(int count, double multiplier = 0.5) {
  levels r;
  const int L = std::max(count, 1);
  r.l.assign(static_cast<std::size_t>(L) + 1, 0.0f);
  for (int j = 1; j <= L; ++j) r.l[static_cast<std::size_t>(j)] = static_cast<float>(std::pow(multiplier, L - j));
  return r;
}
// True when the levels are usable: start at 0, end at 1, strictly increasing, at most 127.
[[nodiscard]] inline bool valid(const levels& v) noexcept {
  if (v.l.size() < 2 || v.l.size() > 128 || v.l.front() != 0.0f || v.l.back() != 1.0f) return false;
  for (std::size_t j = 1; j < v.l.size(); ++j)
    if (!(v.l[j] > v.l[j - 1])) return false;
  return true;
}

[[nodiscard]] AUTOSYNC_CODEC_HD constexpr int index_bits(int L) noexcept {
  int b = 0;
  for (auto u = static_cast<unsigned>(L); u != 0; u >>= 1) ++b;  // bit_width (host and device)
  return b;
}
[[nodiscard]] AUTOSYNC_CODEC_HD constexpr int bits_per_element(int L) noexcept { return 1 + index_bits(L); }

[[nodiscard]] AUTOSYNC_CODEC_HD constexpr std::size_t bucket_bytes(std::size_t k, int L) noexcept {
  return sizeof(float) + 4 * ((k * static_cast<std::size_t>(bits_per_element(L)) + 31) / 32);
}
[[nodiscard]] constexpr std::size_t wire_bytes(std::size_t n, int L, std::size_t bucket = default_bucket) noexcept {
  if (bucket == 0) return 0;
  const std::size_t full = n / bucket, rest = n % bucket;
  return full * bucket_bytes(bucket, L) + (rest ? bucket_bytes(rest, L) : 0);
}

namespace detail {

inline float norm_of(const float* v, std::size_t k, norm_kind nk) noexcept {
  if (nk == norm_kind::max) {
    float m = 0.0f;
    for (std::size_t i = 0; i < k; ++i) m = std::max(m, std::abs(v[i]));
    return m;
  }
  // element.hpp's order: lanes of strided sums, then a pairwise tree (what a GPU block does)
  constexpr auto lanes = static_cast<std::size_t>(element::norm_lanes);
  double lane[lanes] = {};
  for (std::size_t i = 0; i < k; ++i) lane[i % lanes] = element::dmul_add(lane[i % lanes], v[i]);
  for (std::size_t h = lanes / 2; h > 0; h /= 2)
    for (std::size_t j = 0; j < h; ++j) lane[j] = element::dadd(lane[j], lane[j + h]);
  return static_cast<float>(std::sqrt(lane[0]));
}

struct bit_writer {
  unsigned char* out;
  std::uint64_t acc = 0;
  int n = 0;
  void put(std::uint32_t v, int bits) noexcept {
    acc |= static_cast<std::uint64_t>(v) << n;
    n += bits;
    while (n >= 8) {
      *out++ = static_cast<unsigned char>(acc);
      acc >>= 8;
      n -= 8;
    }
  }
  void flush() noexcept {
    if (n > 0) *out++ = static_cast<unsigned char>(acc);
    acc = 0;
    n = 0;
  }
};
struct bit_reader {
  const unsigned char* in;
  std::uint64_t acc = 0;
  int n = 0;
  std::uint32_t get(int bits) noexcept {
    while (n < bits) {
      acc |= static_cast<std::uint64_t>(*in++) << n;
      n += 8;
    }
    const auto v = static_cast<std::uint32_t>(acc & ((1ull << bits) - 1));
    acc >>= bits;
    n -= bits;
    return v;
  }
};

}  // namespace detail

// Encodes x (elements [offset, offset + x.size()) of the caller's bucket numbering: the random
// counter is offset + i, so a bucket encoded in pieces draws what it draws whole).
inline void encode(std::span<const float> x, std::span<unsigned char> out, const levels& lv, counter_rng rng,
                   std::size_t bucket = default_bucket, norm_kind nk = norm_kind::l2, std::uint64_t offset = 0) noexcept {
  const int L = lv.count();
  if (bucket == 0 || !valid(lv) || out.size() < wire_bytes(x.size(), L, bucket)) return;
  const int ib = index_bits(L);
  const float* l = lv.l.data();
  const bool uniform = lv == uniform_levels(L);
  unsigned char* o = out.data();
  for (std::size_t b0 = 0; b0 < x.size(); b0 += bucket) {
    const std::size_t k = std::min(bucket, x.size() - b0);
    const float* v = x.data() + b0;
    const float nrm = detail::norm_of(v, k, nk);
    std::memcpy(o, &nrm, sizeof nrm);
    detail::bit_writer w{o + sizeof nrm};
    const float inv = nrm > 0.0f && std::isfinite(nrm) ? element::div(1.0f, nrm) : 0.0f;
    for (std::size_t i = 0; i < k; ++i)
      w.put(element::qsgd_code(v[i], inv, l, L, uniform, ib, rng.uniform(offset + b0 + i)), ib + 1);
    w.flush();
    while (w.out < o + bucket_bytes(k, L)) *w.out++ = 0;  // the word padding: defined bytes
    o += bucket_bytes(k, L);
  }
}

// x = decode(in), or x += decode(in) with add.
inline void decode(std::span<const unsigned char> in, std::span<float> x, const levels& lv, std::size_t bucket = default_bucket,
                   bool add = false) noexcept {
  const int L = lv.count();
  if (bucket == 0 || !valid(lv) || in.size() < wire_bytes(x.size(), L, bucket)) return;
  const int ib = index_bits(L);
  const unsigned char* p = in.data();
  for (std::size_t b0 = 0; b0 < x.size(); b0 += bucket) {
    const std::size_t k = std::min(bucket, x.size() - b0);
    float nrm;
    std::memcpy(&nrm, p, sizeof nrm);
    detail::bit_reader r{p + sizeof nrm};
    for (std::size_t i = 0; i < k; ++i) {
      const float v = element::qsgd_value(r.get(ib + 1), nrm, lv.l.data(), L, ib);
      x[b0 + i] = add ? x[b0 + i] + v : v;
    }
    p += bucket_bytes(k, L);
  }
}

// --- level fitting (ALQ / AMQ) ---------------------------------------------------------------

// Expected variance, in units of the squared norm, of stochastic rounding of the sample.
[[nodiscard]] inline double expected_variance(std::span<const float> u, const levels& lv) {
  double s = 0.0;
  const float* l = lv.l.data();
  const int L = lv.count();
  for (float x : u) {
    const float c = x < 1.0f ? (x > 0.0f ? x : 0.0f) : 1.0f;  // NaN -> 1
    const auto j = static_cast<int>(std::upper_bound(l, l + L, c) - l) - 1;
    s += (static_cast<double>(l[j + 1]) - c) * (static_cast<double>(c) - l[j]);
  }
  return s;
}

// Normalized magnitudes |v_i| / ||v|| of x by buckets: the sample the fits take (every rank's
// sample concatenated, in rank order, so every rank fits alike).
[[nodiscard]] inline std::vector<float> normalized_sample(std::span<const float> x, std::size_t bucket = default_bucket,
                                                          norm_kind nk = norm_kind::l2, std::size_t stride = 1) {
  std::vector<float> u;
  if (bucket == 0 || stride == 0) return u;
  for (std::size_t b0 = 0; b0 < x.size(); b0 += bucket) {
    const std::size_t k = std::min(bucket, x.size() - b0);
    const float n = detail::norm_of(x.data() + b0, k, nk);
    if (!(n > 0.0f) || !std::isfinite(n)) continue;
    for (std::size_t i = 0; i < k; i += stride) u.push_back(std::min(std::abs(x[b0 + i]) / n, 1.0f));
  }
  return u;
}

// ALQ: coordinate descent over the inner levels from `init` (e.g. exponential_levels(L)).
[[nodiscard]] inline levels fit_alq(std::vector<float> u, levels init, int epochs = 30) {
  if (!valid(init) || u.empty()) return init;
  std::sort(u.begin(), u.end());
  // prefix sums for sum of u over index ranges
  std::vector<double> pre(u.size() + 1, 0.0);
  for (std::size_t i = 0; i < u.size(); ++i) pre[i + 1] = pre[i] + u[i];
  auto range = [&](double a, double b) {  // [count, sum] of u in [a, b)
    const auto i = static_cast<std::size_t>(std::lower_bound(u.begin(), u.end(), static_cast<float>(a)) - u.begin());
    const auto k = static_cast<std::size_t>(std::lower_bound(u.begin(), u.end(), static_cast<float>(b)) - u.begin());
    return std::pair<double, double>{static_cast<double>(k - i), pre[k] - pre[i]};
  };
  auto& l = init.l;
  const std::size_t L = l.size() - 1;
  for (int e = 0; e < epochs; ++e)
    for (std::size_t j = 1; j < L; ++j) {
      const double a = l[j - 1], b = l[j + 1];
      auto deriv = [&](double x) {
        const auto [nl, sl] = range(a, x);
        const auto [nr, sr] = range(x, b);
        return (sl - nl * a) - (nr * b - sr);
      };
      double lo = a, hi = b;
      for (int it = 0; it < 40; ++it) {
        const double mid = 0.5 * (lo + hi);
        (deriv(mid) < 0.0 ? lo : hi) = mid;
      }
      float x = static_cast<float>(0.5 * (lo + hi));
      // keep the levels strictly increasing in float
      x = std::max(x, std::nextafter(l[j - 1], 2.0f));
      x = std::min(x, std::nextafter(l[j + 1], -1.0f));
      if (x > l[j - 1] && x < l[j + 1]) l[j] = x;
    }
  return init;
}

// AMQ: the multiplier of exponential levels that minimizes the expected variance.
[[nodiscard]] inline levels fit_amq(const std::vector<float>& u, int count, double* multiplier = nullptr) {
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = 0.05, b = 0.95;
  auto f = [&](double m) { return expected_variance(u, exponential_levels(count, m)); };
  double c = b - g * (b - a), d = a + g * (b - a), fc = f(c), fd = f(d);
  for (int it = 0; it < 40; ++it) {
    if (fc < fd) {
      b = d; d = c; fd = fc; c = b - g * (b - a); fc = f(c);
    } else {
      a = c; c = d; fc = fd; d = a + g * (b - a); fd = f(d);
    }
  }
  const double m = 0.5 * (a + b);
  if (multiplier) *multiplier = m;
  return exponential_levels(count, m);
}

// The reference's refit iterations: 100, 2000, then every 10,000.
[[nodiscard]] constexpr bool refit_due(std::int64_t iteration) noexcept {
  return iteration == 100 || iteration == 2000 || (iteration > 2000 && iteration % 10000 == 0);
}

}  // namespace autosync::exec::codecs::qsgd
