// autosync/model.hpp — tensors and models: what has to be synchronized.
//
// A `tensor` is one trainable parameter's gradient. A `model_spec` lists them in forward
// (`named_parameters()`) order; backward produces gradients in reverse unless a tensor
// states its own `ready_order`.
//
// Compute is described three ways, the best one present wins (cost/compute.hpp):
//   1. a measured profile: every tensor's `ready_time` (seconds after backward starts) and the
//      model's `measured_forward` / `measured_backward` (examples/export_pytorch_model.py
//      --profile records them on the user's device);
//   2. `layers`: what each layer does (a GEMM of m x n x k, a batch norm over N elements, a
//      softmax ...), in forward order, each attributed to a tensor; cost/compute.hpp turns
//      them into time on a device at the model's training `precision` (roofline per kernel);
//   3. FLOPs only (`forward_flops`, `backward_flops` per tensor): time = FLOPs / the device's
//      matrix throughput at `precision` — an optimistic bound (no memory-bound work).
// FLOPs are kept in every case (features, reports): 2 x multiply-adds, as PyTorch counts them.
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

// A floating-point element type: what lossy compressors shrink and what gradient scaling applies to.
[[nodiscard]] constexpr bool is_floating(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16;
}

// Whether a compressor that sends `per` bytes per element shrinks a gradient of dtype `t`: only a
// floating-point gradient wider than the wire format is compressed; anything else travels as it is.
// A NaN or non-positive `per` (no compressor) never shrinks.
[[nodiscard]] constexpr bool shrinks(dtype t, double per) noexcept {
  return is_floating(t) && per > 0.0 && per < static_cast<double>(size_of(t));
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

// The precision a model trains in: which units run the matrix work (convolutions, matmuls) and
// how many bytes an activation element has. `pytorch_fp32` is the default: it is what a
// PyTorch script that sets nothing runs on NVIDIA GPUs — convolutions through cuDNN in TF32
// (torch.backends.cudnn.allow_tf32 = True, the default) and matmuls in true fp32
// (torch.backends.cuda.matmul.allow_tf32 = False, the default since PyTorch 1.12).
enum class precision : std::uint8_t {
  pytorch_fp32,  // fp32 as PyTorch runs it by default: TF32 convolutions, fp32 matmuls, 4-byte activations
  fp32,          // true fp32 everywhere (both allow_tf32 flags False)
  tf32,          // TF32 convolutions and matmuls (both allow_tf32 flags True), 4-byte activations
  bf16,          // torch.autocast(bfloat16): bf16 matmuls/convs and activations; norms, softmax and
                 // losses in fp32 (autocast's fp32 list); fp32 master weights cast every step
  fp16,          // torch.autocast(float16): as bf16 with fp16 tensor cores
};

inline constexpr precision all_precisions[] = {precision::pytorch_fp32, precision::fp32, precision::tf32,
                                               precision::bf16, precision::fp16};

[[nodiscard]] constexpr std::string_view name_of(precision p) noexcept {
  switch (p) {
    case precision::pytorch_fp32: return "pytorch-fp32";
    case precision::fp32: return "fp32";
    case precision::tf32: return "tf32";
    case precision::bf16: return "bf16";
    case precision::fp16: return "fp16";
  }
  return "pytorch-fp32";
}

[[nodiscard]] constexpr std::optional<precision> parse_precision(std::string_view s) noexcept {
  for (precision p : all_precisions)
    if (name_of(p) == s) return p;
  return std::nullopt;
}

// Mixed precision (autocast): 2-byte activations, fp32 master weights.
[[nodiscard]] constexpr bool autocast(precision p) noexcept { return p == precision::bf16 || p == precision::fp16; }

// What a layer does, for the compute model (cost/compute.hpp says what each kind costs).
//
//   kind        m, n, k, count                         elements (outputs)
//   linear      rows, out features, in features         -            GEMM; bias: + row reduction in backward
//   conv        batch*Hout*Wout, Cout, Cin/groups*kh*kw  input elements (implicit GEMM, cuDNN; `groups`:
//                                                        groups = Cout = Cin is depthwise)
//   matmul      m, n, k of each of `count` products      -            weightless batched matmul (attention)
//   attention   queries, keys, head dim; count = batch x heads   -     fused attention (SDPA: FlashAttention
//                                                                      or memory-efficient; `causal`: masked
//                                                                      half skipped); scores stay on chip
//   batch_norm  batch N, channels C (optional, both)     activation elements N x C x H x W (statistics
//                                                        per channel over N x H x W; with N and C the
//                                                        kernels' launch shapes are modelled, without
//                                                        them the bytes alone)
//   layer_norm  rows M, width N (optional, both)         activation elements M x N (statistics per row;
//                                                        with M and N the kernels' rows are modelled)
//   activation  -                                        elements     ReLU, GELU, tanh ...
//   add         -                                        elements     residual add (backward: the
//                                                                     gradient accumulation at the fork)
//   scale       -                                        elements     multiply by a constant, masked fill
//   copy        -                                        elements     a layout change (.contiguous(), cat)
//   dropout     -                                        elements     writes a 1-byte mask in forward
//   softmax     -                                        elements     over the last axis
//   max_pool    -                                        input elements (outputs: output elements)
//   avg_pool    -                                        input elements (outputs: output elements)
//   embedding   rows of the table, width                 lookups x width (gathered elements)
//   loss        -                                        logits (cross entropy: log-softmax + NLL)
enum class layer_kind : std::uint8_t {
  linear, conv, matmul, batch_norm, layer_norm, activation, add, scale, copy, dropout, softmax, max_pool, avg_pool,
  embedding, loss, attention
};

inline constexpr layer_kind all_layer_kinds[] = {
    layer_kind::linear,     layer_kind::conv,     layer_kind::matmul,   layer_kind::batch_norm, layer_kind::layer_norm,
    layer_kind::activation, layer_kind::add,      layer_kind::scale,    layer_kind::copy,       layer_kind::dropout,
    layer_kind::softmax,    layer_kind::max_pool, layer_kind::avg_pool, layer_kind::embedding,  layer_kind::loss,
    layer_kind::attention};

[[nodiscard]] constexpr std::string_view name_of(layer_kind k) noexcept {
  switch (k) {
    case layer_kind::linear: return "linear";
    case layer_kind::conv: return "conv";
    case layer_kind::matmul: return "matmul";
    case layer_kind::batch_norm: return "batch_norm";
    case layer_kind::layer_norm: return "layer_norm";
    case layer_kind::activation: return "activation";
    case layer_kind::add: return "add";
    case layer_kind::scale: return "scale";
    case layer_kind::copy: return "copy";
    case layer_kind::dropout: return "dropout";
    case layer_kind::softmax: return "softmax";
    case layer_kind::max_pool: return "max_pool";
    case layer_kind::avg_pool: return "avg_pool";
    case layer_kind::embedding: return "embedding";
    case layer_kind::loss: return "loss";
    case layer_kind::attention: return "attention";
  }
  return "linear";
}

[[nodiscard]] constexpr std::optional<layer_kind> parse_layer_kind(std::string_view s) noexcept {
  for (layer_kind k : all_layer_kinds)
    if (name_of(k) == s) return k;
  return std::nullopt;
}

// The GEMM-shaped kinds (m, n, k describe the product); the others move `elements`.
[[nodiscard]] constexpr bool matrix_kind(layer_kind k) noexcept {
  return k == layer_kind::linear || k == layer_kind::conv || k == layer_kind::matmul || k == layer_kind::attention;
}

// The kinds with a weight gradient of their own (layer::weight_grad; matmul: its second operand's).
[[nodiscard]] constexpr bool has_weight(layer_kind k) noexcept {
  return k == layer_kind::linear || k == layer_kind::conv || k == layer_kind::matmul || k == layer_kind::batch_norm ||
         k == layer_kind::layer_norm || k == layer_kind::embedding;
}
// The kinds that may have a bias (layer::bias_grad).
[[nodiscard]] constexpr bool has_bias(layer_kind k) noexcept {
  return k == layer_kind::linear || k == layer_kind::conv || k == layer_kind::batch_norm || k == layer_kind::layer_norm;
}

// One layer (one framework op, or a module's op) in forward order. `tensor` is the tensor whose
// gradient becomes ready right after this layer's backward: the layer's own weight (or bias),
// or, for a layer that owns no tensor, the tensor that precedes it in forward order (the next
// one backward reaches). -1: before every tensor (its backward, if any, comes last).
struct layer {
  std::string name;
  layer_kind kind = layer_kind::activation;
  std::int32_t tensor = -1;
  std::int64_t m = 0, n = 0, k = 0;  // matrix kinds; embedding: m = table rows, n = width
  std::int64_t count = 1;            // matmul: products in the batch; elementwise kinds: kernels the op
                                     // runs as (a composite such as GPT-2's gelu_new is 8)
  std::int64_t groups = 1;           // conv: its groups (torch.nn.Conv2d); groups = n (= the input
                                     // channels) is a depthwise convolution
  std::int64_t elements = 0;         // memory-bound kinds (see layer_kind); conv: input elements
  std::int64_t outputs = 0;          // pooling: output elements
  bool bias = false;                 // linear / conv: a bias is added (its gradient is a reduction)
  bool causal = false;               // attention: a causal mask (the kernel skips the masked half)
  bool channels_last = false;        // conv, max_pool: the network runs NHWC (torch.channels_last):
                                     // no layout transposes around tensor-core convolutions, and
                                     // max pooling runs PyTorch's NHWC kernels (bandwidth-bound)
  bool input_grad = true;            // backward computes the input's gradient: false for a first
                                     // layer whose input needs none, for elementwise ops whose
                                     // gradient passes through unchanged (adding a constant mask),
                                     // and for layers of a frozen prefix or a no_grad region
  bool weight_grad = true;           // backward computes the layer's weight gradient: linear, conv,
                                     // matmul (its second operand, dB), batch and layer norm (gamma),
                                     // embedding (the table). false for frozen parameters
                                     // (requires_grad false) and no_grad regions: fine-tuning a head
                                     // over a frozen backbone. A layer with no gradient to compute
                                     // has no backward at all
  bool bias_grad = true;             // ... and its bias's: linear and conv with `bias`, batch and
                                     // layer norm (beta). false where the bias is frozen; a frozen
                                     // weight with a trained bias is BitFit
  bool recompute = false;            // activation checkpointing (torch.utils.checkpoint): backward
                                     // runs the layer's forward kernels again before its own
  bool upcast = false;               // elementwise kinds under autocast (bf16 / fp16): the op runs in
                                     // fp32 because it is on autocast's fp32 list or is fed by one
                                     // (GPT-2's gelu_new: torch.pow), its input cast up and its
                                     // output cast down around it
  bool fp32_input = false;           // under autocast, the layer's input is the fp32 output of an
                                     // fp32-list op (layer norm, softmax), of fp32 tables or of an
                                     // fp32 residual stream. Elementwise kinds then run in fp32
                                     // with no casts of their own (BERT's attention dropout after
                                     // softmax, the dropout after the embeddings, the residual adds
                                     // of transformers); linear / conv pay the cast: their input
                                     // cast to 16 bits in forward, its gradient cast back in backward
};

struct tensor {
  std::string name;
  std::vector<std::int64_t> shape;  // row-major; axis 0 is the row axis of embeddings
  dtype type = dtype::f32;
  bool sparse = false;              // an embedding-style gradient (touched rows only)
  double sparse_density = 1.0;      // fraction of axis-0 rows a sparse gradient touches per step
  double backward_flops = 0.0;      // per device per step: backward work that produces this gradient
  std::int32_t ready_order = -1;    // position in backward order (0 = ready first); -1: reverse of forward
  double ready_time = -1.0;         // measured: seconds after backward starts until this gradient is
                                    // ready (-1: not measured; either every tensor has one or none)

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
  precision training_precision = precision::pytorch_fp32;  // how it trains (see `precision`)
  std::vector<layer> layers{};     // forward order; empty: FLOPs only
  double measured_forward = 0.0;   // seconds, with a measured profile (tensors' ready_time)
  double measured_backward = 0.0;  // seconds from the start of backward to its end
  std::string measured_on{};       // the device the profile was measured on

  [[nodiscard]] constexpr bool has_profile() const noexcept {
    return measured_backward > 0.0 && !tensors.empty() && tensors.front().ready_time >= 0.0;
  }

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
  // Activation checkpointing of the layers whose names start with `prefix` (a block's, as
  // torch.utils.checkpoint wraps it: "h." for GPT-2's blocks): each is `recompute`d, its forward
  // run again in backward. Returns how many layers the prefix names.
  constexpr std::size_t recompute_layers(std::string_view prefix) {
    std::size_t n = 0;
    for (auto& l : layers)
      if (std::string_view(l.name).starts_with(prefix)) {
        l.recompute = true;
        ++n;
      }
    return n;
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
      // a gradient the cost model and the search can expand shard by shard: at most 2^36 elements
      // (a trillion-element tensor would take hours per search, or all the memory)
      if (n > (std::int64_t{1} << 36))
        throw error(f + ".shape", std::to_string(n) + " elements: a tensor may have at most 2^36 (68719476736)");
      if (!(t.sparse_density > 0.0 && t.sparse_density <= 1.0))
        throw error(f + ".sparse_density", "must be in (0, 1]");
      if (!(t.backward_flops >= 0.0) || t.backward_flops > 1e30)
        throw error(f + ".backward_flops", "must be a number of FLOPs in [0, 1e30]");
      if (t.ready_order >= 0) any_order = true;
    }
    if (!(forward_flops >= 0.0) || forward_flops > 1e30) throw error("forward_flops", "must be a number of FLOPs in [0, 1e30]");
    validate_layers();
    validate_profile();
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

 private:
  void validate_layers() const {
    constexpr std::int64_t big = std::int64_t{1} << 52;  // exact in a double; far above any real layer
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto& l = layers[i];
      const std::string f = "layers[" + std::to_string(i) + "]";
      if (l.tensor < -1 || l.tensor >= static_cast<std::int64_t>(tensors.size()))
        throw error(f + ".tensor", "must be -1 or the index of a tensor (< " + std::to_string(tensors.size()) + ")");
      auto dim = [&](std::int64_t v, const char* field, std::int64_t least) {
        if (v < least || v > big)
          throw error(f + "." + field, "must be in [" + std::to_string(least) + ", 2^52], got " + std::to_string(v));
      };
      dim(l.count, "count", 1);
      dim(l.groups, "groups", 1);
      if (l.groups > 1 && l.kind != layer_kind::conv) throw error(f + ".groups", "only a conv has groups");
      if (!l.weight_grad && !has_weight(l.kind))
        throw error(f + ".weight_grad",
                    std::string(name_of(l.kind)) + " layers have no weight (linear, conv, matmul, batch_norm, layer_norm and embedding do)");
      if (!l.bias_grad && !has_bias(l.kind))
        throw error(f + ".bias_grad", std::string(name_of(l.kind)) + " layers have no bias (linear, conv, batch_norm and layer_norm may)");
      if (l.groups > 1 && l.n % l.groups != 0)
        throw error(f + ".groups", "must divide the output channels (n = " + std::to_string(l.n) + "), got " + std::to_string(l.groups));
      if (matrix_kind(l.kind)) {
        dim(l.m, "m", 1);
        dim(l.n, "n", 1);
        dim(l.k, "k", 1);
        if (static_cast<double>(l.m) * static_cast<double>(l.n) * static_cast<double>(l.k) * static_cast<double>(l.count) > 1e24)
          throw error(f, "m x n x k x count is too large (over 1e24)");
        dim(l.elements, "elements", 0);
      } else {
        dim(l.elements, "elements", 1);
        dim(l.m, "m", 0);
        dim(l.n, "n", 0);
        dim(l.k, "k", 0);
        if (l.kind == layer_kind::embedding && (l.m < 1 || l.n < 1))
          throw error(f + (l.m < 1 ? ".m" : ".n"), "an embedding states its table rows (m) and width (n)");
        if (l.kind == layer_kind::layer_norm && (l.m > 0 || l.n > 0)) {
          if (l.m < 1 || l.n < 1)
            throw error(f + (l.m < 1 ? ".m" : ".n"), "a layer_norm states both its rows (m) and width (n), or neither");
          if (static_cast<double>(l.m) * static_cast<double>(l.n) != static_cast<double>(l.elements))
            throw error(f + ".elements", "a layer_norm's elements must be its rows (m) x width (n), got " + std::to_string(l.elements) +
                                             " for m " + std::to_string(l.m) + ", n " + std::to_string(l.n));
        }
        if (l.kind == layer_kind::batch_norm && (l.m > 0 || l.n > 0)) {
          if (l.m < 1 || l.n < 1)
            throw error(f + (l.m < 1 ? ".m" : ".n"), "a batch_norm states both its batch (m) and channels (n), or neither");
          if (l.elements % l.m != 0 || (l.elements / l.m) % l.n != 0)
            throw error(f + ".elements", "a batch_norm's elements must be its batch (m) x channels (n) x spatial size, got " +
                                             std::to_string(l.elements) + " for m " + std::to_string(l.m) + ", n " +
                                             std::to_string(l.n));
        }
      }
      dim(l.outputs, "outputs", (l.kind == layer_kind::max_pool || l.kind == layer_kind::avg_pool) ? 1 : 0);
    }
  }
  void validate_profile() const {
    if (!(measured_forward >= 0.0 && measured_forward < 1e6)) throw error("measured_forward", "must be seconds in [0, 1e6)");
    if (!(measured_backward >= 0.0 && measured_backward < 1e6)) throw error("measured_backward", "must be seconds in [0, 1e6)");
    const bool any = std::any_of(tensors.begin(), tensors.end(), [](const tensor& t) { return t.ready_time != -1.0; });
    if (!any) return;
    if (!(measured_backward > 0.0))
      throw error("measured_backward", "a profile (tensors' ready_time) needs the measured backward time (> 0)");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const double r = tensors[i].ready_time;
      const std::string f = "tensors[" + std::to_string(i) + "].ready_time";
      if (r == -1.0) throw error(f, "either every tensor or none states ready_time");
      if (!(r >= 0.0 && r <= measured_backward * (1.0 + 1e-9)))
        throw error(f, "must be seconds in [0, measured_backward]");
    }
  }
};

}  // namespace autosync
