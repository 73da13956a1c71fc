// autosync/compressors/int8.hpp — "int8": 8-bit min-max quantization per chunk (BAGUA's
// ByteGrad) as a value of the compression slot.
//
//   JSON      "int8" or {"kind": "int8", "chunk": 1024}     chunk: elements per {min, max} header
//   C++       autosync::compressors::int8<1024>
//   exchange  scatter-gather: the bucket is cut into p even shards; each rank int8-encodes every
//             shard, an all-to-all sends shard s to rank s, rank s decodes the p encodings of its
//             shard and sums them in rank order, re-encodes the sum, and an all-gather gives
//             every rank every shard (exec/codecs/int8_minmax.hpp, as exec::int8_sum).
//   bytes     per rank 2 (p - 1) m, m = the largest shard's encoding in whole words,
//             ceil(n / p) + 8 ceil(ceil(n / p) / chunk) rounded up to 4: all-reduce equivalent p m.
//   guarantee two quantizations: every element within p b1 + b2 of the exact sum, b = (max -
//             min) / 510 (+ float rounding) of the chunks involved (int8_minmax::error_bound).
//             Deterministic (round to nearest even): every rank gets the same bits.
#pragma once

#include <autosync/compressors/common.hpp>
#include <autosync/exec/codecs/int8_minmax.hpp>
#include <autosync/policy/partitioner.hpp>

#include <cstdint>
#include <vector>

namespace autosync::compressors {

template <int Chunk = 1024>
struct int8 {
  static_assert(Chunk >= 1, "compression slot: autosync::compressors::int8<Chunk>: Chunk must be >= 1");
  using slot = slot::compression;
  static constexpr std::string_view name = "int8";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 1.0 + 8.0 / Chunk;
  static constexpr double flops_per_element = flops_at(2.11);
  static constexpr compression_value value{stable_id("int8"), {double(Chunk), 0, 0}};
};

namespace int8_detail {
namespace q8 = exec::codecs::int8_minmax;
[[nodiscard]] constexpr std::size_t words(std::size_t b) noexcept { return (b + 3) / 4 * 4; }
// Bytes of one scatter-gather message for n elements at p ranks.
[[nodiscard]] constexpr std::size_t message_bytes(std::size_t n, int p, std::size_t chunk) noexcept {
  const auto pp = static_cast<std::size_t>(p < 1 ? 1 : p);
  return words(q8::wire_bytes((n + pp - 1) / pp, chunk));
}

struct exchange {
  std::size_t n = 0, chunk = q8::default_chunk;
  std::vector<unsigned char> out, in, enc;
  std::vector<float> sum;
  void operator()(unsigned char* data, registry::exchange_comm& comm) {
    const auto x = floats(data, n);
    const int p = comm.size(), me = comm.rank();
    if (p == 1) {  // one quantization, so a one-rank job sees what the codec does
      enc.assign(q8::wire_bytes(n, chunk), 0);
      q8::encode(x, enc, chunk);
      q8::decode(enc, x, chunk);
      return;
    }
    const auto N = static_cast<std::int64_t>(n);
    auto shard = [&](int s) { return even_shard(N, p, s); };
    const std::size_t msg = message_bytes(n, p, chunk);
    out.assign(static_cast<std::size_t>(p) * msg, 0);
    in.assign(static_cast<std::size_t>(p) * msg, 0);
    auto block = [&](std::vector<unsigned char>& v, int s) { return std::span<unsigned char>(v.data() + static_cast<std::size_t>(s) * msg, msg); };
    auto piece = [&](int s) {
      const auto r = shard(s);
      return x.subspan(static_cast<std::size_t>(r.begin), static_cast<std::size_t>(r.end - r.begin));
    };
    for (int s = 0; s < p; ++s) q8::encode(piece(s), block(out, s), chunk);
    comm.all_to_all(out.data(), in.data(), msg);
    sum.assign(piece(me).size(), 0.0f);
    for (int s = 0; s < p; ++s) q8::decode(block(in, s), sum, chunk, /*add=*/true);
    enc.assign(msg, 0);
    q8::encode(sum, enc, chunk);
    comm.all_gather(enc.data(), in.data(), msg);
    for (int s = 0; s < p; ++s) q8::decode(block(in, s), piece(s), chunk);
  }
};
}  // namespace int8_detail

inline registry::compression_entry int8_entry() {
  registry::compression_entry e;
  e.name = "int8";
  e.params = {{"chunk", 1024.0, 1.0, 1 << 24, true}};
  e.applies = f32_only;
  e.exchange = registry::exchange_kind::scatter_gather;
  e.wire_bytes = [](std::int64_t n, dtype, int p, const param_list& q, double) {
    return static_cast<double>(p) * static_cast<double>(int8_detail::message_bytes(static_cast<std::size_t>(n), p, static_cast<std::size_t>(q[0])));
  };
  e.flops_per_element = [](const param_list&) { return flops_at(2.11); };
  e.nominal_bits = [](const param_list& q) { return 8.0 + 64.0 / q[0]; };
  e.alternatives = {param_list{1024, 0, 0}};
  e.make_exchange = [](const param_list& q, const registry::exchange_context& x) {
    return registry::bucket_exchange(int8_detail::exchange{x.elements, static_cast<std::size_t>(q[0]), {}, {}, {}, {}});
  };
  e.cpp_type = [](const param_list& q) { return "autosync::compressors::int8<" + std::to_string(static_cast<int>(q[0])) + ">"; };
  e.header = "autosync/compressors/int8.hpp";
  return e;
}

inline const registry::registrar int8_registered{int8_entry()};

}  // namespace autosync::compressors
