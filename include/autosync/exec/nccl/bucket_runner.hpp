// autosync/exec/nccl/bucket_runner.hpp — how the executor runs a plan bucket on NCCL.
//
// exec::executor<nccl_backend> keeps its scheduling (readiness, fifo / negotiated order, the
// handshake, timing) and hands every bucket to this runner (the `bucket_runner` customization
// point of exec/executor.hpp). The gradients are device memory. Every bucket is issued on a
// slot of its own (a CUDA stream and its own fused / wire buffers; nccl_backend's
// buckets_in_flight() slots, default 4) and run() returns as soon as it is enqueued:
//
//   compute stream ──event──┐
//   slot k stream:          wait ─> pack (or pack+encode) ─> NCCL step(s) ─> unpack (or
//                                   decode+unpack, or average in place)
//   slot k+1 stream:             (the next bucket, the same chain: its pack runs while bucket
//                                 k's collective does; NCCL runs one communicator's collectives
//                                 in the order they were issued, on every rank the same)
//
// exec/nccl/in_flight.hpp decides the waits: a full window waits for its oldest bucket; the
// iteration's last bucket waits for all after it is issued, so finish() returns with final
// gradients; buckets complete in issue order. Exclusive buckets overlap with nothing: sharded
// ones (their uneven layouts use the backend's one scratch buffer and wait inside) and those
// whose steps use the split communicators (hierarchical all-reduce, parameter server with local
// replication: collectives of several communicators in flight on several streams could wait on
// each other across ranks). Waits are the backend's polled waits (timeout, NCCL's asynchronous
// errors, abort).
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
// NCCL's algorithm is the plan's topology: when every rank's NCCL loaded autosync's tuner plugin,
// the runner makes one duplicate of the world communicator per flat topology of the plan's
// all-reduce and sharded buckets, pinned to what NCCL runs for it (exec/nccl/tuner_pin.hpp: ring
// -> RING, tree -> TREE, halving_doubling -> PAT for reduce-scatter / all-gather), and runs each
// such bucket there. A bucket on another communicator than the bucket before it overlaps with
// none (collectives of two communicators in flight on two streams could wait on each other).
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
#include <autosync/exec/nccl/in_flight.hpp>
#include <autosync/exec/nccl/tuner_pin.hpp>
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
  bucket_runner(comms<nccl_backend>& c, const plan& p, const executor_options& o)
      : c_(&c), plan_(&p), opt_(o), window_(c.world.buckets_in_flight(), p.buckets.size()) {
    auto& w = c.world;
    if (!w.valid()) throw error("comms", "nccl executor: the world communicator is empty");
    for (const auto& b : p.buckets)  // registered codecs (exec/extension_codecs.hpp) run on host buffers only
      if (b.hooked)
        throw error("groups[" + std::to_string(b.group) + "].compression",
                    "nccl executor: registered compressors and extension-slot codecs run on host-memory backends (MPI) only");
    k_ = w.kernels();
    if (!k_.complete())
      throw error("kernels", "nccl executor: no CUDA bucket kernels registered: include <autosync/exec/nccl/kernels.cuh> in one .cu "
                             "file of the program (or pass nccl::kernel_table() to nccl_backend::set_kernels)");
    w.make_current();
    make_pinned();
    // the segment tables of every bucket, one device array
    std::vector<ew::segment_row> rows;
    std::size_t residual = 0;
    for (const auto& b : p.buckets) {
      first_row_.push_back(static_cast<int>(rows.size()));
      for (const auto& s : b.segments) rows.push_back({s.fused, s.offset, s.block, s.stride, s.blocks, s.tensor, 0});
      residual_at_.push_back(residual);
      if (b.compressed) {
        wire_n_ = std::max(wire_n_, static_cast<std::size_t>(b.elements));
        if (opt_.error_feedback) residual += static_cast<std::size_t>(b.elements);
      } else if (!b.in_place()) {
        fused_n_ = std::max(fused_n_, static_cast<std::size_t>(b.elements) * size_of(b.type));
      }
    }
    first_row_.push_back(static_cast<int>(rows.size()));
    rows_ = alloc<ew::segment_row>(rows.size(), "segment table");
    // on the backend's stream, then waited: a memcpy/memset on the legacy default stream is not
    // ordered with a non-blocking compute stream, whose first bucket could read unset memory
    if (!rows.empty())
      w.check_cuda(cudaMemcpyAsync(rows_.get(), rows.data(), rows.size() * sizeof(ew::segment_row), cudaMemcpyHostToDevice, w.stream()), "setup");
    tensors_ = alloc<void*>(p.tensor_elements.size(), "tensor table");
    // each slot's fused and wire buffers, 256-byte aligned
    fused_n_ = (fused_n_ + 255) / 256 * 256;
    wire_n_ = (wire_n_ + 127) / 128 * 128;
    const auto depth = static_cast<std::size_t>(window_.depth());
    fused_ = alloc<unsigned char>(fused_n_ * depth, "fused buffers");
    wire_ = alloc<std::uint16_t>(wire_n_ * depth, "wire buffers");
    residual_ = alloc<double>(residual, "residuals");
    if (residual > 0) w.check_cuda(cudaMemsetAsync(residual_.get(), 0, residual * sizeof(double), w.stream()), "setup");
    w.synchronize("setup");
    cudaEvent_t ev = nullptr;
    w.check_cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "setup");
    ready_.reset(ev);
    for (std::size_t k = 0; k < depth; ++k) {
      cudaStream_t st = nullptr;
      w.check_cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "setup");
      slots_.emplace_back(st);
    }
  }
  bucket_runner(const bucket_runner&) = delete;
  bucket_runner& operator=(const bucket_runner&) = delete;
  ~bucket_runner() {
    // the buffers below are freed after this: nothing in flight may still use them
    for (auto& s : slots_) (void)cudaStreamSynchronize(s.get());
  }

  // Issues bucket `bi` on this iteration's gradients (device pointers), on the communication
  // thread, and returns when it is enqueued (or, for the iteration's last bucket, done).
  void run(std::uint32_t bi, std::span<const gradient> grads) {
    auto& c = *c_;
    auto& w = c.world;
    const auto& b = plan_->buckets[bi];
    w.make_current();
    try {
      upload_tensors(grads);
      auto& on = comm_for(b);
      const auto st = window_.issue(bi, exclusive(b) || (last_ != nullptr && last_ != &on));
      wait_for(st.before);
      last_ = &on;
      issue(bi, b, grads, static_cast<std::size_t>(st.slot));
      wait_for(st.after);
    } catch (...) {
      window_.reset();  // the backend aborted the communicator: nothing in flight completes
      last_ = nullptr;
      issuing_off(c);
      for (auto& pc : pinned_) issuing_off(*pc.second);
      throw;
    }
  }

 private:
  // Whether bucket b must not overlap with any other (see the header comment).
  [[nodiscard]] bool exclusive(const plan_bucket& b) const {
    const auto& c = *c_;
    const bool split = c.intra.valid() && c.inter.valid() && c.intra.size() > 1 && c.inter.size() > 1;
    switch (b.kind) {
      case step_kind::sharded: return true;
      case step_kind::all_reduce: return split && b.topology.kind == topology_kind::hierarchical;
      case step_kind::parameter_server: return b.local && c.ranks_per_node > 1;
      case step_kind::sparse_all_gather: return false;
    }
    return true;
  }

  // The pinned duplicates of the world (see the header comment). Every rank splits alike: only
  // when every rank has autosync's tuner (a host all-reduce agrees on it).
  void make_pinned() {
    auto& w = c_->world;
    if (w.size() < 2) return;  // NCCL consults no tuner on one rank
    std::int32_t have = nccl::tuner_pin_entry() != nullptr ? 1 : 0;
    w.all_reduce(&have, 1, dtype::i32);
    if (have != w.size()) return;
    for (const auto& b : plan_->buckets) {
      if (b.kind != step_kind::all_reduce && b.kind != step_kind::sharded) continue;
      const auto kind = b.topology.kind;
      if (!nccl::pin_of(kind).any() || pinned_of(kind) != nullptr) continue;
      auto pc = std::make_unique<comms<nccl_backend>>();
      pc->world = w.split(0, w.rank(), nccl::pin_of(kind));
      pc->ranks_per_node = 1;
      pc->node = w.rank();
      pc->nodes = w.size();
      pinned_.emplace_back(kind, std::move(pc));
    }
  }
  [[nodiscard]] comms<nccl_backend>* pinned_of(topology_kind k) const {
    for (const auto& [kind, pc] : pinned_)
      if (kind == k) return pc.get();
    return nullptr;
  }
  // The communicators bucket b runs on.
  [[nodiscard]] comms<nccl_backend>& comm_for(const plan_bucket& b) const {
    if (b.kind == step_kind::all_reduce || b.kind == step_kind::sharded)
      if (auto* pc = pinned_of(b.topology.kind)) return *pc;
    return *c_;
  }

  // Enqueues bucket bi on slot k's stream.
  void issue(std::uint32_t bi, const plan_bucket& b, std::span<const gradient> grads, std::size_t k) {
    auto& c = *c_;
    auto& w = c.world;
    auto& on = comm_for(b);
    const cudaStream_t st = slots_[k].get();
    w.check_cuda(cudaEventRecord(ready_.get(), w.compute_stream()), "bucket");
    w.check_cuda(cudaStreamWaitEvent(st, ready_.get(), 0), "bucket");
    const issuing guard(c, st);  // ordered once, above, for the whole bucket; no waits inside
    const issuing guard_on(on, st);
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
      a.wire = wire_.get() + k * wire_n_;
      a.residual = opt_.error_feedback ? residual_.get() + residual_at_[bi] : nullptr;
      a.wire_type = b.wire;
      a.scale = wire_scale(b.wire, p);
      w.check_cuda(k_.pack_encode(a, st), "pack_encode");
      step(on, b, a.wire, n, b.wire);
      a.factor = factor;
      w.check_cuda(k_.decode_unpack(a, st), "decode_unpack");
    } else if (unsigned char* data = in_place(b, grads)) {
      step(on, b, data, n, b.type);
      if (factor != 1.0) w.check_cuda(k_.scale(data, b.elements, b.type, factor, st), "average");
    } else {
      a.fused = fused_.get() + k * fused_n_;
      w.check_cuda(k_.pack(a, st), "pack");
      step(on, b, a.fused, n, b.type);
      a.factor = factor;
      w.check_cuda(k_.unpack(a, st), "unpack");
    }
  }

  // Waits (polled: timeout, NCCL's asynchronous errors) for the buckets on these slots, in order.
  void wait_for(const std::vector<in_flight_window::slot_wait>& ws) {
    for (const auto& x : ws)  // the bucket's communicator: its NCCL errors are the ones to watch
      wait_stream(comm_for(plan_->buckets[x.bucket]).world, slots_[static_cast<std::size_t>(x.slot)].get(), "bucket");
  }
  // Waits for the work on stream st through b's polled wait, without enter()'s implicit
  // ordering (which would first make st wait for everything on the compute stream: the host
  // would wait for the rest of backward).
  static void wait_stream(nccl_backend& b, cudaStream_t st, const char* op) {
    struct restore {
      nccl_backend& b;
      ~restore() {
        b.set_issue_stream(nullptr, false);
        b.set_implicit_ordering(true);
      }
    } const r{b};
    b.set_implicit_ordering(false);
    b.set_issue_stream(st, false);
    b.synchronize(op);
  }

 private:
  struct cuda_free {
    void operator()(void* p) const noexcept { cudaFree(p); }
  };
  struct event_destroy {
    void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
  };
  struct stream_destroy {
    void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
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

  // While a bucket is issued: the three communicators enqueue on the slot's stream without
  // waiting, and without the per-operation ordering after the compute stream (the bucket is
  // ordered once, when it starts). Restored on exit, also when the bucket throws.
  static void issuing_off(comms<nccl_backend>& c) noexcept {
    for (nccl_backend* b : {&c.world, &c.intra, &c.inter}) {
      b->set_issue_stream(nullptr, false);
      b->set_implicit_ordering(true);
    }
  }
  struct issuing {
    comms<nccl_backend>& c;
    issuing(comms<nccl_backend>& c_, cudaStream_t st) : c(c_) {
      for (nccl_backend* b : {&c.world, &c.intra, &c.inter}) {
        b->set_implicit_ordering(false);
        b->set_issue_stream(st, true);
      }
    }
    ~issuing() { issuing_off(c); }
    issuing(const issuing&) = delete;
    issuing& operator=(const issuing&) = delete;
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
    // the table is read by the buckets in flight: wait for them (in order) before rewriting it
    wait_for(window_.drain());
    uploaded_.resize(grads.size());
    for (std::size_t i = 0; i < grads.size(); ++i) uploaded_[i] = grads[i].data;
    auto& w = c_->world;
    struct ordering_on {
      nccl_backend& b;
      ~ordering_on() { b.set_implicit_ordering(true); }
    } const on{w};
    w.set_implicit_ordering(false);  // the copy needs no ordering after the compute stream
    const cudaStream_t st = w.stream();
    w.check_cuda(cudaMemcpyAsync(tensors_.get(), uploaded_.data(), uploaded_.size() * sizeof(void*), cudaMemcpyHostToDevice, st), "tensor table");
    wait_stream(w, st, "tensor table");  // before any slot's kernels read it
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

  void step(comms<nccl_backend>& c, const plan_bucket& b, void* buf, std::size_t n, dtype t) {
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
  in_flight_window window_;
  std::vector<std::pair<topology_kind, std::unique_ptr<comms<nccl_backend>>>> pinned_;  // before the slots: destroyed after them
  const comms<nccl_backend>* last_ = nullptr;  // the communicators of the bucket issued last
  device_kernels k_{};
  std::size_t fused_n_ = 0, wire_n_ = 0;  // per slot: bytes of the fused buffer, elements of the wire
  std::vector<std::unique_ptr<std::remove_pointer_t<cudaStream_t>, stream_destroy>> slots_;
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
