// autosync/exec/collectives/compressed.hpp — sums of compressed gradients on any Backend.
//
// A compressed payload is bytes, not numbers the network can add, so each codec of
// exec/codecs/ needs its own way through the collectives:
//
//   int8_sum          BAGUA's ByteGrad scatter-gather: the bucket is cut into p shards; every
//                     rank int8-encodes each shard (exec/codecs/int8_minmax.hpp) and sends shard
//                     s to rank s (an all-to-all as p - 1 sendrecv steps); rank s decodes the p
//                     encodings of its shard, sums them in rank order, re-encodes the sum, and an
//                     all-gather of the encoded sums gives every rank every shard. Bytes per
//                     rank: 2 (p - 1) / p (n + 8 chunks), about a quarter of a ring all-reduce
//                     of fp32. Two quantizations (bound: exec/codecs/int8_minmax.hpp).
//   gathered_sum      all-gather of fixed-size encoded payloads (QSGD, NUQSGD, ALQ/AMQ, top-k
//                     pairs), then every rank decodes and adds the p payloads in rank order:
//                     (p - 1) payload bytes received per rank, linear in p.
//   powersgd_sum      PowerSGD's two dependent all-reduces (P, then Q) around the local steps
//                     of exec/codecs/powersgd.hpp.
//
// Every rank ends with the same bits: the decoding and summing order is the rank order
// everywhere, and int8_sum's shard sums are computed once, by their owner. Bytes travel as i32
// elements (payloads are padded to a multiple of 4 bytes); the Backend concept
// (exec/backend.hpp) has no byte type, and sums never touch the payloads.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/codecs/int8_minmax.hpp>
#include <autosync/exec/codecs/powersgd.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/partitioner.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace autosync::exec {

namespace compressed_detail {
[[nodiscard]] constexpr std::size_t words(std::size_t bytes) noexcept { return (bytes + 3) / 4; }
}  // namespace compressed_detail

// x (this rank's bucket) becomes the sum over ranks through int8 scatter-gather.
template <Backend B>
void int8_sum(B& b, std::span<float> x, std::size_t chunk = codecs::int8_minmax::default_chunk, int tag = 0) {
  namespace q8 = codecs::int8_minmax;
  if (chunk == 0) throw error("chunk", "int8_sum: must be >= 1");
  const int p = b.size(), me = b.rank();
  const auto n = static_cast<std::int64_t>(x.size());
  if (p == 1) {  // still one quantization, so a one-rank job sees what the codec does
    std::vector<unsigned char> w(q8::wire_bytes(x.size(), chunk));
    q8::encode(x, w, chunk);
    q8::decode(w, x, chunk);
    return;
  }
  auto shard = [&](int s) { return even_shard(n, p, s); };
  // the largest shard's encoding, in words: every message has this size (padding unread)
  const std::size_t max_shard = static_cast<std::size_t>(shard(0).end - shard(0).begin);
  const std::size_t msg = compressed_detail::words(q8::wire_bytes(max_shard, chunk));
  std::vector<std::uint32_t> out(static_cast<std::size_t>(p) * msg, 0u), in(static_cast<std::size_t>(p) * msg, 0u);
  auto bytes_of = [&](std::vector<std::uint32_t>& v, int s) {
    return std::span<unsigned char>(reinterpret_cast<unsigned char*>(v.data() + static_cast<std::size_t>(s) * msg), msg * 4);
  };
  for (int s = 0; s < p; ++s) {
    const auto r = shard(s);
    q8::encode(x.subspan(static_cast<std::size_t>(r.begin), static_cast<std::size_t>(r.end - r.begin)), bytes_of(out, s), chunk);
  }
  // all-to-all: step k sends shard (me + k) to rank me + k and receives this rank's shard from me - k
  std::copy_n(out.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * msg), msg,
              in.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * msg));
  for (int k = 1; k < p; ++k) {
    const int dst = (me + k) % p, src = (me - k + p) % p;
    b.sendrecv(out.data() + static_cast<std::size_t>(dst) * msg, msg, dst, in.data() + static_cast<std::size_t>(src) * msg, msg, src,
               dtype::i32, tag);
  }
  // this rank's shard: decode and sum the p encodings in rank order, re-encode the sum
  const auto mine = shard(me);
  const auto len = static_cast<std::size_t>(mine.end - mine.begin);
  std::vector<float> sum(len, 0.0f);
  for (int s = 0; s < p; ++s) q8::decode(bytes_of(in, s), sum, chunk, /*add=*/true);
  std::vector<std::uint32_t> enc(msg, 0u);
  q8::encode(sum, std::span<unsigned char>(reinterpret_cast<unsigned char*>(enc.data()), msg * 4), chunk);
  b.all_gather(enc.data(), in.data(), msg, dtype::i32);
  for (int s = 0; s < p; ++s) {
    const auto r = shard(s);
    q8::decode(bytes_of(in, s), x.subspan(static_cast<std::size_t>(r.begin), static_cast<std::size_t>(r.end - r.begin)), chunk);
  }
}

// x becomes the sum of every rank's decoded payload. `encode(std::span<unsigned char>)` writes
// this rank's payload of `payload_bytes` (the same size on every rank);
// `decode_add(std::span<const unsigned char>, std::span<float> x)` adds one payload to x.
// x is zeroed first: the sum is of the decoded payloads only, in rank order.
template <Backend B, class Encode, class DecodeAdd>
void gathered_sum(B& b, std::span<float> x, std::size_t payload_bytes, Encode&& encode, DecodeAdd&& decode_add) {
  const int p = b.size();
  const std::size_t msg = compressed_detail::words(payload_bytes);
  std::vector<std::uint32_t> mine(msg, 0u), all(static_cast<std::size_t>(p) * msg, 0u);
  encode(std::span<unsigned char>(reinterpret_cast<unsigned char*>(mine.data()), payload_bytes));
  b.all_gather(mine.data(), all.data(), msg, dtype::i32);
  std::fill(x.begin(), x.end(), 0.0f);
  for (int s = 0; s < p; ++s)
    decode_add(std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(all.data() + static_cast<std::size_t>(s) * msg),
                                              payload_bytes),
               x);
}

// One PowerSGD step of one rows x cols matrix: g (this rank's gradient) in, out = the
// low-rank approximation of the sum over ranks; the state keeps Q and this rank's error.
// Matrices PowerSGD leaves uncompressed (powersgd::should_compress) are all-reduced as they are.
template <Backend B>
void powersgd_sum(B& b, std::span<const float> g, std::size_t rows, std::size_t cols, codecs::powersgd::state& st,
                  const codecs::powersgd::options& o, std::uint64_t matrix, std::span<float> out) {
  namespace ps = codecs::powersgd;
  if (g.size() != rows * cols || out.size() != rows * cols) throw error("powersgd_sum", "buffers must hold rows x cols elements");
  if (!ps::should_compress(rows, cols, o.rank, o.min_compression_rate)) {
    std::copy(g.begin(), g.end(), out.begin());
    b.all_reduce(out.data(), out.size(), dtype::f32);
    return;
  }
  const auto r = static_cast<std::size_t>(ps::effective_rank(rows, cols, o.rank));
  std::vector<float> pm(rows * r), qm(cols * r);
  ps::compute_p(g, rows, cols, st, o, matrix, pm);
  b.all_reduce(pm.data(), pm.size(), dtype::f32);
  ps::compute_q(st, pm, qm);
  b.all_reduce(qm.data(), qm.size(), dtype::f32);
  ps::decompress(st, pm, qm, b.size(), out, o);
}

}  // namespace autosync::exec
