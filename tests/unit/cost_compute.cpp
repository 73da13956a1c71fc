// The compute model (cost/compute.hpp) against hand-computed rooflines, and the zoo's layers
// (zoo/models/*.hpp) against the zoo's tensors and FLOPs.
#include "../common/tiny_specs.hpp"

#include <autosync/cost/compute.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using namespace autosync;
using cost::math_unit;

using testing::round_device;

// A convolution's implicit GEMM (m x n x k) over `elements` input elements.
layer conv(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t elements) {
  layer l;
  l.kind = layer_kind::conv;
  l.m = m;
  l.n = n;
  l.k = k;
  l.elements = elements;
  return l;
}

layer op(layer_kind k, std::int64_t elements, std::int64_t count = 1) {
  layer l;
  l.kind = k;
  l.elements = elements;
  l.count = count;
  return l;
}

}  // namespace

TEST_CASE("compute: which unit runs a product at each precision, and the fallbacks of a missing unit") {
  using cost::unit_of;
  CHECK(unit_of(precision::pytorch_fp32, layer_kind::conv) == math_unit::tf32);
  CHECK(unit_of(precision::pytorch_fp32, layer_kind::linear) == math_unit::fp32);
  CHECK(unit_of(precision::pytorch_fp32, layer_kind::matmul) == math_unit::fp32);
  CHECK(unit_of(precision::fp32, layer_kind::conv) == math_unit::fp32);
  CHECK(unit_of(precision::tf32, layer_kind::linear) == math_unit::tf32);
  CHECK(unit_of(precision::bf16, layer_kind::conv) == math_unit::bf16);
  CHECK(unit_of(precision::fp16, layer_kind::matmul) == math_unit::fp16);
  const auto d = round_device();
  CHECK(cost::peak(d, math_unit::tf32) == 200e12);
  CHECK(cost::peak(d, math_unit::fp16) == 100e12);  // no fp16 unit: the fp32 rate
  CHECK(cost::peak(zoo::hw::v100_sxm2, math_unit::tf32) == zoo::hw::v100_sxm2.fp32);
  CHECK(cost::peak(zoo::hw::v100_sxm2, math_unit::bf16) == zoo::hw::v100_sxm2.fp32);
  CHECK(cost::peak(zoo::hw::v100_sxm2, math_unit::fp16) == 125e12);
  // activation bytes: autocast keeps norms, softmax and the loss in fp32
  CHECK(cost::activation_bytes(precision::pytorch_fp32, layer_kind::activation) == 4.0);
  CHECK(cost::activation_bytes(precision::bf16, layer_kind::activation) == 2.0);
  CHECK(cost::activation_bytes(precision::bf16, layer_kind::layer_norm) == 4.0);
  CHECK(cost::activation_bytes(precision::fp16, layer_kind::softmax) == 4.0);
  for (precision p : all_precisions) CHECK(parse_precision(name_of(p)) == p);
  CHECK_FALSE(parse_precision("fp64").has_value());
  for (layer_kind k : all_layer_kinds) CHECK(parse_layer_kind(name_of(k)) == k);
}

TEST_CASE("compute: the roofline of a GEMM — exact waves, tile and wave quantization, split-K, the memory bound") {
  const auto d = round_device();
  const cost::roofline r{&d};
  // 1280^3 fp32: 10 x 10 tiles = 10 waves of 10 SMs, 2 x 128 x 128 x 1280 FLOPs a tile at 5 TFLOP/s
  const double per_tile = 2.0 * 128 * 128 * 1280 / 5e12, K = 1e-6;  // K: the kernel floor, added
  CHECK(r.gemm(1280, 1280, 1280, 1, math_unit::fp32, 4, 4) == doctest::Approx(K + 10 * per_tile).epsilon(1e-12));
  CHECK(10 * per_tile == doctest::Approx(2.0 * 1280.0 * 1280 * 1280 / 50e12).epsilon(1e-12));  // = 2mnk / rate
  // one more row: 11 x 10 tiles, 11 waves
  CHECK(r.gemm(1281, 1280, 1280, 1, math_unit::fp32, 4, 4) == doctest::Approx(K + 11 * per_tile).epsilon(1e-12));
  // a 64-wide output gets 64-wide tiles: 10 x 1 tiles of 128 x 64, one wave
  CHECK(r.gemm(1280, 64, 1280, 1, math_unit::fp32, 4, 4) ==
        doctest::Approx(K + std::max(2.0 * 128 * 64 * 1280 / 5e12, (1280.0 * 1280 + 1280.0 * 64 + 1280.0 * 64) * 4 / 1e12)).epsilon(1e-12));
  // bf16 runs 4x faster than fp32 here
  CHECK(r.gemm(1280, 1280, 1280, 1, math_unit::bf16, 2, 2) == doctest::Approx(K + 10 * per_tile / 4).epsilon(1e-12));
  // 128 x 128 x 12800: one tile, split into min(10 SMs / 1, 12800 / 128) = 10 slices of k 1280 in
  // one wave (8.39 us of math), but the operands move 13,172,736 bytes (13.17 us at 1 TB/s); the
  // reduction, a second kernel, reads 10 fp32 partials and writes the result: 11 x 128 x 128 x 4
  // bytes = 0.72 us.
  const double bytes = (128.0 * 12800 * 2) * 4 + 128.0 * 128 * 4;
  CHECK(r.gemm(128, 128, 12800, 1, math_unit::fp32, 4, 4) ==
        doctest::Approx(K + bytes / 1e12 + K + 11.0 * 128 * 128 * 4 / 1e12).epsilon(1e-12));
  // a tiny product is about one kernel floor
  CHECK(r.gemm(8, 8, 8, 1, math_unit::fp32, 4, 4) == doctest::Approx(K).epsilon(1e-3));
  // memory-bound kernels: the floor + bytes / (bandwidth x efficiency)
  CHECK(r.memory(3e6) == doctest::Approx(K + 3e-6));
  CHECK(r.memory(1.0) == doctest::Approx(K + 1e-12));
}

TEST_CASE("compute: memory-bound layers move the bytes the table at the top of compute.hpp states") {
  const auto d = round_device();
  auto t = [&](const layer& l, precision p) { return cost::time_of(l, p, d); };
  const std::int64_t E = 1'000'000;
  const double K = 1e-6;  // every kernel pays the floor; 1 MB moves in 1 us
  // ReLU: read E, write E | read dy and x, write dx — 4-byte elements at fp32, 2 under autocast
  CHECK(t(op(layer_kind::activation, E), precision::pytorch_fp32).forward == doctest::Approx(K + 8e-6));
  CHECK(t(op(layer_kind::activation, E), precision::pytorch_fp32).backward == doctest::Approx(K + 12e-6));
  CHECK(t(op(layer_kind::activation, E), precision::bf16).forward == doctest::Approx(K + 4e-6));
  CHECK(t(op(layer_kind::activation, E, 8), precision::bf16).backward == doctest::Approx(8 * (K + 6e-6)));  // 8 kernels
  // dropout: the 1-byte mask written in forward, read in backward
  CHECK(t(op(layer_kind::dropout, E), precision::pytorch_fp32).forward == doctest::Approx(K + 9e-6));
  CHECK(t(op(layer_kind::dropout, E), precision::pytorch_fp32).backward == doctest::Approx(K + 9e-6));
  // a residual add reads two inputs; a pass-through mask has no backward kernel
  CHECK(t(op(layer_kind::add, E), precision::pytorch_fp32).forward == doctest::Approx(K + 12e-6));
  layer mask = op(layer_kind::scale, E);
  mask.input_grad = false;
  CHECK(t(mask, precision::pytorch_fp32).backward == 0.0);
  // batch norm: statistics (r E) + normalize (r E, w E) | reduce (r 2E) + dx (r 2E, w E)
  CHECK(t(op(layer_kind::batch_norm, E), precision::pytorch_fp32).forward == doctest::Approx(2 * K + 12e-6));
  CHECK(t(op(layer_kind::batch_norm, E), precision::pytorch_fp32).backward == doctest::Approx(2 * K + 20e-6));
  CHECK(t(op(layer_kind::batch_norm, E), precision::bf16).backward == doctest::Approx(2 * K + 10e-6));
  // layer norm stays fp32 under autocast: r E w E | (r 2E w E) + (r 2E)
  CHECK(t(op(layer_kind::layer_norm, E), precision::bf16).forward == doctest::Approx(K + 8e-6));
  CHECK(t(op(layer_kind::layer_norm, E), precision::bf16).backward == doctest::Approx(2 * K + 20e-6));
  {  // with its rows and width, a layer norm's kernels are latency-bound per wave of 16 rows an SM
    layer ln = op(layer_kind::layer_norm, 100'000 * 96);
    ln.m = 100'000;
    ln.n = 96;
    const double waves = 625;  // 100,000 rows / (16 x 10 SMs)
    const double fwd = waves * (cost::layer_norm_forward_wave + 96 * cost::layer_norm_forward_wave_element);
    const double dx = waves * (cost::layer_norm_dgrad_wave + 96 * cost::layer_norm_dgrad_wave_element);
    const double gamma = 100'000 * (cost::layer_norm_gamma_row + 96 * cost::layer_norm_gamma_element) / 10;
    CHECK(fwd > 9.6e6 * 8 / 1e12);  // far above its bytes, the same in fp32 and bf16 (fp32 kernels)
    for (auto p : {precision::pytorch_fp32, precision::bf16}) {
      CHECK(t(ln, p).forward == doctest::Approx(K + fwd));
      CHECK(t(ln, p).backward == doctest::Approx(K + dx + K + gamma));
    }
    auto wide = d;  // with many SMs the bytes decide again
    wide.multiprocessors = 1'000'000;
    CHECK(cost::time_of(ln, precision::pytorch_fp32, wide).forward == doctest::Approx(K + 9.6e6 * 8 / 1e12));
    wide.multiprocessors = 0;  // no SM count: bytes alone, as without rows and width
    CHECK(cost::time_of(ln, precision::pytorch_fp32, wide).backward ==
          cost::time_of(op(layer_kind::layer_norm, 100'000 * 96), precision::pytorch_fp32, wide).backward);
  }
  // softmax: r E w E | r 2E w E; autocast adds a cast up and a cast down each way (6 bytes each)
  CHECK(t(op(layer_kind::softmax, E), precision::pytorch_fp32).forward == doctest::Approx(K + 8e-6));
  CHECK(t(op(layer_kind::softmax, E), precision::bf16).forward == doctest::Approx(3 * K + 8e-6 + 12e-6));
  CHECK(t(op(layer_kind::softmax, E), precision::bf16).backward == doctest::Approx(3 * K + 12e-6 + 12e-6));
  // max pool 4:1 with 8-byte indices. channels_last: bandwidth only; backward zeroes dX first
  layer pool = op(layer_kind::max_pool, 4 * E);
  pool.outputs = E;
  pool.channels_last = true;
  CHECK(t(pool, precision::pytorch_fp32).forward == doctest::Approx(K + (16e6 + 12e6) / 1e12));
  CHECK(t(pool, precision::pytorch_fp32).backward == doctest::Approx(K + 16e6 / 1e12 + K + (12e6 + 16e6) / 1e12));
  // NCHW: each kernel also walks the 4E input elements at the SM-bound rate, 10 SMs here: far
  // slower than its bytes, the same in fp32 and bf16
  pool.channels_last = false;
  const double fwd_sms = 4e6 * cost::max_pool_forward_sm_seconds / 10, bwd_sms = 4e6 * cost::max_pool_backward_sm_seconds / 10;
  CHECK(fwd_sms > 28e-6);
  CHECK(t(pool, precision::pytorch_fp32).forward == doctest::Approx(K + fwd_sms));
  CHECK(t(pool, precision::bf16).forward == doctest::Approx(K + fwd_sms));
  CHECK(t(pool, precision::pytorch_fp32).backward == doctest::Approx(K + 16e6 / 1e12 + K + bwd_sms));
  CHECK(t(pool, precision::bf16).backward == doctest::Approx(K + 8e6 / 1e12 + K + bwd_sms));
  {  // with many SMs the bytes decide again; a device without an SM count has bytes only
    auto wide = d;
    wide.multiprocessors = 100000;
    CHECK(cost::time_of(pool, precision::pytorch_fp32, wide).forward == doctest::Approx(K + (16e6 + 12e6) / 1e12));
    wide.multiprocessors = 0;
    CHECK(cost::time_of(pool, precision::pytorch_fp32, wide).backward == doctest::Approx(K + 16e6 / 1e12 + K + (12e6 + 16e6) / 1e12));
  }
  // the loss: log-softmax + NLL (a floor) | zeros + scatter (a floor) + log-softmax backward
  CHECK(t(op(layer_kind::loss, E), precision::pytorch_fp32).forward == doctest::Approx(2 * K + 8e-6));
  CHECK(t(op(layer_kind::loss, E), precision::pytorch_fp32).backward == doctest::Approx(3 * K + 4e-6 + 12e-6));
  // a sparse embedding's gradient is one copy of the rows of dY and their indices
  layer emb = op(layer_kind::embedding, 1000 * 8);
  emb.m = 50;
  emb.n = 8;
  CHECK(cost::time_of(emb, precision::pytorch_fp32, d, true).backward == doctest::Approx(K + (2.0 * 8000 * 4 + 2.0 * 8 * 1000) / 1e12));
  CHECK(cost::time_of(emb, precision::pytorch_fp32, d, false).backward ==
        doctest::Approx(7 * K + (2.0 * 8000 * 4 + 8.0 * 4 * 1000) / 1e12 + 50.0 * 8 * 4 / 1e12));
}

TEST_CASE("compute: a depthwise convolution runs on PyTorch's own kernels, by the SM, whatever the precision") {
  const auto d = round_device();  // 10 SMs, 1 us a kernel, 1 TB/s
  const double K = 1e-6;
  // 3 x 3 depthwise over 64 channels, batch 8 at 56 x 56, stride 1: m = 8 x 56 x 56 output positions
  layer dw;
  dw.kind = layer_kind::conv;
  dw.m = 8 * 56 * 56;
  dw.n = 64;
  dw.k = 9;
  dw.groups = 64;
  dw.elements = 8 * 64 * 56 * 56;
  const double out = 25088.0 * 64, x = 8.0 * 64 * 56 * 56, w = 64.0 * 9;
  // forward: per output element 0.81 ns + 9 taps x 0.051 ns of SM time, over 10 SMs (far above the bytes)
  const double fwd = out * (cost::depthwise_forward_output + 9 * cost::depthwise_forward_tap) / 10;
  CHECK(fwd > (x + out + w) * 4 / 1e12);
  // input gradient: 2.3 ns per input element; weight gradient: 64 x 9 = 576 blocks, 8 an SM: 8 waves
  // of ceil(25088 / 256) = 98 steps of 0.39 us
  const double dgrad = x * cost::depthwise_dgrad_input / 10, wgrad = 8 * 98 * cost::depthwise_wgrad_step;
  for (auto p : {precision::pytorch_fp32, precision::fp32, precision::bf16}) {
    INFO(name_of(p));
    const auto t = cost::time_of(dw, p, d);
    const double casts = autocast(p) ? 2 * (K + w * 6 / 1e12) : 0.0;  // the weight cast and its gradient's
    CHECK(t.forward + t.backward == doctest::Approx(K + fwd + K + dgrad + K + wgrad + casts));
    CHECK(t.forward == doctest::Approx(K + fwd + casts / 2));
  }
  // 1,200 channels of 5 x 5: 30,000 blocks, 375 waves of 80
  layer wide = dw;
  wide.n = wide.groups = 1200;
  wide.k = 25;
  wide.m = 8 * 7 * 7;
  wide.elements = 8 * 1200 * 7 * 7;
  wide.input_grad = false;
  const auto tw = cost::time_of(wide, precision::pytorch_fp32, d);
  CHECK(tw.backward == doctest::Approx(K + 375 * 2 * cost::depthwise_wgrad_step));
  // channels_last runs cuDNN (the implicit GEMM); a grouped convolution of several channels per group
  // does too, and so does a device without an SM count
  layer nhwc = dw;
  nhwc.channels_last = true;
  layer grouped = dw;
  grouped.groups = 16;
  grouped.k = 36;
  auto nosm = d;
  nosm.multiprocessors = 0;
  CHECK(cost::depthwise_native(dw, d));
  CHECK_FALSE(cost::depthwise_native(nhwc, d));
  CHECK_FALSE(cost::depthwise_native(grouped, d));
  CHECK_FALSE(cost::depthwise_native(dw, nosm));
  layer plain = nhwc;
  plain.groups = 1;
  CHECK(cost::time_of(nhwc, precision::pytorch_fp32, d).backward == cost::time_of(plain, precision::pytorch_fp32, d).backward);
}

TEST_CASE("compute: fused attention — 128-query blocks in waves, 2.5x in backward, causal halves") {
  const auto d = round_device();
  layer a;
  a.kind = layer_kind::attention;
  a.m = a.n = 512;
  a.k = 64;
  a.count = 10;  // 4 blocks x 10 heads = 40 blocks = 4 waves of 10 SMs
  const double K = 1e-6;
  const double flops = 40 * 4.0 * 128 * 512 * 64;  // per block: QK^T and PV over all 512 keys
  auto t = cost::time_of(a, precision::bf16, d);
  CHECK(t.forward == doctest::Approx(K + flops / 200e12).epsilon(1e-12));
  CHECK(t.backward == doctest::Approx(K + 2.5 * flops / 200e12).epsilon(1e-12));
  a.causal = true;
  t = cost::time_of(a, precision::bf16, d);
  // half the products: now Q, K, V, O (4 x 512 x 64 x 10 x 2 bytes) take longer than the math
  const double qkvo = 4.0 * 512 * 64 * 10 * 2;
  CHECK(0.5 * flops / 200e12 < qkvo / 1e12);
  CHECK(t.forward == doctest::Approx(K + qkvo / 1e12).epsilon(1e-12));
  CHECK(t.backward == doctest::Approx(K + 2.0 * qkvo / 1e12).epsilon(1e-12));  // + dO in, dQ dK dV out
}

TEST_CASE("compute: a linear layer — forward GEMM, dX and dW GEMMs, the bias reduction, autocast's weight casts") {
  const auto d = round_device();
  const double K_ = 1e-6;
  layer l;
  l.kind = layer_kind::linear;
  l.m = 1280;
  l.n = 1280;
  l.k = 1280;
  l.bias = true;
  const double g32 = K_ + 2.0 * 1280.0 * 1280 * 1280 / 50e12;  // exact waves (see above), one floor
  const double g = g32 - K_;
  const auto fp32 = cost::time_of(l, precision::pytorch_fp32, d);
  CHECK(fp32.forward == doctest::Approx(g32).epsilon(1e-12));
  CHECK(fp32.backward == doctest::Approx(2 * g32 + K_ + 1280.0 * 1280 * 4 / 1e12).epsilon(1e-12));
  const auto tf = cost::time_of(l, precision::tf32, d);
  CHECK(tf.forward == doctest::Approx(K_ + g / 2).epsilon(1e-12));
  const auto bf = cost::time_of(l, precision::bf16, d);
  const double cast = K_ + 1280.0 * 1280 * 6 / 1e12;  // r 4 w 2 per weight
  CHECK(bf.forward == doctest::Approx(K_ + g / 4 + cast).epsilon(1e-12));
  CHECK(bf.backward == doctest::Approx(2 * (K_ + g / 4) + K_ + 1280.0 * 1280 * 2 / 1e12 + cast).epsilon(1e-12));
  // an fp32 input (a layer norm's output) is cast to bf16 too, r 4 w 2 per input element (m x k),
  // and its gradient cast back; without autocast the flag changes nothing
  l.m = 640;  // input 640 x 1280: not the weight's size
  const auto bf_in = cost::time_of(l, precision::bf16, d);
  l.fp32_input = true;
  const double in_cast = K_ + 640.0 * 1280 * 6 / 1e12;
  CHECK(cost::time_of(l, precision::bf16, d).forward == doctest::Approx(bf_in.forward + in_cast).epsilon(1e-12));
  CHECK(cost::time_of(l, precision::bf16, d).backward == doctest::Approx(bf_in.backward + in_cast).epsilon(1e-12));
  CHECK(cost::time_of(l, precision::pytorch_fp32, d).forward == doctest::Approx(fp32.forward / 2 + K_ / 2).epsilon(1e-12));
  l.input_grad = false;  // no dX, so no gradient to cast back
  CHECK(cost::time_of(l, precision::bf16, d).backward < bf_in.backward);
  l.fp32_input = false;
  CHECK(cost::time_of(l, precision::pytorch_fp32, d).forward == cost::time_of([&] { auto x = l; x.fp32_input = true; return x; }(), precision::pytorch_fp32, d).forward);
  l.m = 1280;
  CHECK(cost::time_of(l, precision::pytorch_fp32, d).backward ==
        doctest::Approx(g32 + K_ + 1280.0 * 1280 * 4 / 1e12).epsilon(1e-12));
  // a convolution on tensor cores in NCHW pays layout transposes; channels_last does not. A 3 x 3
  // convolution of 128 channels in: x is 1280 x 128, W 1280 x 1152, y 1280 x 1280.
  layer c = conv(1280, 1280, 1152, 1280 * 128);  // 1280 x 128 input elements
  auto tr = [&](double elements) { return K_ + 2.0 * elements * 4 / 1e12; };  // one transpose of fp32 elements
  {
    const auto nchw = cost::time_of(c, precision::pytorch_fp32, d);
    c.channels_last = true;
    const auto nhwc = cost::time_of(c, precision::pytorch_fp32, d);
    c.channels_last = false;
    const double x = 1280.0 * 128, w = 1280.0 * 1152, y = 1280.0 * 1280;
    CHECK(nchw.forward - nhwc.forward == doctest::Approx(tr(x) + tr(w) + tr(y)).epsilon(1e-9));
    // dy for wgrad and again for dgrad, x for wgrad, W for dgrad; dW and dx back
    CHECK(nchw.backward - nhwc.backward == doctest::Approx(2 * tr(x) + 2 * tr(w) + 2 * tr(y)).epsilon(1e-9));
    c.input_grad = false;  // no dgrad: dy, x in, dW back
    CHECK(cost::time_of(c, precision::pytorch_fp32, d).backward -
              [&] { auto v = c; v.channels_last = true; return cost::time_of(v, precision::pytorch_fp32, d).backward; }() ==
          doctest::Approx(tr(x) + tr(w) + tr(y)).epsilon(1e-9));
    c.input_grad = true;
  }
  // a 1 x 1 convolution of stride 1 (input elements = m x k) is a GEMM over NCHW as it stands:
  // no transposes (cuDNN runs it on cuBLAS-style GEMM kernels; tests/data/compute/README.md)
  c.k = 1280;
  c.elements = 1280 * 1280;
  {
    const auto nchw = cost::time_of(c, precision::pytorch_fp32, d);
    c.channels_last = true;
    const auto nhwc = cost::time_of(c, precision::pytorch_fp32, d);
    c.channels_last = false;
    CHECK(nchw.forward == nhwc.forward);
    CHECK(nchw.backward == nhwc.backward);
    c.elements = 4 * 1280 * 1280;  // stride 2: the input is 4x the output positions, transposed again
    CHECK(cost::time_of(c, precision::pytorch_fp32, d).forward > nchw.forward + 3 * K_);
    c.elements = 1280 * 1280;
  }
  {  // cuDNN's TF32 implicit-GEMM wgrad at 1 / tf32_wgrad_slowdown of the unit's rate: a 3 x 3
     // convolution, channels_last (no transposes) and no dgrad, so its backward is the wgrad:
     // dW is 1280 x 1152 (10 x 9 tiles of 128: 9 waves on 10 SMs), k = 1280
    layer w = c;
    w.k = 1152;
    w.elements = 1280 * 128;
    w.channels_last = true;
    w.input_grad = false;
    const double tile = 2.0 * 128 * 128 * 1280;
    CHECK(cost::time_of(w, precision::tf32, d).backward ==
          doctest::Approx(K_ + 9 * tile * cost::tf32_wgrad_slowdown / (200e12 * 0.5 / 10)).epsilon(1e-12));
    auto no_tf32 = d;  // a device without a TF32 unit runs fp32's SIMT kernels at their rate
    no_tf32.tf32 = 0.0;
    CHECK(cost::time_of(w, precision::tf32, no_tf32).backward == doctest::Approx(K_ + 9 * tile / (100e12 * 0.5 / 10)).epsilon(1e-12));
    w.k = 1280;  // a 1 x 1 stride-1 convolution, a plain GEMM: 10 x 10 tiles, 10 waves, the unit's rate
    w.elements = 1280 * 1280;
    CHECK(cost::time_of(w, precision::tf32, d).backward == doctest::Approx(K_ + 10 * tile / (200e12 * 0.5 / 10)).epsilon(1e-12));
  }
  const auto simt = cost::time_of(c, precision::fp32, d);  // fp32 units: no transposes
  CHECK(simt.forward == doctest::Approx(K_ + 2.0 * 1280.0 * 1280 * 1280 / 50e12).epsilon(1e-12));
  // a convolution's bias is a kernel of its own in forward (r y w y), unlike a linear layer's
  // (in the GEMM's epilogue); in backward both reduce dy
  c.bias = true;
  CHECK(cost::time_of(c, precision::fp32, d).forward == doctest::Approx(simt.forward + K_ + 2.0 * 1280 * 1280 * 4 / 1e12).epsilon(1e-12));
  CHECK(cost::time_of(c, precision::fp32, d).backward == doctest::Approx(simt.backward + K_ + 1280.0 * 1280 * 4 / 1e12).epsilon(1e-12));
  c.channels_last = true;  // 16-bit: 2-byte elements
  CHECK(cost::time_of(c, precision::bf16, d).forward - [&] { auto x = c; x.bias = false; return cost::time_of(x, precision::bf16, d).forward; }() ==
        doctest::Approx(K_ + 2.0 * 1280 * 1280 * 2 / 1e12).epsilon(1e-9));
}

TEST_CASE("compute: a frozen layer (weight_grad, bias_grad false) or a no_grad region drops its gradients' kernels") {
  const auto d = round_device();
  const double K = 1e-6;
  auto t = [&](const layer& l, precision p) { return cost::time_of(l, p, d); };
  {  // linear 1280^3 with a bias: dX alone (no dW, no bias reduction); nothing without either
    layer l;
    l.kind = layer_kind::linear;
    l.m = l.n = l.k = 1280;
    l.bias = true;
    const double g32 = K + 2.0 * 1280.0 * 1280 * 1280 / 50e12, g16 = K + 2.0 * 1280.0 * 1280 * 1280 / 200e12;
    const double cast = K + 1280.0 * 1280 * 6 / 1e12;
    const auto full = t(l, precision::bf16);
    l.weight_grad = false;  // BitFit: the frozen weight's dW goes, the trained bias's reduction stays
    CHECK(t(l, precision::pytorch_fp32).backward == doctest::Approx(g32 + K + 1280.0 * 1280 * 4 / 1e12).epsilon(1e-12));
    l.bias_grad = false;
    CHECK(t(l, precision::pytorch_fp32).forward == doctest::Approx(g32).epsilon(1e-12));
    CHECK(t(l, precision::pytorch_fp32).backward == doctest::Approx(g32).epsilon(1e-12));
    // under autocast the frozen weight is still cast in forward; no gradient is cast back
    CHECK(t(l, precision::bf16).forward == full.forward);
    CHECK(t(l, precision::bf16).backward == doctest::Approx(g16).epsilon(1e-12));
    CHECK(full.backward == doctest::Approx(2 * g16 + K + 1280.0 * 1280 * 2 / 1e12 + cast).epsilon(1e-12));
    l.input_grad = false;
    CHECK(t(l, precision::bf16).backward == 0.0);
    CHECK(t(l, precision::bf16).forward == full.forward);
    l.weight_grad = true;  // a trained weight with a frozen bias: dW alone, no reduction
    CHECK(t(l, precision::bf16).backward == doctest::Approx(g16 + cast).epsilon(1e-12));
  }
  {  // an NCHW 3 x 3 convolution on tensor cores: the dgrad and its transposes (dy, W in, dx back)
    layer c = conv(1280, 1280, 1152, 1280 * 128);
    c.weight_grad = false;
    auto tr = [&](double elements) { return K + 2.0 * elements * 4 / 1e12; };
    const double x = 1280.0 * 128, w = 1280.0 * 1152, y = 1280.0 * 1280;
    // dX = dY W: 1280 x 1152, 10 x 9 tiles in 9 waves of 10 SMs, k = 1280, at tf32's rate
    const double dgrad = K + 9 * 2.0 * 128 * 128 * 1280 / (200e12 * 0.5 / 10);
    CHECK(t(c, precision::pytorch_fp32).backward == doctest::Approx(dgrad + tr(y) + tr(w) + tr(x)).epsilon(1e-12));
    c.input_grad = false;
    CHECK(t(c, precision::pytorch_fp32).backward == 0.0);
    c.groups = c.n = 128;  // depthwise (PyTorch's kernels): the input gradient's kernel alone
    c.k = 9;
    c.input_grad = true;
    const auto dw = t(c, precision::pytorch_fp32);
    CHECK(dw.backward == doctest::Approx(K + std::max((1280.0 * 128 * 3 + 128 * 9) * 4 / 1e12, x * cost::depthwise_dgrad_input / 10)));
    c.weight_grad = true;
    CHECK(t(c, precision::pytorch_fp32).backward > dw.backward + K);
  }
  {  // a batched matmul: dA alone without dB, nothing without either
    layer mm;
    mm.kind = layer_kind::matmul;
    mm.m = mm.n = mm.k = 1280;
    const double g = K + 2.0 * 1280.0 * 1280 * 1280 / 50e12;
    mm.weight_grad = false;
    CHECK(t(mm, precision::fp32).backward == doctest::Approx(g).epsilon(1e-12));
    mm.input_grad = false;
    CHECK(t(mm, precision::fp32).backward == 0.0);
    mm.weight_grad = true;
    CHECK(t(mm, precision::fp32).backward == doctest::Approx(g).epsilon(1e-12));
  }
  {  // a layer norm's two backward kernels: dx (input_grad) and gamma/beta (weight_grad or bias_grad)
    layer ln = op(layer_kind::layer_norm, 100'000 * 96);
    ln.m = 100'000;
    ln.n = 96;
    const double dx = 625 * (cost::layer_norm_dgrad_wave + 96 * cost::layer_norm_dgrad_wave_element);
    const double gamma = 100'000 * (cost::layer_norm_gamma_row + 96 * cost::layer_norm_gamma_element) / 10;
    ln.weight_grad = false;  // beta alone still takes the column kernel
    CHECK(t(ln, precision::bf16).backward == doctest::Approx(K + dx + K + gamma));
    ln.bias_grad = false;
    CHECK(t(ln, precision::bf16).backward == doctest::Approx(K + dx));
    ln.weight_grad = true;
    ln.input_grad = false;
    CHECK(t(ln, precision::bf16).backward == doctest::Approx(K + gamma));
    ln.m = ln.n = 0;  // bytes alone: r 2E w E | r 2E
    CHECK(t(ln, precision::bf16).backward == doctest::Approx(K + 2.0 * 9.6e6 * 4 / 1e12));
    ln.weight_grad = false;
    CHECK(t(ln, precision::bf16).backward == 0.0);
  }
  {  // batch norm's one backward pass computes every gradient: dropped only without any
    layer bn = op(layer_kind::batch_norm, 1'000'000);
    const auto full = t(bn, precision::pytorch_fp32);
    bn.weight_grad = false;
    CHECK(t(bn, precision::pytorch_fp32).backward == full.backward);
    bn.input_grad = false;  // BitFit's batch norm: beta alone
    CHECK(t(bn, precision::pytorch_fp32).backward == full.backward);
    bn.bias_grad = false;
    CHECK(t(bn, precision::pytorch_fp32).backward == 0.0);
    CHECK(t(bn, precision::pytorch_fp32).forward == full.forward);
    bn.m = 32;  // the latency-bound kernels alike
    bn.n = 64;
    CHECK(t(bn, precision::pytorch_fp32).backward == 0.0);
    bn.input_grad = true;
    CHECK(t(bn, precision::pytorch_fp32).backward > 0.0);
  }
  // the kinds without a weight: no backward without the input's gradient, the forward unchanged
  for (auto k : {layer_kind::attention, layer_kind::softmax, layer_kind::max_pool, layer_kind::avg_pool, layer_kind::loss,
                 layer_kind::activation, layer_kind::dropout}) {
    CAPTURE(name_of(k));
    layer l = op(k, 1'000'000);
    l.m = l.n = 512;
    l.k = 64;
    l.outputs = 250'000;
    const auto full = t(l, precision::bf16);
    CHECK(full.backward > 0.0);
    l.weight_grad = false;  // nothing to drop
    CHECK(t(l, precision::bf16).backward == full.backward);
    l.input_grad = false;
    CHECK(t(l, precision::bf16).backward == 0.0);
    CHECK(t(l, precision::bf16).forward == full.forward);
  }
  {  // activation checkpointing: backward runs the layer's forward kernels again, whatever its kind
    layer lin;
    lin.kind = layer_kind::linear;
    lin.m = lin.n = lin.k = 1280;
    lin.bias = true;
    layer dw = op(layer_kind::activation, 1'000'000);
    layer ln = op(layer_kind::layer_norm, 100'000 * 96);
    ln.m = 100'000;
    ln.n = 96;
    for (layer l : {lin, dw, ln}) {
      CAPTURE(name_of(l.kind));
      const auto plain = t(l, precision::bf16);
      l.recompute = true;
      CHECK(t(l, precision::bf16).forward == plain.forward);
      CHECK(t(l, precision::bf16).backward == plain.backward + plain.forward);
      // a layer with no gradient of its own is rerun all the same when its checkpointed region is
      // (the exporter flags a region whose layers need some gradient)
      l.input_grad = false;
      l.weight_grad = !has_weight(l.kind);
      l.bias_grad = !has_bias(l.kind);
      CHECK(t(l, precision::bf16).backward == plain.forward);
    }
  }
  {  // a frozen embedding table: its indices need no gradient, so nothing in backward
    layer emb = op(layer_kind::embedding, 1000 * 8);
    emb.m = 50;
    emb.n = 8;
    emb.weight_grad = false;
    CHECK(cost::time_of(emb, precision::pytorch_fp32, d, false).backward == 0.0);
    CHECK(cost::time_of(emb, precision::pytorch_fp32, d, true).backward == 0.0);
  }
}

TEST_CASE("compute: a product whose rows are not 16-byte multiples runs at misaligned_gemm_efficiency on tensor cores") {
  const auto d = round_device();
  const double K_ = 1e-6;
  // 1280 x 1272 x 1280: n = 1272 is a multiple of 8 (aligned for every unit); 1276 only of 4
  // (aligned for TF32's 4-byte elements, not for bf16's 2-byte ones); 1273 of neither. The three
  // take the same tiles (ceil(n / 128) = 10), so their math terms are equal when aligned.
  auto linear = [](std::int64_t n) {
    layer l;
    l.kind = layer_kind::linear;
    l.m = 1280;
    l.n = n;
    l.k = 1280;
    return l;
  };
  const double g = 2.0 * 1280.0 * 1280 * 1280 / 50e12;  // 10 x 10 tiles on 10 SMs at fp32's rate
  const double slow = cost::misaligned_gemm_efficiency;
  CHECK(slow == doctest::Approx(0.155));
  for (std::int64_t n : {1272, 1276, 1273}) {
    CAPTURE(n);
    // fp32's SIMT kernels have no alignment requirement
    CHECK(cost::time_of(linear(n), precision::fp32, d).forward == doctest::Approx(K_ + g).epsilon(1e-12));
    const double tf = n % 4 == 0 ? 1.0 : slow, bf = n % 8 == 0 ? 1.0 : slow;
    CHECK(cost::time_of(linear(n), precision::tf32, d).forward == doctest::Approx(K_ + g / 2 / tf).epsilon(1e-12));
    const double cast = K_ + 1280.0 * double(n) * 6 / 1e12;  // autocast's weight cast
    CHECK(cost::time_of(linear(n), precision::bf16, d).forward == doctest::Approx(K_ + g / 4 / bf + cast).epsilon(1e-12));
    // all three products of the layer: dX (k = n deep) and dW too
    const double dx = K_ + g / 4 / bf * double(n) / 1280.0, dw = K_ + g / 4 / bf;
    CHECK(cost::time_of(linear(n), precision::bf16, d).backward == doctest::Approx(dx + dw + cast).epsilon(1e-12));
  }
  // a device without the unit runs fp32's kernels: no alignment requirement (round_device has
  // no fp16 unit)
  CHECK(cost::time_of(linear(1273), precision::fp16, d).forward == doctest::Approx(K_ + g + 1280.0 * 1273 * 6 / 1e12 + K_).epsilon(1e-12));
  // k decides as n does; m (the rows) never
  layer l = linear(1272);
  l.k = 1273;
  CHECK(cost::misaligned_gemm(l.n, l.k, 2.0));
  CHECK_FALSE(cost::misaligned_gemm(1272, 1280, 2.0));
  l.k = 1280;
  l.m = 1273;
  CHECK(cost::time_of(l, precision::bf16, d).forward == doctest::Approx(cost::time_of(linear(1272), precision::bf16, d).forward).epsilon(0.01));
  // a batched matmul alike: 10 products of 1024 x 1030 x 512 (n = 1030 is not a multiple of 8),
  // bound by their math
  layer mm;
  mm.kind = layer_kind::matmul;
  mm.m = 1024;
  mm.n = 1030;
  mm.k = 512;
  mm.count = 10;
  auto mm_aligned = mm;
  mm_aligned.n = 1032;  // the same 9 tiles of n per product
  const auto a = cost::time_of(mm_aligned, precision::bf16, d), b = cost::time_of(mm, precision::bf16, d);
  CHECK(b.forward - K_ == doctest::Approx((a.forward - K_) / slow).epsilon(1e-9));
  // a convolution is never slowed: cuDNN pads its channels (a 3-channel stem, k = 3 x 7 x 7)
  layer c = conv(1280, 64, 147, 1280 * 3);
  c.channels_last = true;
  layer c8 = c;
  c8.k = 152;  // the same k tiles: the same math
  CHECK(cost::time_of(c, precision::bf16, d).forward <= cost::time_of(c8, precision::bf16, d).forward);
  // the zoo: GPT-2's tied LM head (50,257 words) and NCF's final 16 -> 1 layer are the zoo's
  // misaligned layers
  for (auto name : zoo::model_name_list) {
    const auto m = zoo::make_model(name);
    for (const auto& x : m.layers) {
      if (x.kind != layer_kind::linear && x.kind != layer_kind::matmul) continue;
      CAPTURE(x.name);
      CHECK(cost::misaligned_gemm(x.n, x.k, 2.0) == (x.name == "lm_head" || x.name == "final"));
    }
  }
}

TEST_CASE("compute: an upcast op runs in fp32 under autocast, its input cast up and its output down") {
  const auto d = round_device();
  const std::int64_t E = 1'000'000;
  const double K = 1e-6;
  layer gelu = op(layer_kind::activation, E, 8);
  gelu.upcast = true;
  // 8 fp32 kernels (r E w E | r 2E w E, 4 bytes) + a cast up (r 2E w 4E) and one down (r 4E w 2E)
  CHECK(cost::time_of(gelu, precision::bf16, d).forward == doctest::Approx(8 * (K + 8e-6) + 2 * (K + 6e-6)));
  CHECK(cost::time_of(gelu, precision::bf16, d).backward == doctest::Approx(8 * (K + 12e-6) + 2 * (K + 6e-6)));
  // without autocast the flag changes nothing
  CHECK(cost::time_of(gelu, precision::pytorch_fp32, d).forward == cost::time_of(op(layer_kind::activation, E, 8), precision::pytorch_fp32, d).forward);
  // a pass-through op has no backward kernels, casts included
  gelu.input_grad = false;
  CHECK(cost::time_of(gelu, precision::bf16, d).backward == 0.0);
  // GPT-2's gelu_new is upcast; BERT's GELU (one erf kernel) is not
  for (const auto& l : zoo::make_model("gpt2").layers)
    if (l.name.find("mlp.act") != std::string::npos) CHECK(l.upcast);
  for (const auto& l : zoo::make_model("bert-base").layers) CHECK_FALSE(l.upcast);
}

TEST_CASE("compute: an op on an fp32 input runs in fp32 under autocast, with no casts of its own") {
  const auto d = round_device();
  const std::int64_t E = 1'000'000;
  const double K = 1e-6;
  layer drop = op(layer_kind::dropout, E);
  drop.fp32_input = true;
  // r 4E w 4E + the 1-byte mask, each way; no cast kernels
  CHECK(cost::time_of(drop, precision::bf16, d).forward == doctest::Approx(K + 9e-6));
  CHECK(cost::time_of(drop, precision::bf16, d).backward == doctest::Approx(K + 9e-6));
  CHECK(cost::time_of(op(layer_kind::dropout, E), precision::bf16, d).forward == doctest::Approx(K + 5e-6));  // 16-bit
  // a residual add: a 16-bit branch and the fp32 stream in, fp32 out (r 2E + 4E, w 4E); backward
  // the gradients meet in fp32 (r 8E w 4E) and the branch's is cast to 16 bits (r 4E w 2E)
  layer res = op(layer_kind::add, E);
  res.fp32_input = true;
  CHECK(cost::time_of(res, precision::bf16, d).forward == doctest::Approx(K + 10e-6));
  CHECK(cost::time_of(res, precision::bf16, d).backward == doctest::Approx(K + 12e-6 + K + 6e-6));
  CHECK(cost::time_of(res, precision::pytorch_fp32, d).forward == doctest::Approx(K + 12e-6));
  CHECK(cost::time_of(res, precision::pytorch_fp32, d).backward == doctest::Approx(K + 12e-6));
  // without autocast the flag changes nothing
  CHECK(cost::time_of(drop, precision::pytorch_fp32, d).forward == cost::time_of(op(layer_kind::dropout, E), precision::pytorch_fp32, d).forward);
  // the zoo: BERT drops its attention probabilities out in fp32 (eager only: SDPA fuses them),
  // GPT-2 casts them to V's dtype first; both drop out the embeddings' fp32 output
  auto flagged = [](const model_spec& m, std::string_view part) {
    std::size_t n = 0, of = 0;
    for (const auto& l : m.layers)
      if (l.name.find(part) != std::string::npos) {
        ++of;
        n += l.fp32_input ? 1 : 0;
      }
    return std::pair{n, of};
  };
  CHECK(flagged(zoo::make_model("bert-large"), "attn_dropout") == std::pair<std::size_t, std::size_t>{24, 24});
  CHECK(flagged(zoo::make_model("gpt2"), "attn_dropout") == std::pair<std::size_t, std::size_t>{0, 12});
  CHECK(flagged(zoo::bert("bert-large", 24, 1024, 8, 512, true), "attn_dropout") == std::pair<std::size_t, std::size_t>{0, 0});
  CHECK(flagged(zoo::make_model("bert-base"), "embeddings.dropout") == std::pair<std::size_t, std::size_t>{1, 1});
  CHECK(flagged(zoo::make_model("gpt2"), "drop") == std::pair<std::size_t, std::size_t>{1, 12 * 3 + 1});
  // the fp32 residual stream: every residual add, and every linear fed by a LayerNorm or the
  // embeddings (BERT: query, key, value, intermediate.dense, pooler; GPT-2: c_attn, c_fc, LM head)
  CHECK(flagged(zoo::make_model("bert-base"), "residual") == std::pair<std::size_t, std::size_t>{24, 24});
  CHECK(flagged(zoo::make_model("gpt2"), "residual") == std::pair<std::size_t, std::size_t>{24, 24});
  CHECK(flagged(zoo::make_model("bert-base"), "attention.self.query") == std::pair<std::size_t, std::size_t>{12, 12});
  CHECK(flagged(zoo::make_model("bert-base"), "intermediate.dense") == std::pair<std::size_t, std::size_t>{12, 12});
  CHECK(flagged(zoo::make_model("bert-base"), "output.dense") == std::pair<std::size_t, std::size_t>{0, 24});  // 16-bit inputs
  CHECK(flagged(zoo::make_model("gpt2"), "c_attn") == std::pair<std::size_t, std::size_t>{12, 12});
  CHECK(flagged(zoo::make_model("gpt2"), "c_fc") == std::pair<std::size_t, std::size_t>{12, 12});
  CHECK(flagged(zoo::make_model("gpt2"), "c_proj") == std::pair<std::size_t, std::size_t>{0, 24});
  CHECK(flagged(zoo::make_model("gpt2"), "lm_head") == std::pair<std::size_t, std::size_t>{1, 1});
  std::size_t fp32 = 0;
  for (const auto& l : zoo::make_model("bert-base").layers) fp32 += l.fp32_input ? 1 : 0;
  CHECK(fp32 == 12 + 1 + 12 * (3 + 1 + 2) + 1);  // nothing else
  // in fp32 training the flags change no time
  for (auto name : {"bert-base", "gpt2"}) {
    auto m = zoo::make_model(name);
    auto plain = m;
    for (auto& l : plain.layers) l.fp32_input = false;
    m.training_precision = plain.training_precision = precision::pytorch_fp32;
    const auto a = cost::compute(m, zoo::hw::h100_sxm, 0.0), b = cost::compute(plain, zoo::hw::h100_sxm, 0.0);
    CHECK(a.forward == b.forward);
    CHECK(a.backward == b.backward);
    m.training_precision = plain.training_precision = precision::bf16;
    CHECK(cost::compute(m, zoo::hw::h100_sxm, 0.0).forward > cost::compute(plain, zoo::hw::h100_sxm, 0.0).forward);
    CHECK(cost::compute(m, zoo::hw::h100_sxm, 0.0).backward_total() > cost::compute(plain, zoo::hw::h100_sxm, 0.0).backward_total());
  }
}

TEST_CASE("compute: a model's times — layers attributed to tensors, FLOPs alone, a measured profile") {
  const auto d = round_device();
  model_spec m;
  m.name = "two";
  m.tensors.resize(2);
  m.tensors[0].name = "a";
  m.tensors[0].shape = {1280, 1280};
  m.tensors[0].backward_flops = 1e9;
  m.tensors[1].name = "b";
  m.tensors[1].shape = {1280};
  m.tensors[1].backward_flops = 3e9;
  m.forward_flops = 2e9;
  m.validate();
  // FLOPs alone: the rate of the precision's linear unit x efficiency; undescribed: device_flops
  auto c = cost::compute(m, d, 7e12);
  CHECK(c.from == cost::compute_times::source::flops);
  CHECK(c.forward == doctest::Approx(2e9 / 50e12));
  CHECK(c.backward_total() == doctest::Approx(4e9 / 50e12));
  CHECK(cost::compute(m, device_compute{}, 7e12).forward == doctest::Approx(2e9 / 7e12));
  m.training_precision = precision::bf16;
  CHECK(cost::compute(m, d, 7e12).forward == doctest::Approx(2e9 / 200e12));
  m.training_precision = precision::pytorch_fp32;
  // layers: an activation before every tensor (-> tail), a linear on tensor 0, a ReLU on tensor 1
  layer first = op(layer_kind::activation, 1'000'000);
  layer lin;
  lin.kind = layer_kind::linear;
  lin.tensor = 0;
  lin.m = lin.n = lin.k = 1280;
  layer relu = op(layer_kind::activation, 2'000'000);
  relu.tensor = 1;
  m.layers = {first, lin, relu};
  m.validate();
  c = cost::compute(m, d, 7e12);
  CHECK(c.from == cost::compute_times::source::layers);
  const double g32 = 1e-6 + 2.0 * 1280.0 * 1280 * 1280 / 50e12;  // one GEMM with its floor
  CHECK(c.forward == doctest::Approx(9e-6 + g32 + 17e-6));
  CHECK(c.backward[0] == doctest::Approx(2 * g32));
  CHECK(c.backward[1] == doctest::Approx(25e-6));
  CHECK(c.tail == doctest::Approx(13e-6));
  CHECK(c.backward_total() == doctest::Approx(2 * g32 + 38e-6));
  // an undescribed device ignores the layers
  CHECK(cost::compute(m, device_compute{}, 7e12).from == cost::compute_times::source::flops);
  // a measured profile wins over everything: ready times in backward order (b first, then a)
  m.tensors[1].ready_time = 0.002;
  m.tensors[0].ready_time = 0.005;
  m.measured_forward = 0.003;
  m.measured_backward = 0.006;
  m.validate();
  c = cost::compute(m, d, 7e12);
  CHECK(c.from == cost::compute_times::source::profile);
  CHECK(c.forward == 0.003);
  CHECK(c.ready[1] == 0.002);
  CHECK(c.ready[0] == 0.005);
  CHECK(c.backward[1] == doctest::Approx(0.002));
  CHECK(c.backward[0] == doctest::Approx(0.003));
  CHECK(c.backward_total() == doctest::Approx(0.006));
}

TEST_CASE("compute: bad layers, profiles and device descriptions name their field") {
  model_spec m;
  m.name = "bad";
  m.tensors.resize(1);
  m.tensors[0].name = "w";
  m.tensors[0].shape = {4};
  layer l;
  l.kind = layer_kind::linear;
  l.tensor = 0;
  l.m = 4;
  l.n = 0;
  l.k = 4;
  m.layers = {l};
  CHECK_THROWS_WITH_AS(m.validate(), "'layers[0].n': must be in [1, 2^52], got 0", error);
  m.layers[0].n = 4;
  m.layers[0].tensor = 1;
  CHECK_THROWS_WITH_AS(m.validate(), "'layers[0].tensor': must be -1 or the index of a tensor (< 1)", error);
  m.layers[0] = op(layer_kind::activation, 0);
  CHECK_THROWS_WITH_AS(m.validate(), "'layers[0].elements': must be in [1, 2^52], got 0", error);
  m.layers.clear();
  m.tensors[0].ready_time = 0.5;
  CHECK_THROWS_WITH_AS(m.validate(), "'measured_backward': a profile (tensors' ready_time) needs the measured backward time (> 0)",
                       error);
  m.measured_backward = 0.25;
  CHECK_THROWS_WITH_AS(m.validate(), "'tensors[0].ready_time': must be seconds in [0, measured_backward]", error);

  auto c = zoo::dgx_h100(1);
  c.nodes[0].compute.matmul_efficiency = 1.5;
  CHECK_THROWS_WITH_AS(c.validate(), "'nodes[0].compute.matmul_efficiency': must be a fraction in (0, 1]", error);
  c.nodes[0].compute.matmul_efficiency = 0.8;
  c.nodes[0].compute.fp32 = 0.0;
  CHECK_THROWS_WITH_AS(c.validate(), "'nodes[0].compute.fp32': must be a positive number (at most 1e18)", error);
  c.nodes[0].compute = device_compute{};  // not described: valid, FLOPs alone
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("zoo: the layers leave the tensors and FLOPs as they were and match the weights they use") {
  for (auto name : zoo::model_names()) {
    CAPTURE(name);
    const auto m = zoo::make_model(name);
    REQUIRE_FALSE(m.layers.empty());
    std::int32_t last = -1;
    for (const auto& l : m.layers) {
      CHECK(l.tensor >= last);  // forward order
      last = l.tensor;
      if (l.kind != layer_kind::linear && l.kind != layer_kind::conv) continue;
      if (l.name == "lm_head") continue;  // tied to wte: counted on ln_f.bias
      // the layer is attributed to its bias when it has one, else to its weight
      const auto& w = m.tensors[static_cast<std::size_t>(l.tensor - (l.bias ? 1 : 0))];
      CHECK(w.name == l.name + ".weight");
      CHECK(w.elements() == l.n * l.k);
      CHECK(w.backward_flops == doctest::Approx(2.0 * 2.0 * double(l.m) * double(l.n) * double(l.k)).epsilon(1e-12));
    }
  }
  // the memory-bound layers ResNet-50 runs: 53 batch norms, 49 ReLUs after convs + the stem's,
  // 16 residual adds, a max pool, an average pool, the loss
  const auto r = zoo::resnet50();
  auto count = [&](layer_kind k) { return std::count_if(r.layers.begin(), r.layers.end(), [&](const layer& l) { return l.kind == k; }); };
  CHECK(count(layer_kind::conv) == 53);
  CHECK(count(layer_kind::batch_norm) == 53);
  CHECK(count(layer_kind::activation) == 49);
  CHECK(count(layer_kind::add) == 16);
  CHECK(count(layer_kind::max_pool) == 1);
  CHECK(count(layer_kind::avg_pool) == 1);
  CHECK(count(layer_kind::loss) == 1);
  // a scaled model keeps no layers (they describe the unscaled network)
  CHECK(zoo::make_model_scaled("resnet50", 0.5).layers.empty());
}

TEST_CASE("compute: the zoo's GPU clusters describe their devices with the datasheet figures") {
  const auto h = zoo::dgx_h100(2);
  for (const auto& n : h.nodes) CHECK(n.compute == zoo::hw::h100_sxm);
  CHECK(zoo::hw::h100_sxm.fp32 == doctest::Approx(67e12));
  CHECK(zoo::hw::h100_sxm.bf16 == doctest::Approx(989.5e12));
  CHECK(zoo::hw::h100_sxm.matmul_efficiency == doctest::Approx(0.801).epsilon(1e-3));
  CHECK(zoo::hw::a100_sxm_40gb.tf32 == doctest::Approx(156e12));
  CHECK(zoo::dgx_a100(1).nodes[0].compute == zoo::hw::a100_sxm_40gb);
  CHECK(zoo::p3_16xlarge_x4().nodes[0].compute == zoo::hw::v100_sxm2);
  CHECK_FALSE(zoo::local(4).nodes[0].compute.described());  // CPU ranks: FLOPs alone
  // on a cluster the slowest distinct device sets the compute
  const auto m = zoo::resnet50();
  const auto on_h100 = cost::compute(m, h);
  const auto direct = cost::compute(m, zoo::hw::h100_sxm, h.nodes[0].device_flops);
  CHECK(on_h100.forward == direct.forward);
  CHECK(on_h100.backward_total() == direct.backward_total());
  CHECK(cost::compute(m, zoo::p3_16xlarge_x4()).forward > on_h100.forward);
}
