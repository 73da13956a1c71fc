// autosync/exec/executor.hpp — runs a plan every iteration on the user's gradient buffers.
//
//   user thread                               communication thread (one, owns the backend)
//   ───────────                               ────────────────────────────────────────────
//   setup()        handshake: all-gather fingerprints, throw on mismatch; start the thread
//   begin_iteration(grads) ──notify──────────> wait for the next bucket to be ready
//   backward ... ready(t9) ──notify──────────> bucket 0 ready: pack, compress, collective,
//   backward ... ready(t8)                     decompress, unpack              [== b0 ==]
//   backward ... ready(t0) ──notify──────────> bucket 2 ready ...                [== b2 ==]
//   finish() ─── waits ────────────────────── done <─┘          exposed: |<-------->|
//
// ready(t) marks tensor t's gradient final; a bucket is ready when every tensor it holds is.
// The thread waits on a condition variable (no busy-wait) and runs one bucket at a time.
// Fifo plans on a host-memory backend: finish() runs the buckets the thread has not started
// itself (one at a time with the thread: the backend is never called concurrently), so the
// last buckets do not wait for the thread to be woken and scheduled (tens of microseconds on a
// busy host). A device backend keeps every call on the communication thread.
//
// Order. Every rank must post the same collectives in the same order, whatever its timing:
//   fifo only    the buckets run in plan order (their number = the cost model's ready order);
//                the thread waits for the next one to be ready. No extra messages.
//   any priority readiness is agreed on: in a round every rank contributes its ready flags
//                (an all-reduce of one int per bucket over the world; point to point on a host
//                backend, so a timeout names the missing rank); a bucket ready on every
//                rank is agreed, and the agreed bucket with the lowest key runs (priority
//                groups first, front layers first, then fifo buckets by number: plan.hpp).
//                The ranks see the same sums, so they pick the same bucket. A rank enters a
//                round when its ready set grew since its last round, when all its buckets are
//                ready, or when agreed buckets are left over; this bounds the rounds by the
//                number of buckets plus the number of ready() calls.
//
// A bucket: in place in the user's buffer when it is one contiguous segment and travels
// uncompressed. An uncompressed all-reduce or sharded bucket on ring or halving-doubling (flat,
// or both levels of a hierarchical all-reduce) of several segments runs on the tensors where they
// lie (exec::segmented: each ring / halving step addresses its block as runs of the user's
// buffers, summed there, one message per run; no pack or unpack copy) when its runs are large
// (options.pack: automatic = at least direct_run_bytes per run on average; never; always).
// Otherwise a bucket runs in place when this iteration's buffers happen to hold its segments
// back to back in fused order (checked per bucket and iteration), or packed into one scratch
// buffer (one bucket is in flight at a time).
// Compressed buckets are encoded with error feedback (exec/compress.hpp: a residual of one
// double per element, kept per bucket across iterations), summed in the wire dtype, decoded.
// Sparse buckets (architecture all_gather) run one sparse_all_gather per segment; a row is
// touched when any byte of it is non-zero (an untouched row adds exactly zero).
// With options.average the sums are divided by the world size (floating buckets; integer
// buckets are summed only).
//
// Errors: bad arguments throw autosync::error from the calling function, naming the field. A
// failure on the communication thread (a timeout, a backend error) ends the iteration and is
// re-thrown from finish(); the executor is then failed (the ranks may disagree about what ran)
// and every later begin_iteration() throws. finish() before every ready(), or ready() twice for
// one tensor, abandons the iteration (no bucket starts after it) and throws. The destructor stops and joins the thread.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/exec/hash.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/model.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace autosync::exec {

// How a bucket of several segments reaches the wire (see the header comment): summed on the
// user's tensors where they lie, or packed into one fused buffer. Every rank must choose alike
// (setup() checks): the message pattern differs.
enum class packing : std::uint8_t { automatic, always, never };

// automatic: a bucket runs on the tensors without packing when its runs hold at least this many
// bytes on average (a run is one message per ring step it touches; below this the per-message
// cost outweighs the pack and unpack copies it saves).
inline constexpr std::size_t direct_run_bytes = std::size_t{32} << 10;

struct executor_options {
  double timeout = 0.0;         // seconds a wait on a peer may take; 0: keep the backend's own
  bool error_feedback = true;   // compressed buckets keep a residual
  bool average = false;         // divide the sums by the world size
  packing pack = packing::automatic;
};

// One tensor's gradient buffer: `count` elements of `type` at `data` (row-major, the model's shape).
struct gradient {
  void* data = nullptr;
  dtype type = dtype::f32;
  std::int64_t count = 0;
};

struct iteration_timing {
  double sync = 0.0;         // seconds the communication thread ran buckets (pack .. unpack)
  double negotiation = 0.0;  // seconds in readiness rounds (plans with a priority group)
  double exposed = 0.0;      // from the last ready() until the last bucket finished
  double total = 0.0;        // from begin_iteration() until finish() returned
  std::size_t buckets = 0;   // buckets run
  std::size_t rounds = 0;    // readiness rounds
};

template <class T>
[[nodiscard]] constexpr dtype dtype_of() noexcept {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>,
                "autosync: executor: a span gradient must be float, double, int32_t or int64_t (f16/bf16: pass exec::gradient)");
  if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, double>) return dtype::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return dtype::i32;
  else return dtype::i64;
}

namespace detail {
// Customization point: a backend whose buffers are not host memory names a runner,
// `typename B::bucket_runner` (exec/nccl/bucket_runner.hpp), built in setup() as
// R(comms, plan, options) and called as r.run(bucket, gradients) on the communication thread:
// it packs, compresses, runs the bucket's steps and unpacks in the backend's memory. Without
// one the executor does that on the host (run_bucket below).
struct host_buckets {};
template <class B>
struct bucket_runner_of {
  using type = host_buckets;
};
template <class B>
  requires requires { typename B::bucket_runner; }
struct bucket_runner_of<B> {
  using type = typename B::bucket_runner;
};
}  // namespace detail

template <Backend B>
class executor {
  using runner_t = typename detail::bucket_runner_of<B>::type;
  static constexpr bool on_host = std::is_same_v<runner_t, detail::host_buckets>;

 public:
  executor(comms<B>& c, const model_spec& m, plan p, executor_options o = {})
      : comms_(&c), plan_(std::move(p)), opt_(o) {
    if (plan_.model_fingerprint != model_hash(m) || plan_.tensor_elements.size() != m.tensors.size())
      throw error("plan", "the plan was compiled for another model than '" + m.name + "'");
    if (!c.world.valid()) throw error("comms", "executor: the world communicator is empty");
    if (c.world.size() != plan_.ranks.world_size || c.ranks_per_node != plan_.ranks.ranks_per_node)
      throw error("comms", "executor: the plan was compiled for " + std::to_string(plan_.ranks.world_size) + " ranks, " +
                               std::to_string(plan_.ranks.ranks_per_node) + " per node; the communicators have " +
                               std::to_string(c.world.size()) + " ranks, " + std::to_string(c.ranks_per_node) + " per node");
    if (!(opt_.timeout >= 0.0)) throw error("options.timeout", "must be >= 0 seconds");
    names_.reserve(m.tensors.size());
    for (const auto& t : m.tensors) names_.push_back(t.name);
    std::size_t scratch = 0, wire = 0;
    direct_.assign(plan_.buckets.size(), 0);
    for (std::size_t i = 0; i < plan_.buckets.size(); ++i) {
      if constexpr (!on_host) break;  // the runner owns the bucket memory
      const auto& b = plan_.buckets[i];
      direct_[i] = direct(b, opt_.pack) ? 1 : 0;
      if (!b.in_place() && !direct_[i]) scratch = std::max(scratch, static_cast<std::size_t>(b.elements) * size_of(b.type));
      if (b.compressed) wire = std::max(wire, static_cast<std::size_t>(b.elements));
    }
    fused_.resize(scratch);
    wire_.resize(wire);
    residual_.resize(plan_.buckets.size());
    if (opt_.error_feedback && on_host)
      for (std::size_t i = 0; i < plan_.buckets.size(); ++i)
        if (plan_.buckets[i].compressed) residual_[i].assign(static_cast<std::size_t>(plan_.buckets[i].elements), 0.0);
    pending_.assign(plan_.buckets.size(), 0);
    ready_.assign(m.tensors.size(), 0);
  }

  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;

  ~executor() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
      abort_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  [[nodiscard]] const plan& compiled() const noexcept { return plan_; }
  // Whether bucket b runs on the tensors where they lie (no packing).
  [[nodiscard]] bool unpacked(std::size_t b) const { return direct_.at(b) != 0; }

  // Whether bucket b qualifies for running on the user's tensors without packing (the plan alone
  // decides, so every rank decides alike; see the header comment).
  [[nodiscard]] static bool direct(const plan_bucket& b, packing mode) noexcept {
    if (!host_memory_backend<B> || mode == packing::always || b.compressed || b.in_place()) return false;
    auto flat = [](topology_kind k) { return k == topology_kind::ring || k == topology_kind::halving_doubling; };
    const auto& t = b.topology;
    if (b.kind == step_kind::all_reduce) {
      if (!flat(t.kind) && !(t.kind == topology_kind::hierarchical && flat(t.intra) && flat(t.inter))) return false;
    } else if (b.kind != step_kind::sharded || !flat(t.kind)) {
      return false;
    }
    if (mode == packing::never) return true;
    std::size_t runs = 0;
    for (const auto& sg : b.segments) runs += (sg.blocks == 1 || sg.stride == sg.block) ? 1 : static_cast<std::size_t>(sg.blocks);
    return static_cast<std::size_t>(b.elements) * size_of(b.type) >= runs * direct_run_bytes;
  }

  // The handshake (on the calling thread; every rank must call it), then the thread starts.
  // Throws on every rank when the ranks were given different models, strategies, layouts or
  // options: "strategy mismatch: rank 2 differs from rank 0 at group 3" (the rank compared with
  // is the one whose inputs most ranks share: with rank 0 the odd one, "rank 0 differs from rank 1").
  void setup() {
    if (thread_.joinable()) throw error("setup", "executor: setup() was already called");
    auto& w = comms_->world;
    if (opt_.timeout > 0.0) {
      w.set_timeout(opt_.timeout);
      if (comms_->intra.valid()) comms_->intra.set_timeout(opt_.timeout);
      if (comms_->inter.valid()) comms_->inter.set_timeout(opt_.timeout);
    }
    const int p = w.size();
    constexpr std::size_t R = 5;
    const std::array<std::int64_t, R> mine{
        static_cast<std::int64_t>(plan_.model_fingerprint), static_cast<std::int64_t>(plan_.strategy_fingerprint),
        static_cast<std::int64_t>(plan_hash(plan_)), static_cast<std::int64_t>(plan_.group_fingerprints.size()),
        (opt_.average ? 1 : 0) | (opt_.error_feedback ? 2 : 0) | (static_cast<int>(opt_.pack) << 2)};
    std::vector<std::int64_t> all(R * static_cast<std::size_t>(p));
    w.all_gather(mine.data(), all.data(), R, dtype::i64);
    auto rec = [&](int r, std::size_t k) { return all[static_cast<std::size_t>(r) * R + k]; };
    // The reference is the record most ranks hold (ties: the lowest rank), so the odd rank out is
    // named even when it is rank 0.
    auto same = [&](int a, int b) { return std::equal(&all[static_cast<std::size_t>(a) * R], &all[static_cast<std::size_t>(a) * R] + R, &all[static_cast<std::size_t>(b) * R]); };
    int ref = 0, votes = 0;
    for (int r = 0; r < p; ++r) {
      int n = 0;
      for (int q = 0; q < p; ++q) n += same(r, q) ? 1 : 0;
      if (n > votes) { ref = r; votes = n; }
    }
    int bad = -1;
    for (int r = 0; r < p && bad < 0; ++r)
      if (!same(r, ref)) bad = r;
    if (bad >= 0) {
      const std::string who = "rank " + std::to_string(bad) + " differs from rank " + std::to_string(ref);
      if (rec(bad, 1) != rec(ref, 1) || rec(bad, 3) != rec(ref, 3)) {
        // every rank takes this branch (they all saw the same records): exchange the groups
        std::int64_t G = 0;
        for (int r = 0; r < p; ++r) G = std::max(G, rec(r, 3));
        std::vector<std::int64_t> gh(static_cast<std::size_t>(G), 0), ghs(static_cast<std::size_t>(G) * static_cast<std::size_t>(p));
        for (std::size_t g = 0; g < plan_.group_fingerprints.size(); ++g) gh[g] = static_cast<std::int64_t>(plan_.group_fingerprints[g]);
        w.all_gather(gh.data(), ghs.data(), static_cast<std::size_t>(G), dtype::i64);
        const auto Gs = static_cast<std::size_t>(G);
        for (std::size_t g = 0; g < Gs; ++g)
          if (ghs[static_cast<std::size_t>(bad) * Gs + g] != ghs[static_cast<std::size_t>(ref) * Gs + g])
            throw error("groups[" + std::to_string(g) + "]", "strategy mismatch: " + who + " at group " + std::to_string(g) +
                                                                   (rec(bad, 3) != rec(ref, 3) ? " (it has " + std::to_string(rec(bad, 3)) + " groups, rank " + std::to_string(ref) + " " + std::to_string(rec(ref, 3)) + ")" : ""));
        throw error("assignments", "strategy mismatch: " + who + " in the order of its assignments (every group agrees)");
      }
      if (rec(bad, 0) != rec(ref, 0)) throw error("model", "model mismatch: " + who + " (tensor names, shapes, dtypes or ready order)");
      if (rec(bad, 2) != rec(ref, 2)) throw error("plan", "plan mismatch: " + who + " (compiled for another cluster or layout)");
      throw error("options", "options mismatch: " + who + " (average, error_feedback or packing)");
    }
    if constexpr (!on_host) runner_.emplace(*comms_, plan_, opt_);
    thread_ = std::thread([this] { loop(); });
  }

  // Starts an iteration on these buffers (one per model tensor, in model order).
  void begin_iteration(std::span<const gradient> grads) {
    if (!thread_.joinable()) throw error("setup", "executor: call setup() before begin_iteration()");
    {
      std::lock_guard lk(mu_);
      if (failed_) throw error("executor", "executor: an earlier iteration failed; the ranks may disagree about what ran");
      if (active_) throw error("begin_iteration", "executor: the previous iteration has not finished (call finish())");
    }
    if (grads.size() != plan_.tensor_elements.size())
      throw error("grads", "executor: " + std::to_string(grads.size()) + " gradients for a model of " +
                               std::to_string(plan_.tensor_elements.size()) + " tensors");
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].type == plan_.tensor_types[i] && grads[i].count == plan_.tensor_elements[i] && grads[i].data != nullptr) continue;
      const std::string f = "grads[" + std::to_string(i) + "]";  // (built only for a bad gradient)
      if (grads[i].type != plan_.tensor_types[i])
        throw error(f + ".type", "tensor '" + names_[i] + "' is " + std::string(name_of(plan_.tensor_types[i])) + ", got " +
                                     std::string(name_of(grads[i].type)));
      if (grads[i].count != plan_.tensor_elements[i])
        throw error(f + ".count", "tensor '" + names_[i] + "' has " + std::to_string(plan_.tensor_elements[i]) + " elements, got " +
                                      std::to_string(grads[i].count));
      if (grads[i].data == nullptr) throw error(f + ".data", "null buffer for tensor '" + names_[i] + "'");
    }
    {
      std::lock_guard lk(mu_);
      grads_.assign(grads.begin(), grads.end());
      for (std::size_t b = 0; b < plan_.buckets.size(); ++b) pending_[b] = plan_.buckets[b].tensors;
      std::fill(ready_.begin(), ready_.end(), std::uint8_t{0});
      ready_buckets_ = 0;
      next_ = 0;
      running_ = false;
      active_ = true;
      done_ = false;
      abort_ = false;
      error_ = nullptr;
      timing_ = iteration_timing{};
      begin_ = last_ready_ = clock::now();
      ++generation_;
    }
    cv_.notify_all();
  }

  template <class T>
  void begin_iteration(std::span<const std::span<T>> grads) {
    std::vector<gradient> g;
    g.reserve(grads.size());
    for (const auto& s : grads) g.push_back(gradient{s.data(), dtype_of<std::remove_const_t<T>>(), static_cast<std::int64_t>(s.size())});
    begin_iteration(std::span<const gradient>(g));
  }
  template <class T>
  void begin_iteration(std::span<std::span<T>> grads) {
    begin_iteration(std::span<const std::span<T>>(grads.data(), grads.size()));
  }

  // Tensor `t`'s gradient is final: the buckets it completes may go.
  // A tensor marked ready twice abandons the iteration before ready() throws: the communication
  // thread starts no further bucket (one in flight completes or times out first), so nothing reads
  // the buffers after the throw; the executor is then failed, like after a failed finish().
  void ready(std::size_t t) {
    bool wake = false;
    {
      std::unique_lock lk(mu_);
      if (!active_) throw error("ready", "executor: ready() outside an iteration (call begin_iteration() first)");
      if (t >= ready_.size())
        throw error("tensor", "executor: ready(" + std::to_string(t) + "): the model has " + std::to_string(ready_.size()) + " tensors");
      if (ready_[t]) {
        abort_ = true;
        cv_.notify_all();
        cv_.wait(lk, [&] { return done_; });
        active_ = false;
        failed_ = true;
        error_ = nullptr;
        throw error("tensor", "executor: tensor '" + names_[t] + "' was already marked ready in this iteration; the iteration was abandoned");
      }
      ready_[t] = 1;
      last_ready_ = clock::now();
      for (auto b : plan_.feeds[t])
        if (--pending_[b] == 0) {
          ++ready_buckets_;
          wake = true;
        }
    }
    if (wake) cv_.notify_all();
  }

  // Waits for the iteration's buckets; re-throws a failure of the communication thread.
  iteration_timing finish() {
    std::unique_lock lk(mu_);
    if (!active_) throw error("finish", "executor: finish() without begin_iteration()");
    std::size_t missing = ready_.size();
    for (std::size_t t = 0; t < ready_.size(); ++t)
      if (!ready_[t]) { missing = t; break; }
    if (missing < ready_.size()) {
      abort_ = true;
      cv_.notify_all();
    } else if (caller_runs && !plan_.any_priority) {
      std::uint32_t b = 0;
      try {
        while (!done_ && claim(lk, b)) run_claimed(lk, b);
      } catch (...) {
        if (!error_) error_ = std::current_exception();
      }
    }
    cv_.wait(lk, [&] { return done_; });
    active_ = false;
    if (missing < ready_.size()) {
      failed_ = true;
      throw error("ready", "executor: finish() before tensor '" + names_[missing] + "' was marked ready; the iteration was abandoned");
    }
    if (error_) {
      failed_ = true;
      std::rethrow_exception(std::exchange(error_, nullptr));
    }
    timing_.total = seconds(clock::now() - begin_);
    return timing_;
  }

 private:
  using clock = std::chrono::steady_clock;
  static double seconds(clock::duration d) { return std::chrono::duration<double>(d).count(); }

  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      std::exception_ptr err;
      try {
        if (plan_.any_priority) run_negotiated();
        else run_fifo();
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard lk(mu_);
        if (err && !error_) error_ = err;  // a bucket finish() ran may have failed first
        done_ = true;
      }
      cv_.notify_all();
    }
  }

  // Fifo: the next bucket in plan order, claimed by the communication thread or by finish()
  // (caller_runs): waits until nobody runs a bucket and the next one is ready. false: every bucket
  // is claimed. Throws when the iteration was abandoned before the next bucket was ready.
  bool claim(std::unique_lock<std::mutex>& lk, std::uint32_t& b) {
    const auto nb = static_cast<std::uint32_t>(plan_.buckets.size());
    cv_.wait(lk, [&] { return next_ >= nb || (!running_ && (pending_[next_] == 0 || abort_)); });
    if (next_ >= nb) return false;
    if (pending_[next_] != 0 || abort_) abandoned();
    b = next_++;
    running_ = true;
    return true;
  }
  // Runs claimed bucket b with the lock released; a failure stops the claiming (both threads).
  void run_claimed(std::unique_lock<std::mutex>& lk, std::uint32_t b) {
    lk.unlock();
    try {
      run_bucket(b);
    } catch (...) {
      lk.lock();
      running_ = false;
      next_ = static_cast<std::uint32_t>(plan_.buckets.size());
      cv_.notify_all();
      throw;
    }
    lk.lock();
    running_ = false;
    cv_.notify_all();
  }
  static constexpr bool caller_runs = host_memory_backend<B>;

  [[noreturn]] void abandoned() const {
    throw error("ready", "executor: the iteration was abandoned before every tensor was ready");
  }

  void run_fifo() {
    {
      std::unique_lock lk(mu_);
      std::uint32_t b = 0;
      while (claim(lk, b)) run_claimed(lk, b);
      cv_.wait(lk, [&] { return !running_; });  // finish() may be running the last one
    }
    finish_timing();
  }

  void run_negotiated() {
    const auto nb = plan_.buckets.size();
    const int p = comms_->world.size();
    std::vector<std::uint8_t> launched(nb, 0);
    std::vector<std::int32_t> flags(nb, 0);
    std::vector<std::uint32_t> agreed;
    std::size_t done = 0, contributed = 0;
    bool leftover = false;
    while (done < nb) {
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return leftover || ready_buckets_ > contributed || ready_buckets_ == nb || abort_; });
        if (abort_ || (!leftover && ready_buckets_ == contributed && ready_buckets_ != nb)) abandoned();
        contributed = ready_buckets_;
        for (std::size_t b = 0; b < nb; ++b) flags[b] = (pending_[b] == 0 && !launched[b]) ? 1 : 0;
      }
      const auto t0 = clock::now();
      // host memory: point to point (halving-doubling), so a rank that does not come is named by
      // the peer that waits for it (a timed-out MPI collective cannot tell who is missing)
      if constexpr (host_memory_backend<B>) all_reduce(*comms_, flags.data(), nb, dtype::i32, topology_value{topology_kind::halving_doubling});
      else comms_->world.all_reduce(flags.data(), nb, dtype::i32);
      timing_.negotiation += seconds(clock::now() - t0);
      ++timing_.rounds;
      agreed.clear();
      for (std::uint32_t b = 0; b < nb; ++b)
        if (flags[b] == p) agreed.push_back(b);
      leftover = agreed.size() > 1;
      if (agreed.empty()) continue;
      const auto best = *std::min_element(agreed.begin(), agreed.end(),
                                          [&](std::uint32_t a, std::uint32_t c) { return plan_.buckets[a].key < plan_.buckets[c].key; });
      launched[best] = 1;
      ++done;
      run_bucket(best);
    }
    finish_timing();
  }

  void finish_timing() {
    std::lock_guard lk(mu_);
    timing_.exposed = std::max(0.0, seconds(clock::now() - last_ready_));
  }

  unsigned char* tensor_at(std::uint32_t t, std::int64_t element) const {
    return static_cast<unsigned char*>(grads_[t].data) + static_cast<std::size_t>(element) * size_of(plan_.tensor_types[t]);
  }

  void pack(const plan_bucket& b, unsigned char* dst) const {
    const std::size_t es = size_of(b.type);
    for (const auto& s : b.segments)
      for (std::int64_t k = 0; k < s.blocks; ++k)
        std::memcpy(dst + static_cast<std::size_t>(s.fused + k * s.block) * es, tensor_at(s.tensor, s.offset + k * s.stride),
                    static_cast<std::size_t>(s.block) * es);
  }
  void unpack(const plan_bucket& b, const unsigned char* src) const {
    const std::size_t es = size_of(b.type);
    for (const auto& s : b.segments)
      for (std::int64_t k = 0; k < s.blocks; ++k)
        std::memcpy(tensor_at(s.tensor, s.offset + k * s.stride), src + static_cast<std::size_t>(s.fused + k * s.block) * es,
                    static_cast<std::size_t>(s.block) * es);
  }

  // The bucket's elements when this iteration's buffers already hold them in fused order, one
  // contiguous run (tensors allocated back to back, e.g. views into one flat gradient buffer):
  // the bucket then runs there, in place, like a one-tensor bucket. nullptr: pack and unpack.
  //   fused:  [ seg 0 | seg 1 | seg 2 ]        user memory:  t0 t1 t2 adjacent, in that order
  unsigned char* adjacent(const plan_bucket& b) const {
    if (b.segments.empty()) return nullptr;
    const std::size_t es = size_of(b.type);
    const auto& s0 = b.segments[0];
    const auto base = reinterpret_cast<std::uintptr_t>(tensor_at(s0.tensor, s0.offset)) - static_cast<std::uintptr_t>(s0.fused) * es;
    for (const auto& s : b.segments) {
      if (s.blocks != 1 && s.stride != s.block) return nullptr;
      if (reinterpret_cast<std::uintptr_t>(tensor_at(s.tensor, s.offset)) != base + static_cast<std::uintptr_t>(s.fused) * es) return nullptr;
    }
    return tensor_at(s0.tensor, s0.offset) - static_cast<std::size_t>(s0.fused) * es;
  }

  // buf *= factor for n elements of t (floating dtypes; f16/bf16 through f32, rounded to nearest even)
  static void scale(unsigned char* buf, std::size_t n, dtype t, double factor) {
    for (std::size_t i = 0; i < n; ++i) {
      unsigned char* e = buf + i * size_of(t);
      switch (t) {
        case dtype::f32: { float v; std::memcpy(&v, e, 4); v = static_cast<float>(v * factor); std::memcpy(e, &v, 4); break; }
        case dtype::f64: { double v; std::memcpy(&v, e, 8); v *= factor; std::memcpy(e, &v, 8); break; }
        case dtype::f16: { std::uint16_t h; std::memcpy(&h, e, 2); h = to_f16(static_cast<double>(from_f16(h)) * factor); std::memcpy(e, &h, 2); break; }
        case dtype::bf16: { std::uint16_t h; std::memcpy(&h, e, 2); h = to_bf16(static_cast<double>(from_bf16(h)) * factor); std::memcpy(e, &h, 2); break; }
        default: return;  // integers are summed, not averaged
      }
    }
  }

  // The touched rows of a [rows x row_elems] table of element size es: rows with a non-zero byte.
  static std::vector<std::int64_t> touched_rows(const unsigned char* buf, std::size_t rows, std::size_t row_bytes) {
    std::vector<std::int64_t> r;
    for (std::size_t i = 0; i < rows; ++i) {
      const unsigned char* row = buf + i * row_bytes;
      if (std::any_of(row, row + row_bytes, [](unsigned char c) { return c != 0; })) r.push_back(static_cast<std::int64_t>(i));
    }
    return r;
  }

  // An uncompressed bucket on the tensors where they lie (direct_[bi]): no pack, no unpack.
  void run_direct(const plan_bucket& b) {
    segmented& sv = segs_;
    sv = segmented(b.type);
    for (const auto& sg : b.segments) {
      if (sg.blocks == 1 || sg.stride == sg.block) sv.append(tensor_at(sg.tensor, sg.offset), static_cast<std::size_t>(sg.elements()));
      else
        for (std::int64_t k = 0; k < sg.blocks; ++k) sv.append(tensor_at(sg.tensor, sg.offset + k * sg.stride), static_cast<std::size_t>(sg.block));
    }
    auto& c = *comms_;
    if (b.kind == step_kind::all_reduce) {
      all_reduce(c, sv, b.topology);
    } else {
      reduce_scatter(c, sv, b.topology);
      all_gather(c, sv, b.topology);
    }
    const int p = c.world.size();
    if (opt_.average && p > 1)
      sv.for_each(0, sv.total(), [&](unsigned char* at, std::size_t n) { scale(at, n, b.type, 1.0 / p); });
  }

  void run_bucket(std::uint32_t bi) {
    const auto t0 = clock::now();
    if constexpr (!on_host) {
      runner_->run(bi, std::span<const gradient>(grads_));
      timing_.sync += seconds(clock::now() - t0);
      ++timing_.buckets;
      return;
    }
    const auto& b = plan_.buckets[bi];
    const auto n = static_cast<std::size_t>(b.elements);
    const int p = comms_->world.size();
    if (direct_[bi]) {
      run_direct(b);
      timing_.sync += seconds(clock::now() - t0);
      ++timing_.buckets;
      return;
    }
    unsigned char* data = b.in_place() ? tensor_at(b.segments[0].tensor, b.segments[0].offset) : adjacent(b);
    const bool packed = data == nullptr;
    if (packed) {
      data = fused_.data();
      pack(b, data);
    }
    unsigned char* buf = data;
    dtype t = b.type;
    const double s = b.compressed ? wire_scale(b.wire, p) : 1.0;
    if (b.compressed) {
      double* r = residual_[bi].empty() ? nullptr : residual_[bi].data();
      if (b.type == dtype::f32) encode(reinterpret_cast<const float*>(data), r, wire_.data(), n, b.wire, s);
      else encode(reinterpret_cast<const double*>(data), r, wire_.data(), n, b.wire, s);
      buf = reinterpret_cast<unsigned char*>(wire_.data());
      t = b.wire;
    }
    auto& c = *comms_;
    switch (b.kind) {
      case step_kind::all_reduce: all_reduce(c, buf, n, t, b.topology); break;
      case step_kind::sharded:
        reduce_scatter(c, buf, n, t, b.topology);
        all_gather(c, buf, n, t, b.topology);
        break;
      case step_kind::parameter_server: ps_push_pull(c, buf, n, t, b.server_rank, b.local); break;
      case step_kind::sparse_all_gather:
        for (const auto& sg : b.segments) {
          const auto re = static_cast<std::size_t>(sg.row_elements);
          const std::size_t rows = static_cast<std::size_t>(sg.elements()) / re;
          unsigned char* at = buf + static_cast<std::size_t>(sg.fused) * size_of(t);
          const auto touched = touched_rows(at, rows, re * size_of(t));
          sparse_all_gather(c, at, rows, re, t, std::span<const std::int64_t>(touched));
        }
        break;
    }
    const double factor = opt_.average ? 1.0 / p : 1.0;
    if (b.compressed) {
      if (b.type == dtype::f32) decode(wire_.data(), reinterpret_cast<float*>(data), n, b.wire, s, factor);
      else decode(wire_.data(), reinterpret_cast<double*>(data), n, b.wire, s, factor);
    } else if (opt_.average && p > 1) {
      scale(data, n, b.type, factor);
    }
    if (packed) unpack(b, data);
    timing_.sync += seconds(clock::now() - t0);
    ++timing_.buckets;
  }

  comms<B>* comms_;
  plan plan_;
  executor_options opt_;
  std::vector<std::string> names_;
  std::vector<unsigned char> fused_;              // one bucket's packed elements (thread-owned)
  std::vector<std::uint16_t> wire_;               // one bucket's compressed elements (thread-owned)
  std::vector<std::vector<double>> residual_;     // per bucket: error feedback (thread-owned)
  std::optional<runner_t> runner_;                // B::bucket_runner, when B has one (setup())
  std::vector<std::uint8_t> direct_;              // per bucket: runs unpacked (fixed at construction)
  segmented segs_;                                // the runs of the bucket in flight (thread-owned)

  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  // guarded by mu_
  std::vector<gradient> grads_;
  std::vector<std::uint32_t> pending_;            // per bucket: tensors not yet ready
  std::vector<std::uint8_t> ready_;               // per tensor
  std::size_t ready_buckets_ = 0;                 // buckets whose tensors are all ready
  std::uint64_t generation_ = 0;
  std::uint32_t next_ = 0;                        // fifo: the next bucket to claim
  bool running_ = false;                          // fifo: a bucket is running (on either thread)
  bool active_ = false, done_ = false, abort_ = false, stop_ = false, failed_ = false;
  std::exception_ptr error_;
  iteration_timing timing_;                       // written by the thread while an iteration runs
  clock::time_point begin_, last_ready_;
};

}  // namespace autosync::exec
