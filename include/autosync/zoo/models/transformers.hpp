// autosync/zoo/models/transformers.hpp — BERT and GPT-2 (HuggingFace), tensors and layers.
//
// Layers follow the HuggingFace modules in training mode (dropout on). Attention is the reference
// implementation (attn_implementation="eager"): the scores are a (batch x heads) x seq x seq
// tensor that is scaled, masked, soft-maxed and dropped out in memory. With `sdpa` true it is
// torch.nn.functional.scaled_dot_product_attention instead (attn_implementation="sdpa": one fused
// FlashAttention or memory-efficient kernel; the scores never reach memory). Eager is the zoo's
// default, what tests/bench/compute_measure.py measures (README, "Compute": SDPA is transformers'
// own default, and the anchor rows' GPT-2 times match it). Per layer, T tokens, hidden H, A = H / 64
// heads, E = batch x A x seq^2 score elements, eager:
//
//   BERT  query, key, value (T x H -> H) | q, k^T contiguous (copy 2 T H) | QK^T (A batch, seq x seq
//         x 64) | / sqrt(64) (E) | + mask (E, gradient passes through) | softmax (E) | dropout (E;
//         under autocast in fp32: softmax, on autocast's fp32 list, returns fp32, and BERT drops
//         the probabilities out before AV casts them; the embeddings' dropout alike, after the
//         fp32 LayerNorm) |
//         v contiguous (T H) | AV | merge heads (copy T H) | attention.output.dense | dropout |
//         + residual | LayerNorm | intermediate.dense (H -> 4H) | GELU (erf, one kernel, 4 T H) |
//         output.dense | dropout | + residual | LayerNorm
//   GPT-2 ln_1 | c_attn (H -> 3H) | q, k^T contiguous | QK^T | / sqrt(64) | causal where (E) |
//         softmax | dropout (16-bit: GPT-2 casts the probabilities to V's dtype first) | v contiguous |
//         AV | merge heads | c_proj | dropout | + residual |
//         ln_2 | c_fc (H -> 4H) | gelu_new (4 T H: the tanh formula written in Python, 8
//         elementwise kernels; under autocast they run in fp32, since torch.pow is on autocast's
//         fp32 list and its fp32 result promotes the rest) | mlp.c_proj | dropout | + residual |
//         ... | ln_f | LM head (H -> 50,257: the vocabulary is odd, so its three products run on
//         cuBLAS's misaligned kernels under tf32/bf16/fp16, cost/compute.hpp)
//
// Under autocast (bf16 / fp16) both carry an fp32 residual stream: LayerNorm is on autocast's fp32
// list and returns fp32, and the embeddings' sum is fp32, so each "+ residual" adds a 16-bit
// branch to fp32 and writes fp32 (its gradients meet in fp32), and every linear fed by a
// LayerNorm or the embeddings (BERT's query, key, value, intermediate.dense and pooler; GPT-2's
// c_attn, c_fc and LM head) casts that fp32 input to 16 bits first, and its gradient back
// (`layer::fp32_input`). The H200 profile by op (tests/data/compute/h200-by-op.jsonl) shows both:
// BERT-large's 48 residual adds are fp32 kernels, and most of its forward's 410 casts to bf16
// are the weights' and these inputs'.
//
// SDPA replaces everything from "q, k^T contiguous" to "AV" by one fused attention layer (the
// head split is a view; merge heads is still a copy).
#pragma once

#include <autosync/zoo/models/builder.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace autosync::zoo {

namespace detail {

// The attention core of one layer, from Q, K, V (rows x H each, already projected) to the merged
// context (rows x H). `causal`: GPT-2's torch.where mask (a backward kernel) instead of BERT's
// additive mask (its gradient passes through). `fp32_dropout`: the probabilities are dropped out
// as softmax returned them, fp32 under autocast (BERT); GPT-2 casts them to V's dtype first.
inline void attention_core(builder& b, const std::string& p, std::int64_t batch, std::int64_t seq, std::int64_t h, bool causal,
                           bool eager, bool fp32_dropout) {
  const std::int64_t heads = h / 64, tokens = batch * seq, scores = batch * heads * seq * seq;
  if (!eager) {
    b.attention(p + "sdpa", seq, 64, batch * heads, causal);
    b.op(layer_kind::copy, p + "merge_heads", tokens * h);
    return;
  }
  b.op(layer_kind::copy, p + "qk_contiguous", tokens * h, 2);
  b.matmul(p + "scores", seq, seq, 64, batch * heads);
  b.op(layer_kind::scale, p + "scale", scores);
  b.op(layer_kind::scale, p + (causal ? "causal_mask" : "mask"), scores, 1, causal);
  b.op(layer_kind::softmax, p + "softmax", scores);
  if (fp32_dropout) b.fp32_op(layer_kind::dropout, p + "attn_dropout", scores);
  else b.op(layer_kind::dropout, p + "attn_dropout", scores);
  b.op(layer_kind::copy, p + "v_contiguous", tokens * h);
  b.matmul(p + "context", seq, 64, seq, batch * heads);
  b.op(layer_kind::copy, p + "merge_heads", tokens * h);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// BERT encoder with pooler (HuggingFace BertModel naming; no pretraining heads, so no loss: the
// user's head and loss come after the pooler).
//
//   embeddings: word (30522,H) + position (512,H) + token_type (2,H) -> LayerNorm -> dropout
//   encoder.layer.i: attention.self.{query,key,value} H->H | QK^T, softmax, AV |
//                    attention.output.dense H->H, attention.output.LayerNorm |
//                    intermediate.dense H->4H | output.dense 4H->H, output.LayerNorm
//   pooler.dense H->H on the [CLS] token (one row per sequence), tanh
inline model_spec bert(std::string_view name, int layers, std::int64_t hidden, std::int64_t batch = 8,
                       std::int64_t seq = 512, bool sdpa = false) {
  detail::check_batch(batch);
  if (seq < 1 || seq > 512) throw error("seq_len", "must be in [1, 512] (BERT has 512 positions), got " + std::to_string(seq));
  detail::builder b(name, batch, std::string("HuggingFace transformers BertModel (with pooler; ") + (sdpa ? "SDPA" : "eager") + " attention, training mode), "
                    "named_parameters() order; FLOPs at batch x sequence " + std::to_string(batch) + "x" + std::to_string(seq),
                    5 + 16 * std::size_t(layers) + 2);
  constexpr std::int64_t vocab = 30522, positions = 512, types = 2;
  const std::int64_t tokens = batch * seq;
  const std::int64_t h = hidden;
  b.embedding("embeddings.word_embeddings.weight", vocab, h, tokens);
  b.embedding("embeddings.position_embeddings.weight", positions, h, tokens);
  b.embedding("embeddings.token_type_embeddings.weight", types, h, tokens);
  b.op(layer_kind::add, "embeddings.sum", tokens * h, 2);
  b.norm("embeddings.LayerNorm", h, tokens * h, false);
  b.fp32_op(layer_kind::dropout, "embeddings.dropout", tokens * h);  // after the fp32 LayerNorm
  for (std::size_t i = 0; i < std::size_t(layers); ++i) {
    const std::string p = detail::indexed("encoder.layer.", i, ".");
    b.fp32_linear(p + "attention.self.query", h, h, tokens);
    b.fp32_linear(p + "attention.self.key", h, h, tokens);
    b.fp32_linear(p + "attention.self.value", h, h, tokens);
    detail::attention_core(b, p + "attention.self.", batch, seq, h, false, !sdpa, true);
    b.linear(p + "attention.output.dense", h, h, tokens);
    b.op(layer_kind::dropout, p + "attention.output.dropout", tokens * h);
    b.fp32_op(layer_kind::add, p + "attention.output.residual", tokens * h);
    b.norm(p + "attention.output.LayerNorm", h, tokens * h, false);
    b.fp32_linear(p + "intermediate.dense", h, 4 * h, tokens);
    b.op(layer_kind::activation, p + "intermediate.gelu", tokens * 4 * h);
    b.linear(p + "output.dense", 4 * h, h, tokens);
    b.op(layer_kind::dropout, p + "output.dropout", tokens * h);
    b.fp32_op(layer_kind::add, p + "output.residual", tokens * h);
    b.norm(p + "output.LayerNorm", h, tokens * h, false);
  }
  b.fp32_linear("pooler.dense", h, h, batch);
  b.op(layer_kind::activation, "pooler.tanh", batch * h);
  return std::move(b).finish();
}

inline model_spec bert_base(std::int64_t batch = 8, std::int64_t seq = 512) { return bert("bert-base", 12, 768, batch, seq); }
inline model_spec bert_large(std::int64_t batch = 8, std::int64_t seq = 512) { return bert("bert-large", 24, 1024, batch, seq); }

// ---------------------------------------------------------------------------------------------
// GPT-2 (HuggingFace GPT2LMHeadModel naming without the "transformer." prefix; the LM head is
// tied to wte, so it adds no tensor but its logits product 2*H*V*tokens is counted, its backward
// attributed to ln_f.bias; the loss is cross entropy over the logits).
//
//   wte (50257,H) + wpe (1024,H) -> dropout
//   h.i: ln_1 | attn.c_attn H->3H | QK^T, softmax, AV | attn.c_proj H->H | ln_2 |
//        mlp.c_fc H->4H | mlp.c_proj 4H->H            (Conv1D weights stored (in, out))
//   ln_f | tied LM head H->V | cross entropy
inline model_spec gpt2_model(std::string_view name, int layers, std::int64_t hidden, std::int64_t batch = 4,
                             std::int64_t seq = 1024, bool sdpa = false) {
  detail::check_batch(batch);
  if (seq < 1 || seq > 1024) throw error("seq_len", "must be in [1, 1024] (GPT-2 has 1024 positions), got " + std::to_string(seq));
  detail::builder b(name, batch, std::string("HuggingFace transformers GPT2LMHeadModel (LM head tied to wte; ") + (sdpa ? "SDPA" : "eager") +
                    " attention, training mode), named_parameters() order; FLOPs at batch x sequence " + std::to_string(batch) + "x" +
                    std::to_string(seq), 2 + 12 * std::size_t(layers) + 2);
  constexpr std::int64_t vocab = 50257, positions = 1024;
  const std::int64_t tokens = batch * seq;
  const std::int64_t h = hidden;
  b.embedding("wte.weight", vocab, h, tokens);
  b.embedding("wpe.weight", positions, h, tokens);
  b.op(layer_kind::add, "embeddings.sum", tokens * h);
  b.fp32_op(layer_kind::dropout, "drop", tokens * h);  // the fp32 tables' sum
  for (std::size_t i = 0; i < std::size_t(layers); ++i) {
    const std::string p = detail::indexed("h.", i, ".");
    b.norm(p + "ln_1", h, tokens * h, false);
    b.fp32_linear(p + "attn.c_attn", h, 3 * h, tokens, true);
    detail::attention_core(b, p + "attn.", batch, seq, h, true, !sdpa, false);
    b.linear(p + "attn.c_proj", h, h, tokens, true);
    b.op(layer_kind::dropout, p + "attn.resid_dropout", tokens * h);
    b.fp32_op(layer_kind::add, p + "attn.residual", tokens * h);
    b.norm(p + "ln_2", h, tokens * h, false);
    b.fp32_linear(p + "mlp.c_fc", h, 4 * h, tokens, true);
    b.op(layer_kind::activation, p + "mlp.act", tokens * 4 * h, 8, true, true);  // pow: fp32 under autocast
    b.linear(p + "mlp.c_proj", 4 * h, h, tokens, true);
    b.op(layer_kind::dropout, p + "mlp.dropout", tokens * h);
    b.fp32_op(layer_kind::add, p + "mlp.residual", tokens * h);
  }
  b.norm("ln_f", h, tokens * h, false);
  b.fp32_tied_linear("lm_head", h, vocab, tokens);
  b.op(layer_kind::loss, "loss", tokens * vocab);
  return std::move(b).finish();
}

inline model_spec gpt2(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2", 12, 768, batch, seq); }
inline model_spec gpt2_medium(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2-medium", 24, 1024, batch, seq); }
inline model_spec gpt2_large(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2-large", 36, 1280, batch, seq); }
inline model_spec gpt2_xl(std::int64_t batch = 4, std::int64_t seq = 1024) { return gpt2_model("gpt2-xl", 48, 1600, batch, seq); }

}  // namespace autosync::zoo
