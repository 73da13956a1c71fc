// autosync/exec/codecs/element.hpp — the per-element arithmetic of the codecs, written once for
// the CPU codecs (exec/codecs/*.hpp) and the CUDA kernels (exec/nccl/codec_kernels.cuh).
//
// Every function is `__host__ __device__` under nvcc. Each floating-point operation is one IEEE
// operation rounded to nearest even on both sides: on the device through the _rn intrinsics,
// which nvcc never contracts into a fused multiply-add (a plain a * b + c may become an FMA on
// the GPU and give other bits than the CPU). So the same inputs give the same bytes on the CPU
// and the GPU; tests/cuda checks it where a GPU is present.
//
// The L2 norm of a QSGD bucket is summed in double in a fixed shape both sides share: lane j of
// `norm_lanes` accumulates elements j, j + lanes, j + 2 lanes, ... in order, then the lanes are
// added pairwise (lane j += lane j + h for h = lanes / 2, ..., 1), the order of a 256-thread
// block's shared-memory tree.
#pragma once

#include <autosync/exec/codecs/random.hpp>

#include <cstdint>

namespace autosync::exec::codecs::element {

inline constexpr int norm_lanes = 256;

AUTOSYNC_CODEC_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
AUTOSYNC_CODEC_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
AUTOSYNC_CODEC_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
AUTOSYNC_CODEC_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
AUTOSYNC_CODEC_HD double dmul_add(double acc, float x) {  // acc + x * x, two roundings
#if defined(__CUDA_ARCH__)
  return __dadd_rn(acc, __dmul_rn(static_cast<double>(x), static_cast<double>(x)));
#else
  const double sq = static_cast<double>(x) * static_cast<double>(x);
  return acc + sq;
#endif
}
AUTOSYNC_CODEC_HD double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// ---- int8 min-max --------------------------------------------------------------------------
// q = round_to_nearest_even(clamp((x - mn) * scale, 0, 255)) by the 1.5 * 2^23 trick.
AUTOSYNC_CODEC_HD std::uint8_t int8_quantize(float x, float mn, float scale) {
  float v = mul(sub(x, mn), scale);
  v = v > 0.0f ? v : 0.0f;  // NaN -> 0 (a chunk with NaN has a NaN header anyway)
  v = v < 255.0f ? v : 255.0f;
  const float m = 12582912.0f;
  return static_cast<std::uint8_t>(sub(add(v, m), m));
}
AUTOSYNC_CODEC_HD float int8_dequantize(std::uint8_t q, float mn, float step) { return add(mn, mul(static_cast<float>(q), step)); }

// ---- QSGD ----------------------------------------------------------------------------------
// The code of one element: the level index it is rounded to (stochastically, with `draw` in
// [0, 1)) and, above level 0, its sign in bit `index_bits`. `l` holds the L + 1 levels.
AUTOSYNC_CODEC_HD std::uint32_t qsgd_code(float v, float inv, const float* l, int L, bool uniform, int index_bits, float draw) {
  float u = mul(v < 0.0f ? -v : v, inv);
  u = u < 1.0f ? u : 1.0f;  // and NaN -> 1 (its norm is NaN too: it decodes to NaN)
  int j;
  if (uniform) {
    j = static_cast<int>(mul(u, static_cast<float>(L)));
    j = j < L - 1 ? j : L - 1;
    if (u < l[j]) --j;
    else if (j + 1 < L && u >= l[j + 1]) ++j;
  } else {
    int lo = 0, hi = L;  // the last j in [0, L) with l[j] <= u
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (l[mid] <= u) lo = mid;
      else hi = mid;
    }
    j = lo;
  }
  const float pr = div(sub(u, l[j]), sub(l[j + 1], l[j]));
  const int sent = draw < pr ? j + 1 : j;
  const bool negative = v < 0.0f || (v == 0.0f && 1.0f / v < 0.0f);
  return static_cast<std::uint32_t>(sent) | (negative && sent > 0 ? 1u << index_bits : 0u);
}
AUTOSYNC_CODEC_HD float qsgd_value(std::uint32_t code, float norm, const float* l, int L, int index_bits) {
  std::uint32_t j = code & ((1u << index_bits) - 1u);
  j = j < static_cast<std::uint32_t>(L) ? j : static_cast<std::uint32_t>(L);
  const float mag = mul(norm, l[j]);
  return (code >> index_bits) & 1u ? -mag : mag;
}

}  // namespace autosync::exec::codecs::element
