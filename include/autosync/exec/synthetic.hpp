// autosync/exec/synthetic.hpp — synthetic gradients whose sums are exact, and the check.
//
// `autosync run` and the tests execute a strategy on gradients nobody trained: small integers
// (-4 .. 4), so every sum over the ranks is exact in every wire format (f16 holds integers up
// to 2048, bf16 up to 256: |sum| <= 4 x ranks for up to 64 ranks). Sparse tensors touch a
// `sparse_density` fraction of their rows (a hash of row, tensor, rank, iteration and seed);
// the others stay zero. Every value is a function of (seed, rank, tensor, element, iteration),
// so any rank can compute what the sum over all ranks must be.
//
//   synthetic_gradients g(model, seed);   // one buffer per tensor, in the tensor's dtype
//   g.fill(rank, it);                     // this rank's values of iteration `it`
//   ex.begin_iteration(g.gradients()); ... ex.finish();
//   std::string bad = g.first_wrong_sum(ranks, it);   // "" when every element is the exact sum
#pragma once

#include <autosync/exec/compress.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/model.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace autosync::exec {

// The value of one element: a pure function of seed, rank, tensor index, element and iteration.
struct synthetic_values {
  std::uint64_t seed = 1;
  [[nodiscard]] int value(int rank, std::size_t t, std::int64_t e, int it) const {
    const auto h = static_cast<std::uint64_t>(e) * 7 + t * 13 + static_cast<std::uint64_t>(rank) * 5 + static_cast<std::uint64_t>(it) * 3 + seed;
    return static_cast<int>(h % 9) - 4;
  }
  // Whether `rank` touches `row` of tensor x (always, for a dense tensor).
  [[nodiscard]] bool touched(const tensor& x, int rank, std::size_t t, std::int64_t row, int it) const {
    if (!x.sparse) return true;
    const auto h = static_cast<std::uint64_t>(row) * 2654435761u + t * 40503u + static_cast<std::uint64_t>(rank) * 9973u +
                   static_cast<std::uint64_t>(it) * 7919u + seed * 104729u;
    return static_cast<double>(h % 1000003u) < x.sparse_density * 1000003.0;
  }
  [[nodiscard]] double element(const tensor& x, int rank, std::size_t t, std::int64_t e, std::int64_t row_len, int it) const {
    return touched(x, rank, t, e / row_len, it) ? value(rank, t, e, it) : 0;
  }
};

// Element i of a buffer of `type`, written from / read as a double (f16/bf16 round to nearest
// even; the synthetic values are exact in every type).
inline void store_element(void* buf, std::int64_t i, dtype type, double v) {
  switch (type) {
    case dtype::f32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case dtype::f64: static_cast<double*>(buf)[i] = v; break;
    case dtype::f16: static_cast<std::uint16_t*>(buf)[i] = f32_to_f16(static_cast<float>(v)); break;
    case dtype::bf16: static_cast<std::uint16_t*>(buf)[i] = f32_to_bf16(static_cast<float>(v)); break;
    case dtype::i32: static_cast<std::int32_t*>(buf)[i] = static_cast<std::int32_t>(v); break;
    case dtype::i64: static_cast<std::int64_t*>(buf)[i] = static_cast<std::int64_t>(v); break;
  }
}
[[nodiscard]] inline double load_element(const void* buf, std::int64_t i, dtype type) {
  switch (type) {
    case dtype::f32: return static_cast<const float*>(buf)[i];
    case dtype::f64: return static_cast<const double*>(buf)[i];
    case dtype::f16: return f16_to_f32(static_cast<const std::uint16_t*>(buf)[i]);
    case dtype::bf16: return bf16_to_f32(static_cast<const std::uint16_t*>(buf)[i]);
    case dtype::i32: return static_cast<const std::int32_t*>(buf)[i];
    case dtype::i64: return static_cast<double>(static_cast<const std::int64_t*>(buf)[i]);
  }
  return 0.0;
}

// One gradient buffer per tensor of a model, filled with synthetic_values.
class synthetic_gradients {
 public:
  synthetic_gradients(const model_spec& m, std::uint64_t seed) : m_(m), gen_{seed} {
    const std::size_t T = m.tensors.size();
    bufs_.resize(T);
    grads_.resize(T);
    row_len_.resize(T);
    for (std::size_t t = 0; t < T; ++t) {
      const auto& x = m.tensors[t];
      bufs_[t].resize(static_cast<std::size_t>(x.elements()) * size_of(x.type));
      grads_[t] = gradient{bufs_[t].data(), x.type, x.elements()};
      row_len_[t] = x.elements() / x.shape[0];
    }
  }

  [[nodiscard]] std::span<const gradient> gradients() const noexcept { return grads_; }

  // This rank's gradients of iteration `it` (every element rewritten: the last sync left sums).
  void fill(int rank, int it) {
    for (std::size_t t = 0; t < grads_.size(); ++t)
      for (std::int64_t e = 0; e < grads_[t].count; ++e)
        store_element(bufs_[t].data(), e, m_.tensors[t].type, gen_.element(m_.tensors[t], rank, t, e, row_len_[t], it));
  }

  // After a synchronization (sum over `ranks` ranks) of iteration `it`: "" when every element
  // equals the exact sum, else the first that does not, "tensor 'x' element e: got .., the
  // exact sum is ..".
  [[nodiscard]] std::string first_wrong_sum(int ranks, int it) const {
    for (std::size_t t = 0; t < grads_.size(); ++t)
      for (std::int64_t e = 0; e < grads_[t].count; ++e) {
        double want = 0;
        for (int r = 0; r < ranks; ++r) want += gen_.element(m_.tensors[t], r, t, e, row_len_[t], it);
        const double got = load_element(bufs_[t].data(), e, m_.tensors[t].type);
        if (got != want) {
          char v[96];
          std::snprintf(v, sizeof v, ": got %.17g, the exact sum is %.17g", got, want);
          return "tensor '" + m_.tensors[t].name + "' element " + std::to_string(e) + v;
        }
      }
    return {};
  }

 private:
  const model_spec& m_;
  synthetic_values gen_;
  std::vector<std::vector<unsigned char>> bufs_;
  std::vector<gradient> grads_;
  std::vector<std::int64_t> row_len_;
};

}  // namespace autosync::exec
