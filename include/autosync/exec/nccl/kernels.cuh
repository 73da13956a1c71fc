// autosync/exec/nccl/kernels.cuh — CUDA kernels of the NCCL executor (nvcc only).
//
// One launch per bucket and direction, whatever its number of tensors: the bucket's plan
// segments are a device table (ew::segment_row, fused order) and every thread block walks a
// tile of the fused buffer:
//
//   tile t = [t * TILE, (t+1) * TILE)    TILE = threads x items
//   every thread: r = locate(rows, tile start)  (binary search, the same rows for the block)
//                 element e = start + j * threads + tid, j = 0..items-1   (coalesced)
//                 advance r while rows[r+1].fused <= e  (amortized O(1): tiles are short)
//                 tensor element = ew::tensor_element(rows[r], e)
//
// The per-element work is the `__host__ __device__` code of exec/nccl/elementwise.hpp, the same
// rounding as exec/compress.hpp (tests/cuda/kernel_logic.cpp checks it on the host, bit for
// bit; tests/cuda/kernels_gpu.cu checks these kernels on a GPU).
//
// Including this header in one .cu file of a program registers the table
// (`registered_kernels()`, exec/nccl/device_kernels.hpp) when the program starts; the NCCL
// backend picks it up. `kernel_table()` returns it for explicit use.
#pragma once

#if !defined(__CUDACC__)
#error "autosync/exec/nccl/kernels.cuh is CUDA source: compile it with nvcc (a .cu file)"
#endif

#include <autosync/exec/nccl/device_kernels.hpp>
#include <autosync/exec/nccl/elementwise.hpp>

#include <cuda_runtime.h>

#include <cstdint>

namespace autosync::exec::nccl {

namespace kern {

inline constexpr int threads = 256;
inline constexpr int items = 8;
inline constexpr std::int64_t tile = static_cast<std::int64_t>(threads) * items;

// The grid of a bucket of n elements: enough blocks for every SM several times over, capped.
inline unsigned grid_of(std::int64_t n) {
  const std::int64_t tiles = (n + tile - 1) / tile;
  const std::int64_t cap = 65535;
  return static_cast<unsigned>(tiles < 1 ? 1 : (tiles < cap ? tiles : cap));
}

// Calls op(e, row) for every fused element e of the bucket, as described above.
template <class Op>
__device__ __forceinline__ void for_each_element(const ew::segment_row* rows, int nrows, std::int64_t n, Op op) {
  for (std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * tile; start < n; start += static_cast<std::int64_t>(gridDim.x) * tile)
    ew::walk_tile(rows, nrows, n, start, threads, items, static_cast<int>(threadIdx.x), op);
}

// Raw copies, U = the element's storage type (2, 4 or 8 bytes).
template <class U>
__global__ void __launch_bounds__(threads) pack_kernel(const ew::segment_row* rows, int nrows, void* const* tensors, U* fused, std::int64_t n) {
  for_each_element(rows, nrows, n, [&](std::int64_t e, const ew::segment_row& s) {
    fused[e] = static_cast<const U*>(tensors[s.tensor])[ew::tensor_element(s, e)];
  });
}
template <class U>
__global__ void __launch_bounds__(threads) unpack_kernel(const ew::segment_row* rows, int nrows, void* const* tensors, const U* fused, std::int64_t n) {
  for_each_element(rows, nrows, n, [&](std::int64_t e, const ew::segment_row& s) {
    static_cast<U*>(tensors[s.tensor])[ew::tensor_element(s, e)] = fused[e];
  });
}

// Unpack with the average (factor != 1), T the arithmetic type (float, double) or a 16-bit wire.
template <class T>
__global__ void __launch_bounds__(threads) unpack_average_kernel(const ew::segment_row* rows, int nrows, void* const* tensors, const T* fused,
                                                                 std::int64_t n, double factor) {
  for_each_element(rows, nrows, n, [&](std::int64_t e, const ew::segment_row& s) {
    T* t = static_cast<T*>(tensors[s.tensor]);
    if constexpr (sizeof(T) == 4) t[ew::tensor_element(s, e)] = ew::average_f32(fused[e], factor);
    else t[ew::tensor_element(s, e)] = ew::average_f64(fused[e], factor);
  });
}
template <int = 0>  // a template: one definition however many .cu files include this header
__global__ void __launch_bounds__(threads) unpack_average16_kernel(const ew::segment_row* rows, int nrows, void* const* tensors,
                                                                   const std::uint16_t* fused, std::int64_t n, ew::wire16 w, double factor) {
  for_each_element(rows, nrows, n, [&](std::int64_t e, const ew::segment_row& s) {
    static_cast<std::uint16_t*>(tensors[s.tensor])[ew::tensor_element(s, e)] = ew::average_16(fused[e], w, factor);
  });
}

template <class T>
__global__ void __launch_bounds__(threads) pack_encode_kernel(const ew::segment_row* rows, int nrows, void* const* tensors, std::uint16_t* wire,
                                                              double* residual, std::int64_t n, ew::wire16 w, double scale) {
  for_each_element(rows, nrows, n, [&](std::int64_t e, const ew::segment_row& s) {
    const double x = static_cast<double>(static_cast<const T*>(tensors[s.tensor])[ew::tensor_element(s, e)]);
    wire[e] = ew::encode_one(x, residual ? residual + e : nullptr, w, scale);
  });
}
template <class T>
__global__ void __launch_bounds__(threads) decode_unpack_kernel(const ew::segment_row* rows, int nrows, void* const* tensors,
                                                                const std::uint16_t* wire, std::int64_t n, ew::wire16 w, double k) {
  for_each_element(rows, nrows, n, [&](std::int64_t e, const ew::segment_row& s) {
    static_cast<T*>(tensors[s.tensor])[ew::tensor_element(s, e)] = static_cast<T>(ew::decode_one(wire[e], w, k));
  });
}

template <class T>
__global__ void __launch_bounds__(threads) scale_kernel(T* buf, std::int64_t n, double factor) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * threads + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * threads) {
    if constexpr (sizeof(T) == 4) buf[i] = ew::average_f32(buf[i], factor);
    else buf[i] = ew::average_f64(buf[i], factor);
  }
}
template <int = 0>  // see unpack_average16_kernel
__global__ void __launch_bounds__(threads) scale16_kernel(std::uint16_t* buf, std::int64_t n, ew::wire16 w, double factor) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * threads + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * threads)
    buf[i] = ew::average_16(buf[i], w, factor);
}

inline bool floating(dtype t) { return t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16; }
inline ew::wire16 wire_of(dtype t) { return t == dtype::bf16 ? ew::wire16::bf16 : ew::wire16::f16; }

// ---- launchers (the table) --------------------------------------------------------------------
inline cudaError_t pack(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  const unsigned g = grid_of(a.n);
  switch (size_of(a.type)) {
    case 2: pack_kernel<std::uint16_t><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<std::uint16_t*>(a.fused), a.n); break;
    case 4: pack_kernel<std::uint32_t><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<std::uint32_t*>(a.fused), a.n); break;
    default: pack_kernel<std::uint64_t><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<std::uint64_t*>(a.fused), a.n); break;
  }
  return cudaGetLastError();
}

inline cudaError_t unpack(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  const unsigned g = grid_of(a.n);
  if (a.factor != 1.0 && floating(a.type)) {
    switch (a.type) {
      case dtype::f32: unpack_average_kernel<float><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<const float*>(a.fused), a.n, a.factor); break;
      case dtype::f64: unpack_average_kernel<double><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<const double*>(a.fused), a.n, a.factor); break;
      default:
        unpack_average16_kernel<><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<const std::uint16_t*>(a.fused), a.n, wire_of(a.type), a.factor);
        break;
    }
    return cudaGetLastError();
  }
  switch (size_of(a.type)) {
    case 2: unpack_kernel<std::uint16_t><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<const std::uint16_t*>(a.fused), a.n); break;
    case 4: unpack_kernel<std::uint32_t><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<const std::uint32_t*>(a.fused), a.n); break;
    default: unpack_kernel<std::uint64_t><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, static_cast<const std::uint64_t*>(a.fused), a.n); break;
  }
  return cudaGetLastError();
}

inline cudaError_t pack_encode(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  if (a.type != dtype::f32 && a.type != dtype::f64) return cudaErrorInvalidValue;
  const unsigned g = grid_of(a.n);
  if (a.type == dtype::f32)
    pack_encode_kernel<float><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, a.wire, a.residual, a.n, wire_of(a.wire_type), a.scale);
  else
    pack_encode_kernel<double><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, a.wire, a.residual, a.n, wire_of(a.wire_type), a.scale);
  return cudaGetLastError();
}

inline cudaError_t decode_unpack(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  if (a.type != dtype::f32 && a.type != dtype::f64) return cudaErrorInvalidValue;
  const unsigned g = grid_of(a.n);
  const double k = a.factor / a.scale;  // exec::decode's k
  if (a.type == dtype::f32)
    decode_unpack_kernel<float><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, a.wire, a.n, wire_of(a.wire_type), k);
  else
    decode_unpack_kernel<double><<<g, threads, 0, st>>>(a.rows, a.nrows, a.tensors, a.wire, a.n, wire_of(a.wire_type), k);
  return cudaGetLastError();
}

inline cudaError_t scale(void* buf, std::int64_t n, dtype t, double factor, cudaStream_t st) {
  if (n == 0 || !floating(t)) return cudaSuccess;
  const unsigned g = grid_of(n);
  switch (t) {
    case dtype::f32: scale_kernel<float><<<g, threads, 0, st>>>(static_cast<float*>(buf), n, factor); break;
    case dtype::f64: scale_kernel<double><<<g, threads, 0, st>>>(static_cast<double*>(buf), n, factor); break;
    default: scale16_kernel<><<<g, threads, 0, st>>>(static_cast<std::uint16_t*>(buf), n, wire_of(t), factor); break;
  }
  return cudaGetLastError();
}

}  // namespace kern

// The table of this translation unit's kernels.
[[nodiscard]] inline device_kernels kernel_table() noexcept {
  device_kernels k;
  k.pack = &kern::pack;
  k.unpack = &kern::unpack;
  k.pack_encode = &kern::pack_encode;
  k.decode_unpack = &kern::decode_unpack;
  k.scale = &kern::scale;
  return k;
}

namespace kern {
// Registers the table when the program starts (one definition across the program's .cu files).
inline const bool registered = (registered_kernels() = kernel_table(), true);
}  // namespace kern

}  // namespace autosync::exec::nccl
