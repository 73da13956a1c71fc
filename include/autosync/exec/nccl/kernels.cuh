// autosync/exec/nccl/kernels.cuh — CUDA kernels of the NCCL executor (nvcc only).
//
// One launch per bucket and direction, whatever its number of tensors: the bucket's plan
// segments are a device table (ew::segment_row, fused order). Every thread runs the walk of
// exec/nccl/bucket_walk.hpp: groups of 16 bytes of the smallest element, 128-bit loads and stores
// where the addresses allow (a funnel shift for a tensor misaligned against the fused buffer,
// one element at a time at a row's edges and across rows), all of a step's loads before its
// stores, in a grid-stride loop over one full wave of blocks (no partial last wave):
//
//   kernel               reads (per element)             writes
//   pack                 tensor (2 / 4 / 8 B)            fused
//   unpack               fused                           tensor       (factor 1: a raw copy)
//   unpack + average     fused f32 / f64 / f16 / bf16    tensor x factor
//   pack + encode        tensor f32 / f64, residual f64  wire f16 / bf16, residual f64
//   decode + unpack      wire                            tensor f32 / f64 (x factor / scale)
//   scale                buffer                          buffer x factor (in-place buckets;
//                                                        a scalar head up to the first 16-byte
//                                                        boundary, vectors after)
//
// The per-element arithmetic is the `__host__ __device__` code of exec/nccl/elementwise.hpp, the
// same rounding as exec/compress.hpp; tests/cuda/kernel_logic.cpp runs the walk and the
// arithmetic on the host, bit for bit against the CPU reference, with misaligned tensors and odd
// sizes; tests/cuda/kernels_gpu.cu checks these kernels on a GPU; tests/bench/cuda_kernels.cpp
// measures them against the device's own copy bandwidth.
//
// Including this header in one .cu file of a program registers the table
// (`registered_kernels()`, exec/nccl/device_kernels.hpp) when the program starts; the NCCL
// backend picks it up. `kernel_table()` returns it for explicit use.
#pragma once

#if !defined(__CUDACC__)
#error "autosync/exec/nccl/kernels.cuh is CUDA source: compile it with nvcc (a .cu file)"
#endif

#include <autosync/exec/nccl/bucket_walk.hpp>
#include <autosync/exec/nccl/device_kernels.hpp>
#include <autosync/exec/nccl/elementwise.hpp>

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

namespace autosync::exec::nccl {

namespace kern {

inline constexpr int threads = 256;
// Blocks of 256 threads per SM in a kernel's wave: at most 4 (1024 threads, half of what an
// H100 SM holds), so that NCCL's kernel of another bucket in flight (one block of up to 640
// threads per channel) finds room on the SMs while a pack or unpack runs. 4 x 256 threads with
// 64 bytes in flight each is 64 KiB of loads per SM, several times the ~10 KiB an HBM3 SM needs
// to keep reading at full rate (3.35 TB/s x ~0.7 us / 132 SMs, half of it reads): the cap costs
// no bandwidth. bench_cuda_kernels prints each kernel's fraction of the copy bandwidth.
inline constexpr int max_blocks_per_sm = 4;

// The device's loads and stores for ew::run_thread.
struct device_mem {
  __device__ __forceinline__ static ew::vec16 ld16(const void* p) {
    const uint4 v = *static_cast<const uint4*>(p);
    return ew::vec16{{v.x, v.y, v.z, v.w}};
  }
  __device__ __forceinline__ static void st16(void* p, const ew::vec16& v) { *static_cast<uint4*>(p) = make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]); }
  template <class T>
  __device__ __forceinline__ static T ld(const T* p) {
    return *p;
  }
  template <class T>
  __device__ __forceinline__ static void st(T* p, T v) {
    *p = v;
  }
};

template <class Op>
__global__ void __launch_bounds__(threads) bucket_kernel(Op op) {
  ew::run_thread<device_mem>(op, static_cast<std::int64_t>(blockIdx.x), static_cast<std::int64_t>(gridDim.x), threads, static_cast<int>(threadIdx.x));
}
template <class TS, class F>
__global__ void __launch_bounds__(threads) scale_kernel(TS* buf, std::int64_t n, F f) {
  ew::run_scale_thread<device_mem, TS, 4>(buf, n, f, static_cast<std::int64_t>(blockIdx.x), static_cast<std::int64_t>(gridDim.x), threads,
                                          static_cast<int>(threadIdx.x));
}

// One full wave of `kernel` on the current device: SMs x min(the blocks an SM runs at once,
// max_blocks_per_sm). Queried once per kernel and device (cudaOccupancy... costs microseconds).
template <class Kernel>
int wave_blocks(Kernel kernel) {
  constexpr int max_devices = 64;
  static std::atomic<int> cache[max_devices] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  if (dev >= 0 && dev < max_devices) {
    if (const int w = cache[dev].load(std::memory_order_relaxed); w > 0) return w;
  }
  int sms = 0, per_sm = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;  // the launch reports what is wrong
  }
  const int w = (sms < 1 ? 1 : sms) * (per_sm < 1 ? 1 : (per_sm < max_blocks_per_sm ? per_sm : max_blocks_per_sm));
  if (dev >= 0 && dev < max_devices) cache[dev].store(w, std::memory_order_relaxed);
  return w;
}

template <class Op>
cudaError_t launch(const Op& op, cudaStream_t st) {
  if (op.n == 0) return cudaSuccess;
  const std::int64_t groups = (op.n + Op::G - 1) / Op::G;
  const unsigned g = ew::grid_blocks(groups, threads, Op::U, wave_blocks(&bucket_kernel<Op>));
  bucket_kernel<Op><<<g, threads, 0, st>>>(op);
  return cudaGetLastError();
}
template <class TS, class F>
cudaError_t launch_scale(TS* buf, std::int64_t n, F f, cudaStream_t st) {
  if (n == 0) return cudaSuccess;
  constexpr int G = 16 / static_cast<int>(sizeof(TS));
  const unsigned g = ew::grid_blocks((n + G - 1) / G, threads, 4, wave_blocks(&scale_kernel<TS, F>));
  scale_kernel<TS, F><<<g, threads, 0, st>>>(buf, n, f);
  return cudaGetLastError();
}

inline ew::wire16 wire_of(dtype t) { return t == dtype::bf16 ? ew::wire16::bf16 : ew::wire16::f16; }

template <class Op>
Op view_of(const bucket_args& a) {
  Op op;
  op.rows = a.rows;
  op.nrows = a.nrows;
  op.tensors = a.tensors;
  op.n = a.n;
  return op;
}

// ---- launchers (the table) --------------------------------------------------------------------
template <class TS>
cudaError_t pack_as(const bucket_args& a, cudaStream_t st) {
  auto op = view_of<ew::pack_op<TS>>(a);
  op.fused = static_cast<TS*>(a.fused);
  return launch(op, st);
}
inline cudaError_t pack(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  switch (size_of(a.type)) {
    case 2: return pack_as<std::uint16_t>(a, st);
    case 4: return pack_as<std::uint32_t>(a, st);
    default: return pack_as<std::uint64_t>(a, st);
  }
}

template <class TS>
cudaError_t unpack_as(const bucket_args& a, cudaStream_t st) {
  auto op = view_of<ew::unpack_op<TS>>(a);
  op.fused = static_cast<const TS*>(a.fused);
  return launch(op, st);
}
template <class T>
cudaError_t unpack_average_as(const bucket_args& a, cudaStream_t st) {
  auto op = view_of<ew::unpack_average_op<T>>(a);
  op.fused = static_cast<const typename ew::unpack_average_op<T>::tensor_t*>(a.fused);
  op.factor = a.factor;
  return launch(op, st);
}
inline cudaError_t unpack(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  if (a.factor != 1.0 && is_floating(a.type)) {
    switch (a.type) {
      case dtype::f32: return unpack_average_as<float>(a, st);
      case dtype::f64: return unpack_average_as<double>(a, st);
      default: {
        auto op = view_of<ew::unpack_average16_op>(a);
        op.fused = static_cast<const std::uint16_t*>(a.fused);
        op.w = wire_of(a.type);
        op.factor = a.factor;
        return launch(op, st);
      }
    }
  }
  switch (size_of(a.type)) {
    case 2: return unpack_as<std::uint16_t>(a, st);
    case 4: return unpack_as<std::uint32_t>(a, st);
    default: return unpack_as<std::uint64_t>(a, st);
  }
}

template <class T>
cudaError_t pack_encode_as(const bucket_args& a, cudaStream_t st) {
  auto op = view_of<ew::pack_encode_op<T>>(a);
  op.wire = a.wire;
  op.residual = a.residual;
  op.w = wire_of(a.wire_type);
  op.scale = a.scale;
  op.inv_scale = 1.0 / a.scale;  // exact: a power of two (checked)
  return launch(op, st);
}
inline cudaError_t pack_encode(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  if ((a.type != dtype::f32 && a.type != dtype::f64) || !ew::power_of_two(a.scale)) return cudaErrorInvalidValue;
  return a.type == dtype::f32 ? pack_encode_as<float>(a, st) : pack_encode_as<double>(a, st);
}

template <class T>
cudaError_t decode_unpack_as(const bucket_args& a, cudaStream_t st) {
  auto op = view_of<ew::decode_unpack_op<T>>(a);
  op.wire = a.wire;
  op.w = wire_of(a.wire_type);
  op.k = a.factor / a.scale;  // exec::decode's k
  return launch(op, st);
}
inline cudaError_t decode_unpack(const bucket_args& a, cudaStream_t st) {
  if (a.n == 0) return cudaSuccess;
  if (a.type != dtype::f32 && a.type != dtype::f64) return cudaErrorInvalidValue;
  return a.type == dtype::f32 ? decode_unpack_as<float>(a, st) : decode_unpack_as<double>(a, st);
}

inline cudaError_t scale(void* buf, std::int64_t n, dtype t, double factor, cudaStream_t st) {
  if (n == 0 || !is_floating(t)) return cudaSuccess;
  switch (t) {
    case dtype::f32: return launch_scale(static_cast<std::uint32_t*>(buf), n, ew::average_f32_bits{factor}, st);
    case dtype::f64: return launch_scale(static_cast<std::uint64_t*>(buf), n, ew::average_f64_bits{factor}, st);
    default: return launch_scale(static_cast<std::uint16_t*>(buf), n, ew::average16_bits{wire_of(t), factor}, st);
  }
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
