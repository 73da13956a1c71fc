// autosync/exec/nccl/comm_state.hpp — the state behind one nccl_backend (its communicator,
// streams, polled waits with timeout and abort, host-buffer staging). Internal to
// exec/nccl/communicator.hpp, which documents the behaviour; include <autosync/exec/nccl/backend.hpp>.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/nccl/device_kernels.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace autosync::exec::nccl_detail {

// A device allocation owned by one backend (grown, never shrunk).
struct device_buffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  device_buffer() = default;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() {
    if (ptr) cudaFree(ptr);
  }
};

struct comm_state {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaStream_t compute = nullptr;
  int device = 0, rank = 0, size = 0;
  double timeout = 60.0;
  std::string broken;
  nccl::device_kernels kernels{};
  std::function<void(std::string_view)> job_abort;
  nccl_detail::device_buffer stage;    // host buffers staged by one operation
  nccl_detail::device_buffer scratch;  // device_scratch()
  bool owns_stream = false;
  bool implicit_order = true;           // enter() orders the stream after the compute stream
  cudaEvent_t order_event = nullptr;
  // Set by a bucket runner while it issues a bucket (nccl_backend::set_issue_stream): operations
  // are enqueued on `issue` instead of `stream` and, when `deferred`, return without waiting.
  cudaStream_t issue = nullptr;
  bool deferred = false;
  int in_flight = 4;  // nccl_backend::set_buckets_in_flight
  bool pinned = false;  // split() handed an algorithm pin to autosync's tuner plugin

  comm_state() = default;
  comm_state(const comm_state&) = delete;
  comm_state& operator=(const comm_state&) = delete;
  ~comm_state() {
    if (comm) {
      cudaSetDevice(device);
      // flush and free; a communicator that does not finalize in time is aborted
      const ncclResult_t fr = ncclCommFinalize(comm);
      bool clean = fr == ncclSuccess || fr == ncclInProgress;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
      for (;;) {
        ncclResult_t st = ncclSuccess;
        if (ncclCommGetAsyncError(comm, &st) != ncclSuccess || (st != ncclInProgress && st != ncclSuccess)) {
          clean = false;
          break;
        }
        if (st == ncclSuccess) break;
        if (std::chrono::steady_clock::now() > deadline) {
          clean = false;
          break;
        }
        std::this_thread::yield();
      }
      if (clean) ncclCommDestroy(comm);
      else ncclCommAbort(comm);
    }
    if (order_event) cudaEventDestroy(order_event);
    if (stream && owns_stream) cudaStreamDestroy(stream);
  }

  // The stream operations are enqueued on now.
  [[nodiscard]] cudaStream_t op_stream() const noexcept { return issue ? issue : stream; }
  // The end of an operation: waits for it (polled, timeout, asynchronous errors), unless the
  // runner defers the wait to the bucket's completion.
  void complete(const char* op, int peer = -1) {
    if (!deferred) wait(op, peer);
  }

  // The compute stream: the one set, else the legacy default stream (never the per-thread
  // default stream of whichever thread asks).
  [[nodiscard]] cudaStream_t compute_or_default() const noexcept { return compute ? compute : cudaStreamLegacy; }
  // Work enqueued on the compute stream so far happens before what this operation enqueues
  // (a kernel or memset that wrote the buffer), without blocking the host.
  void order_after_compute(const char* op) {
    if (!order_event) enqueue_cuda(cudaEventCreateWithFlags(&order_event, cudaEventDisableTiming), op);
    enqueue_cuda(cudaEventRecord(order_event, compute_or_default()), op);
    enqueue_cuda(cudaStreamWaitEvent(op_stream(), order_event, 0), op);
  }

  [[nodiscard]] std::string who() const { return "rank " + std::to_string(rank); }

  void current(const char* op) {
    const cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess)
      throw error(who(), std::string("nccl ") + op + " on rank " + std::to_string(rank) + ": cudaSetDevice(" + std::to_string(device) +
                             ") failed: " + cudaGetErrorString(e));
  }
  void make_stream() {
    current("init");
    const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) throw error(who(), std::string("nccl init: cudaStreamCreate failed: ") + cudaGetErrorString(e));
    owns_stream = true;
  }
  void check_rank(int r, const char* field, const char* op) const {
    if (r < 0 || r >= size)
      throw error(field, std::string("nccl ") + op + ": " + std::to_string(r) + " is not a rank of the " + std::to_string(size) + "-rank communicator");
  }
  void check_tag(int tag, const char* op) const {
    if (tag < 0) throw error("tag", std::string("nccl ") + op + ": tag must be >= 0, got " + std::to_string(tag));
  }

  [[noreturn]] void fail(const char* op, ncclResult_t r, int peer) {
    std::string msg = std::string("nccl ") + op + " on rank " + std::to_string(rank) + " failed: " + ncclGetErrorString(r);
    if (comm) {
      const char* last = ncclGetLastError(comm);
      if (last && *last) msg += std::string(" (") + last + ")";
      ncclCommAbort(comm);
      comm = nullptr;
    }
    msg += "; the communicator was aborted";
    broken = msg;
    throw error(peer >= 0 ? "rank " + std::to_string(peer) : who(), msg);
  }
  [[noreturn]] void fail_cuda(const char* op, cudaError_t e) {
    std::string msg = std::string("nccl ") + op + " on rank " + std::to_string(rank) + ": CUDA error: " + cudaGetErrorString(e);
    if (comm) {
      ncclCommAbort(comm);
      comm = nullptr;
    }
    msg += "; the communicator was aborted";
    broken = msg;
    throw error(who(), msg);
  }
  [[noreturn]] void timed_out(const char* op, int peer) {
    std::string msg = std::string("nccl ") + op + " on rank " + std::to_string(rank) + " timed out after " + std::to_string(timeout) + " s";
    msg += peer >= 0 ? " waiting for rank " + std::to_string(peer) : std::string(" (a peer did not take part)");
    if (comm) {
      ncclCommAbort(comm);
      comm = nullptr;
    }
    msg += "; the communicator was aborted";
    broken = msg;
    throw error(peer >= 0 ? "rank " + std::to_string(peer) : who(), msg);
  }

  // The result of an NCCL call. On a non-blocking communicator a call may return
  // ncclInProgress: the operation is on the stream only once the communicator settles, so
  // settle before anything else is enqueued or the stream is queried.
  void enqueue(ncclResult_t r, const char* op, int peer = -1) {
    if (r == ncclInProgress) settle(op);
    else if (r != ncclSuccess) fail(op, r, peer);
  }
  void enqueue_cuda(cudaError_t e, const char* op) {
    if (e != cudaSuccess) fail_cuda(op, e);
  }

  // Polls with a short spin, then yields, then sleeps up to 1 ms; false at the deadline.
  template <class Done>
  bool poll(Done&& done) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout));
    for (int spin = 0;; ++spin) {
      if (done()) return true;
      const auto now = clock::now();
      if (now > deadline) return false;
      if (spin < 1000) continue;
      if (now - start < std::chrono::milliseconds(10)) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(spin < 2000 ? 50 : 1000));
    }
  }
  // Waits until the communicator is no longer "in progress" (init, split, group end).
  void settle(const char* op) {
    ncclResult_t st = ncclSuccess;
    const bool ok = poll([&] {
      if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) st = ncclInternalError;
      return st != ncclInProgress;
    });
    if (!ok) timed_out(op, -1);
    if (st != ncclSuccess) fail(op, st, -1);
  }
  // Waits for the work enqueued on the operations' stream, watching the communicator's asynchronous errors.
  void wait(const char* op, int peer = -1) {
    ncclResult_t st = ncclSuccess;
    cudaError_t ce = cudaSuccess;
    const bool ok = poll([&] {
      ce = cudaStreamQuery(op_stream());
      if (ce == cudaSuccess) return true;
      if (ce != cudaErrorNotReady) return true;
      if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) st = ncclInternalError;
      return st != ncclSuccess && st != ncclInProgress;
    });
    if (!ok) timed_out(op, peer);
    if (ce != cudaSuccess && ce != cudaErrorNotReady) fail_cuda(op, ce);
    if (st != ncclSuccess && st != ncclInProgress) fail(op, st, peer);
  }

  void* grow(std::size_t bytes, const char* op) {
    if (stage.bytes >= bytes) return stage.ptr;
    if (stage.ptr) {
      enqueue_cuda(cudaStreamSynchronize(op_stream()), op);
      cudaFree(stage.ptr);
      stage.ptr = nullptr;
      stage.bytes = 0;
    }
    enqueue_cuda(cudaMalloc(&stage.ptr, bytes), op);
    stage.bytes = bytes;
    return stage.ptr;
  }
};

// Host buffers of one operation staged through the backend's device buffer. `total` bounds
// the bytes of every host buffer of the operation: the buffer grows (at most) once, before
// the first slot is handed out, so slots stay valid for the whole operation.
class staged {
 public:
  staged(comm_state& s, const char* op, std::size_t total) : s_(s), op_(op), total_(total) {}
  // The device address of `bytes` at p: p itself when it is device memory, else a staging slot
  // (filled from p when `copy`).
  template <class P>
  P* in(P* p, std::size_t bytes, bool copy = true) {
    if (p == nullptr || bytes == 0 || is_device(p)) return p;
    if (s_.deferred)
      throw error("buffer", std::string("nccl ") + op_ + ": a host buffer in a deferred operation (a bucket in flight takes device memory only)");
    if (!grown_) {
      s_.grow(total_ + 256 * 8, op_);
      grown_ = true;
    }
    const std::size_t at = used_;
    used_ += (bytes + 255) & ~std::size_t{255};
    if (used_ > s_.stage.bytes) throw error("nccl", std::string("nccl ") + op_ + ": internal: staging slots exceed the reserved bytes");
    auto* d = static_cast<unsigned char*>(s_.stage.ptr) + at;
    if (copy) s_.enqueue_cuda(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, s_.op_stream()), op_);
    return reinterpret_cast<P*>(d);
  }
  // The device address of q when q lies inside the host buffer `outer` (outer_bytes long)
  // already staged at `outer_dev` (in-place reduce-scatter / all-gather); else in(q).
  template <class Q>
  Q* inside(const void* outer, std::size_t outer_bytes, const void* outer_dev, Q* q, std::size_t bytes, bool copy) {
    if (q == nullptr || bytes == 0) return q;
    const auto o = reinterpret_cast<std::uintptr_t>(outer), x = reinterpret_cast<std::uintptr_t>(q);
    if (outer != nullptr && outer_dev != outer && x >= o && x + bytes <= o + outer_bytes) {
      auto* d = const_cast<unsigned char*>(static_cast<const unsigned char*>(outer_dev)) + (x - o);
      if (copy) s_.enqueue_cuda(cudaMemcpyAsync(d, q, bytes, cudaMemcpyHostToDevice, s_.op_stream()), op_);
      return reinterpret_cast<Q*>(d);
    }
    return in(q, bytes, copy);
  }
  // Copies a staged result back to the host buffer. Called after the operation's polled
  // wait: a copy into pageable memory blocks inside the driver until the stream gets to it, so
  // queued behind a collective with a dead peer it would hang where the wait times out.
  void out(void* host, const void* dev, std::size_t bytes) {
    if (host == nullptr || bytes == 0 || host == dev) return;
    s_.enqueue_cuda(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s_.op_stream()), op_);
    s_.wait(op_);
  }

 private:
  static bool is_device(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }
  comm_state& s_;
  const char* op_;
  std::size_t total_ = 0, used_ = 0;
  bool grown_ = false;
};

}  // namespace autosync::exec::nccl_detail
