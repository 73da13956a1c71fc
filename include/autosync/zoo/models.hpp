// autosync/zoo/models.hpp — the built-in model zoo: tensor lists of well-known networks.
//
// Every builder returns a `model_spec` whose tensors carry the names, order and shapes of
// PyTorch's `named_parameters()` for the module (forward order; backward makes gradients ready
// in reverse), with the published parameter counts reproduced exactly:
//
//   model        tensors   parameters      naming (example)                     module
//   resnet50        161     25,557,032     layer4.0.conv2.weight  (512,512,3,3)  torchvision resnet.py
//   resnet101       314     44,549,160     layer3.22.bn3.bias                    torchvision resnet.py
//   resnet152       467     60,192,808     layer2.0.downsample.0.weight          torchvision resnet.py
//   vgg16            32    138,357,544     classifier.0.weight    (4096,25088)   torchvision vgg.py
//   bert-base       199    109,482,240     encoder.layer.0.attention.self.query.weight   HF BertModel
//   bert-large      391    335,141,888     pooler.dense.weight    (1024,1024)    HF BertModel
//   gpt2            148    124,439,808     h.0.attn.c_attn.weight (768,2304)     HF GPT2Model (tied head)
//   gpt2-medium     292    354,823,168     wte.weight             (50257,1024)
//   gpt2-large      436    774,030,080     wte.weight             (50257,1280)
//   gpt2-xl         580  1,557,611,200     wte.weight             (50257,1600)
//   ncf              12      6,612,241     mf_user_embedding      (138493,8) sparse
//
// Shapes are stored as PyTorch stores them: Conv2d (out, in, k, k), Linear (out, in),
// Embedding (rows, width), GPT-2's Conv1D transposed (in, out).
//
// Compute estimates (per device per step, FLOPs = 2 x multiply-adds)
// ----------------------------------------------------------------------
//   conv      forward F = 2*K*K*Cin*Cout*Hout*Wout*batch  (spatial sizes of the 224x224 ImageNet net)
//   linear    forward F = 2*in*out*rows                    (rows = tokens, or batch for CNN heads)
//   bias      forward N = out elements of the layer; backward N (the reduction of dY over rows)
//   norm      BatchNorm / LayerNorm over N activation elements: forward 5N (mean, variance,
//             normalize, scale, shift), backward 10N of which the bias gets N (sum of dY) and
//             the weight 9N (dgamma + dX)
//   embedding forward = lookups*width (gather/sum), backward = lookups*width (scatter-add)
//   weighted layer: backward = 2F (dX + dW), attributed to the layer's weight tensor.
//
// Work that owns no tensor (attention's QK^T and AV products, GPT-2's tied LM head, NCF's
// GMF product) is counted in `forward_flops`, and its backward (2x) is attributed to the
// tensor added just before it in forward order, which is the first tensor that becomes ready
// after that work in backward order:
//
//   forward:   ... value.weight value.bias | QK^T, softmax, AV | output.dense.weight ...
//   backward:  ... output.dense.weight  <- | dAV, dQK^T        | -> value.bias value.weight ...
//                                            (attributed to value.bias)
//
// Not counted as FLOPs: activations (ReLU, GELU), pooling, softmax, dropout, residual adds, the
// loss, and the optimizer step (PyTorch's FLOP counter skips them too). They are not free: they
// are memory-bound, and every model also lists its `layers` (model.hpp) including these ops, so
// that cost/compute.hpp can time them by the bytes they move (zoo/models/cnn.hpp,
// zoo/models/transformers.hpp say which ops each network runs). The first conv's dX
// is counted although frameworks skip it (an over-estimate of ~1% for ResNet-50). Hence the
// model's total backward is 2x its forward up to the bias/embedding terms (ratio 1): within
// 0.05% for the CNNs and transformers, 1.3% for NCF whose tiny MLP leaves the embedding terms
// visible (tests/unit/zoo_models.cpp checks both bounds).
//
// Defaults: CNNs batch 32 at 224x224; BERT batch 8 x sequence 512 (a common fine-tuning /
// phase-2 pretraining shape that fits a 16 GB V100); GPT-2 batch 4 x sequence 1024 (its full
// context); NCF batch 65536 samples (positive and negative pairs together).
//
// NCF (neural collaborative filtering, NeuMF; the TF official recommendation model used by
// AutoSync/AutoDist) on MovieLens-20M, mf_dim 8, layers 64-32-16-8:
//
//   user id -> mf_user_embedding  (138493, 8) -+
//   item id -> mf_item_embedding  ( 26744, 8) -+-> GMF: elementwise product (8) ------+
//                                                                                      +-> concat(16)
//   user id -> mlp_user_embedding (138493,32) -+                                       |   -> final 16->1
//   item id -> mlp_item_embedding ( 26744,32) -+-> concat(64) -> mlp.0 64->32, relu    |
//                                                 -> mlp.1 32->16, relu                |
//                                                 -> mlp.2 16->8, relu  ---------------+
//
// Per user (item) the two tables hold mf_dim + layers[0]/2 = 8 + 32 = 40 values, the width the
// reference model uses. The four embeddings are sparse gradients. Their names are the embedding variables' names
// (no ".weight" suffix); the dense layers use PyTorch Linear naming (`mlp.0.weight`,
// `final.bias`). sparse_density assumption: one step of `batch` samples touches at most
// `batch` distinct rows of each table, so density = min(1, batch / rows) (an upper bound:
// popular ids repeat, so fewer rows are touched in practice). With batch 65536: users
// 65536/138493 = 0.473, items 1.0 (every item row may be touched).
//
// `make_model(name)` builds by name; `make_model_scaled(name, s)` keeps the tensor list and
// order but scales every tensor's dim-0 size by s (at least 1) to fit a small testbed.
// Building the largest model (gpt2-xl, 580 tensors) takes a few tens of microseconds: plain
// vectors and strings, no Hana or Boost.Graph here.
#pragma once

#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/zoo/models/cnn.hpp>
#include <autosync/zoo/models/transformers.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autosync::zoo {

// ---------------------------------------------------------------------------------------------
// NCF / NeuMF on MovieLens-20M (see the diagram at the top of this file).
inline constexpr std::int64_t ncf_users_ml20m = 138493;
inline constexpr std::int64_t ncf_items_ml20m = 26744;

inline model_spec ncf(std::int64_t batch = 65536, std::int64_t users = ncf_users_ml20m,
                      std::int64_t items = ncf_items_ml20m) {
  detail::check_batch(batch);
  if (users < 1) throw error("users", "must be >= 1, got " + std::to_string(users));
  if (items < 1) throw error("items", "must be >= 1, got " + std::to_string(items));
  constexpr std::int64_t mf_dim = 8;
  constexpr std::array<std::int64_t, 4> layers{64, 32, 16, 8};
  detail::builder b("ncf", batch, "TF official recommendation NeuMF (as benchmarked by AutoSync/AutoDist), MovieLens-20M "
                    "138493 users x 26744 items, mf_dim 8, layers 64-32-16-8; sparse_density = min(1, batch/rows)", 12);
  const double bt = double(batch);
  const double user_density = std::min(1.0, bt / double(users));
  const double item_density = std::min(1.0, bt / double(items));
  b.embedding("mf_user_embedding", users, mf_dim, batch, true, user_density);
  b.embedding("mf_item_embedding", items, mf_dim, batch, true, item_density);
  b.untracked(double(mf_dim) * bt);  // GMF elementwise product
  b.op(layer_kind::scale, "gmf_product", mf_dim * batch);
  b.embedding("mlp_user_embedding", users, layers[0] / 2, batch, true, user_density);
  b.embedding("mlp_item_embedding", items, layers[0] / 2, batch, true, item_density);
  b.op(layer_kind::copy, "mlp_concat", layers[0] * batch);
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) {
    b.linear(detail::indexed("mlp.", i, ""), layers[i], layers[i + 1], batch);
    b.op(layer_kind::activation, detail::indexed("mlp.", i, ".relu"), layers[i + 1] * batch);
  }
  b.op(layer_kind::copy, "neumf_concat", (mf_dim + layers.back()) * batch);
  b.linear("final", mf_dim + layers.back(), 1, batch);
  b.op(layer_kind::loss, "loss", batch);  // sigmoid cross entropy over one logit per sample
  return std::move(b).finish();
}

// ---------------------------------------------------------------------------------------------
// By name.

inline constexpr std::array<std::string_view, 11> model_name_list{
    "resnet50", "resnet101", "resnet152", "vgg16", "bert-base", "bert-large",
    "gpt2",     "gpt2-medium", "gpt2-large", "gpt2-xl", "ncf"};

[[nodiscard]] constexpr std::span<const std::string_view> model_names() noexcept { return model_name_list; }

// Builds a zoo model with its default batch. Throws autosync::error("model", ...) listing the
// valid names when `name` is not one of them.
[[nodiscard]] inline model_spec make_model(std::string_view name) {
  using fn = model_spec (*)();
  static constexpr std::array<fn, model_name_list.size()> builders{
      [] { return resnet50(); },   [] { return resnet101(); },   [] { return resnet152(); }, [] { return vgg16(); },
      [] { return bert_base(); },  [] { return bert_large(); },  [] { return gpt2(); },      [] { return gpt2_medium(); },
      [] { return gpt2_large(); }, [] { return gpt2_xl(); },     [] { return ncf(); }};
  for (std::size_t i = 0; i < model_name_list.size(); ++i)
    if (model_name_list[i] == name) return builders[i]();
  std::string valid;
  for (auto n : model_name_list) {
    if (!valid.empty()) valid += ", ";
    valid += n;
  }
  throw error("model", "unknown model '" + std::string(name) + "' (valid: " + valid + ")");
}

// `model` with every tensor's dim-0 size multiplied by `scale` (rounded, at least 1): same
// tensors, same order, fewer bytes, for fitting a model onto a small testbed. A tensor's
// backward FLOPs scale with its dim 0, the forward FLOPs by the same overall ratio as the
// backward total; a sparse tensor keeps the number of rows it touches (density = min(1,
// old density x old rows / new rows)); its layers and measured profile are dropped. The name becomes "<name>@<scale>" unless scale is 1.
[[nodiscard]] inline model_spec scale_model(model_spec model, double scale) {
  if (!(scale > 0.0) || !std::isfinite(scale)) throw error("scale", "must be a finite number > 0");
  if (scale == 1.0) return model;
  const double old_backward = model.backward_flops();
  for (std::size_t i = 0; i < model.tensors.size(); ++i) {
    auto& t = model.tensors[i];
    if (t.shape.empty()) throw error("tensors[" + std::to_string(i) + "].shape", "must have at least one dimension");
    const std::int64_t old_rows = t.shape[0];
    const double scaled = std::round(double(old_rows) * scale);
    if (!(scaled < 9.0e15)) throw error("scale", "scaled dim 0 of tensor '" + t.name + "' is too large");
    const std::int64_t rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(scaled));
    const double ratio = double(rows) / double(old_rows);
    t.shape[0] = rows;
    t.backward_flops *= ratio;
    if (t.sparse) t.sparse_density = std::min(1.0, t.sparse_density / ratio);
  }
  if (old_backward > 0.0) model.forward_flops *= model.backward_flops() / old_backward;
  // The layers and a measured profile describe the unscaled network: the scaled model's compute
  // is its FLOPs alone (cost/compute.hpp, source 3).
  model.layers.clear();
  model.measured_forward = model.measured_backward = 0.0;
  model.measured_on.clear();
  for (auto& t : model.tensors) t.ready_time = -1.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "@%g", scale);
  model.name += buf;
  return model;
}

[[nodiscard]] inline model_spec make_model_scaled(std::string_view name, double scale) {
  if (!(scale > 0.0) || !std::isfinite(scale)) throw error("scale", "must be a finite number > 0");
  return scale_model(make_model(name), scale);
}

}  // namespace autosync::zoo
