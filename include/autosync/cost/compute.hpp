// autosync/cost/compute.hpp — how long a device computes a model's forward and backward.
//
// `compute(model, device, precision)` turns the model's description into seconds: the forward
// pass, and for every tensor the backward time of the layers attributed to it (model.hpp,
// `layer::tensor`), so the timeline knows when each gradient is ready. Three sources, the best
// one present wins:
//
//   1. a measured profile (model.has_profile()): the measured forward, every tensor's measured
//      ready time, the measured backward — taken as they are;
//   2. layers on a described device (device_compute::described()): a roofline per kernel;
//   3. FLOPs alone: forward_flops and backward_flops over the device's matrix rate at the
//      model's precision (peak x matmul_efficiency), or over node_spec::device_flops when the
//      device is not described — the model before layers existed.
//
// The roofline (2). Every layer runs as the kernels PyTorch's eager CUDA path launches for it;
// a kernel takes
//
//      t = kernel_floor + max( flops / matrix rate,  bytes / (memory_bandwidth x memory_efficiency) )
//
// The floor adds, it does not overlap: it is the device-side cost of one kernel (launch, ramp-up,
// tail), which a stream of eager kernels pays one after another (an alpha-beta model per kernel).
//
// Matrix work (linear, conv, matmul) is a GEMM of m x n x k (conv: the implicit GEMM, m = batch x
// Hout x Wout, n = Cout, k = Cin/groups x kh x kw). Its rate is the precision's peak x
// matmul_efficiency, less two structural losses of tiled GEMMs (NVIDIA, "Matrix Multiplication
// Background User's Guide", sections 2.3 and 3: cuBLAS computes the output in 128 x 128 tiles,
// one tile per SM at a time):
//
//   tile quantization   the last row/column of tiles is partly empty: ceil(m/128) ceil(n/128)
//                       tiles are paid for m n of output (an axis shorter than 128 gets the
//                       narrowest of 64, 32, 16 that covers it: cuBLAS has narrow-tile kernels);
//   wave quantization   tiles run in waves of `multiprocessors`: ceil(tiles / SMs) waves are paid;
//   split-K             an output of fewer tiles than SMs (a weight gradient: out x in with k =
//                       the batch's rows) is split along k into at most SMs / tiles slices (each
//                       at least 128 deep) that run side by side, plus a reduction kernel that
//                       reads and writes the fp32 partial sums (cuBLAS/cuDNN split-K kernels).
//
//   time = waves x 2 x tile_m x tile_n x ceil(k / slices) / (peak / SMs x matmul_efficiency)
//
// Which unit runs the product (model.hpp, `precision`):
//
//   precision      conv   linear, matmul   activation bytes   note
//   pytorch-fp32   tf32   fp32             4                  PyTorch's default
//   fp32           fp32   fp32             4
//   tf32           tf32   tf32             4
//   bf16 / fp16    16-bit tensor cores     2 (norm, softmax,  autocast: fp32 list ops run in fp32;
//                                            loss: 4)          weights cast every step
//
// A missing unit (peak 0) falls back as device_compute says (TF32 -> fp32, bf16 -> fp32).
//
// Memory-bound kernels per layer kind, E elements of b bytes (forward | backward):
//
//   kind         forward kernels: bytes              backward kernels: bytes
//   activation   1: r E, w E                         1: r 2E (dy, x or y), w E
//   add          1: r 2E, w E                        1: r 2E, w E (the gradients meeting at the fork)
//   scale, copy  1: r E, w E                         1: r E, w E
//   dropout      1: r E, w E + E mask bytes          1: r E + E mask bytes, w E
//   (elementwise kinds: x `count` kernels; input_grad false: no backward kernel; `upcast` under
//   autocast: 4-byte elements, and 2 casts more each way, r 2E w 4E and r 4E w 2E; `fp32_input`
//   under autocast: 4-byte elements, no casts; an add so marked adds a 16-bit branch to the fp32
//   residual stream: forward r 2E + 4E, w 4E; backward the gradients meet in fp32, and the
//   gradient is cast to 16 bits for the branch, r 4E w 2E)
//   softmax      1: r E, w E                         1: r 2E (y, dy), w E
//   batch_norm   with its batch and channels (layer::m, n), NCHW, on a device with SMs: the
//                kernels' launch shapes, latency-bound (see "batch norm" below); otherwise bytes:
//                2: statistics r E; normalize r E,   2: reduce r 2E (dy, x); dx r 2E, w E
//                   w E
//   layer_norm   1: r E, w E                         2: dx r 2E, w E; dgamma/dbeta r 2E
//                (with its rows and width, layer::m and n, on a device with SMs: also latency-bound
//                per row, see layer_norm_forward_wave)
//   max_pool     1: r In, w Out + 8 Out (indices)    2: zero dX (w In); r Out + 8 Out, w In
//                NCHW (not channels_last): each kernel also takes at least In x max_pool_*_sm_seconds
//                / SMs (bound by the SMs, not by DRAM: see max_pool_backward_sm_seconds)
//   avg_pool     1: r In, w Out                      1: r Out, w In
//   embedding    1: r E (4-byte table), w E          dense: 1 zero the table gradient (rows x width
//                                                    x 4), 6 sort/segment/sum kernels r 2E + 8 lookups;
//                                                    sparse (COO): 1 copy of dY rows and indices
//   loss         2: log-softmax r E, w E; NLL        3: zero the gradient w E; NLL scatter
//                   (one value per row: the floor)      (the floor); log-softmax backward r 2E, w E
//   linear       1 GEMM (bias in the epilogue)       dX GEMM (input_grad), dW GEMM, bias: r rows x out
//                (out or in features not a multiple of 16 bytes on a tensor-core unit: the three
//                products at misaligned_gemm_efficiency of the rate; a batched matmul alike;
//                `fp32_input` under autocast: the input cast to 16 bits first, r 4X w 2X, and in
//                backward its gradient cast back, r 2X w 4X (input_grad), X = input elements)
//   conv         1 implicit GEMM; bias: a kernel     dgrad (input_grad) + wgrad, bias: r M x Cout
//                of its own, r M x Cout w M x Cout (PyTorch adds a convolution's bias after cuDNN's
//                kernel, not in its epilogue, as VGG16's per-layer kernels show: tests/data/compute)
//                NCHW on tensor cores (not channels_last, a tf32/bf16/fp16 unit the device has):
//                cuDNN's tensor-core kernels are NHWC, so x, W and y are transposed (forward: x, W in, y back;
//                backward: dy for the wgrad and again for the dgrad, x, W in; dW, dx back), each
//                r E w E (NVIDIA, "Convolutional Layers User's Guide", Tensor Layouts In Memory:
//                NCHW vs NHWC; the kernels per layer: tests/data/compute/h200-resnet50-kernels.jsonl).
//                A 1 x 1 convolution of stride 1 (input elements = m x k; a kernel equal to its
//                stride reads alike) is a plain GEMM over the NCHW tensors, which cuDNN runs on GEMM
//                kernels: no transposes. Any other convolution's wgrad on a TF32 unit runs at
//                1 / tf32_wgrad_slowdown of its rate. A depthwise convolution (layer::groups = n)
//                on an NCHW tensor runs on PyTorch's own kernels instead, priced by the SM
//                (depthwise_forward_output below)
//   matmul       1 batched GEMM                      2 batched GEMMs (dA, dB)
//   attention    fused (SDPA): 2 products per 128-query block, the keys streamed; backward 5
//                products (2.5x; FlashAttention-2); r Q K V w O | r Q K V O dO, w dQ dK dV;
//                causal: half the products
//
// Backward runs what the layer's gradients need (model.hpp `input_grad`, `weight_grad`, `bias_grad`;
// all true unless stated): without the input's gradient, no dgrad (linear, conv), no dA (matmul), and no
// backward at all for the kinds that have no weight (attention, softmax, pooling, loss, the
// elementwise kinds); without the weight's, no dW (with its transposes and cast), no dB, no table
// gradient (embedding); without the bias's (`bias_grad`), no bias reduction; without either, no
// gamma/beta kernel (layer norm). Batch norm's one backward pass computes them all: it is dropped
// only without any. A frozen prefix of a network, or a no_grad region, thus costs its forward
// alone. A layer that is `recompute`d (activation checkpointing) runs its forward kernels once more
// in backward: its forward time is added there.
//
// Under autocast every linear/conv also casts its fp32 weight to 16 bits in forward (r 4, w 2 per
// parameter) and its 16-bit weight gradient back in backward (r 2, w 4); softmax casts its input
// up and its output down (r 2 w 4, r 4 w 2) and back in backward; the loss casts its logits up.
//
// Everything here is constexpr, like the rest of the cost model.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace autosync::cost {

// The unit a product runs on.
enum class math_unit : std::uint8_t { fp32, tf32, bf16, fp16 };

[[nodiscard]] constexpr math_unit unit_of(precision p, layer_kind k) noexcept {
  switch (p) {
    case precision::pytorch_fp32: return k == layer_kind::conv ? math_unit::tf32 : math_unit::fp32;
    case precision::fp32: return math_unit::fp32;
    case precision::tf32: return math_unit::tf32;
    case precision::bf16: return math_unit::bf16;
    case precision::fp16: return math_unit::fp16;
  }
  return math_unit::fp32;
}

// The dense peak FLOP/s of a unit, with device_compute's fallbacks for a missing one.
[[nodiscard]] constexpr double peak(const device_compute& d, math_unit u) noexcept {
  switch (u) {
    case math_unit::fp32: return d.fp32;
    case math_unit::tf32: return d.tf32 > 0.0 ? d.tf32 : d.fp32;
    case math_unit::bf16: return d.bf16 > 0.0 ? d.bf16 : d.fp32;
    case math_unit::fp16: return d.fp16 > 0.0 ? d.fp16 : d.fp32;
  }
  return d.fp32;
}

// Whether the device has `u` as a tensor-core unit of its own (fp32 never: SIMT kernels).
[[nodiscard]] constexpr bool tensor_unit(const device_compute& d, math_unit u) noexcept {
  switch (u) {
    case math_unit::fp32: return false;
    case math_unit::tf32: return d.tf32 > 0.0;
    case math_unit::bf16: return d.bf16 > 0.0;
    case math_unit::fp16: return d.fp16 > 0.0;
  }
  return false;
}

// Bytes of one activation element of a layer kind at a precision (autocast's fp32 list: 4).
[[nodiscard]] constexpr double activation_bytes(precision p, layer_kind k) noexcept {
  if (!autocast(p)) return 4.0;
  return (k == layer_kind::layer_norm || k == layer_kind::softmax || k == layer_kind::loss) ? 4.0 : 2.0;
}

inline constexpr std::int64_t gemm_tile = 128;  // cuBLAS's typical output tile (see the top)

// A tensor-core GEMM whose operands' rows are not a multiple of 16 bytes long runs on cuBLAS's
// kernels with narrow (2- or 4-byte) loads (NVIDIA, "Matrix Multiplication Background User's
// Guide", 2.2 Tensor Core Requirements: M, N, K multiples of 16 bytes perform better). A linear
// layer's three products (Y = X W^T, dX = dY W, dW = dY^T X) have leading dimensions n and k (out
// and in features), never m, so n or k decides; a batched matmul alike. The rate such a product
// reaches, as a fraction of the aligned one: measured by tests/bench/compute_measure.py --by-op on
// one H200 (PyTorch 2.11, cuBLAS's sm75-generation align1 kernels were picked), GPT-2's tied LM head
// in bf16 (4,096 x 50,257 x 768): forward 94.8, input gradient 132.5, weight gradient 145.0
// TFLOP/s, that is 0.120, 0.167 and 0.183 of the aligned rate (989.5 x 0.801). Their geometric
// mean is taken for every device and 16-bit or TF32 unit (fp32's SIMT kernels have no such
// requirement); the H100 rows, measured on the same software, are the check that it carries over.
inline constexpr double misaligned_gemm_efficiency = 0.155;

// Whether a linear layer's or batched matmul's operand rows (n or k elements of `bytes` each)
// are not a multiple of 16 bytes; roofline::gemm slows such a product where it runs on a
// tensor-core unit (`tensor_unit`).
[[nodiscard]] constexpr bool misaligned_gemm(std::int64_t n, std::int64_t k, double bytes) noexcept {
  const std::int64_t align = bytes >= 4.0 ? 4 : 8;  // elements in 16 bytes
  return n % align != 0 || k % align != 0;
}

// cuDNN's implicit-GEMM weight gradient (the `wgrad` kernels of a convolution that is not a plain
// GEMM) runs slower in TF32 than the unit's rate against bf16 says. Measured by compute_measure.py
// --per-layer --kernels on one H200 (tests/data/compute/h200-resnet50-kernels.jsonl), ResNet-50's
// sixteen 3 x 3 convolutions at batch 32: their TF32 wgrad kernels took 2.39-3.21x their bf16
// ones, where the datasheet's rates (494.5 against 989.5 TFLOP/s) give 2; the geometric mean over
// the 16 of (TF32 time / bf16 time) / 2 is 1.397 (each layer 1.19-1.61). Their dgrad keeps the
// datasheet's ratio (0.86-1.15), their forward mostly (0.79-1.05; 1.36-1.39 at 56 x 56). The
// other convolutions that are not plain GEMMs differ (the 7 x 7 stem 0.53, the stride-2 1 x 1
// downsamples 0.89-1.35) and are charged the same. Taken for every device with a TF32 unit; the
// H100 rows are its check.
inline constexpr double tf32_wgrad_slowdown = 1.40;

// NCHW max pooling is bound by the SMs, not by device memory. PyTorch's NCHW kernels
// (aten/src/ATen/native/cuda/DilatedMaxPool2d.cu) run one thread per output element over its
// window in forward; in backward, after zeroing the input gradient, one thread per input element
// that recomputes which windows cover it (integer division) and loads each window's saved 8-byte
// index, then its gradient (dependent loads). Measured by tests/bench/compute_measure.py
// --per-layer (tests/data/compute/*-layers.jsonl, VGG16's five 2 x 2 pools and ResNet-50's 3 x 3
// pool, fp32 and bf16): the H100 (3.35 TB/s) takes the same time as the H200 (4.8 TB/s), and bf16
// the same as fp32, so neither bandwidth nor bytes decide; both devices have 132 SMs. Per input
// element, in SM-seconds (the time x SMs): the geometric mean over the H200's 12 layers of the
// time less the kernel floor (backward: less the zeroing kernel), forward 0.39 ns and backward
// 1.29 ns; a layer differs from it by at most 25 % (the 3 x 3 window's 0.75 forward). The H100's
// layers are the check (forward 0.75-1.23, backward 0.91-1.05 of measured). The figure is taken
// for every device with SMs (their number scales it; their clock and latency do not enter, an
// assumption beyond the one SM generation measured). channels_last runs other kernels
// (max_pool_*_nhwc, shared-memory tiles over channels), not measured: bandwidth only.
inline constexpr double max_pool_forward_sm_seconds = 0.39e-9;
inline constexpr double max_pool_backward_sm_seconds = 1.29e-9;

// A layer norm over M rows of N values (layer::m, layer::n) runs PyTorch's kernels
// (aten/src/ATen/native/cuda/layer_norm_kernel.cu): forward and the input gradient a block of 128
// threads per row, 16 of them an SM, each a latency-bound reduction of its row (mean and variance,
// then the normalized row); the weight and bias gradients reduce each column over the M rows.
// Time per wave of 16 x SMs rows: forward `layer_norm_forward_wave` + N x
// `layer_norm_forward_wave_element`, input gradient likewise; the weight and bias gradients
// `layer_norm_gamma_row` + N x `layer_norm_gamma_element` SM-seconds per row. Each kernel moves
// at least its bytes (the table at the top). Measured by compute_measure.py --by-op on one H200
// (PyTorch 2.11; fp32 and bf16 alike: the kernels run in fp32 under autocast): Swin-T's and
// ConvNeXt-T's 29 and 23 layer norms of 96-1,536 values (tests/data/compute/
// h200-exported-by-op.jsonl; their forward waves 3.3 us, the input gradient's 1.7 us, the
// columns' 131-156 ns a row) and GPT-2's and BERT-large's of 768 and 1,024 at 4,096 rows
// (tests/data/compute/h200-by-op.jsonl; 4.6 and 5.2 us a forward wave, 416 and 599 ns a row).
// Without M and N (or SMs) a layer norm is its bytes alone.
inline constexpr double layer_norm_forward_wave = 2.8e-6, layer_norm_forward_wave_element = 2.4e-9;
inline constexpr double layer_norm_dgrad_wave = 1.5e-6, layer_norm_dgrad_wave_element = 2.6e-9;
inline constexpr double layer_norm_gamma_row = 104e-9, layer_norm_gamma_element = 0.41e-9;
inline constexpr std::int64_t layer_norm_rows_per_sm = 16;

// A depthwise convolution (layer::groups = n: one input and one output channel per group) on an
// NCHW tensor runs on PyTorch's own kernels (aten/src/ATen/native/cuda/DepthwiseConv2d.cu; cuDNN
// only for channels_last inputs), at any precision:
//   forward      one thread per output element, its kh x kw taps: `depthwise_forward_output` +
//                taps x `depthwise_forward_tap` SM-seconds per output element;
//   input grad   one thread per input element, the taps that cover it: `depthwise_dgrad_input`
//                SM-seconds per input element (the kernel size hardly matters: 3 x 3 and 5 x 5 alike);
//   weight grad  a block of 256 threads (8 warps) per weight element (channel, kh, kw), each warp
//                reducing its images' products over the output's positions 32 at a time, up to 8
//                blocks an SM: ceil(blocks / (8 SMs)) waves of about ceil(batch x Hout x Wout / 256)
//                steps, `depthwise_wgrad_step` seconds each (the latency of the step's loads, as in
//                batch norm's reductions above).
// Each kernel moves at least its bytes at the memory rate. Measured by compute_measure.py --by-op
// on one H200 (PyTorch 2.11, batch 32): EfficientNet-B0's 16 and MobileNetV3-Large's 15 depthwise
// layers, 3 x 3 and 5 x 5, stride 1 and 2, fp32 and bf16 taking the same time
// (tests/data/compute/h200-exported-by-op.jsonl). The forward figures are EfficientNet-B0's (per
// output element 1.27 ns at 9 taps, 2.08 ns at 25); its kernels' per-element input-gradient times
// are 2.1-2.8 ns and MobileNetV3's 2.1-2.8 ns; the weight gradient's step 0.42 and 0.36 us (the
// geometric mean taken). MobileNetV2 and ShuffleNetV2, measured alike, are their check.
inline constexpr double depthwise_forward_output = 0.81e-9;
inline constexpr double depthwise_forward_tap = 0.051e-9;
inline constexpr double depthwise_dgrad_input = 2.3e-9;
inline constexpr double depthwise_wgrad_step = 0.39e-6;

// Time of kernels of a device: the roofline and the floor.
struct roofline {
  const device_compute* device = nullptr;

  [[nodiscard]] constexpr double memory_rate() const noexcept { return device->memory_bandwidth * device->memory_efficiency; }
  // One memory-bound kernel moving `bytes`.
  [[nodiscard]] constexpr double memory(double bytes) const noexcept {
    return device->kernel_floor + bytes / memory_rate();
  }
  // One kernel moving `bytes` that also keeps every SM busy for `sm_seconds` in all (the slower
  // of the two; a device without an SM count: bytes only).
  [[nodiscard]] constexpr double memory_or_sms(double bytes, double sm_seconds) const noexcept {
    const double sms = device->multiprocessors > 0 ? sm_seconds / static_cast<double>(device->multiprocessors) : 0.0;
    return device->kernel_floor + std::max(bytes / memory_rate(), sms);
  }
  // `count` products of m x n x k on `unit`: operands of `in_bytes`, output of `out_bytes` per
  // element. Returns the time of the GEMM kernel (and of its split-K reduction, when it has one).
  // `moved` > 0 replaces the bytes of the operands and the output (an implicit-GEMM convolution
  // reads its input once, not the m x k im2col matrix).
  // `misaligned`: the operands' rows are not 16-byte multiples (misaligned_gemm_efficiency, on
  // a tensor-core unit of the device's; fp32, and a missing unit's fallback to it, are not slowed).
  // `efficiency` scales the rate further (a kernel family measured below it: tf32_wgrad_slowdown).
  [[nodiscard]] constexpr double gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t count, math_unit unit,
                                      double in_bytes, double out_bytes, double moved = 0.0, bool misaligned = false,
                                      double efficiency = 1.0) const noexcept {
    // a unit the device lacks falls back to fp32's SIMT kernels, which need no alignment
    const bool slow = misaligned && tensor_unit(*device, unit);
    const double rate =
        peak(*device, unit) * device->matmul_efficiency * (slow ? misaligned_gemm_efficiency : 1.0) * efficiency;
    const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k),
                 dc = static_cast<double>(count);
    const double bytes = moved > 0.0 ? moved : dc * ((dm * dk + dk * dn) * in_bytes + dm * dn * out_bytes);
    const std::int64_t sms = device->multiprocessors;
    if (sms <= 0) return device->kernel_floor + std::max(2.0 * dm * dn * dk * dc / rate, bytes / memory_rate());
    const std::int64_t tm = tile_for(m), tn = tile_for(n);
    const std::int64_t tiles = ceil_div(m, tm) * ceil_div(n, tn) * count;
    std::int64_t slices = 1;
    if (tiles < sms) slices = std::max<std::int64_t>(1, std::min(sms / tiles, k / gemm_tile));
    const std::int64_t waves = ceil_div(tiles * slices, sms);
    const double per_tile = 2.0 * double(tm) * double(tn) * static_cast<double>(ceil_div(k, slices));
    const double math = static_cast<double>(waves) * per_tile / (rate / static_cast<double>(sms));
    double t = device->kernel_floor + std::max(math, bytes / memory_rate());
    if (slices > 1) t += memory(static_cast<double>(slices + 1) * dm * dn * dc * 4.0);  // fp32 partials in, result out
    return t;
  }

  // The tile side along one output axis: 128, or the smallest of 64, 32, 16 that covers a shorter
  // axis (cuBLAS/cuDNN heuristics choose narrow tiles for narrow outputs).
  [[nodiscard]] static constexpr std::int64_t tile_for(std::int64_t dim) noexcept {
    std::int64_t t = 16;
    while (t < gemm_tile && t < dim) t *= 2;
    return t;
  }
  [[nodiscard]] static constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }
};

// The time of one layer: forward, and backward (all of it, attributed to `layer::tensor`).
struct layer_time {
  double forward = 0.0, backward = 0.0;
};

// ---- batch norm --------------------------------------------------------------------------------
// Training-mode batch norm over an NCHW tensor (layer::m = N, layer::n = C; R = N x H x W elements
// per channel) reduces each channel, and both implementations PyTorch runs give every channel a
// thread block of its own: a block's time is the latency of its dependent loads, and a layer's is
// that times the waves of blocks the device holds at once. Device memory is not what binds (the
// roofline's bytes alone predict 0.2-0.7 of the measured times). Measured by
// tests/bench/norm_measure.py on one H200 (PyTorch 2.11.0+cu130 and its cuDNN), 259 shapes
// N in 8..128, C in 16..2048, H = W in 7..112 for each precision (tests/data/compute/
// h200-batchnorm.jsonl); the figures below are fitted there (the 90th-percentile error least on a
// grid) and checked against the batch norms inside ResNet-50 on the H200 at batch 32 and 64 and on
// an H100 at batch 32, and at batch 16 and 128 measured after the fit (tests/data/compute/
// *-layers*.jsonl; tests/unit/cost_batch_norm.cpp).
//
// bf16 autocast: PyTorch's own kernels (aten/src/ATen/native/cuda/Normalization.cuh; PyTorch
// gives cuDNN no bf16 input).
//   statistics  batch_norm_collect_statistics_kernel: C blocks of 512 threads, tx = the least of
//               32, 64, ..., 512 that covers H x W and ty = 512 / tx, each thread a Welford loop of
//               ceil(N / ty) x ceil(H x W / tx) steps with one dependent load each. Up to 4 blocks
//               share an SM (2,048 threads): ceil(C / (4 SMs)) waves of k = min(4, ceil(C / SMs))
//               blocks per SM. A wave takes `block` + k x `block_per_resident` + steps x the longer
//               of the load's latency and k x `step_issue` (the SM issuing for k blocks). The
//               latency: `cached` while the input fits in a quarter of L2 (0.23 x l2_bytes), `memory`
//               from two thirds (0.67 x) on, linear between (no L2 figure: `memory`).
//   transform   batch_norm_transform_input_kernel: a block per channel and batch row (tx = the
//               larger of the least covering H x W / 4 and min(that covering H x W, 64), ty =
//               64 / tx, C x min(262,144 / C, ceil(N / ty)) blocks); SM-bound: `transform_block` +
//               the elements x `transform_element`, SM-seconds. Each kernel takes at least its
//               bytes at the memory rate (statistics x; transform x, y; backward x, dy, dx), which
//               binds on none of the H200's shapes but may on a device of slower memory.
//   two floors  the running statistics' update and num_batches_tracked += 1.
//   backward    batch_norm_backward_kernel: the statistics' blocks and steps, each step loading x
//               and dy (the reduction) and then writing dx; its L2 test counts both inputs.
// fp32, TF32 and fp16: cuDNN's bn_fw_tr_1C11 / bn_bw_1C11 kernels (and num_batches_tracked += 1,
// a floor, in forward). A channel whose bytes fit one block (forward 98 KiB = 25,088 fp32 values,
// backward 49 KiB) is read once ("singleread"): a wave of `singleread_per_sm` blocks an SM takes
// `singleread_block` + the channel's bytes x `singleread_byte`. A larger channel is walked by a
// block of its own, `large_per_sm` of them an SM: a wave takes `large_block` + the channel's
// values x (their latency, `large_cached` to `large_memory` by the L2 test on the kernel's
// inputs as above, + `large_per_resident` for each other block on the SM). Each kernel moves at
// least its bytes at its share of the memory rate (forward: x, y, and x again when large;
// backward: x, dy, dx, and x and dy again when large).
//
// The figures are the H200's and are taken for every device with SMs; a device's SM count sets
// the waves and its L2 size the latency (the H100, 50 MiB, is the check); their clocks and load
// latencies do not enter, nor a device's threads per SM (2,048 from Volta to Hopper; Turing's
// 1,024 would hold two of PyTorch's blocks, not four), assumptions beyond the one generation
// measured. channels_last and
// layers without their batch and channels: bytes only, as before (two kernels each way).
namespace bn {

struct pytorch_kernel {  // statistics or backward
  double block, block_per_resident, step_cached, step_memory, step_issue;
  double cached_share;  // the 16-bit tensors the L2 test counts
  double bytes;         // bytes per element it moves at least (x; backward: x, dy, dx)
};
inline constexpr pytorch_kernel statistics{0.5e-6, 0.6e-6, 0.23e-6, 0.44e-6, 0.12e-6, 1.0, 2.0};
inline constexpr pytorch_kernel backward{0.5e-6, 0.6e-6, 0.40e-6, 1.00e-6, 0.24e-6, 2.0, 6.0};
inline constexpr double l2_cached = 0.23, l2_missed = 0.67;  // of l2_bytes: the input's bytes
inline constexpr double transform_block = 0.06e-6;         // SM-seconds per block
inline constexpr double transform_element = 0.24e-9;       // SM-seconds per element

struct cudnn_kernel {
  double singleread_bytes;  // a channel of at most this many bytes is read once
  int singleread_per_sm;    // singleread blocks an SM holds
  double singleread_block, singleread_byte;  // seconds per wave, per byte of a channel
  double singleread_passes, singleread_share;  // tensors' bytes moved, at this share of the memory rate
  int large_per_sm;                            // blocks of larger channels an SM holds
  double large_block, large_cached, large_memory, large_per_resident;  // seconds per wave, per value
  double large_passes, large_share, cached_share;  // cached_share: the inputs the L2 test counts
};
inline constexpr cudnn_kernel cudnn_forward{100352.0, 2, 2e-6, 0.075e-9, 2.0, 0.6, 1, 0.0, 0.5e-9, 0.5e-9, 0.0, 3.0, 0.6, 1.0};
inline constexpr cudnn_kernel cudnn_backward{50176.0, 1, 1e-6, 0.125e-9, 3.0, 0.6, 4, 2e-6, 0.6e-9, 1.5e-9, 0.25e-9, 5.0, 0.8, 2.0};

// The share of a kernel's `bytes` of input taken to be in L2 (see above): 1 up to l2_cached of the
// cache, 0 from l2_missed on, linear between; 0 without an L2 figure.
[[nodiscard]] constexpr double cached(double bytes, double l2_bytes) noexcept {
  if (!(l2_bytes > 0.0)) return 0.0;
  return std::clamp((l2_missed * l2_bytes - bytes) / ((l2_missed - l2_cached) * l2_bytes), 0.0, 1.0);
}

// The threads PyTorch gives one dimension of a reduction (Normalization.cuh getNumThreads).
[[nodiscard]] constexpr std::int64_t threads_for(std::int64_t elements) noexcept {
  for (std::int64_t t : {32, 64, 128, 256}) if (elements <= t) return t;
  return 512;
}

}  // namespace bn

// The forward and backward time of a batch norm with its batch and channels (layer::m, layer::n)
// on a device with SMs (see "batch norm" above).
[[nodiscard]] constexpr layer_time batch_norm_time(const layer& l, precision p, const device_compute& d) noexcept {
  const roofline r{&d};
  const double floor = d.kernel_floor;
  const std::int64_t N = l.m, C = l.n, HW = l.elements / l.m / l.n;  // (model_spec::validate: exact)
  const double E = static_cast<double>(l.elements);
  layer_time t;
  if (p == precision::bf16) {
    const std::int64_t tx = bn::threads_for(HW), ty = std::max<std::int64_t>(1, 512 / tx);
    const double steps = static_cast<double>(roofline::ceil_div(N, ty) * roofline::ceil_div(HW, tx));
    const double k = static_cast<double>(std::min<std::int64_t>(4, roofline::ceil_div(C, d.multiprocessors)));
    const double waves = static_cast<double>(roofline::ceil_div(C, 4 * std::int64_t{d.multiprocessors}));
    auto blocks = [&](const bn::pytorch_kernel& q) {
      const double cached = bn::cached(E * 2.0 * q.cached_share, d.l2_bytes);  // the 16-bit input (backward: and dy)
      const double latency = cached * q.step_cached + (1.0 - cached) * q.step_memory;
      const double wave = q.block + k * q.block_per_resident + steps * std::max(latency, k * q.step_issue);
      return floor + std::max(waves * wave, E * q.bytes / r.memory_rate());
    };
    const std::int64_t fx = std::max(bn::threads_for(HW / 4), std::min<std::int64_t>(bn::threads_for(HW), 64));
    const std::int64_t fy = std::max<std::int64_t>(64 / fx, 1);
    const double transform_blocks =
        static_cast<double>(C * std::max<std::int64_t>(1, std::min(262144 / C, roofline::ceil_div(N, fy))));
    t.forward = blocks(bn::statistics) +
                r.memory_or_sms(4.0 * E, transform_blocks * bn::transform_block + E * bn::transform_element) + 2.0 * floor;
    t.backward = blocks(bn::backward);
    return t;
  }
  const double b = activation_bytes(p, l.kind);
  const double R = static_cast<double>(N * HW);
  auto cudnn = [&](const bn::cudnn_kernel& q) {
    const bool single = R * b <= q.singleread_bytes;
    const std::int64_t per_sm = single ? q.singleread_per_sm : q.large_per_sm;
    const double waves = static_cast<double>(roofline::ceil_div(C, per_sm * std::int64_t{d.multiprocessors}));
    double wave = q.singleread_block + R * b * q.singleread_byte;
    if (!single) {
      const double k = static_cast<double>(std::min<std::int64_t>(per_sm, roofline::ceil_div(C, d.multiprocessors)));
      const double cached = bn::cached(E * b * q.cached_share, d.l2_bytes);
      wave = q.large_block + R * (cached * q.large_cached + (1.0 - cached) * q.large_memory + (k - 1.0) * q.large_per_resident);
    }
    const double bytes = (single ? q.singleread_passes : q.large_passes) * E * b;
    return floor + std::max(waves * wave, bytes / (r.memory_rate() * (single ? q.singleread_share : q.large_share)));
  };
  t.forward = cudnn(bn::cudnn_forward) + floor;
  t.backward = cudnn(bn::cudnn_backward);
  return t;
}

// Whether a conv layer runs on PyTorch's depthwise kernels (see depthwise_forward_output): one
// channel per group, NCHW, on a device with SMs (the figures are per SM).
[[nodiscard]] constexpr bool depthwise_native(const layer& l, const device_compute& d) noexcept {
  return l.kind == layer_kind::conv && l.groups > 1 && l.groups == l.n && !l.channels_last && d.multiprocessors > 0;
}

// The kernels of a depthwise convolution on PyTorch's kernels (depthwise_native), `in` bytes an
// element, x input elements: forward, and the input and weight gradients (time_of adds the bias
// and autocast's casts, as for any convolution).
[[nodiscard]] constexpr layer_time depthwise_kernels(const layer& l, double in, double x, const device_compute& d) noexcept {
  const roofline r{&d};
  const double taps = static_cast<double>(l.k);  // kh x kw: one input channel per group
  const double out = static_cast<double>(l.m) * static_cast<double>(l.n);
  const double weights = static_cast<double>(l.n) * taps;
  layer_time t;
  t.forward = r.memory_or_sms((x + out + weights) * in, out * (depthwise_forward_output + taps * depthwise_forward_tap));
  if (l.input_grad) t.backward += r.memory_or_sms((out + weights + x) * in, x * depthwise_dgrad_input);
  if (!l.weight_grad) return t;
  const std::int64_t blocks = l.n * l.k, resident = 8 * std::int64_t{d.multiprocessors};
  const double waves = static_cast<double>(roofline::ceil_div(blocks, resident));
  const double steps = static_cast<double>(roofline::ceil_div(l.m, 256));
  t.backward += d.kernel_floor + std::max(waves * steps * depthwise_wgrad_step, (out + x) * in / r.memory_rate());
  return t;
}

[[nodiscard]] constexpr layer_time time_of(const layer& l, precision p, const device_compute& d, bool sparse_gradient = false) {
  const roofline r{&d};
  const double b = activation_bytes(p, l.kind);
  const double E = static_cast<double>(l.elements);
  const bool mixed = autocast(p);
  layer_time t;
  switch (l.kind) {
    case layer_kind::linear:
    case layer_kind::conv: {
      const math_unit u = unit_of(p, l.kind);
      const double in = mixed ? 2.0 : 4.0;
      const double weights = static_cast<double>(l.n) * static_cast<double>(l.k);
      const double out = static_cast<double>(l.m) * static_cast<double>(l.n);
      // a convolution reads its input once (implicit GEMM): input, weights, output
      const double x = l.kind == layer_kind::conv && l.elements > 0 ? static_cast<double>(l.elements)
                                                                    : static_cast<double>(l.m) * static_cast<double>(l.k);
      const bool conv = l.kind == layer_kind::conv;
      // 1 x 1, stride 1 (input elements = m x k): a plain GEMM over NCHW. A convolution whose
      // kernel equals its stride (a patch embedding) has the same shape and reads as one too.
      const bool pointwise = conv && l.k > 0 && l.elements % l.k == 0 && l.elements / l.k == l.m;
      const bool tensor_cores = tensor_unit(d, u);  // else fp32's SIMT kernels: NCHW as it stands
      const bool depthwise = conv && depthwise_native(l, d);  // PyTorch's own kernels, not cuDNN's
      if (depthwise) {
        t = depthwise_kernels(l, in, x, d);
      } else {
        // cuDNN pads a convolution's channels itself (its NHWC transposes): only linear layers
        const bool slow = !conv && misaligned_gemm(l.n, l.k, in);
        t.forward = r.gemm(l.m, l.n, l.k, l.count, u, in, in, conv ? (x + weights + out) * in : 0.0, slow);
        if (l.input_grad)  // dX = dY W
          t.backward += r.gemm(l.m, l.k, l.n, l.count, u, in, in, conv ? (out + weights + x) * in : 0.0, slow);
        if (l.weight_grad)
          t.backward += r.gemm(l.n, l.k, l.m, l.count, u, in, mixed ? 2.0 : 4.0,  // dW = dY^T X
                               conv ? (out + x) * in + weights * (mixed ? 2.0 : 4.0) : 0.0, slow,
                               conv && !pointwise && u == math_unit::tf32 && tensor_cores ? 1.0 / tf32_wgrad_slowdown : 1.0);
      }
      if (l.bias && l.bias_grad) t.backward += r.memory(static_cast<double>(l.m) * static_cast<double>(l.n) * in);
      if (l.bias && conv) t.forward += r.memory(2.0 * out * in);  // y += b, after the convolution's kernel
      if (conv && !depthwise && !l.channels_last && tensor_cores && !pointwise) {
        // tensor-core convolutions run NHWC: an NCHW network's tensors are transposed on the way
        // in and out (forward: x, W in, y back; backward: the wgrad's dy and x in, dW back, and
        // the dgrad's dy and W in, dx back)
        t.forward += r.memory(2.0 * x * in) + r.memory(2.0 * weights * in) + r.memory(2.0 * out * in);
        if (l.weight_grad) t.backward += r.memory(2.0 * out * in) + r.memory(2.0 * x * in) + r.memory(2.0 * weights * in);
        if (l.input_grad) t.backward += r.memory(2.0 * out * in) + r.memory(2.0 * weights * in) + r.memory(2.0 * x * in);
      }
      if (mixed) {  // the fp32 weight cast to 16 bits (frozen too), its gradient cast back
        t.forward += r.memory(weights * 6.0);
        if (l.weight_grad) t.backward += r.memory(weights * 6.0);
      }
      if (mixed && l.fp32_input) {  // an fp32 input (a layer norm's output) cast alike, each step
        t.forward += r.memory(x * 6.0);
        if (l.input_grad) t.backward += r.memory(x * 6.0);
      }
      break;
    }
    case layer_kind::matmul: {
      const math_unit u = unit_of(p, l.kind);
      const double in = mixed ? 2.0 : 4.0;
      const bool slow = misaligned_gemm(l.n, l.k, in);
      t.forward = r.gemm(l.m, l.n, l.k, l.count, u, in, in, 0.0, slow);
      if (l.input_grad) t.backward += r.gemm(l.m, l.k, l.n, l.count, u, in, in, 0.0, slow);   // dA = dC B^T
      if (l.weight_grad) t.backward += r.gemm(l.k, l.n, l.m, l.count, u, in, in, 0.0, slow);  // dB = A^T dC
      break;
    }
    case layer_kind::attention: {
      // fused attention (FlashAttention-2 structure): one 128-query block of one head per SM at a
      // time, streaming all keys; forward 2 products (S = Q K^T, O = P V), backward 5 (S again,
      // dV, dP, dQ, dK: 2.5x the forward FLOPs); Q, K, V, O in | dO, Q, K, V, O in, dQ, dK, dV out
      const math_unit u = unit_of(p, l.kind);
      const double in = mixed ? 2.0 : 4.0;
      const double rate = peak(d, u) * d.matmul_efficiency;
      const double half = l.causal ? 0.5 : 1.0;
      const std::int64_t blocks = roofline::ceil_div(l.m, gemm_tile) * l.count;
      const double waves = d.multiprocessors > 0
                               ? static_cast<double>(roofline::ceil_div(blocks, d.multiprocessors)) * static_cast<double>(d.multiprocessors)
                               : static_cast<double>(blocks);
      const double fwd_flops = waves * 4.0 * double(gemm_tile) * static_cast<double>(l.n) * static_cast<double>(l.k) * half;
      const double qkvo = 4.0 * static_cast<double>(l.m) * static_cast<double>(l.k) * static_cast<double>(l.count) * in;
      t.forward = d.kernel_floor + std::max(fwd_flops / rate, qkvo / r.memory_rate());
      if (l.input_grad) t.backward = d.kernel_floor + std::max(2.5 * fwd_flops / rate, 2.0 * qkvo / r.memory_rate());
      break;
    }
    case layer_kind::activation:
    case layer_kind::add:
    case layer_kind::scale:
    case layer_kind::copy:
    case layer_kind::dropout: {
      // bytes of one kernel: (reads, writes) in elements, forward | backward
      double fr = 1.0, fw = 1.0, br = 1.0, bw = 1.0, mask = 0.0;
      if (l.kind == layer_kind::activation) br = 2.0;                 // dy and the saved x (or y)
      if (l.kind == layer_kind::add) fr = br = 2.0;                   // two inputs; two gradients meet
      if (l.kind == layer_kind::dropout) mask = 1.0;                  // the 1-byte mask, written, then read
      const double kernels = static_cast<double>(l.count);
      const bool up = mixed && l.upcast;  // fp32 kernels, the input cast up and the output down
      const double eb = up || (mixed && l.fp32_input) ? 4.0 : b;  // fp32_input: fp32 kernels, no casts
      // a residual add (an add on an fp32 input under autocast): a 16-bit branch and the fp32
      // stream in (2 + 4 bytes), fp32 out; in backward the fp32 gradient is also cast to 16 bits
      // for the branch
      const bool residual = mixed && l.fp32_input && l.kind == layer_kind::add;
      const double forward_bytes = residual ? (2.0 + 4.0 + 4.0) * E : (fr + fw) * E * eb;
      t.forward = kernels * r.memory(forward_bytes + mask * E);
      if (l.input_grad) t.backward = kernels * r.memory((br + bw) * E * eb + mask * E);
      if (residual && l.input_grad) t.backward += kernels * r.memory(6.0 * E);
      if (up) {
        t.forward += 2.0 * r.memory(6.0 * E);
        if (l.input_grad) t.backward += 2.0 * r.memory(6.0 * E);
      }
      break;
    }
    case layer_kind::softmax:
      t.forward = r.memory(2.0 * E * b);
      if (l.input_grad) t.backward = r.memory(3.0 * E * b);
      if (mixed) {  // autocast: 16-bit scores cast up, probabilities cast down; and back in backward
        t.forward += r.memory(6.0 * E) + r.memory(6.0 * E);
        if (l.input_grad) t.backward += r.memory(6.0 * E) + r.memory(6.0 * E);
      }
      break;
    case layer_kind::batch_norm:  // one backward pass computes every gradient: none only without any
      if (l.m > 0 && l.n > 0 && !l.channels_last && d.multiprocessors > 0) t = batch_norm_time(l, p, d);
      else {
        t.forward = r.memory(E * b) + r.memory(2.0 * E * b);
        t.backward = r.memory(2.0 * E * b) + r.memory(3.0 * E * b);
      }
      if (!l.input_grad && !l.weight_grad && !l.bias_grad) t.backward = 0.0;
      break;
    case layer_kind::layer_norm:
      if (l.m > 0 && l.n > 0 && d.multiprocessors > 0) {  // PyTorch's kernels (layer_norm_forward_wave)
        const double N = static_cast<double>(l.n), sms = static_cast<double>(d.multiprocessors);
        const double waves = static_cast<double>(roofline::ceil_div(l.m, layer_norm_rows_per_sm * d.multiprocessors));
        const double rate = r.memory_rate();
        t.forward = d.kernel_floor + std::max(2.0 * E * b / rate, waves * (layer_norm_forward_wave + N * layer_norm_forward_wave_element));
        if (l.input_grad)
          t.backward += d.kernel_floor + std::max(3.0 * E * b / rate, waves * (layer_norm_dgrad_wave + N * layer_norm_dgrad_wave_element));
        if (l.weight_grad || l.bias_grad)  // one kernel reduces both columns (added in this order: the same bits as before)
          t.backward = t.backward + d.kernel_floor +
                       std::max(2.0 * E * b / rate, static_cast<double>(l.m) * (layer_norm_gamma_row + N * layer_norm_gamma_element) / sms);
        break;
      }
      t.forward = r.memory(2.0 * E * b);
      if (l.input_grad) t.backward += r.memory(3.0 * E * b);
      if (l.weight_grad || l.bias_grad) t.backward += r.memory(2.0 * E * b);
      break;
    case layer_kind::max_pool: {
      const double out = static_cast<double>(l.outputs);
      const double nchw = l.channels_last ? 0.0 : E;  // input elements the SM-bound NCHW kernels walk
      t.forward = r.memory_or_sms(E * b + out * (b + 8.0), nchw * max_pool_forward_sm_seconds);
      if (l.input_grad) t.backward = r.memory(E * b) + r.memory_or_sms(out * (b + 8.0) + E * b, nchw * max_pool_backward_sm_seconds);
      break;
    }
    case layer_kind::avg_pool: {
      const double out = static_cast<double>(l.outputs);
      t.forward = r.memory(E * b + out * b);
      if (l.input_grad) t.backward = r.memory(out * b + E * b);
      break;
    }
    case layer_kind::embedding: {
      // the table and its gradient stay fp32 (autocast does not cast embeddings)
      const double lookups = l.n > 0 ? E / static_cast<double>(l.n) : E;
      t.forward = r.memory(2.0 * E * 4.0 + 8.0 * lookups);
      if (!l.weight_grad) break;  // a frozen table: its indices need no gradient
      if (sparse_gradient) {  // a sparse COO gradient: the indices and the rows of dY, copied once
        t.backward = r.memory(2.0 * E * 4.0 + 2.0 * 8.0 * lookups);
        break;
      }
      const double sort_and_sum = (2.0 * E * 4.0 + 8.0 * 4.0 * lookups) / 6.0;  // spread over 6 kernels
      for (int i = 0; i < 6; ++i) t.backward += r.memory(sort_and_sum);
      t.backward += r.memory(static_cast<double>(l.m) * static_cast<double>(l.n) * 4.0);
      break;
    }
    case layer_kind::loss:
      t.forward = r.memory(2.0 * E * b) + r.memory(0.0);  // log-softmax; NLL reads one value per row
      if (l.input_grad) t.backward = r.memory(E * b) + r.memory(0.0) + r.memory(3.0 * E * b);  // zeros, scatter, log-softmax
      if (mixed) {  // 16-bit logits cast up; the gradient cast back down
        t.forward += r.memory(6.0 * E);
        if (l.input_grad) t.backward += r.memory(6.0 * E);
      }
      break;
  }
  if (l.recompute) t.backward += t.forward;  // activation checkpointing: the forward again, then backward
  return t;
}

// Compute of one model on one device: forward, and the backward time attributed to each tensor
// (`backward[t]`: the layers whose backward makes tensor t ready), `tail`: backward work that
// comes after the last tensor is ready (layers attributed to no tensor), and for a measured
// profile each tensor's measured ready time.
struct compute_times {
  double forward = 0.0;
  std::vector<double> backward;     // per tensor, forward order
  double tail = 0.0;
  std::vector<double> ready;        // measured profile only: seconds after backward starts, per tensor
  enum class source : std::uint8_t { profile, layers, flops } from = source::flops;

  [[nodiscard]] constexpr double backward_total() const noexcept {
    double s = tail;
    for (double v : backward) s += v;
    return s;
  }
};

// The rate FLOPs-only compute runs at: the device's matrix rate at the model's precision (the
// unit of its linear layers), or `device_flops` when the device is not described.
[[nodiscard]] constexpr double flops_rate(const device_compute& d, double device_flops, precision p) noexcept {
  if (!d.described()) return device_flops > 0.0 ? device_flops : 1.0;
  return peak(d, unit_of(p, layer_kind::linear)) * d.matmul_efficiency;
}

[[nodiscard]] constexpr compute_times compute(const model_spec& m, const device_compute& d, double device_flops) {
  compute_times c;
  const std::size_t T = m.tensors.size();
  c.backward.assign(T, 0.0);
  if (m.has_profile()) {
    c.from = compute_times::source::profile;
    c.forward = m.measured_forward;
    c.ready.resize(T);
    // per-tensor shares from the ready times in ready order (the timeline reads `ready`)
    double last = 0.0;
    for (auto i : m.backward_order()) {
      const double at = std::max(last, m.tensors[i].ready_time);
      c.ready[i] = at;
      c.backward[i] = at - last;
      last = at;
    }
    c.tail = std::max(0.0, m.measured_backward - last);
    return c;
  }
  if (!m.layers.empty() && d.described()) {
    c.from = compute_times::source::layers;
    for (const auto& l : m.layers) {
      const bool sparse = l.tensor >= 0 && m.tensors[static_cast<std::size_t>(l.tensor)].sparse;
      const auto lt = time_of(l, m.training_precision, d, sparse);
      c.forward += lt.forward;
      if (l.tensor >= 0)
        c.backward[static_cast<std::size_t>(l.tensor)] += lt.backward;
      else
        c.tail += lt.backward;
    }
    return c;
  }
  c.from = compute_times::source::flops;
  const double rate = flops_rate(d, device_flops, m.training_precision);
  c.forward = m.forward_flops / rate;
  for (std::size_t i = 0; i < T; ++i) c.backward[i] = m.tensors[i].backward_flops / rate;
  return c;
}

// On a cluster: data parallelism waits for the slowest device, so the worker node whose device
// takes longest for forward + backward sets the compute (one evaluation per distinct device).
[[nodiscard]] constexpr compute_times compute(const model_spec& m, const cluster_spec& c) {
  compute_times best;
  bool any = false;
  const node_spec* seen = nullptr;
  for (const auto& n : c.nodes) {
    if (n.server_only) continue;
    if (seen && n.compute == seen->compute && n.device_flops == seen->device_flops) continue;
    seen = &n;
    auto t = compute(m, n.compute, n.device_flops);
    if (!any || t.forward + t.backward_total() > best.forward + best.backward_total()) best = std::move(t);
    any = true;
    if (best.from == compute_times::source::profile) break;  // the profile does not depend on the device
  }
  if (!any) best.backward.assign(m.tensors.size(), 0.0);
  return best;
}

}  // namespace autosync::cost
