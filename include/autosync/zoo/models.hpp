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
// Not counted: activations (ReLU, GELU), pooling, softmax, dropout, residual adds, the loss, and
// the optimizer step. They are elementwise and small next to the products. The first conv's dX
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

namespace detail {

// Appends tensors in forward order and accumulates the forward FLOPs of the model.
class builder {
 public:
  builder(std::string_view name, std::int64_t batch, std::string_view source, std::size_t reserve) {
    m_.name = std::string(name);
    m_.batch_per_device = batch;
    m_.source = std::string(source);
    m_.tensors.reserve(reserve);
  }

  // torch.nn.Conv2d with square kernel K and an Hout x Wout output.
  void conv(std::string_view prefix, std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t hout,
            std::int64_t wout, bool bias) {
    const double f = 2.0 * double(k * k * cin * cout) * double(hout * wout) * double(m_.batch_per_device);
    add(prefix, ".weight", {cout, cin, k, k}, 2.0 * f);
    forward_ += f;
    if (bias) bias_of(prefix, cout, double(cout) * double(hout * wout) * double(m_.batch_per_device));
  }

  // torch.nn.Linear (shape (out, in)) or GPT-2's Conv1D (`transposed`: shape (in, out)),
  // applied to `rows` rows (tokens, or the batch).
  void linear(std::string_view prefix, std::int64_t in, std::int64_t out, double rows, bool transposed = false) {
    const double f = 2.0 * double(in) * double(out) * rows;
    if (transposed)
      add(prefix, ".weight", {in, out}, 2.0 * f);
    else
      add(prefix, ".weight", {out, in}, 2.0 * f);
    forward_ += f;
    bias_of(prefix, out, double(out) * rows);
  }

  // BatchNorm2d / LayerNorm with `width` features over `elements` activation elements.
  void norm(std::string_view prefix, std::int64_t width, double elements) {
    add(prefix, ".weight", {width}, 9.0 * elements);
    add(prefix, ".bias", {width}, elements);
    forward_ += 5.0 * elements;
  }

  // torch.nn.Embedding (rows, width) read `lookups` times per step.
  void embedding(std::string_view name, std::int64_t rows, std::int64_t width, double lookups, bool sparse = false,
                 double density = 1.0) {
    add(name, "", {rows, width}, lookups * double(width));
    m_.tensors.back().sparse = sparse;
    m_.tensors.back().sparse_density = density;
    forward_ += lookups * double(width);
  }

  // Work that owns no tensor: forward counted, backward (2x) attributed to the tensor added
  // last, i.e. the first tensor that becomes ready after this work during backward.
  void untracked(double forward) {
    forward_ += forward;
    m_.tensors.back().backward_flops += 2.0 * forward;
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
  void add(std::string_view prefix, std::string_view suffix, std::initializer_list<std::int64_t> shape,
           double backward) {
    tensor t;
    t.name.reserve(prefix.size() + suffix.size());
    t.name.append(prefix).append(suffix);
    t.shape.assign(shape);
    t.backward_flops = backward;
    m_.tensors.push_back(std::move(t));
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

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// ResNet (torchvision v1.5: the stride sits on the 3x3 conv2 of a bottleneck).
//
//   224 --conv1 7x7/2--> 112 --maxpool/2--> 56 --layer1--> 56 --layer2--> 28 --layer3--> 14
//       --layer4--> 7 --avgpool--> 2048 --fc--> 1000
//
// Bottleneck (planes p, input c, stride s on the first block of layers 2-4):
//   conv1 1x1 c->p, bn1 | conv2 3x3/s p->p, bn2 | conv3 1x1 p->4p, bn3 | [downsample.0 1x1/s c->4p, downsample.1]
inline model_spec resnet(std::string_view name, std::array<int, 4> blocks, std::int64_t batch = 32) {
  detail::check_batch(batch);
  const std::size_t count = 3 + 9 * std::size_t(blocks[0] + blocks[1] + blocks[2] + blocks[3]) + 4 * 3 + 2;
  detail::builder b(name, batch, "torchvision models/resnet.py (Bottleneck v1.5), named_parameters() order; "
                    "FLOPs at 224x224", count);
  const double bt = double(batch);
  b.conv("conv1", 3, 64, 7, 112, 112, false);
  b.norm("bn1", 64, 64.0 * 112 * 112 * bt);
  std::int64_t in = 64, hw = 56;  // after the stem's max pool
  for (std::size_t stage = 0; stage < 4; ++stage) {
    const std::int64_t planes = std::int64_t{64} << stage;
    for (std::size_t blk = 0; blk < std::size_t(blocks[stage]); ++blk) {
      const std::string p = detail::indexed("layer" + std::to_string(stage + 1) + ".", blk, ".");
      const bool first = blk == 0;
      const std::int64_t out_hw = (first && stage > 0) ? hw / 2 : hw;
      b.conv(p + "conv1", in, planes, 1, hw, hw, false);
      b.norm(p + "bn1", planes, double(planes * hw * hw) * bt);
      b.conv(p + "conv2", planes, planes, 3, out_hw, out_hw, false);
      b.norm(p + "bn2", planes, double(planes * out_hw * out_hw) * bt);
      b.conv(p + "conv3", planes, 4 * planes, 1, out_hw, out_hw, false);
      b.norm(p + "bn3", 4 * planes, double(4 * planes * out_hw * out_hw) * bt);
      if (first) {
        b.conv(p + "downsample.0", in, 4 * planes, 1, out_hw, out_hw, false);
        b.norm(p + "downsample.1", 4 * planes, double(4 * planes * out_hw * out_hw) * bt);
      }
      in = 4 * planes;
      hw = out_hw;
    }
  }
  b.linear("fc", 2048, 1000, bt);
  return std::move(b).finish();
}

inline model_spec resnet50(std::int64_t batch = 32) { return resnet("resnet50", {3, 4, 6, 3}, batch); }
inline model_spec resnet101(std::int64_t batch = 32) { return resnet("resnet101", {3, 4, 23, 3}, batch); }
inline model_spec resnet152(std::int64_t batch = 32) { return resnet("resnet152", {3, 8, 36, 3}, batch); }

// ---------------------------------------------------------------------------------------------
// VGG16 (torchvision cfg "D", no batch norm). `features` is a Sequential in which every conv is
// followed by a ReLU and every 'M' is a max pool, so the convs sit at indices
// 0 2 | 5 7 | 10 12 14 | 17 19 21 | 24 26 28; classifier: Linear(0) ReLU Dropout Linear(3)
// ReLU Dropout Linear(6).
inline model_spec vgg16(std::int64_t batch = 32) {
  detail::check_batch(batch);
  detail::builder b("vgg16", batch, "torchvision models/vgg.py cfg D, named_parameters() order; FLOPs at 224x224",
                    32);
  constexpr std::array<int, 18> cfg{64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  std::int64_t in = 3, hw = 224;
  std::size_t index = 0;
  for (int c : cfg) {
    if (c == 0) {  // max pool
      hw /= 2;
      index += 1;
      continue;
    }
    b.conv(detail::indexed("features.", index, ""), in, c, 3, hw, hw, true);
    in = c;
    index += 2;  // conv + ReLU
  }
  const double bt = double(batch);
  b.linear("classifier.0", 512 * 7 * 7, 4096, bt);
  b.linear("classifier.3", 4096, 4096, bt);
  b.linear("classifier.6", 4096, 1000, bt);
  return std::move(b).finish();
}

// ---------------------------------------------------------------------------------------------
// BERT encoder with pooler (HuggingFace BertModel naming; no pretraining heads).
//
//   embeddings: word (30522,H) + position (512,H) + token_type (2,H) -> LayerNorm
//   encoder.layer.i: attention.self.{query,key,value} H->H | QK^T, softmax, AV |
//                    attention.output.dense H->H, attention.output.LayerNorm |
//                    intermediate.dense H->4H | output.dense 4H->H, output.LayerNorm
//   pooler.dense H->H on the [CLS] token (one row per sequence)
inline model_spec bert(std::string_view name, int layers, std::int64_t hidden, std::int64_t batch = 8,
                       std::int64_t seq = 512) {
  detail::check_batch(batch);
  if (seq < 1 || seq > 512) throw error("seq_len", "must be in [1, 512] (BERT has 512 positions), got " + std::to_string(seq));
  detail::builder b(name, batch, "HuggingFace transformers BertModel (with pooler), named_parameters() order; "
                    "FLOPs at batch x sequence " + std::to_string(batch) + "x" + std::to_string(seq), 5 + 16 * std::size_t(layers) + 2);
  constexpr std::int64_t vocab = 30522, positions = 512, types = 2;
  const double tokens = double(batch) * double(seq);
  const std::int64_t h = hidden;
  b.embedding("embeddings.word_embeddings.weight", vocab, h, tokens);
  b.embedding("embeddings.position_embeddings.weight", positions, h, tokens);
  b.embedding("embeddings.token_type_embeddings.weight", types, h, tokens);
  b.norm("embeddings.LayerNorm", h, tokens * double(h));
  for (std::size_t i = 0; i < std::size_t(layers); ++i) {
    const std::string p = detail::indexed("encoder.layer.", i, ".");
    b.linear(p + "attention.self.query", h, h, tokens);
    b.linear(p + "attention.self.key", h, h, tokens);
    b.linear(p + "attention.self.value", h, h, tokens);
    b.untracked(2.0 * (2.0 * double(batch) * double(seq) * double(seq) * double(h)));  // QK^T and AV
    b.linear(p + "attention.output.dense", h, h, tokens);
    b.norm(p + "attention.output.LayerNorm", h, tokens * double(h));
    b.linear(p + "intermediate.dense", h, 4 * h, tokens);
    b.linear(p + "output.dense", 4 * h, h, tokens);
    b.norm(p + "output.LayerNorm", h, tokens * double(h));
  }
  b.linear("pooler.dense", h, h, double(batch));
  return std::move(b).finish();
}

inline model_spec bert_base(std::int64_t batch = 8, std::int64_t seq = 512) { return bert("bert-base", 12, 768, batch, seq); }
inline model_spec bert_large(std::int64_t batch = 8, std::int64_t seq = 512) { return bert("bert-large", 24, 1024, batch, seq); }

// ---------------------------------------------------------------------------------------------
// GPT-2 (HuggingFace GPT2Model naming; the LM head is tied to wte, so it adds no tensor but
// its logits product 2*H*V*tokens is counted, its backward attributed to ln_f.bias).
//
//   wte (50257,H) + wpe (1024,H)
//   h.i: ln_1 | attn.c_attn H->3H | QK^T, softmax, AV | attn.c_proj H->H | ln_2 |
//        mlp.c_fc H->4H | mlp.c_proj 4H->H            (Conv1D weights stored (in, out))
//   ln_f | tied LM head H->V
inline model_spec gpt2_model(std::string_view name, int layers, std::int64_t hidden, std::int64_t batch = 4,
                             std::int64_t seq = 1024) {
  detail::check_batch(batch);
  if (seq < 1 || seq > 1024) throw error("seq_len", "must be in [1, 1024] (GPT-2 has 1024 positions), got " + std::to_string(seq));
  detail::builder b(name, batch, "HuggingFace transformers GPT2Model (LM head tied to wte), named_parameters() order; "
                    "FLOPs at batch x sequence " + std::to_string(batch) + "x" + std::to_string(seq), 2 + 12 * std::size_t(layers) + 2);
  constexpr std::int64_t vocab = 50257, positions = 1024;
  const double tokens = double(batch) * double(seq);
  const std::int64_t h = hidden;
  b.embedding("wte.weight", vocab, h, tokens);
  b.embedding("wpe.weight", positions, h, tokens);
  for (std::size_t i = 0; i < std::size_t(layers); ++i) {
    const std::string p = detail::indexed("h.", i, ".");
    b.norm(p + "ln_1", h, tokens * double(h));
    b.linear(p + "attn.c_attn", h, 3 * h, tokens, true);
    b.untracked(2.0 * (2.0 * double(batch) * double(seq) * double(seq) * double(h)));  // QK^T and AV
    b.linear(p + "attn.c_proj", h, h, tokens, true);
    b.norm(p + "ln_2", h, tokens * double(h));
    b.linear(p + "mlp.c_fc", h, 4 * h, tokens, true);
    b.linear(p + "mlp.c_proj", 4 * h, h, tokens, true);
  }
  b.norm("ln_f", h, tokens * double(h));
  b.untracked(2.0 * double(h) * double(vocab) * tokens);  // tied LM head
  return std::move(b).finish();
}

inline model_spec gpt2(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2", 12, 768, batch, seq); }
inline model_spec gpt2_medium(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2-medium", 24, 1024, batch, seq); }
inline model_spec gpt2_large(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2-large", 36, 1280, batch, seq); }
inline model_spec gpt2_xl(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2-xl", 48, 1600, batch, seq); }

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
  b.embedding("mf_user_embedding", users, mf_dim, bt, true, user_density);
  b.embedding("mf_item_embedding", items, mf_dim, bt, true, item_density);
  b.untracked(double(mf_dim) * bt);  // GMF elementwise product
  b.embedding("mlp_user_embedding", users, layers[0] / 2, bt, true, user_density);
  b.embedding("mlp_item_embedding", items, layers[0] / 2, bt, true, item_density);
  for (std::size_t i = 0; i + 1 < layers.size(); ++i)
    b.linear(detail::indexed("mlp.", i, ""), layers[i], layers[i + 1], bt);
  b.linear("final", mf_dim + layers.back(), 1, bt);
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
// old density x old rows / new rows)). The name becomes "<name>@<scale>" unless scale is 1.
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
