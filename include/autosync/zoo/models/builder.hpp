// autosync/zoo/models/builder.hpp — the builder the zoo's models are written with.
//
// A model is written in forward order, one call per module or op, as the framework runs it:
// calls that own parameters (conv, linear, norm, embedding) append the module's tensors (their
// FLOPs as zoo/models.hpp states) and its layer; weightless ops (activations, pooling, softmax,
// dropout, residual adds, attention products, the loss) append a layer only. Every layer is
// attributed to the last tensor appended when it is added (model.hpp `layer::tensor`): the
// layer's own bias or weight, or, for a weightless op, the tensor before it in forward order,
// which is the next one backward reaches after the op's own backward.
#pragma once

#include <autosync/error.hpp>
#include <autosync/model.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace autosync::zoo::detail {

class builder {
 public:
  builder(std::string_view name, std::int64_t batch, std::string_view source, std::size_t reserve) {
    m_.name = std::string(name);
    m_.batch_per_device = batch;
    m_.source = std::string(source);
    m_.tensors.reserve(reserve);
    m_.layers.reserve(3 * reserve);
  }

  // torch.nn.Conv2d with square kernel K, an Hout x Wout output and stride S (input Hout*S x Wout*S).
  // `input_grad` false: the first conv of a network (its input, the images, needs no gradient).
  void conv(std::string_view prefix, std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t hout,
            std::int64_t wout, bool bias, std::int64_t stride = 1, bool input_grad = true) {
    const double f = 2.0 * double(k * k * cin * cout) * double(hout * wout) * double(m_.batch_per_device);
    add(prefix, ".weight", {cout, cin, k, k}, 2.0 * f);
    forward_ += f;
    if (bias) bias_of(prefix, cout, double(cout) * double(hout * wout) * double(m_.batch_per_device));
    layer l = make(prefix, layer_kind::conv);
    l.m = m_.batch_per_device * hout * wout;
    l.n = cout;
    l.k = cin * k * k;
    l.elements = m_.batch_per_device * cin * hout * stride * wout * stride;
    l.bias = bias;
    l.input_grad = input_grad;
    m_.layers.push_back(std::move(l));
  }

  // torch.nn.Linear (shape (out, in)) or GPT-2's Conv1D (`transposed`: shape (in, out)),
  // applied to `rows` rows (tokens, or the batch).
  void linear(std::string_view prefix, std::int64_t in, std::int64_t out, std::int64_t rows, bool transposed = false,
              bool bias = true) {
    const double f = 2.0 * double(in) * double(out) * double(rows);
    if (transposed)
      add(prefix, ".weight", {in, out}, 2.0 * f);
    else
      add(prefix, ".weight", {out, in}, 2.0 * f);
    forward_ += f;
    if (bias) bias_of(prefix, out, double(out) * double(rows));
    push_linear(prefix, in, out, rows, bias);
  }

  // A linear layer whose weight is another module's tensor (GPT-2's LM head tied to wte): its
  // forward FLOPs counted, its backward (2x) on the tensor appended last (see `untracked`).
  void tied_linear(std::string_view name, std::int64_t in, std::int64_t out, std::int64_t rows) {
    untracked(2.0 * double(in) * double(out) * double(rows));
    push_linear(name, in, out, rows, false);
  }

  // BatchNorm2d (`batch`) / LayerNorm with `width` features over `elements` activation elements.
  // A batch norm states its launch shape: m = the batch, n = the channels; a layer norm its rows
  // and width (model.hpp).
  void norm(std::string_view prefix, std::int64_t width, std::int64_t elements, bool batch) {
    add(prefix, ".weight", {width}, 9.0 * double(elements));
    add(prefix, ".bias", {width}, double(elements));
    forward_ += 5.0 * double(elements);
    op(batch ? layer_kind::batch_norm : layer_kind::layer_norm, prefix, elements);
    if (batch) {
      m_.layers.back().m = m_.batch_per_device;
      m_.layers.back().n = width;
    } else {  // a layer norm states its rows and width
      m_.layers.back().m = elements / width;
      m_.layers.back().n = width;
    }
  }

  // torch.nn.Embedding (rows, width) read `lookups` times per step.
  void embedding(std::string_view name, std::int64_t rows, std::int64_t width, std::int64_t lookups, bool sparse = false,
                 double density = 1.0) {
    add(name, "", {rows, width}, double(lookups) * double(width));
    m_.tensors.back().sparse = sparse;
    m_.tensors.back().sparse_density = density;
    forward_ += double(lookups) * double(width);
    layer l = make(name, layer_kind::embedding);
    l.m = rows;
    l.n = width;
    l.elements = lookups * width;
    m_.layers.push_back(std::move(l));
  }

  // Work that owns no tensor: forward FLOPs counted, backward (2x) attributed to the tensor
  // appended last, i.e. the first tensor that becomes ready after this work during backward.
  void untracked(double forward) {
    forward_ += forward;
    m_.tensors.back().backward_flops += 2.0 * forward;
  }

  // A weightless memory-bound op over `elements` (its FLOPs are not counted: see zoo/models.hpp).
  // `kernels`: how many elementwise kernels it runs as; `input_grad` false: its gradient passes
  // through unchanged (no backward kernel); `upcast`: autocast runs it in fp32 (model.hpp).
  void op(layer_kind kind, std::string_view name, std::int64_t elements, std::int64_t kernels = 1, bool input_grad = true,
          bool upcast = false) {
    layer l = make(name, kind);
    l.elements = elements;
    l.count = kernels;
    l.input_grad = input_grad;
    l.upcast = upcast;
    m_.layers.push_back(std::move(l));
  }
  // op() on an fp32 input under autocast: it runs in fp32 with no casts of its own (model.hpp,
  // `layer::fp32_input`).
  void fp32_op(layer_kind kind, std::string_view name, std::int64_t elements) {
    op(kind, name, elements);
    m_.layers.back().fp32_input = true;
  }
  // linear() whose input is fp32 under autocast (a layer norm's output): autocast casts it to 16
  // bits every step (`layer::fp32_input`).
  void fp32_linear(std::string_view prefix, std::int64_t in, std::int64_t out, std::int64_t rows, bool transposed = false) {
    linear(prefix, in, out, rows, transposed);
    m_.layers.back().fp32_input = true;
  }
  void fp32_tied_linear(std::string_view name, std::int64_t in, std::int64_t out, std::int64_t rows) {
    tied_linear(name, in, out, rows);
    m_.layers.back().fp32_input = true;
  }
  void pool(layer_kind kind, std::string_view name, std::int64_t inputs, std::int64_t outputs) {
    layer l = make(name, kind);
    l.elements = inputs;
    l.outputs = outputs;
    m_.layers.push_back(std::move(l));
  }
  // A weightless batched matmul: `count` products of (m x k)(k x n); FLOPs counted as untracked.
  void matmul(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t count) {
    untracked(2.0 * double(m) * double(n) * double(k) * double(count));
    layer l = make(name, layer_kind::matmul);
    l.m = m;
    l.n = n;
    l.k = k;
    l.count = count;
    m_.layers.push_back(std::move(l));
  }

  // Fused attention (SDPA) over `count` heads x sequences: seq x seq scores of head width `dim`,
  // never in memory. FLOPs as the two products it replaces (QK^T and AV), counted as untracked.
  void attention(std::string_view name, std::int64_t seq, std::int64_t dim, std::int64_t count, bool causal) {
    untracked(2.0 * 2.0 * double(seq) * double(seq) * double(dim) * double(count));
    layer l = make(name, layer_kind::attention);
    l.m = seq;
    l.n = seq;
    l.k = dim;
    l.count = count;
    l.causal = causal;
    m_.layers.push_back(std::move(l));
  }

  [[nodiscard]] std::int64_t batch() const noexcept { return m_.batch_per_device; }

  [[nodiscard]] model_spec finish() && {
    m_.forward_flops = forward_;
    return std::move(m_);
  }

 private:
  void bias_of(std::string_view prefix, std::int64_t out, double elements) {
    add(prefix, ".bias", {out}, elements);
    forward_ += elements;
  }
  void add(std::string_view prefix, std::string_view suffix, std::initializer_list<std::int64_t> shape, double backward) {
    tensor t;
    t.name.reserve(prefix.size() + suffix.size());
    t.name.append(prefix).append(suffix);
    t.shape.assign(shape);
    t.backward_flops = backward;
    m_.tensors.push_back(std::move(t));
  }
  void push_linear(std::string_view name, std::int64_t in, std::int64_t out, std::int64_t rows, bool bias) {
    layer l = make(name, layer_kind::linear);
    l.m = rows;
    l.n = out;
    l.k = in;
    l.bias = bias;
    m_.layers.push_back(std::move(l));
  }
  [[nodiscard]] layer make(std::string_view name, layer_kind kind) const {
    layer l;
    l.name = std::string(name);
    l.kind = kind;
    l.tensor = static_cast<std::int32_t>(m_.tensors.size()) - 1;
    return l;
  }

  model_spec m_;
  double forward_ = 0.0;
};

inline void check_batch(std::int64_t batch) {
  if (batch < 1) throw error("batch_per_device", "must be >= 1, got " + std::to_string(batch));
}

// "layer3." + "12" + "." without going through streams.
inline std::string indexed(std::string_view head, std::size_t i, std::string_view tail) {
  std::string s;
  s.reserve(head.size() + 4 + tail.size());
  s.append(head).append(std::to_string(i)).append(tail);
  return s;
}

}  // namespace autosync::zoo::detail
