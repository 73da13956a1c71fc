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
// The thread waits on a condition variable (no busy-wait) and runs one bucket at a time, except
// parameter servers: on a host-memory backend the uncompressed pieces of one fusion bucket on
// distinct servers (no local replication) run as one batch, every server summing its piece at
// the same time (exec::ps_push_pull_concurrent), as the cost model's server lanes do; the batch
// starts when all its pieces are ready. Pieces with local replication or compression, and every
// piece on a device backend, still run one at a time (search/serial.hpp scores them so).
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
// (options.pack: automatic = at least options.direct_run_bytes per run on average, by default
// exec::direct_run_bytes, and what the session derives from the cluster's links:
// direct_run_bytes_for; never; always).
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
// on_bucket_done(f): f(b) after bucket b ran, once per bucket and iteration, on the thread that
// ran it (the communication thread, or the caller's inside finish()), never two at a time. On a
// host backend b's segments then hold the result; a device runner returns once the bucket is
// enqueued, so its result is final in the order of the backend's stream. An exception from f
// fails the iteration like a failed bucket. Set it before setup() or between iterations.
//
// Errors: bad arguments throw autosync::error from the calling function, naming the field. A
// failure on the communication thread (a timeout, a backend error) ends the iteration and is
// re-thrown from finish(); the executor is then failed (the ranks may disagree about what ran)
// and every later begin_iteration() throws. finish() before every ready(), or ready() twice for
// one tensor, abandons the iteration (no bucket starts after it) and throws. A gradient that
// does not fit the plan (begin_iteration: its count, type or buffer) fails the executor too: the
// other ranks may have begun the iteration, and this rank's next one would be summed with it.
// The destructor stops and joins the thread.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/exec/executor_options.hpp>
#include <autosync/exec/hash.hpp>
#include <autosync/exec/host_buckets.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/model.hpp>
#include <autosync/registry/exchange_state.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace autosync::exec {

namespace detail {
// Customization point: a backend whose buffers are not host memory names a runner,
// `typename B::bucket_runner` (exec/nccl/bucket_runner.hpp), built in setup() as
// R(comms, plan, options) and called as r.run(bucket, gradients) on the communication thread:
// it packs, compresses, runs the bucket's steps and unpacks in the backend's memory. Without
// one the executor does that on the host (exec/host_buckets.hpp).
template <class B>
struct bucket_runner_of {
  using type = host_bucket_runner<B>;
};
template <class B>
  requires requires { typename B::bucket_runner; }
struct bucket_runner_of<B> {
  using type = typename B::bucket_runner;
};
}  // namespace detail

// Runner: how a bucket runs (the backend's bucket_runner, else host_bucket_runner<B>);
// exec/typed_executor.hpp passes a runner typed on a static strategy (typed_executor<S, B>).
template <Backend B, class Runner = typename detail::bucket_runner_of<B>::type>
class executor {
  using runner_t = Runner;
  static constexpr bool on_host = std::is_base_of_v<host_bucket_runner<B>, runner_t>;

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
    if constexpr (on_host) runner_.emplace(*comms_, plan_, opt_);  // a device runner: in setup()
    pending_.assign(plan_.buckets.size(), 0);
    ready_.assign(m.tensors.size(), 0);
    make_batches();
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

  // See the header comment (set before setup() or between iterations; empty: none).
  void on_bucket_done(std::function<void(std::uint32_t)> f) {
    std::lock_guard lk(mu_);
    if (active_) throw error("on_bucket_done", "executor: cannot change the bucket callback during an iteration");
    bucket_done_ = std::move(f);
  }
  // What the buckets' compressor exchanges reported (exec/exchange_note.hpp): Accordion's
  // decisions, for example. Host runners only (a device runner reports none). Between iterations.
  [[nodiscard]] std::vector<exchange_note> exchange_notes() const {
    if constexpr (on_host) return runner_ ? runner_->exchange_notes() : std::vector<exchange_note>{};
    else return {};
  }
  // The state this rank carries from one iteration to the next: the built-in codecs'
  // error-feedback residuals and the registered compressors' own state (residuals, PowerSGD's Q,
  // fitted levels, Accordion's detector, iteration counts). save_state() returns it as bytes to
  // keep beside a checkpoint of the model (one per rank: residuals differ between ranks);
  // load_state() restores it into an executor of the same strategy, plan and rank, so training
  // resumes as if it had not stopped. Between iterations (before setup() too), host runners only.
  // A snapshot of another strategy, plan, world size or rank, or truncated or altered bytes,
  // throw autosync::error('state...') naming what does not match, and leave the executor's state
  // as it was (a failed load part-way through the buckets restores the state held before it).
  [[nodiscard]] std::string save_state() const {
    require_idle("save_state");
    registry::state_writer w;
    w.put_bytes(state_magic);
    w.put(state_version);
    w.put(plan_.strategy_fingerprint);
    w.put(plan_hash(plan_));
    w.put(static_cast<std::int32_t>(comms_->world.size()));
    w.put(static_cast<std::int32_t>(comms_->world.rank()));
    if constexpr (on_host) runner_->save_state(w);
    else throw error("state", "executor: saving the compressors' state needs a host-memory backend");
    return w.take();
  }
  void load_state(std::string_view bytes) {
    require_idle("load_state");
    registry::state_reader r(bytes, "state");
    if (r.get_bytes("magic") != state_magic) throw error("state", "not an autosync state (its first bytes are not '" + std::string(state_magic) + "')");
    std::uint32_t version = 0;
    r.get(version, "version");
    if (version != state_version) throw error("state", "version " + std::to_string(version) + "; this build reads " + std::to_string(state_version));
    std::uint64_t strategy = 0, planh = 0;
    std::int32_t world = 0, rank = 0;
    r.get(strategy, "strategy fingerprint");
    r.get(planh, "plan fingerprint");
    r.get(world, "world size");
    r.get(rank, "rank");
    if (strategy != plan_.strategy_fingerprint) throw error("state", "saved for another strategy (fingerprints differ)");
    if (planh != plan_hash(plan_)) throw error("state", "saved for another plan of this strategy (another cluster or layout)");
    if (world != comms_->world.size() || rank != comms_->world.rank())
      throw error("state", "saved by rank " + std::to_string(rank) + " of " + std::to_string(world) + "; this is rank " +
                               std::to_string(comms_->world.rank()) + " of " + std::to_string(comms_->world.size()));
    if constexpr (on_host) {
      registry::state_writer w;  // what this rank holds now, restored if the bytes fail part-way
      runner_->save_state(w);
      const std::string before = w.take();
      try {
        runner_->load_state(r);
        r.finish();
      } catch (...) {
        registry::state_reader back(before, "state");
        runner_->load_state(back);
        throw;
      }
    } else {
      throw error("state", "executor: loading the compressors' state needs a host-memory backend");
    }
  }

  // Whether bucket b runs on the tensors where they lie (no packing; host memory only).
  [[nodiscard]] bool unpacked(std::size_t b) const {
    if constexpr (on_host) return runner_->unpacked(b);
    else return (void)plan_.buckets.at(b), false;
  }

  // Whether bucket b qualifies for running on the user's tensors without packing (the plan alone
  // decides, so every rank decides alike; see the header comment and exec/host_buckets.hpp).
  [[nodiscard]] static bool direct(const plan_bucket& b, packing mode, std::size_t run_bytes = exec::direct_run_bytes) noexcept {
    return host_bucket_runner<B>::direct(b, mode, run_bytes);
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
        (opt_.average ? 1 : 0) | (opt_.error_feedback ? 2 : 0) | (static_cast<std::int64_t>(opt_.pack) << 2) |
            (static_cast<std::int64_t>(std::min<std::size_t>(opt_.direct_run_bytes, std::size_t{1} << 40)) << 4)};
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
      throw error("options", "options mismatch: " + who + " (average, error_feedback, packing or its run threshold)");
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
    try {
      check_gradients(grads);
    } catch (...) {
      // The other ranks may have begun this iteration: were this rank to begin the next one, its
      // buckets would meet theirs of this one. The executor is failed instead (every later
      // begin_iteration() throws), and their buckets of this iteration time out.
      std::lock_guard lk(mu_);
      failed_ = true;
      throw;
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
  // Throws autosync::error naming the first gradient (grads[i].type, .count, .data) that does not
  // fit the plan, or "grads" for a wrong number of them.
  void check_gradients(std::span<const gradient> grads) const {
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
  }

  static constexpr std::string_view state_magic = "autosync.state";
  static constexpr std::uint32_t state_version = 1;
  void require_idle(const char* what) const {
    std::lock_guard lk(mu_);
    if (active_) throw error(what, std::string("executor: ") + what + "() during an iteration (call it between finish() and begin_iteration())");
  }
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
    auto batch_ready = [&] {
      for (std::uint32_t x = next_; x < batch_end_[next_]; ++x)
        if (pending_[x] != 0) return false;
      return true;
    };
    cv_.wait(lk, [&] { return next_ >= nb || (!running_ && (abort_ || batch_ready())); });
    if (next_ >= nb) return false;
    if (abort_ || !batch_ready()) abandoned();
    b = next_;
    next_ = batch_end_[b];
    running_ = true;
    return true;
  }
  // Runs claimed bucket b with the lock released; a failure stops the claiming (both threads).
  void run_claimed(std::unique_lock<std::mutex>& lk, std::uint32_t b) {
    lk.unlock();
    try {
      run_bucket(b, batch_end_[b]);
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
      if (agreed.empty()) {
        leftover = false;
        continue;
      }
      const auto best = *std::min_element(agreed.begin(), agreed.end(),
                                          [&](std::uint32_t a, std::uint32_t c) { return plan_.buckets[a].key < plan_.buckets[c].key; });
      // a parameter-server batch runs together when every piece of it is agreed (the same
      // flags on every rank: the same decision), else the bucket alone
      std::uint32_t first = best, last = best + 1;
      const std::uint32_t head = batch_head_[best], end = batch_end_[head];
      if (end - head > 1 && std::all_of(flags.begin() + head, flags.begin() + end, [&](std::int32_t v) { return v == p; })) {
        first = head;
        last = end;
      }
      for (std::uint32_t x = first; x < last; ++x) launched[x] = 1;
      done += last - first;
      leftover = agreed.size() > last - first;
      run_bucket(first, last);
    }
    finish_timing();
  }

  void finish_timing() {
    std::lock_guard lk(mu_);
    timing_.exposed = std::max(0.0, seconds(clock::now() - last_ready_));
  }

  // Runs buckets [bi, last) (last = bi + 1: one bucket; more: a parameter-server batch).
  void run_bucket(std::uint32_t bi, std::uint32_t last) {
    const auto t0 = clock::now();
    if constexpr (on_host) runner_->run_batch(bi, last, std::span<const gradient>(grads_));
    else runner_->run(bi, std::span<const gradient>(grads_));
    timing_.sync += seconds(clock::now() - t0);
    timing_.buckets += last - bi;
    if (bucket_done_)
      for (std::uint32_t b = bi; b < last; ++b) bucket_done_(b);
  }

  // Parameter-server batches (host-memory backends): a run of consecutive plan buckets that are
  // the uncompressed pieces (no registered codec) of one fusion bucket, of one dtype, without local replication, on
  // pairwise distinct server ranks. They run as one concurrent exchange (the model's server
  // lanes side by side). batch_end_[b]: one past the batch that starts at b (b + 1 for a bucket
  // alone); batch_head_[b]: the first bucket of b's batch. Only the plan decides: every rank
  // batches alike.
  void make_batches() {
    const auto nb = static_cast<std::uint32_t>(plan_.buckets.size());
    batch_end_.resize(nb);
    batch_head_.resize(nb);
    for (std::uint32_t b = 0; b < nb;) {
      std::uint32_t e = b + 1;
      const auto& h = plan_.buckets[b];
      auto joins = [&](const plan_bucket& x) {
        if (x.kind != step_kind::parameter_server || x.compressed || x.hooked || x.local || x.source != h.source || x.type != h.type)
          return false;
        for (std::uint32_t y = b; y < e; ++y)
          if (plan_.buckets[y].server_rank == x.server_rank) return false;
        return true;
      };
      if (on_host && joins(h))
        while (e < nb && joins(plan_.buckets[e])) ++e;
      for (std::uint32_t y = b; y < e; ++y) {
        batch_end_[y] = y == b ? e : y + 1;
        batch_head_[y] = b;
      }
      b = e;
    }
  }

  comms<B>* comms_;
  plan plan_;
  executor_options opt_;
  std::vector<std::string> names_;
  std::optional<runner_t> runner_;                // runs the buckets (host: built here; a device runner: in setup())
  std::function<void(std::uint32_t)> bucket_done_;  // set between iterations only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  // guarded by mu_
  std::vector<gradient> grads_;
  std::vector<std::uint32_t> pending_;            // per bucket: tensors not yet ready
  std::vector<std::uint8_t> ready_;               // per tensor
  std::size_t ready_buckets_ = 0;                 // buckets whose tensors are all ready
  std::uint64_t generation_ = 0;
  std::uint32_t next_ = 0;                        // fifo: the next bucket to claim
  std::vector<std::uint32_t> batch_end_, batch_head_;  // parameter-server batches (make_batches)
  bool running_ = false;                          // fifo: a bucket is running (on either thread)
  bool active_ = false, done_ = false, abort_ = false, stop_ = false, failed_ = false;
  std::exception_ptr error_;
  iteration_timing timing_;                       // written by the thread while an iteration runs
  clock::time_point begin_, last_ready_;
};

}  // namespace autosync::exec
