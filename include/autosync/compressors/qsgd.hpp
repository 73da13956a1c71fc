// autosync/compressors/qsgd.hpp — "qsgd" and "nuqsgd": unbiased stochastic quantization of
// each bucket of `bucket` elements against its L2 norm (exec/codecs/qsgd.hpp), as values of the
// compression slot.
//
//   JSON      "qsgd"   or {"kind": "qsgd",   "levels": 7, "bucket": 8192}   l_j = j / s
//             "nuqsgd" or {"kind": "nuqsgd", "levels": 7, "bucket": 8192}   0, 2^-(L-1), ..., 1/2, 1
//   C++       autosync::compressors::qsgd<7, 8192>, autosync::compressors::nuqsgd<7, 8192>
//   defaults  7 magnitude levels: 1 sign + 3 level bits = 4 bits per element (the reference's
//             nuq_bits 4), bucket 8192 (its CIFAR-10 grid)
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

#include <cstdint>
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

namespace qsgd_detail {
namespace qc = exec::codecs::qsgd;
[[nodiscard]] constexpr std::size_t payload_bytes(std::size_t n, int L, std::size_t bucket) noexcept {
  return (qc::wire_bytes(n, L, bucket) + 3) / 4 * 4;
}

struct exchange {
  std::size_t n = 0, bucket = qc::default_bucket;
  qc::levels levels;
  std::uint64_t seed = 0, iteration = 0;
  std::vector<unsigned char> mine, all;
  void operator()(unsigned char* data, registry::exchange_comm& comm) {
    const auto x = floats(data, n);
    const int p = comm.size(), me = comm.rank();
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

inline registry::compression_entry entry(bool uniform) {
  registry::compression_entry e;
  e.name = uniform ? "qsgd" : "nuqsgd";
  e.params = {{"levels", 7.0, 1.0, 127.0, true}, {"bucket", 8192.0, 1.0, 1 << 24, true}};
  e.applies = f32_only;
  e.exchange = registry::exchange_kind::all_gather;
  e.wire_bytes = [](std::int64_t n, dtype, int p, const param_list& q, double) {
    return registry::allreduce_equivalent(registry::exchange_kind::all_gather,
                                          static_cast<double>(payload_bytes(static_cast<std::size_t>(n), static_cast<int>(q[0]), static_cast<std::size_t>(q[1]))), p);
  };
  const double rate = uniform ? 0.41 : 0.28;
  e.flops_per_element = [rate](const param_list&) { return flops_at(rate); };
  e.nominal_bits = [](const param_list& q) { return qc::bits_per_element(static_cast<int>(q[0])) + 32.0 / q[1]; };
  e.alternatives = {param_list{7, 8192, 0}, param_list{3, 8192, 0}};
  e.make_exchange = [uniform](const param_list& q, const registry::exchange_context& x) {
    const int L = static_cast<int>(q[0]);
    return registry::bucket_exchange(
        exchange{x.elements, static_cast<std::size_t>(q[1]), uniform ? qc::uniform_levels(L) : qc::exponential_levels(L, 0.5), x.seed, 0, {}, {}});
  };
  const std::string type = uniform ? "qsgd" : "nuqsgd";
  e.cpp_type = [type](const param_list& q) {
    return "autosync::compressors::" + type + "<" + std::to_string(static_cast<int>(q[0])) + ", " + std::to_string(static_cast<int>(q[1])) + ">";
  };
  e.header = "autosync/compressors/qsgd.hpp";
  return e;
}
}  // namespace qsgd_detail

inline registry::compression_entry qsgd_entry() { return qsgd_detail::entry(true); }
inline registry::compression_entry nuqsgd_entry() { return qsgd_detail::entry(false); }

inline const registry::registrar qsgd_registered{qsgd_entry()};
inline const registry::registrar nuqsgd_registered{nuqsgd_entry()};

}  // namespace autosync::compressors
