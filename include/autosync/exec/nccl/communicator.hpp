// autosync/exec/nccl/communicator.hpp — the class nccl_backend (one NCCL communicator).
// Include <autosync/exec/nccl/backend.hpp>, which documents it and adds the topology overloads
// (exec/nccl/collectives.hpp) and the executor's bucket runner (exec/nccl/bucket_runner.hpp).
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/nccl/comm_state.hpp>
#include <autosync/exec/nccl/device_kernels.hpp>
#include <autosync/exec/nccl/tuner_pin.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/partitioner.hpp>
#include <autosync/policy/topology.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "autosync's NCCL backend needs NCCL 2.18 or newer (ncclCommSplit, non-blocking communicators)"
#endif

namespace autosync::exec {

namespace nccl {
class bucket_runner;  // exec/nccl/bucket_runner.hpp
}

namespace nccl_detail {

[[nodiscard]] inline double default_timeout() {
  if (const char* s = std::getenv("AUTOSYNC_TIMEOUT_S")) {
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (end != s && *end == '\0' && v > 0.0) return v;
    throw error("AUTOSYNC_TIMEOUT_S", "must be a positive number of seconds, got '" + std::string(s) + "'");
  }
  return 60.0;
}

[[nodiscard]] inline ncclDataType_t type_of(dtype t) {
  switch (t) {
    case dtype::f32: return ncclFloat32;
    case dtype::f64: return ncclFloat64;
    case dtype::f16: return ncclFloat16;
    case dtype::bf16: return ncclBfloat16;
    case dtype::i32: return ncclInt32;
    case dtype::i64: return ncclInt64;
  }
  throw error("dtype", "nccl: unknown dtype " + std::to_string(static_cast<int>(t)));
}

}  // namespace nccl_detail

// One point-to-point transfer of a group (nccl_backend::group).
struct nccl_p2p {
  bool send = true;
  void* buf = nullptr;     // send: read; recv: written
  std::size_t n = 0;       // elements
  int peer = 0;
};

class nccl_backend {
 public:
  // The executor runs each bucket through this (exec/executor.hpp customization point):
  // packing, compression and averaging are CUDA kernels on the backend's stream.
  using bucket_runner = nccl::bucket_runner;
  // Gradients live in device memory: the executor never sums them on the CPU or runs a bucket
  // on the calling thread (exec/backend.hpp, host_memory_backend).
  static constexpr bool host_memory = false;

  nccl_backend() = default;  // empty: valid() == false
  nccl_backend(nccl_backend&&) noexcept = default;
  nccl_backend& operator=(nccl_backend&&) noexcept = default;
  nccl_backend(const nccl_backend&) = delete;
  nccl_backend& operator=(const nccl_backend&) = delete;
  ~nccl_backend() = default;

  // The communicator of `nranks` ranks identified by `id`, this process being `rank`, on CUDA
  // device `device` (-1: the current device). Every rank must call it (NCCL's rendezvous);
  // a rank that does not come makes the others throw after timeout() seconds.
  [[nodiscard]] static nccl_backend init(const ncclUniqueId& id, int nranks, int rank, int device = -1) {
    if (nranks < 1) throw error("nranks", "nccl_backend::init: must be >= 1, got " + std::to_string(nranks));
    if (rank < 0 || rank >= nranks)
      throw error("rank", "nccl_backend::init: " + std::to_string(rank) + " is not in [0, " + std::to_string(nranks) + ")");
    nccl_backend b;
    b.s_ = std::make_unique<state>();
    b.s_->rank = rank;
    b.s_->size = nranks;
    b.s_->timeout = nccl_detail::default_timeout();
    b.s_->device = pick_device(device, rank);
    b.s_->make_stream();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    {
      const std::lock_guard lk(nccl::communicator_creation_lock());  // no pin of another thread's split reaches it
      b.s_->enqueue(ncclCommInitRankConfig(&b.s_->comm, nranks, id, rank, &config), "init");
      b.s_->settle("init");
    }
    b.s_->kernels = nccl::registered_kernels();
    return b;
  }

  // init() with the unique id created on rank 0 of `boot` (any Backend: the MPI backend, usually
  // MPI_COMM_WORLD) and broadcast over it. The NCCL communicator has boot's ranks, in its order.
  template <Backend Boot>
  [[nodiscard]] static nccl_backend bootstrap(Boot& boot, int device = -1) {
    static_assert(sizeof(ncclUniqueId) % sizeof(std::int64_t) == 0, "autosync: nccl: ncclUniqueId is not a whole number of int64 words");
    constexpr std::size_t W = sizeof(ncclUniqueId) / sizeof(std::int64_t);
    std::int64_t words[W + 1] = {};
    if (boot.rank() == 0) {
      ncclUniqueId id{};
      const ncclResult_t r = ncclGetUniqueId(&id);
      words[0] = static_cast<std::int64_t>(r);
      if (r == ncclSuccess) std::memcpy(words + 1, &id, sizeof id);
    }
    boot.broadcast(words, W + 1, dtype::i64, 0);  // rank 0's failure reaches every rank: nobody waits
    if (words[0] != ncclSuccess)
      throw error("rank 0", std::string("nccl bootstrap: ncclGetUniqueId failed on rank 0: ") +
                                ncclGetErrorString(static_cast<ncclResult_t>(words[0])));
    ncclUniqueId id{};
    std::memcpy(&id, words + 1, sizeof id);
    return init(id, boot.size(), boot.rank(), device);
  }

  [[nodiscard]] int rank() const noexcept { return s_ ? s_->rank : 0; }
  [[nodiscard]] int size() const noexcept { return s_ ? s_->size : 0; }
  [[nodiscard]] bool valid() const noexcept { return s_ && s_->comm != nullptr; }
  [[nodiscard]] double timeout() const noexcept { return s_ ? s_->timeout : nccl_detail::default_timeout(); }
  void set_timeout(double seconds) {
    if (!(seconds > 0.0)) throw error("timeout", "nccl_backend: must be > 0 seconds");
    if (s_) s_->timeout = seconds;
  }
  [[nodiscard]] int device() const noexcept { return s_ ? s_->device : -1; }
  // The stream operations are enqueued on: the backend's own (shared with its splits), or the
  // one a bucket runner set with set_issue_stream.
  [[nodiscard]] cudaStream_t stream() const noexcept { return s_ ? s_->op_stream() : nullptr; }
  [[nodiscard]] ncclComm_t comm() const noexcept { return s_ ? s_->comm : nullptr; }
  // "" while usable; otherwise why not (an error or a timeout aborted the communicator).
  [[nodiscard]] const std::string& broken() const noexcept {
    static const std::string none;
    return s_ ? s_->broken : none;
  }

  // The stream the gradients are computed on: a bucket's kernels wait for the work enqueued
  // there when the bucket starts (an event), so communication overlaps with the rest of backward.
  void set_compute_stream(cudaStream_t s) noexcept {
    if (s_) s_->compute = s;
  }
  [[nodiscard]] cudaStream_t compute_stream() const noexcept { return s_ ? s_->compute_or_default() : cudaStreamLegacy; }
  // Every operation first orders the backend's stream after the work enqueued so far on the
  // compute stream (an event; the host does not wait), so a buffer a kernel just wrote is read
  // after it. A bucket runner turns this off while it runs a bucket: it orders the bucket once,
  // when the bucket starts, so communication overlaps with the backward work enqueued after it.
  void set_implicit_ordering(bool on) noexcept {
    if (s_) s_->implicit_order = on;
  }
  // Operations are enqueued on `st` (nullptr: the backend's own stream again) and, when
  // `deferred`, return as soon as they are enqueued: the caller waits for them later
  // (synchronize() waits for `st`). A deferred operation takes device memory only (a host
  // buffer throws). The NCCL bucket runner issues each bucket this way on its own stream.
  void set_issue_stream(cudaStream_t st, bool deferred) noexcept {
    if (s_) {
      s_->issue = st;
      s_->deferred = st != nullptr && deferred;
    }
  }
  // How many buckets the NCCL bucket runner keeps in flight (1..16, default 4; set it on the
  // world communicator before the executor's setup()).
  void set_buckets_in_flight(int depth) {
    if (depth < 1 || depth > 16) throw error("buckets_in_flight", "nccl_backend: must be in [1, 16], got " + std::to_string(depth));
    if (s_) s_->in_flight = depth;
  }
  [[nodiscard]] int buckets_in_flight() const noexcept { return s_ ? s_->in_flight : 4; }
  void set_kernels(const nccl::device_kernels& k) noexcept {
    if (s_) s_->kernels = k;
  }
  [[nodiscard]] const nccl::device_kernels& kernels() const noexcept {
    static const nccl::device_kernels none{};
    return s_ ? s_->kernels : none;
  }
  void set_job_abort(std::function<void(std::string_view)> f) {
    if (s_) s_->job_abort = std::move(f);
  }

  // ---- the Backend concept ---------------------------------------------------------------------
  void all_reduce(void* buf, std::size_t n, dtype t) {
    state& s = enter("all_reduce");
    staged io(s, "all_reduce", n * size_of(t));
    void* d = io.in(buf, n * size_of(t));
    s.enqueue(ncclAllReduce(d, d, n, nccl_detail::type_of(t), ncclSum, s.comm, s.op_stream()), "all_reduce");
    s.complete("all_reduce");
    io.out(buf, d, n * size_of(t));
  }
  void reduce_scatter(const void* send, void* recv, std::size_t n, dtype t) {
    state& s = enter("reduce_scatter");
    const std::size_t es = size_of(t), p = static_cast<std::size_t>(s.size);
    staged io(s, "reduce_scatter", (p + 1) * n * es);
    const void* ds = io.in(send, n * p * es);
    void* dr = io.inside(send, n * p * es, ds, recv, n * es, /*copy=*/false);
    s.enqueue(ncclReduceScatter(ds, dr, n, nccl_detail::type_of(t), ncclSum, s.comm, s.op_stream()), "reduce_scatter");
    s.complete("reduce_scatter");
    io.out(recv, dr, n * es);
  }
  void all_gather(const void* send, void* recv, std::size_t n, dtype t) {
    state& s = enter("all_gather");
    const std::size_t es = size_of(t), p = static_cast<std::size_t>(s.size);
    staged io(s, "all_gather", (p + 1) * n * es);
    void* dr = io.in(recv, n * p * es, /*copy=*/false);
    const void* ds = io.inside(recv, n * p * es, dr, send, n * es, /*copy=*/true);
    s.enqueue(ncclAllGather(ds, dr, n, nccl_detail::type_of(t), s.comm, s.op_stream()), "all_gather");
    s.complete("all_gather");
    io.out(recv, dr, n * p * es);
  }
  void reduce(void* buf, std::size_t n, dtype t, int root) {
    state& s = enter("reduce");
    s.check_rank(root, "root", "reduce");
    staged io(s, "reduce", n * size_of(t));
    void* d = io.in(buf, n * size_of(t));
    s.enqueue(ncclReduce(d, d, n, nccl_detail::type_of(t), ncclSum, root, s.comm, s.op_stream()), "reduce");
    s.complete("reduce");
    io.out(buf, d, n * size_of(t));
  }
  void broadcast(void* buf, std::size_t n, dtype t, int root) {
    state& s = enter("broadcast");
    s.check_rank(root, "root", "broadcast");
    staged io(s, "broadcast", n * size_of(t));
    void* d = io.in(buf, n * size_of(t));
    s.enqueue(ncclBroadcast(d, d, n, nccl_detail::type_of(t), root, s.comm, s.op_stream()), "broadcast");
    s.complete("broadcast");
    io.out(buf, d, n * size_of(t));
  }
  void send(const void* buf, std::size_t n, dtype t, int peer, int tag) {
    state& s = enter("send");
    s.check_rank(peer, "peer", "send");
    s.check_tag(tag, "send");
    staged io(s, "send", n * size_of(t));
    const void* d = io.in(buf, n * size_of(t));
    s.enqueue(ncclSend(d, n, nccl_detail::type_of(t), peer, s.comm, s.op_stream()), "send", peer);
    s.complete("send", peer);
  }
  void recv(void* buf, std::size_t n, dtype t, int peer, int tag) {
    state& s = enter("recv");
    s.check_rank(peer, "peer", "recv");
    s.check_tag(tag, "recv");
    staged io(s, "recv", n * size_of(t));
    void* d = io.in(buf, n * size_of(t), /*copy=*/false);
    s.enqueue(ncclRecv(d, n, nccl_detail::type_of(t), peer, s.comm, s.op_stream()), "recv", peer);
    s.complete("recv", peer);
    io.out(buf, d, n * size_of(t));
  }
  void sendrecv(const void* sbuf, std::size_t sn, int dst, void* rbuf, std::size_t rn, int src, dtype t, int tag) {
    state& s = enter("sendrecv");
    s.check_rank(dst, "dst", "sendrecv");
    s.check_rank(src, "src", "sendrecv");
    s.check_tag(tag, "sendrecv");
    staged io(s, "sendrecv", (sn + rn) * size_of(t));
    const void* ds = io.in(sbuf, sn * size_of(t));
    void* dr = io.in(rbuf, rn * size_of(t), /*copy=*/false);
    const auto nt = nccl_detail::type_of(t);
    s.enqueue(ncclGroupStart(), "sendrecv");
    const ncclResult_t a = ncclSend(ds, sn, nt, dst, s.comm, s.op_stream());
    const ncclResult_t b = ncclRecv(dr, rn, nt, src, s.comm, s.op_stream());
    const ncclResult_t e = ncclGroupEnd();
    s.enqueue(a != ncclSuccess ? a : (b != ncclSuccess ? b : e), "sendrecv", src);
    s.complete("sendrecv", src);
    io.out(rbuf, dr, rn * size_of(t));
  }
  // Many transfers at once (ncclGroupStart .. ncclGroupEnd): all-to-all patterns, scatter/gather.
  void group(std::span<const nccl_p2p> ops, dtype t) {
    state& s = enter("group");
    for (const auto& o : ops) s.check_rank(o.peer, "peer", "group");
    std::size_t total = 0;
    for (const auto& o : ops) total += ((o.n * size_of(t) + 255) & ~std::size_t{255});
    staged io(s, "group", total);
    std::vector<void*> dev(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) dev[i] = io.in(ops[i].buf, ops[i].n * size_of(t), ops[i].send);
    const auto nt = nccl_detail::type_of(t);
    s.enqueue(ncclGroupStart(), "group");
    ncclResult_t first = ncclSuccess;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const ncclResult_t r = ops[i].send ? ncclSend(dev[i], ops[i].n, nt, ops[i].peer, s.comm, s.op_stream())
                                         : ncclRecv(dev[i], ops[i].n, nt, ops[i].peer, s.comm, s.op_stream());
      if (first == ncclSuccess && r != ncclSuccess && r != ncclInProgress) first = r;
    }
    const ncclResult_t e = ncclGroupEnd();
    s.enqueue(first != ncclSuccess ? first : e, "group");
    s.complete("group");
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (!ops[i].send) io.out(ops[i].buf, dev[i], ops[i].n * size_of(t));
  }
  // Ranks with the same color form a new communicator ordered by key (ties by rank); color < 0:
  // not a member (an empty backend). Every rank of this communicator must call it. The new
  // communicator shares this one's stream (their work stays ordered): keep this backend alive
  // while its splits are used (comms::make's world outlives its intra and inter).
  // With `pin`, and autosync's tuner plugin loaded by NCCL (exec/nccl/tuner_pin.hpp), NCCL runs
  // the pinned algorithms on the new communicator (algorithm_pinned() says whether it was handed
  // over); without the plugin the pin is ignored and NCCL picks.
  [[nodiscard]] nccl_backend split(int color, int key, const nccl::algorithm_pin& pin = {}) {
    state& s = enter("split");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t sub = nullptr;
    nccl_backend b;
    const std::lock_guard lk(nccl::communicator_creation_lock());
    const auto entry = pin.any() && color >= 0 ? nccl::tuner_pin_entry() : nullptr;
    const bool pinned = entry != nullptr && entry(pin.all_reduce, pin.rs_ag) == 0;
    struct withdraw {  // a pin no init took (a failed split) must not reach a later communicator
      nccl::tuner_pin_next_fn f;
      ~withdraw() {
        if (f) (void)f(-1, -1);
      }
    } const w{pinned ? entry : nullptr};
    s.enqueue(ncclCommSplit(s.comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, &config), "split");
    s.settle("split");
    if (color < 0 || sub == nullptr) return b;
    b.s_ = std::make_unique<state>();
    b.s_->comm = sub;
    b.s_->device = s.device;
    b.s_->timeout = s.timeout;
    b.s_->compute = s.compute;
    b.s_->kernels = s.kernels;
    b.s_->job_abort = s.job_abort;
    b.s_->in_flight = s.in_flight;
    b.s_->pinned = pinned;
    b.s_->stream = s.stream;  // one stream for the parent and its splits: their work stays ordered
    b.s_->settle("split");
    if (ncclCommUserRank(sub, &b.s_->rank) != ncclSuccess || ncclCommCount(sub, &b.s_->size) != ncclSuccess)
      b.s_->fail("split", ncclInternalError, -1);
    return b;
  }
  // Whether split() handed this communicator's pin to autosync's tuner plugin.
  [[nodiscard]] bool algorithm_pinned() const noexcept { return s_ && s_->pinned; }
  void barrier() {
    state& s = enter("barrier");
    void* d = s.grow(sizeof(std::int32_t), "barrier");
    s.enqueue(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, s.comm, s.op_stream()), "barrier");
    s.wait("barrier");
  }
  [[noreturn]] void abort(std::string_view why) {
    std::fprintf(stderr, "autosync: rank %d aborts the job: %.*s\n", rank(), static_cast<int>(why.size()), why.data());
    std::fflush(stderr);
    if (s_ && s_->comm) {
      ncclCommAbort(s_->comm);
      s_->comm = nullptr;
    }
    if (s_ && s_->job_abort) s_->job_abort(why);
    std::abort();
  }

  // Sets the backend's device current on the calling thread (the executor's thread, a user's).
  void make_current() const {
    if (s_) s_->current("make_current");
  }
  // Waits (the polling loop: timeout, asynchronous NCCL errors) for everything enqueued on the
  // backend's stream, e.g. kernels launched there between collectives.
  void synchronize(const char* op = "synchronize") {
    state& s = enter(op);
    s.wait(op);
  }
  // At least `bytes` of device memory owned by the backend (kept, grown, never zeroed); valid
  // until the next call. Work using it must be enqueued on stream().
  [[nodiscard]] void* device_scratch(std::size_t bytes, const char* op = "device_scratch") {
    state& s = enter(op);
    if (s.scratch.bytes < bytes) {
      if (s.scratch.ptr) {
        s.enqueue_cuda(cudaStreamSynchronize(s.op_stream()), op);
        cudaFree(s.scratch.ptr);
        s.scratch.ptr = nullptr;
        s.scratch.bytes = 0;
      }
      s.enqueue_cuda(cudaMalloc(&s.scratch.ptr, bytes), op);
      s.scratch.bytes = bytes;
    }
    return s.scratch.ptr;
  }
  // Checks a CUDA call made on the backend's stream (kernel launches, copies): on failure the
  // communicator is aborted and autosync::error names the operation and CUDA's error string.
  void check_cuda(cudaError_t e, const char* op) {
    state& s = enter(op);
    s.enqueue_cuda(e, op);
  }

 private:
  using state = nccl_detail::comm_state;
  using staged = nccl_detail::staged;

  static int pick_device(int device, int rank) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      throw error("device", "nccl_backend on rank " + std::to_string(rank) + ": no CUDA device (cudaGetDeviceCount: " +
                                (e != cudaSuccess ? std::string(cudaGetErrorString(e)) : std::string("0 devices")) + ")");
    if (device < 0) {
      if (cudaGetDevice(&device) != cudaSuccess) device = 0;
    }
    if (device >= count)
      throw error("device", "nccl_backend on rank " + std::to_string(rank) + ": device " + std::to_string(device) + " of " +
                                std::to_string(count) + " CUDA devices");
    return device;
  }

  state& enter(const char* op) {
    if (!s_) throw error("backend", std::string("nccl ") + op + ": the backend is empty (not a member of this communicator)");
    if (!s_->broken.empty()) throw error(s_->who(), std::string("nccl ") + op + ": the communicator is unusable: " + s_->broken);
    if (!s_->comm) throw error("backend", std::string("nccl ") + op + ": the backend is empty");
    s_->current(op);
    if (s_->implicit_order) s_->order_after_compute(op);
    return *s_;
  }

  std::unique_ptr<state> s_;
};

static_assert(Backend<nccl_backend>, "autosync: nccl_backend must satisfy exec::Backend");

}  // namespace autosync::exec
