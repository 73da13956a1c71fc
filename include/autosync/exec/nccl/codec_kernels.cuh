// autosync/exec/nccl/codec_kernels.cuh — CUDA kernels of the compression codecs (nvcc only).
//
// The same bytes as the CPU codecs of exec/codecs/ (the per-element arithmetic is
// exec/codecs/element.hpp's, IEEE operations rounded to nearest on both sides, no FMA):
//
//   int8_encode     one block per chunk: min / max / finiteness by a block reduction (exact in
//                   any order), then every thread quantizes its elements; the chunk's header
//                   {min, max} first, as exec/codecs/int8_minmax.hpp lays it out
//   int8_decode     a grid-stride loop over the elements (x = or x +=)
//   qsgd_encode     one block of element::norm_lanes threads per bucket: the L2 norm in double in
//                   element.hpp's fixed order (lane sums, then the pairwise tree), the word
//                   padding zeroed, then each element's code OR-ed into its 32-bit word(s)
//   qsgd_decode     a grid-stride loop: each element reads its bits from one or two words
//   scatter_add     x[idx[j]] += val[j] for one payload of distinct indices (a rank's top-k or
//                   random-k pairs; payloads added one after another, in rank order, so the sum
//                   has the CPU's order and no atomics)
//   gather_values   val[j] = x[idx[j]] (random-k: the shared indices are drawn on the host)
//
// Not yet on the GPU: top-k selection and PowerSGD's products (the CPU codecs serve).
// Launchers take device pointers and a stream and return the launch's cudaError_t.
// tests/cuda/codecs_gpu.cu checks every kernel against the CPU codec, byte for byte.
#pragma once

#if !defined(__CUDACC__)
#error "autosync/exec/nccl/codec_kernels.cuh is CUDA source: compile it with nvcc (a .cu file)"
#endif

#include <autosync/exec/codecs/element.hpp>
#include <autosync/exec/codecs/int8_minmax.hpp>
#include <autosync/exec/codecs/qsgd.hpp>
#include <autosync/exec/codecs/random.hpp>

#include <cuda_runtime.h>

#include <cstdint>

namespace autosync::exec::nccl::codec {

namespace detail {

inline constexpr int threads = 256;
static_assert(threads == codecs::element::norm_lanes, "the QSGD norm's lanes are one block's threads");

inline int grid_for(std::int64_t n) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

__global__ void __launch_bounds__(threads) int8_encode_kernel(const float* x, std::int64_t n, std::int64_t chunk, unsigned char* out) {
  namespace el = codecs::element;
  const std::int64_t c = blockIdx.x, begin = c * chunk;
  const std::int64_t k = n - begin < chunk ? n - begin : chunk;
  unsigned char* head = out + c * (static_cast<std::int64_t>(codecs::int8_minmax::header_bytes) + chunk);
  __shared__ float smn[threads], smx[threads];
  __shared__ int sbad[threads];
  float mn = x[begin], mx = x[begin];
  int bad = 0;
  for (std::int64_t i = threadIdx.x; i < k; i += threads) {
    const float v = x[begin + i];
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    bad |= !isfinite(v);
  }
  smn[threadIdx.x] = mn;
  smx[threadIdx.x] = mx;
  sbad[threadIdx.x] = bad;
  __syncthreads();
  for (int h = threads / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) {
      smn[threadIdx.x] = fminf(smn[threadIdx.x], smn[threadIdx.x + h]);
      smx[threadIdx.x] = fmaxf(smx[threadIdx.x], smx[threadIdx.x + h]);
      sbad[threadIdx.x] |= sbad[threadIdx.x + h];
    }
    __syncthreads();
  }
  mn = smn[0];
  mx = smx[0];
  const bool finite = sbad[0] == 0;
  if (!finite) mn = mx = __int_as_float(0x7fc00000);  // quiet NaN, as the CPU's quiet_NaN()
  if (threadIdx.x == 0) {
    memcpy(head, &mn, sizeof mn);
    memcpy(head + sizeof mn, &mx, sizeof mx);
  }
  unsigned char* q = head + codecs::int8_minmax::header_bytes;
  const float range = el::sub(mx, mn);
  if (!finite || !(range > 0.0f) || !isfinite(range)) {
    const bool wide = finite && !isfinite(range);
    const double dmn = mn, s = wide ? 255.0 / (static_cast<double>(mx) - dmn) : 0.0;
    for (std::int64_t i = threadIdx.x; i < k; i += threads)
      q[i] = wide ? static_cast<unsigned char>(rint((static_cast<double>(x[begin + i]) - dmn) * s)) : 0;
    return;
  }
  const float scale = el::div(255.0f, range);
  for (std::int64_t i = threadIdx.x; i < k; i += threads) q[i] = el::int8_quantize(x[begin + i], mn, scale);
}

__global__ void __launch_bounds__(threads) int8_decode_kernel(const unsigned char* in, std::int64_t n, std::int64_t chunk, float* x, bool add) {
  namespace el = codecs::element;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(threads) + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * threads) {
    const std::int64_t c = i / chunk;
    const unsigned char* head = in + c * (static_cast<std::int64_t>(codecs::int8_minmax::header_bytes) + chunk);
    float mn, mx;
    memcpy(&mn, head, sizeof mn);
    memcpy(&mx, head + sizeof mn, sizeof mx);
    const std::uint8_t q = head[codecs::int8_minmax::header_bytes + (i - c * chunk)];
    const double drange = static_cast<double>(mx) - static_cast<double>(mn);
    float v;
    if (isfinite(mn) && isfinite(mx) && !isfinite(el::sub(mx, mn)))
      v = static_cast<float>(mn + q * (drange / 255.0));
    else
      v = el::int8_dequantize(q, mn, static_cast<float>(drange / 255.0));
    x[i] = add ? el::add(x[i], v) : v;
  }
}

__global__ void __launch_bounds__(threads) qsgd_encode_kernel(const float* x, std::int64_t n, std::int64_t bucket, const float* levels, int L,
                                                              bool uniform, bool max_norm, codecs::counter_rng rng, std::uint64_t offset,
                                                              unsigned char* out) {
  namespace el = codecs::element;
  const std::int64_t b = blockIdx.x, begin = b * bucket;
  const std::int64_t k = n - begin < bucket ? n - begin : bucket;
  const int ib = codecs::qsgd::index_bits(L), bits = ib + 1;
  // this bucket's offset: every earlier bucket is full
  unsigned char* head = out + b * static_cast<std::int64_t>(codecs::qsgd::bucket_bytes(static_cast<std::size_t>(bucket), L));
  std::uint32_t* words = reinterpret_cast<std::uint32_t*>(head + sizeof(float));
  const std::int64_t nwords = (k * bits + 31) / 32;
  __shared__ double lane[threads];
  __shared__ float snorm;
  double acc = 0.0;
  float m = 0.0f;
  for (std::int64_t i = threadIdx.x; i < k; i += threads) {
    const float v = x[begin + i];
    if (max_norm) m = fmaxf(m, fabsf(v));
    else acc = el::dmul_add(acc, v);
  }
  lane[threadIdx.x] = max_norm ? static_cast<double>(m) : acc;
  for (std::int64_t w = threadIdx.x; w < nwords; w += threads) words[w] = 0u;
  __syncthreads();
  for (int h = threads / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) lane[threadIdx.x] = max_norm ? fmax(lane[threadIdx.x], lane[threadIdx.x + h]) : el::dadd(lane[threadIdx.x], lane[threadIdx.x + h]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    snorm = max_norm ? static_cast<float>(lane[0]) : static_cast<float>(sqrt(lane[0]));
    memcpy(head, &snorm, sizeof snorm);
  }
  __syncthreads();
  const float nrm = snorm;
  const float inv = nrm > 0.0f && isfinite(nrm) ? el::div(1.0f, nrm) : 0.0f;
  for (std::int64_t i = threadIdx.x; i < k; i += threads) {
    const std::uint32_t code = el::qsgd_code(x[begin + i], inv, levels, L, uniform, ib, rng.uniform(offset + static_cast<std::uint64_t>(begin + i)));
    const std::int64_t bit = i * bits;
    const int s = static_cast<int>(bit % 32);
    atomicOr(&words[bit / 32], code << s);
    if (s + bits > 32) atomicOr(&words[bit / 32 + 1], code >> (32 - s));
  }
}

__global__ void __launch_bounds__(threads) qsgd_decode_kernel(const unsigned char* in, std::int64_t n, std::int64_t bucket, const float* levels, int L,
                                                              float* x, bool add) {
  namespace el = codecs::element;
  const int ib = codecs::qsgd::index_bits(L), bits = ib + 1;
  const auto stride = static_cast<std::int64_t>(codecs::qsgd::bucket_bytes(static_cast<std::size_t>(bucket), L));
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(threads) + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * threads) {
    const std::int64_t b = i / bucket, j = i - b * bucket;
    const unsigned char* head = in + b * stride;
    float nrm;
    memcpy(&nrm, head, sizeof nrm);
    const std::uint32_t* words = reinterpret_cast<const std::uint32_t*>(head + sizeof(float));
    const std::int64_t bit = j * bits;
    const int s = static_cast<int>(bit % 32);
    std::uint64_t two = words[bit / 32];
    if (s + bits > 32) two |= static_cast<std::uint64_t>(words[bit / 32 + 1]) << 32;
    const auto code = static_cast<std::uint32_t>((two >> s) & ((1ull << bits) - 1));
    const float v = el::qsgd_value(code, nrm, levels, L, ib);
    x[i] = add ? el::add(x[i], v) : v;
  }
}

__global__ void __launch_bounds__(threads) scatter_add_kernel(const std::uint32_t* idx, const float* val, std::int64_t k, float* x, std::int64_t n) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(threads) + threadIdx.x; j < k; j += static_cast<std::int64_t>(gridDim.x) * threads)
    if (idx[j] < n) x[idx[j]] = codecs::element::add(x[idx[j]], val[j]);
}

__global__ void __launch_bounds__(threads) gather_kernel(const float* x, const std::uint32_t* idx, std::int64_t k, float* val) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(threads) + threadIdx.x; j < k; j += static_cast<std::int64_t>(gridDim.x) * threads)
    val[j] = x[idx[j]];
}

}  // namespace detail

// out: int8_minmax::wire_bytes(n, chunk) bytes of device memory.
inline cudaError_t int8_encode(const float* x, std::int64_t n, std::int64_t chunk, unsigned char* out, cudaStream_t s) {
  if (n <= 0 || chunk <= 0) return cudaSuccess;
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  if (chunks > 0x7fffffff) return cudaErrorInvalidValue;
  detail::int8_encode_kernel<<<static_cast<unsigned>(chunks), detail::threads, 0, s>>>(x, n, chunk, out);
  return cudaGetLastError();
}
inline cudaError_t int8_decode(const unsigned char* in, std::int64_t n, std::int64_t chunk, float* x, bool add, cudaStream_t s) {
  if (n <= 0 || chunk <= 0) return cudaSuccess;
  detail::int8_decode_kernel<<<detail::grid_for(n), detail::threads, 0, s>>>(in, n, chunk, x, add);
  return cudaGetLastError();
}
// levels: L + 1 floats of device memory (qsgd::levels::l); uniform: they are uniform_levels(L).
inline cudaError_t qsgd_encode(const float* x, std::int64_t n, std::int64_t bucket, const float* levels, int L, bool uniform, bool max_norm,
                               codecs::counter_rng rng, std::uint64_t offset, unsigned char* out, cudaStream_t s) {
  if (n <= 0 || bucket <= 0) return cudaSuccess;
  const std::int64_t buckets = (n + bucket - 1) / bucket;
  if (buckets > 0x7fffffff || L < 1 || L > 127) return cudaErrorInvalidValue;
  detail::qsgd_encode_kernel<<<static_cast<unsigned>(buckets), detail::threads, 0, s>>>(x, n, bucket, levels, L, uniform, max_norm, rng, offset, out);
  return cudaGetLastError();
}
inline cudaError_t qsgd_decode(const unsigned char* in, std::int64_t n, std::int64_t bucket, const float* levels, int L, float* x, bool add,
                               cudaStream_t s) {
  if (n <= 0 || bucket <= 0) return cudaSuccess;
  if (L < 1 || L > 127) return cudaErrorInvalidValue;
  detail::qsgd_decode_kernel<<<detail::grid_for(n), detail::threads, 0, s>>>(in, n, bucket, levels, L, x, add);
  return cudaGetLastError();
}
inline cudaError_t scatter_add(const std::uint32_t* idx, const float* val, std::int64_t k, float* x, std::int64_t n, cudaStream_t s) {
  if (k <= 0) return cudaSuccess;
  detail::scatter_add_kernel<<<detail::grid_for(k), detail::threads, 0, s>>>(idx, val, k, x, n);
  return cudaGetLastError();
}
inline cudaError_t gather_values(const float* x, const std::uint32_t* idx, std::int64_t k, float* val, cudaStream_t s) {
  if (k <= 0) return cudaSuccess;
  detail::gather_kernel<<<detail::grid_for(k), detail::threads, 0, s>>>(x, idx, k, val);
  return cudaGetLastError();
}

}  // namespace autosync::exec::nccl::codec
