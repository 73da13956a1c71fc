// autosync/exec/nccl/bucket_runner.hpp — how the executor runs a plan bucket on NCCL.
//
// exec::executor<nccl_backend> keeps its scheduling (readiness, fifo / negotiated order, the
// handshake, timing) and hands every bucket to this runner (the `bucket_runner` customization
// point of exec/executor.hpp). The gradients are device memory; every step is enqueued on the
// world communicator's stream (its split communicators share it), in this order:
//
//   compute stream ──event──┐
//   comm stream:            wait ─> pack (or pack+encode) ─> NCCL step(s) ─> unpack (or
//                                   decode+unpack, or average in place) ─> wait for the stream
//
//   in place      one contiguous segment, or the segments back to back in the user's memory
//                 (checked per iteration, like the host path): no pack, the step runs there
//   packed        one pack kernel into the fused buffer, the step, one unpack kernel (the average
//                 fused into it)
//   compressed    one pack+encode kernel (error feedback residual in device memory, per bucket),
//                 the step in f16/bf16, one decode+unpack kernel (average fused)
//   steps         all_reduce(topology) | reduce_scatter + all_gather | ps reduce + broadcast |
//                 sparse: a dense all-reduce of the bucket (untouched rows are zero on every rank:
//                 the host path's sums) — exec/nccl/collectives.hpp
//
// The bucket waits for the work enqueued on the backend's compute stream when it starts (a
// cudaEvent recorded there, waited by the comm stream), so gradients computed after that point
// overlap with the bucket's communication. Call ready(t) after the kernel that writes t's
// gradient was enqueued on the compute stream (nccl_backend::set_compute_stream; default the
// legacy stream 0).
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/nccl/communicator.hpp>
#include <autosync/exec/nccl/collectives.hpp>
#include <autosync/exec/nccl/device_kernels.hpp>
#include <autosync/exec/plan.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace autosync::exec::nccl {

class bucket_runner {
 public:
  bucket_runner(comms<nccl_backend>& c, const plan& p, const executor_options& o) : c_(&c), plan_(&p), opt_(o) {
    auto& w = c.world;
    if (!w.valid()) throw error("comms", "nccl executor: the world communicator is empty");
    k_ = w.kernels();
    if (!k_.complete())
      throw error("kernels", "nccl executor: no CUDA bucket kernels registered: include <autosync/exec/nccl/kernels.cuh> in one .cu "
                             "file of the program (or pass nccl::kernel_table() to nccl_backend::set_kernels)");
    w.make_current();
    // the segment tables of every bucket, one device array
    std::vector<ew::segment_row> rows;
    std::size_t fused = 0, wire = 0, residual = 0;
    for (const auto& b : p.buckets) {
      first_row_.push_back(static_cast<int>(rows.size()));
      for (const auto& s : b.segments) rows.push_back({s.fused, s.offset, s.block, s.stride, s.blocks, s.tensor, 0});
      residual_at_.push_back(residual);
      if (b.compressed) {
        wire = std::max(wire, static_cast<std::size_t>(b.elements));
        if (opt_.error_feedback) residual += static_cast<std::size_t>(b.elements);
      } else if (!b.in_place()) {
        fused = std::max(fused, static_cast<std::size_t>(b.elements) * size_of(b.type));
      }
    }
    first_row_.push_back(static_cast<int>(rows.size()));
    rows_ = alloc<ew::segment_row>(rows.size(), "segment table");
    // on the backend's stream, then waited: a memcpy/memset on the legacy default stream is not
    // ordered with a non-blocking compute stream, whose first bucket could read unset memory
    if (!rows.empty())
      w.check_cuda(cudaMemcpyAsync(rows_.get(), rows.data(), rows.size() * sizeof(ew::segment_row), cudaMemcpyHostToDevice, w.stream()), "setup");
    tensors_ = alloc<void*>(p.tensor_elements.size(), "tensor table");
    fused_ = alloc<unsigned char>(fused, "fused buffer");
    wire_ = alloc<std::uint16_t>(wire, "wire buffer");
    residual_ = alloc<double>(residual, "residuals");
    if (residual > 0) w.check_cuda(cudaMemsetAsync(residual_.get(), 0, residual * sizeof(double), w.stream()), "setup");
    w.synchronize("setup");
    cudaEvent_t ev = nullptr;
    w.check_cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "setup");
    ready_.reset(ev);
  }

  // Runs bucket `bi` on this iteration's gradients (device pointers), on the communication thread.
  void run(std::uint32_t bi, std::span<const gradient> grads) {
    auto& c = *c_;
    auto& w = c.world;
    const auto& b = plan_->buckets[bi];
    w.make_current();
    const cudaStream_t st = w.stream();
    const ordering_off guard(c);  // ordered once, here, for the whole bucket
    upload_tensors(grads);
    w.check_cuda(cudaEventRecord(ready_.get(), w.compute_stream()), "bucket");
    w.check_cuda(cudaStreamWaitEvent(st, ready_.get(), 0), "bucket");

    const int p = w.size();
    const auto n = static_cast<std::size_t>(b.elements);
    const double factor = opt_.average && p > 1 ? 1.0 / p : 1.0;
    bucket_args a;
    a.rows = rows_.get() + first_row_[bi];
    a.nrows = first_row_[bi + 1] - first_row_[bi];
    a.tensors = tensors_.get();
    a.n = b.elements;
    a.type = b.type;
    if (b.compressed) {
      a.wire = wire_.get();
      a.residual = opt_.error_feedback ? residual_.get() + residual_at_[bi] : nullptr;
      a.wire_type = b.wire;
      a.scale = wire_scale(b.wire, p);
      w.check_cuda(k_.pack_encode(a, st), "pack_encode");
      step(b, a.wire, n, b.wire);
      a.factor = factor;
      w.check_cuda(k_.decode_unpack(a, st), "decode_unpack");
    } else if (unsigned char* data = in_place(b, grads)) {
      step(b, data, n, b.type);
      if (factor != 1.0) w.check_cuda(k_.scale(data, b.elements, b.type, factor, st), "average");
    } else {
      a.fused = fused_.get();
      w.check_cuda(k_.pack(a, st), "pack");
      step(b, a.fused, n, b.type);
      a.factor = factor;
      w.check_cuda(k_.unpack(a, st), "unpack");
    }
    w.synchronize("bucket");
  }

 private:
  struct cuda_free {
    void operator()(void* p) const noexcept { cudaFree(p); }
  };
  struct event_destroy {
    void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
  };
  template <class T>
  using device_ptr = std::unique_ptr<T, cuda_free>;

  template <class T>
  device_ptr<T> alloc(std::size_t n, const char* what) {
    if (n == 0) return device_ptr<T>(nullptr);
    void* ptr = nullptr;
    const cudaError_t e = cudaMalloc(&ptr, n * sizeof(T));
    if (e != cudaSuccess)
      throw error("memory", std::string("nccl executor: cudaMalloc of the ") + what + " (" + std::to_string(n * sizeof(T)) + " bytes) failed: " +
                                cudaGetErrorString(e));
    return device_ptr<T>(static_cast<T*>(ptr));
  }

  // Turns the backends' per-operation ordering off while a bucket runs (restored on exit, also
  // when the bucket throws).
  struct ordering_off {
    comms<nccl_backend>& c;
    explicit ordering_off(comms<nccl_backend>& c_) : c(c_) { set(false); }
    ~ordering_off() { set(true); }
    ordering_off(const ordering_off&) = delete;
    ordering_off& operator=(const ordering_off&) = delete;
    void set(bool on) noexcept {
      c.world.set_implicit_ordering(on);
      c.intra.set_implicit_ordering(on);
      c.inter.set_implicit_ordering(on);
    }
  };

  void upload_tensors(std::span<const gradient> grads) {
    bool same = uploaded_.size() == grads.size();
    for (std::size_t i = 0; same && i < grads.size(); ++i) same = uploaded_[i] == grads[i].data;
    if (same) return;
    // the kernels dereference these: a host pointer would fault and leave the context unusable
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].data == nullptr || grads[i].count == 0) continue;
      cudaPointerAttributes attr{};
      const cudaError_t e = cudaPointerGetAttributes(&attr, grads[i].data);
      if (e != cudaSuccess) (void)cudaGetLastError();
      if (e != cudaSuccess || (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged))
        throw error("grads[" + std::to_string(i) + "].data",
                    "nccl executor: the gradient of tensor " + std::to_string(i) + " is not device memory (pass cudaMalloc'd buffers)");
    }
    uploaded_.resize(grads.size());
    for (std::size_t i = 0; i < grads.size(); ++i) uploaded_[i] = grads[i].data;
    // pageable source: the copy has read uploaded_ when cudaMemcpyAsync returns
    c_->world.check_cuda(cudaMemcpyAsync(tensors_.get(), uploaded_.data(), uploaded_.size() * sizeof(void*), cudaMemcpyHostToDevice,
                                         c_->world.stream()),
                         "tensor table");
  }

  unsigned char* at(std::span<const gradient> grads, std::uint32_t t, std::int64_t element) const {
    return static_cast<unsigned char*>(grads[t].data) + static_cast<std::size_t>(element) * size_of(plan_->tensor_types[t]);
  }
  // The bucket's elements in the user's memory, one contiguous run in fused order, or nullptr.
  unsigned char* in_place(const plan_bucket& b, std::span<const gradient> grads) const {
    if (b.segments.empty()) return nullptr;
    const std::size_t es = size_of(b.type);
    const auto& s0 = b.segments[0];
    unsigned char* base = at(grads, s0.tensor, s0.offset) - static_cast<std::size_t>(s0.fused) * es;
    for (const auto& s : b.segments) {
      if (s.blocks != 1 && s.stride != s.block) return nullptr;
      if (at(grads, s.tensor, s.offset) != base + static_cast<std::size_t>(s.fused) * es) return nullptr;
    }
    return base;
  }

  void step(const plan_bucket& b, void* buf, std::size_t n, dtype t) {
    auto& c = *c_;
    switch (b.kind) {
      case step_kind::all_reduce: exec::all_reduce(c, buf, n, t, b.topology); break;
      case step_kind::sharded:
        exec::reduce_scatter(c, buf, n, t, b.topology);
        exec::all_gather(c, buf, n, t, b.topology);
        break;
      case step_kind::parameter_server: exec::ps_push_pull(c, buf, n, t, b.server_rank, b.local); break;
      case step_kind::sparse_all_gather: c.world.all_reduce(buf, n, t); break;
    }
  }

  comms<nccl_backend>* c_;
  const plan* plan_;
  executor_options opt_;
  device_kernels k_{};
  std::vector<int> first_row_;
  std::vector<std::size_t> residual_at_;
  device_ptr<ew::segment_row> rows_;
  device_ptr<void*> tensors_;
  device_ptr<unsigned char> fused_;
  device_ptr<std::uint16_t> wire_;
  device_ptr<double> residual_;
  std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, event_destroy> ready_;
  std::vector<void*> uploaded_;
};

}  // namespace autosync::exec::nccl
