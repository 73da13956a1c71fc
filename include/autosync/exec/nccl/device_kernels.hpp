// autosync/exec/nccl/device_kernels.hpp — the table of bucket kernels the NCCL executor calls.
//
// The NCCL backend and its bucket runner are host code compiled by the host compiler (g++);
// the kernels are compiled by nvcc (exec/nccl/kernels.cuh). This table is the seam: plain
// function pointers, filled by kernels.cuh. Compile kernels.cuh into one .cu file of the
// program (it registers its table when the program starts) or pass `kernel_table()` from such
// a file to `nccl_backend::set_kernels`. Without a table the runner throws
// autosync::error("kernels", "... include <autosync/exec/nccl/kernels.cuh> in one .cu file ...").
//
// A bucket for the kernels (pointers are device memory):
//   rows[0..nrows)      ew::segment_row, fused ascending (exec/nccl/elementwise.hpp)
//   tensors[t]          tensor t's gradient
//   n                   fused elements
//   fused               the packed bucket (dtype `type`), for pack / unpack
//   wire, residual      the compressed bucket (f16/bf16 bits) and its error feedback (or null)
//
//   pack           tensors -> fused                     (raw element copies)
//   unpack         fused -> tensors, times `factor`     (factor == 1: raw copies)
//   pack_encode    tensors -> wire (+ residual)          one launch, no fused buffer
//   decode_unpack  wire -> tensors (/ scale * factor)    one launch
//   scale          buf[0..n) *= factor in place           (the average of an in-place bucket)
#pragma once

#include <autosync/exec/nccl/elementwise.hpp>
#include <autosync/model.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace autosync::exec::nccl {

struct bucket_args {
  const ew::segment_row* rows = nullptr;
  int nrows = 0;
  void* const* tensors = nullptr;
  std::int64_t n = 0;
  void* fused = nullptr;
  std::uint16_t* wire = nullptr;
  double* residual = nullptr;
  dtype type = dtype::f32;
  dtype wire_type = dtype::f16;
  double scale = 1.0;
  double factor = 1.0;
};

struct device_kernels {
  cudaError_t (*pack)(const bucket_args&, cudaStream_t) = nullptr;
  cudaError_t (*unpack)(const bucket_args&, cudaStream_t) = nullptr;
  cudaError_t (*pack_encode)(const bucket_args&, cudaStream_t) = nullptr;
  cudaError_t (*decode_unpack)(const bucket_args&, cudaStream_t) = nullptr;
  cudaError_t (*scale)(void* buf, std::int64_t n, dtype t, double factor, cudaStream_t) = nullptr;
  [[nodiscard]] bool complete() const noexcept { return pack && unpack && pack_encode && decode_unpack && scale; }
};

// The table kernels.cuh registered (empty until a .cu file of the program includes it).
[[nodiscard]] inline device_kernels& registered_kernels() noexcept {
  static device_kernels table{};
  return table;
}

}  // namespace autosync::exec::nccl
