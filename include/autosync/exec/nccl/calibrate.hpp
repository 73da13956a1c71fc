// autosync/exec/nccl/calibrate.hpp — measure NCCL all-reduce on this job's GPUs, for the
// low-shot calibration of cost/nccl_calibrate.hpp.
//
//   auto pts = exec::nccl::measure_all_reduce(world, boot, {.sizes = {1 << 20, 64 << 20, 1 << 30}});
//   auto fit = cost::calibrate(cost::datasheet_machine(zoo::make_cluster("dgx-h100-x1"), N, G), pts, {});
//
// For each size (bytes of f32 elements, in place on one device buffer, as nccl-tests'
// all_reduce_perf runs it): `warmup` all-reduces, then `reps` back to back on a stream of their
// own, timed by CUDA events around the whole run (the GPU's time, not the host's); the time of
// one all-reduce is the run's over reps, averaged over the ranks through `boot` (the MPI
// backend that bootstrapped NCCL; nccl-tests averages over ranks too). Every rank returns the
// same points. The sizes must be positive multiples of 4 bytes; the buffer is the largest size,
// so a 1 GiB point needs 1 GiB of free device memory.
//
// No decision depends on these times beyond the fit they feed: the fit itself is deterministic
// (cost/nccl_calibrate.hpp), so the same measurements give the same cluster anywhere.
#pragma once

#include <autosync/cost/nccl_calibrate.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/nccl/communicator.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace autosync::exec::nccl {

struct measure_options {
  std::vector<std::size_t> sizes{std::size_t{1} << 20, std::size_t{64} << 20, std::size_t{1} << 30};
  int warmup = 5;
  int reps = 20;
};

template <Backend Boot>
[[nodiscard]] std::vector<cost::calibration_point> measure_all_reduce(nccl_backend& comm, Boot& boot, const measure_options& o = {}) {
  if (o.sizes.empty()) throw error("sizes", "needs at least one size");
  for (std::size_t i = 0; i < o.sizes.size(); ++i)
    if (o.sizes[i] == 0 || o.sizes[i] % 4 != 0)
      throw error("sizes[" + std::to_string(i) + "]", "must be a positive multiple of 4 bytes, got " + std::to_string(o.sizes[i]));
  if (o.warmup < 0 || o.reps < 1) throw error("reps", "needs warmup >= 0 and reps >= 1");
  if (boot.size() != comm.size()) throw error("boot", "the bootstrap backend and the NCCL communicator have different sizes");
  auto ok = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw error("cuda", std::string("measure_all_reduce: ") + what + ": " + cudaGetErrorString(e));
  };
  const std::size_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  struct resources {
    void* buf = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    ~resources() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
      if (stream) cudaStreamDestroy(stream);
      if (buf) cudaFree(buf);
    }
  } r;
  ok(cudaSetDevice(comm.device()), "cudaSetDevice");
  ok(cudaMalloc(&r.buf, largest), "cudaMalloc of the largest size");
  ok(cudaMemset(r.buf, 0, largest), "cudaMemset");
  ok(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  ok(cudaEventCreate(&r.start), "cudaEventCreate");
  ok(cudaEventCreate(&r.stop), "cudaEventCreate");
  struct restore {
    nccl_backend& c;
    ~restore() { c.set_issue_stream(nullptr, false); }
  } back{comm};
  comm.set_issue_stream(r.stream, /*deferred=*/true);
  std::vector<cost::calibration_point> out;
  for (std::size_t bytes : o.sizes) {
    const std::size_t n = bytes / 4;
    for (int i = 0; i < o.warmup; ++i) comm.all_reduce(r.buf, n, dtype::f32);
    ok(cudaEventRecord(r.start, r.stream), "cudaEventRecord");
    for (int i = 0; i < o.reps; ++i) comm.all_reduce(r.buf, n, dtype::f32);
    ok(cudaEventRecord(r.stop, r.stream), "cudaEventRecord");
    comm.synchronize("measure_all_reduce");  // polls: a dead rank is an error after timeout(), not a hang
    float ms = 0.0f;
    ok(cudaEventElapsedTime(&ms, r.start, r.stop), "cudaEventElapsedTime");
    double seconds = static_cast<double>(ms) * 1e-3 / o.reps;
    boot.all_reduce(&seconds, 1, dtype::f64);
    out.push_back({static_cast<double>(bytes), seconds / boot.size()});
  }
  return out;
}

}  // namespace autosync::exec::nccl
