// autosync/compressors/qsgd.hpp — "qsgd", "nuqsgd", "alq" and "amq": unbiased stochastic
// quantization of each bucket of `bucket` elements against its L2 norm (exec/codecs/qsgd.hpp),
// as values of the compression slot.
//
//   JSON      "qsgd"   or {"kind": "qsgd",   "levels": 7, "bucket": 8192}   l_j = j / s
//             "nuqsgd" or {"kind": "nuqsgd", "levels": 7, "bucket": 8192}   0, 2^-(L-1), ..., 1/2, 1
//             "alq"    or {"kind": "alq", "levels": 7, "bucket": 8192, "refit": 100}
//                      every level fitted to the gradients (starts as NUQSGD's)
//             "amq"    or {"kind": "amq", "levels": 7, "bucket": 8192, "refit": 100}
//                      0, m^(L-1), ..., m, 1 with the multiplier m fitted (starts at 1/2)
//   C++       autosync::compressors::qsgd<7, 8192>, autosync::compressors::nuqsgd<7, 8192>,
//             autosync::compressors::alq<7, 8192, 100>, autosync::compressors::amq<7, 8192, 100>
//   defaults  7 magnitude levels: 1 sign + 3 level bits = 4 bits per element (the reference's
//             nuq_bits 4), bucket 8192 (its CIFAR-10 grid)
//   refit     ALQ / AMQ refit their levels at the bucket's exchanges R, 20 R, then every 100 R
//             (R = "refit", default 100: the reference's 100, 2000, every 10,000). At a refit
//             every rank takes the same strided sample of its bucket's normalized magnitudes
//             (at most 4,096 of them), the samples are all-gathered, and every rank fits the
//             levels to their concatenation in rank order (exec/codecs/qsgd.hpp fit_alq /
//             fit_amq), so every rank quantizes with the same levels. Each refit is noted on
//             the bucket ("alq.variance" or "amq.multiplier", exec/exchange_note.hpp).
//   exchange  all-gather of every rank's payload (a norm per bucket and 1 + ceil(log2(L + 1)) bits
//             per element, whole words); every rank decodes and adds the p payloads in rank order.
//   bytes     per rank (p - 1) c, c = qsgd::wire_bytes(n, L, bucket) rounded up to 4:
//             all-reduce equivalent p c / 2 — linear in p, so it loses to int8's scatter-gather
//             beyond a few ranks (the cost model sees it).
//   guarantee unbiased: E[result] = the exact sum. Each rank draws its own stream of (bucket,
//             iteration, rank), so the per-element variance of the sum is at most
//             sum_r ||v_r||^2 / (4 s^2) per bucket for uniform levels (QSGD), and the mean of T
//             iterations on the same gradients is within 6 sqrt(that / T) (what the tests check).
#pragma once

#include <autosync/compressors/common.hpp>
#include <autosync/exec/codecs/qsgd.hpp>
#include <autosync/exec/codecs/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace autosync::compressors {

template <int Levels = 7, int Bucket = 8192>
struct qsgd {
  static_assert(Levels >= 1 && Levels <= 127, "compression slot: autosync::compressors::qsgd<Levels, Bucket>: Levels must be in [1, 127]");
  static_assert(Bucket >= 1, "compression slot: autosync::compressors::qsgd<Levels, Bucket>: Bucket must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "qsgd";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = exec::codecs::qsgd::bits_per_element(Levels) / 8.0;
  static constexpr double flops_per_element = flops_at(0.41);
  static constexpr compression_value value{stable_id("qsgd"), {double(Levels), double(Bucket), 0}};
};
template <int Levels = 7, int Bucket = 8192>
struct nuqsgd {
  static_assert(Levels >= 1 && Levels <= 127, "compression slot: autosync::compressors::nuqsgd<Levels, Bucket>: Levels must be in [1, 127]");
  static_assert(Bucket >= 1, "compression slot: autosync::compressors::nuqsgd<Levels, Bucket>: Bucket must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "nuqsgd";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = exec::codecs::qsgd::bits_per_element(Levels) / 8.0;
  static constexpr double flops_per_element = flops_at(0.28);
  static constexpr compression_value value{stable_id("nuqsgd"), {double(Levels), double(Bucket), 0}};
};

// ALQ and AMQ (Faghri et al., NeurIPS 2020): NUQSGD's payload with levels fitted on the refit
// schedule above. RefitAt = R.
template <int Levels = 7, int Bucket = 8192, int RefitAt = 100>
struct alq {
  static_assert(Levels >= 1 && Levels <= 127, "compression slot: autosync::compressors::alq<Levels, Bucket, RefitAt>: Levels must be in [1, 127]");
  static_assert(Bucket >= 1, "compression slot: autosync::compressors::alq<Levels, Bucket, RefitAt>: Bucket must be >= 1");
  static_assert(RefitAt >= 1, "compression slot: autosync::compressors::alq<Levels, Bucket, RefitAt>: RefitAt must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "alq";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = exec::codecs::qsgd::bits_per_element(Levels) / 8.0;
  static constexpr double flops_per_element = flops_at(0.28);
  static constexpr compression_value value{stable_id("alq"), {double(Levels), double(Bucket), double(RefitAt)}};
};
template <int Levels = 7, int Bucket = 8192, int RefitAt = 100>
struct amq {
  static_assert(Levels >= 1 && Levels <= 127, "compression slot: autosync::compressors::amq<Levels, Bucket, RefitAt>: Levels must be in [1, 127]");
  static_assert(Bucket >= 1, "compression slot: autosync::compressors::amq<Levels, Bucket, RefitAt>: Bucket must be >= 1");
  static_assert(RefitAt >= 1, "compression slot: autosync::compressors::amq<Levels, Bucket, RefitAt>: RefitAt must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "amq";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = exec::codecs::qsgd::bits_per_element(Levels) / 8.0;
  static constexpr double flops_per_element = flops_at(0.28);
  static constexpr compression_value value{stable_id("amq"), {double(Levels), double(Bucket), double(RefitAt)}};
};

namespace qsgd_detail {
namespace qc = exec::codecs::qsgd;
[[nodiscard]] constexpr std::size_t payload_bytes(std::size_t n, int L, std::size_t bucket) noexcept {
  return (qc::wire_bytes(n, L, bucket) + 3) / 4 * 4;
}

enum class fit : std::uint8_t { none, alq, amq };

// The refit schedule of alq / amq: exchanges R, 20 R, then every 100 R (R >= 1).
[[nodiscard]] constexpr bool refit_due(std::uint64_t iteration, std::uint64_t R) noexcept {
  return iteration == R || iteration == 20 * R || (iteration > 20 * R && iteration % (100 * R) == 0);
}

// At most this many normalized magnitudes per rank go into a refit's sample.
inline constexpr std::size_t max_sample = 4096;

// This rank's sample: |x_i| / ||bucket of i|| at i = 0, s, 2 s, ... (s = ceil(n / max_sample)),
// 0 where the bucket's norm is 0 or not finite. Its length depends on n only, so every rank's
// is as long.
[[nodiscard]] inline std::vector<float> strided_sample(std::span<const float> x, std::size_t bucket) {
  const std::size_t n = x.size(), stride = (n + max_sample - 1) / max_sample;
  std::vector<float> u;
  if (n == 0 || bucket == 0) return u;
  u.reserve((n + stride - 1) / stride);
  std::size_t b0 = std::size_t(-1);
  float inv = 0.0f;
  for (std::size_t i = 0; i < n; i += stride) {
    if (const std::size_t b = i / bucket * bucket; b != b0) {
      b0 = b;
      const float nrm = qc::detail::norm_of(x.data() + b, std::min(bucket, n - b), qc::norm_kind::l2);
      inv = nrm > 0.0f && std::isfinite(nrm) ? 1.0f / nrm : 0.0f;
    }
    const float v = std::abs(x[i]) * inv;
    u.push_back(v < 1.0f ? v : (v >= 1.0f ? 1.0f : 0.0f));  // NaN -> 0
  }
  return u;
}

struct exchange {
  std::size_t n = 0, bucket = qc::default_bucket;
  qc::levels levels;
  std::uint64_t seed = 0, iteration = 0;
  std::vector<unsigned char> mine, all;
  fit fitting = fit::none;
  std::uint64_t refit_at = 100;
  std::function<void(std::string_view, double)> note;
  // ALQ / AMQ: every rank's sample, gathered in rank order; the same levels everywhere after.
  void refit(std::span<const float> x, registry::exchange_comm& comm) {
    const std::vector<float> u = strided_sample(x, bucket);
    std::vector<float> every(u.size() * static_cast<std::size_t>(comm.size()));
    comm.all_gather(u.data(), every.data(), u.size() * sizeof(float));
    // a fit that is not usable (e.g. AMQ's m^(L-1) underflowing to 0 in float at large L)
    // keeps the levels it had: they are the same on every rank either way
    if (fitting == fit::alq) {
      if (auto f = qc::fit_alq(every, levels); qc::valid(f)) levels = std::move(f);
      if (note) note("alq.variance", qc::expected_variance(every, levels) / static_cast<double>(std::max<std::size_t>(every.size(), 1)));
    } else {
      double m = 0.5;
      if (auto f = qc::fit_amq(every, levels.count(), &m); qc::valid(f)) {
        levels = std::move(f);
        if (note) note("amq.multiplier", m);
      }
    }
  }
  // State: the exchange count (it keys the random stream and the refit schedule) and the levels.
  void save(registry::state_writer& w) const {
    w.put(iteration);
    w.put(levels.l);
  }
  void load(registry::state_reader& r) {
    r.get(iteration, "iteration");
    qc::levels lv;
    r.get_exact(lv.l, "levels", levels.l.size());
    if (!qc::valid(lv)) throw error(r.field(), "levels: not 0 = l_0 < ... < l_L = 1");
    levels = std::move(lv);
  }
  void operator()(unsigned char* data, registry::exchange_comm& comm) {
    const auto x = floats(data, n);
    const int p = comm.size(), me = comm.rank();
    if (fitting != fit::none && refit_due(iteration, refit_at)) refit(x, comm);
    const std::size_t c = payload_bytes(n, levels.count(), bucket);
    mine.assign(c, 0);
    all.assign(c * static_cast<std::size_t>(p), 0);
    const exec::codecs::counter_rng rng(seed, exec::codecs::stream_of(seed, iteration, static_cast<std::uint64_t>(me)));
    qc::encode(x, mine, levels, rng, bucket);
    comm.all_gather(mine.data(), all.data(), c);
    std::fill(x.begin(), x.end(), 0.0f);
    for (int s = 0; s < p; ++s) qc::decode(std::span<const unsigned char>(all.data() + static_cast<std::size_t>(s) * c, c), x, levels, bucket, true);
    ++iteration;
  }
};

inline registry::compression_entry entry(bool uniform, fit fitting = fit::none) {
  registry::compression_entry e;
  e.name = fitting == fit::alq ? "alq" : fitting == fit::amq ? "amq" : uniform ? "qsgd" : "nuqsgd";
  e.params = {{"levels", 7.0, 1.0, 127.0, true}, {"bucket", 8192.0, 1.0, 1 << 24, true}};
  if (fitting != fit::none) e.params.push_back({"refit", 100.0, 1.0, 1e9, true});
  e.applies = f32_only;
  e.exchange = registry::exchange_kind::all_gather;
  e.wire_bytes = [](std::int64_t n, dtype, int p, const param_list& q, double) {
    return registry::allreduce_equivalent(registry::exchange_kind::all_gather,
                                          static_cast<double>(payload_bytes(static_cast<std::size_t>(n), static_cast<int>(q[0]), static_cast<std::size_t>(q[1]))), p);
  };
  const double rate = uniform ? 0.41 : 0.28;
  e.flops_per_element = [rate](const param_list&) { return flops_at(rate); };
  e.nominal_bits = [](const param_list& q) { return qc::bits_per_element(static_cast<int>(q[0])) + 32.0 / q[1]; };
  const double R = fitting == fit::none ? 0.0 : 100.0;
  e.alternatives = {param_list{7, 8192, R}, param_list{3, 8192, R}};
  e.make_exchange = [uniform, fitting](const param_list& q, const registry::exchange_context& x) {
    const int L = static_cast<int>(q[0]);
    exchange ex;
    ex.n = x.elements;
    ex.bucket = static_cast<std::size_t>(q[1]);
    ex.levels = uniform ? qc::uniform_levels(L) : qc::exponential_levels(L, 0.5);
    ex.seed = x.seed;
    ex.fitting = fitting;
    if (fitting != fit::none) {
      ex.refit_at = static_cast<std::uint64_t>(q[2]);
      ex.note = x.note;
    }
    return registry::bucket_exchange(std::move(ex));
  };
  const std::string type = e.name;
  e.cpp_type = [type, fitting](const param_list& q) {
    std::string t = "autosync::compressors::" + type + "<" + std::to_string(static_cast<int>(q[0])) + ", " + std::to_string(static_cast<int>(q[1]));
    if (fitting != fit::none) t += ", " + std::to_string(static_cast<std::int64_t>(q[2]));
    return t + ">";
  };
  e.header = "autosync/compressors/qsgd.hpp";
  return e;
}
}  // namespace qsgd_detail

inline registry::compression_entry qsgd_entry() { return qsgd_detail::entry(true); }
inline registry::compression_entry nuqsgd_entry() { return qsgd_detail::entry(false); }
inline registry::compression_entry alq_entry() { return qsgd_detail::entry(false, qsgd_detail::fit::alq); }
inline registry::compression_entry amq_entry() { return qsgd_detail::entry(false, qsgd_detail::fit::amq); }

inline const registry::registrar qsgd_registered{qsgd_entry()};
inline const registry::registrar nuqsgd_registered{nuqsgd_entry()};
inline const registry::registrar alq_registered{alq_entry()};
inline const registry::registrar amq_registered{amq_entry()};

}  // namespace autosync::compressors
