// autosync/model.hpp — tensors and models: what has to be synchronized.
//
// A `tensor` is one trainable parameter's gradient. A `model_spec` lists them in forward
// (`named_parameters()`) order; backward produces gradients in reverse unless a tensor
// states its own `ready_order`. Compute per tensor is carried as FLOPs so that the cost model
// can turn it into time with a device throughput from the cluster.
#pragma once

#include <autosync/error.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace autosync {

enum class dtype : std::uint8_t { f32, f16, bf16, f64, i32, i64 };

inline constexpr dtype all_dtypes[] = {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i32, dtype::i64};

[[nodiscard]] constexpr std::uint32_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::f16:
    case dtype::bf16: return 2;
    case dtype::f64:
    case dtype::i64: return 8;
    case dtype::f32:
    case dtype::i32: return 4;
  }
  return 4;
}

[[nodiscard]] constexpr std::string_view name_of(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::f64: return "f64";
    case dtype::i32: return "i32";
    case dtype::i64: return "i64";
  }
  return "f32";
}

[[nodiscard]] constexpr std::optional<dtype> parse_dtype(std::string_view s) noexcept {
  for (dtype t : all_dtypes)
    if (name_of(t) == s) return t;
  if (s == "float32" || s == "float") return dtype::f32;
  if (s == "float16" || s == "half") return dtype::f16;
  if (s == "bfloat16") return dtype::bf16;
  if (s == "float64" || s == "double") return dtype::f64;
  if (s == "int32") return dtype::i32;
  if (s == "int64") return dtype::i64;
  return std::nullopt;
}

struct tensor {
  std::string name;
  std::vector<std::int64_t> shape;  // row-major; axis 0 is the row axis of embeddings
  dtype type = dtype::f32;
  bool sparse = false;              // an embedding-style gradient (touched rows only)
  double sparse_density = 1.0;      // fraction of axis-0 rows a sparse gradient touches per step
  double backward_flops = 0.0;      // per device per step: backward work that produces this gradient
  std::int32_t ready_order = -1;    // position in backward order (0 = ready first); -1: reverse of forward

  [[nodiscard]] constexpr std::int64_t elements() const noexcept {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  [[nodiscard]] constexpr std::int64_t bytes() const noexcept { return elements() * static_cast<std::int64_t>(size_of(type)); }
  // Elements of one slice along `axis` (product of all other dims).
  [[nodiscard]] constexpr std::int64_t slice_elements(std::size_t axis) const noexcept {
    std::int64_t n = 1;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (i != axis) n *= shape[i];
    return n;
  }
};

struct model_spec {
  std::string name;
  std::vector<tensor> tensors;     // forward order
  double forward_flops = 0.0;      // per device per step (whole forward pass)
  std::int64_t batch_per_device = 0;
  std::string source;              // where the numbers come from

  [[nodiscard]] constexpr std::int64_t total_elements() const noexcept {
    std::int64_t n = 0;
    for (const auto& t : tensors) n += t.elements();
    return n;
  }
  [[nodiscard]] constexpr std::int64_t total_bytes() const noexcept {
    std::int64_t n = 0;
    for (const auto& t : tensors) n += t.bytes();
    return n;
  }
  [[nodiscard]] constexpr double backward_flops() const noexcept {
    double f = 0;
    for (const auto& t : tensors) f += t.backward_flops;
    return f;
  }
  [[nodiscard]] constexpr std::optional<std::size_t> find(std::string_view tensor_name) const noexcept {
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].name == tensor_name) return i;
    return std::nullopt;
  }
  // Tensor indices in the order backward makes them ready (first ready first).
  [[nodiscard]] constexpr std::vector<std::size_t> backward_order() const {
    std::vector<std::size_t> idx(tensors.size());
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    auto key = [&](std::size_t i) -> std::int64_t {
      const auto r = tensors[i].ready_order;
      return r >= 0 ? r : static_cast<std::int64_t>(tensors.size() - 1 - i);
    };
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return key(a) != key(b) ? key(a) < key(b) : a < b; });
    return idx;
  }

  // Throws autosync::error naming the first bad field.
  void validate() const {
    if (tensors.empty()) throw error("tensors", "a model needs at least one tensor");
    std::unordered_set<std::string_view> seen;
    std::vector<bool> order_used;
    bool any_order = false;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      const std::string f = "tensors[" + std::to_string(i) + "]";
      if (t.name.empty()) throw error(f + ".name", "must not be empty");
      if (!seen.insert(t.name).second) throw error(f + ".name", "duplicate tensor name '" + t.name + "'");
      if (t.shape.empty()) throw error(f + ".shape", "must have at least one dimension");
      std::int64_t n = 1;
      for (std::size_t d = 0; d < t.shape.size(); ++d) {
        const auto v = t.shape[d];
        if (v <= 0) throw error(f + ".shape[" + std::to_string(d) + "]", "must be positive, got " + std::to_string(v));
        if (n > std::numeric_limits<std::int64_t>::max() / 8 / v)
          throw error(f + ".shape", "element count overflows 64 bits");
        n *= v;
      }
      if (!(t.sparse_density > 0.0 && t.sparse_density <= 1.0))
        throw error(f + ".sparse_density", "must be in (0, 1]");
      if (!(t.backward_flops >= 0.0) || t.backward_flops > 1e30)
        throw error(f + ".backward_flops", "must be a finite non-negative number");
      if (t.ready_order >= 0) any_order = true;
    }
    if (!(forward_flops >= 0.0) || forward_flops > 1e30) throw error("forward_flops", "must be a finite non-negative number");
    if (batch_per_device < 0) throw error("batch_per_device", "must not be negative");
    if (any_order) {
      order_used.assign(tensors.size(), false);
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        const auto r = tensors[i].ready_order;
        const std::string f = "tensors[" + std::to_string(i) + "].ready_order";
        if (r < 0) throw error(f, "either every tensor or none states ready_order");
        if (static_cast<std::size_t>(r) >= tensors.size()) throw error(f, "must be < the number of tensors");
        if (order_used[static_cast<std::size_t>(r)]) throw error(f, "position " + std::to_string(r) + " used twice");
        order_used[static_cast<std::size_t>(r)] = true;
      }
    }
  }
};

}  // namespace autosync
