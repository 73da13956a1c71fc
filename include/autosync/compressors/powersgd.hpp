// autosync/compressors/powersgd.hpp — "powersgd": rank-r PowerSGD with warm start and error
// feedback (Vogels, Karimireddy, Jaggi, NeurIPS 2019; exec/codecs/powersgd.hpp), as PyTorch's
// powerSGD_hook runs it, as a value of the compression slot.
//
//   JSON      "powersgd" or {"kind": "powersgd", "rank": 1, "start_iteration": 1000,
//                            "min_compression_rate": 2}                (PyTorch's defaults)
//   C++       autosync::compressors::powersgd<1, 1000, 2.0>
//   matrices  each tensor of the bucket is viewed as shape[0] x the rest (a block of its rows
//             when partitioned); it is compressed when (rows + cols) r rate < rows cols, so 1-D
//             tensors (biases, norm scales) and small matrices travel uncompressed.
//   exchange  before `start_iteration`: one all-reduce of the whole bucket (no error feedback).
//             Then per iteration two dependent all-reduces: every compressed matrix's P = M Q
//             and the uncompressed elements in one buffer, then after orthonormalizing P every
//             matrix's Q = M^T P; the result is P Q^T (the sum) and E = M - P Q^T / p stays.
//   bytes     per compressed matrix 4 (rows + cols) r over two all-reduces (all-reduce
//             equivalent: that), else 4 rows cols; the cost model prices the steady state
//             (after start_iteration).
//   guarantee exact to float rounding when the sum over ranks of the gradients has rank <= r
//             (and the warm-started Q is not orthogonal to it); error feedback conserves the
//             sum to float rounding: results + sum over ranks of E = sum of the gradients.
//             Every rank computes the same P and Q (the all-reduces are the same on every rank,
//             the first Q is drawn from the shared stream of the bucket and the matrix).
#pragma once

#include <autosync/compressors/common.hpp>
#include <autosync/exec/codecs/powersgd.hpp>

#include <cstdint>
#include <vector>

namespace autosync::compressors {

template <int Rank = 1, long long StartIteration = 1000, double MinCompressionRate = 2.0>
struct powersgd {
  static_assert(Rank >= 1, "compression slot: autosync::compressors::powersgd<Rank, ...>: Rank must be >= 1");
  static_assert(StartIteration >= 0, "compression slot: autosync::compressors::powersgd<Rank, StartIteration, ...>: StartIteration must be >= 0");
  using slot = slot::compression;
  static constexpr std::string_view name = "powersgd";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 4.0 * 2.0 * Rank / 1024.0;  // a square 1024 x 1024 matrix
  static constexpr double flops_per_element = flops_at(2.67) * Rank;
  static_assert(MinCompressionRate >= 1.0, "compression slot: autosync::compressors::powersgd<..., MinCompressionRate>: must be >= 1");
  static constexpr compression_value value{stable_id("powersgd"), {double(Rank), double(StartIteration), MinCompressionRate}};
};

namespace powersgd_detail {
namespace ps = exec::codecs::powersgd;

// A piece of an item: rows x cols when it is whole rows of a matrix tensor, else 1-D.
[[nodiscard]] inline double bytes(const tensor& t, std::int64_t elements, const param_list& q) {
  const auto n = static_cast<double>(elements);
  if (t.shape.size() < 2 || t.shape[0] < 2) return 4.0 * n;
  const std::int64_t cols = t.elements() / t.shape[0];
  if (cols < 2 || elements % cols != 0) return 4.0 * n;
  const auto rows = static_cast<std::size_t>(elements / cols);
  return 4.0 * static_cast<double>(ps::wire_elements(rows, static_cast<std::size_t>(cols), static_cast<int>(q[0]), q[2]));
}

struct exchange {
  std::size_t n = 0;
  ps::options opt;
  std::vector<registry::bucket_matrix> compressed;  // the matrices PowerSGD compresses
  std::vector<std::pair<std::size_t, std::size_t>> plain;  // [begin, end) ranges that travel as they are
  std::vector<ps::state> states;
  std::uint64_t seed = 0;
  std::int64_t iteration = 0;
  std::vector<float> pbuf, qbuf;

  exchange(std::size_t elements, const param_list& q, const registry::exchange_context& x) : n(elements), seed(x.seed) {
    opt.rank = static_cast<int>(q[0]);
    opt.start_iteration = static_cast<std::int64_t>(q[1]);
    opt.min_compression_rate = q[2];
    opt.seed = x.seed;
    std::size_t at = 0;
    for (const auto& m : x.matrices) {
      if (!ps::should_compress(m.rows, m.cols, opt.rank, opt.min_compression_rate)) continue;
      if (m.offset > at) plain.emplace_back(at, m.offset);
      compressed.push_back(m);
      at = m.offset + m.rows * m.cols;
    }
    if (at < n) plain.emplace_back(at, n);
    states.resize(compressed.size());
  }

  // State: the exchange count and, per compressed matrix, its warm-start Q and error-feedback
  // residual (empty until the matrix is first compressed).
  void save(registry::state_writer& w) const {
    w.put(iteration);
    w.put(static_cast<std::uint64_t>(states.size()));
    for (const auto& s : states) {
      w.put(static_cast<std::uint64_t>(s.rows));
      w.put(static_cast<std::uint64_t>(s.cols));
      w.put(static_cast<std::int32_t>(s.r));
      w.put(static_cast<std::uint8_t>(s.started));
      w.put(s.q);
      w.put(s.m);
    }
  }
  void load(registry::state_reader& r) {
    r.get(iteration, "iteration");
    std::uint64_t count = 0;
    r.get(count, "matrices");
    if (count != states.size())
      throw error(r.field(), "matrices: " + std::to_string(count) + " saved, the bucket compresses " + std::to_string(states.size()));
    for (std::size_t i = 0; i < states.size(); ++i) {
      const auto& mat = compressed[i];
      ps::state s;
      std::uint64_t rows = 0, cols = 0;
      std::int32_t rk = 0;
      std::uint8_t started = 0;
      r.get(rows, "rows");
      r.get(cols, "cols");
      r.get(rk, "rank");
      r.get(started, "started");
      const bool fresh = rows == 0 && cols == 0;
      if (!fresh && (rows != mat.rows || cols != mat.cols || rk != ps::effective_rank(mat.rows, mat.cols, opt.rank)))
        throw error(r.field(), "matrix " + std::to_string(i) + ": saved as " + std::to_string(rows) + " x " + std::to_string(cols) + " rank " +
                                   std::to_string(rk) + ", the bucket's is " + std::to_string(mat.rows) + " x " + std::to_string(mat.cols) + " rank " +
                                   std::to_string(ps::effective_rank(mat.rows, mat.cols, opt.rank)));
      s.rows = static_cast<std::size_t>(rows);
      s.cols = static_cast<std::size_t>(cols);
      s.r = rk;
      s.started = started != 0;
      r.get_exact(s.q, "q", fresh ? 0 : cols * static_cast<std::uint64_t>(rk));
      r.get_exact(s.m, "residual", fresh ? 0 : rows * cols);
      states[i] = std::move(s);
    }
  }

  void operator()(unsigned char* data, registry::exchange_comm& comm) {
    const auto x = floats(data, n);
    if (iteration++ < opt.start_iteration || compressed.empty()) {
      comm.all_reduce(x.data(), n);
      return;
    }
    std::size_t pn = 0, qn = 0, rest = 0;
    for (const auto& m : compressed) {
      const auto r = static_cast<std::size_t>(ps::effective_rank(m.rows, m.cols, opt.rank));
      pn += m.rows * r;
      qn += m.cols * r;
    }
    for (const auto& [b, e] : plain) rest += e - b;
    pbuf.assign(pn + rest, 0.0f);
    qbuf.assign(qn, 0.0f);
    std::size_t po = 0;
    for (std::size_t i = 0; i < compressed.size(); ++i) {
      const auto& m = compressed[i];
      const auto r = static_cast<std::size_t>(ps::effective_rank(m.rows, m.cols, opt.rank));
      ps::compute_p(x.subspan(m.offset, m.rows * m.cols), m.rows, m.cols, states[i], opt, seed ^ exec::codecs::splitmix64(i),
                    std::span<float>(pbuf).subspan(po, m.rows * r));
      po += m.rows * r;
    }
    for (const auto& [b, e] : plain) {  // the uncompressed elements ride with P
      std::copy(x.begin() + static_cast<std::ptrdiff_t>(b), x.begin() + static_cast<std::ptrdiff_t>(e), pbuf.begin() + static_cast<std::ptrdiff_t>(po));
      po += e - b;
    }
    comm.all_reduce(pbuf.data(), pbuf.size());
    po = pn;
    for (const auto& [b, e] : plain) {
      std::copy(pbuf.begin() + static_cast<std::ptrdiff_t>(po), pbuf.begin() + static_cast<std::ptrdiff_t>(po + e - b), x.begin() + static_cast<std::ptrdiff_t>(b));
      po += e - b;
    }
    po = 0;
    std::size_t qo = 0;
    for (std::size_t i = 0; i < compressed.size(); ++i) {
      const auto& m = compressed[i];
      const auto r = static_cast<std::size_t>(ps::effective_rank(m.rows, m.cols, opt.rank));
      ps::compute_q(states[i], std::span<float>(pbuf).subspan(po, m.rows * r), std::span<float>(qbuf).subspan(qo, m.cols * r));
      po += m.rows * r;
      qo += m.cols * r;
    }
    comm.all_reduce(qbuf.data(), qbuf.size());
    po = qo = 0;
    for (std::size_t i = 0; i < compressed.size(); ++i) {
      const auto& m = compressed[i];
      const auto r = static_cast<std::size_t>(ps::effective_rank(m.rows, m.cols, opt.rank));
      ps::decompress(states[i], std::span<const float>(pbuf).subspan(po, m.rows * r), std::span<const float>(qbuf).subspan(qo, m.cols * r),
                     comm.size(), x.subspan(m.offset, m.rows * m.cols), opt);
      po += m.rows * r;
      qo += m.cols * r;
    }
  }
};
}  // namespace powersgd_detail

inline registry::compression_entry powersgd_entry() {
  registry::compression_entry e;
  e.name = "powersgd";
  e.params = {{"rank", 1.0, 1.0, 1024.0, true}, {"start_iteration", 1000.0, 0.0, 1e15, true}, {"min_compression_rate", 2.0, 1.0, 1e6, false}};
  e.applies = f32_only;
  e.exchange = registry::exchange_kind::two_all_reduces;
  e.wire_bytes = [](std::int64_t n, dtype, int, const param_list&, double) { return 4.0 * static_cast<double>(n); };
  e.tensor_wire_bytes = [](const tensor& t, std::int64_t n, int, const param_list& q, double) { return powersgd_detail::bytes(t, n, q); };
  e.flops_per_element = [](const param_list& q) { return flops_at(2.67) * q[0]; };
  e.nominal_bits = [](const param_list& q) { return 32.0 * 2048.0 * q[0] / (1024.0 * 1024.0); };
  e.alternatives = {param_list{1, 1000, 2}, param_list{4, 1000, 2}};
  e.make_exchange = [](const param_list& q, const registry::exchange_context& x) {
    return registry::bucket_exchange(powersgd_detail::exchange(x.elements, q, x));
  };
  e.cpp_type = [](const param_list& q) {
    return "autosync::compressors::powersgd<" + std::to_string(static_cast<int>(q[0])) + ", " + std::to_string(static_cast<long long>(q[1])) + ", " +
           spell(q[2]) + ">";
  };
  e.header = "autosync/compressors/powersgd.hpp";
  return e;
}

inline const registry::registrar powersgd_registered{powersgd_entry()};

}  // namespace autosync::compressors
