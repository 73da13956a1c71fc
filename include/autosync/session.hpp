// autosync/session.hpp — gradient synchronization for a data-parallel trainer, in one object.
//
//   autosync::exec::mpi_session mpi(argc, argv);
//   auto world = autosync::exec::mpi_backend::world();
//   autosync::session s(world, model, autosync::strategy_file{"s.json"});    // or a strategy_desc, or
//                                                                             // search_options (session_search.hpp)
//   for (step ...) {
//     s.begin(grads);          // any range of buffers: std::vector<std::span<float>>, Eigen maps, exec::gradient
//     ... backward: s.ready("fc1.weight") or s.ready(index) as each gradient is final ...
//     s.finish();              // every gradient now holds the average over the ranks
//   }
//
// Construction (collective: every rank of `world` constructs its session with the same model,
// source and options):
//   1. rank 0 gets the strategy: loads the file, takes the strategy_desc, or runs the search
//      (deterministic, counted budget: session_search.hpp); the others wait;
//   2. rank 0 broadcasts it as JSON text through `world` (a failure on rank 0 travels the same
//      way: every rank throws rank 0's error);
//   3. every rank checks it against the model and the cluster, checks what it was made for
//      (strategy/made_for.hpp: the cluster, its fingerprint, world size and ranks per node; a
//      strategy without the stamp is not checked) and compiles the plan; the ranks agree on
//      whether all of them succeeded (one that failed throws its error, the others throw an error
//      naming that rank), so nobody waits for a rank that gave up;
//   4. the session duplicates `world` (split) for its communication thread, builds the
//      hierarchical communicators (ranks_per_node given once, in the options or by the cluster)
//      and the executor, and runs the executor's handshake (exec/executor.hpp: mismatched models,
//      strategies or layouts fail on every rank).
// `world` is borrowed for the constructor only: the trainer keeps using it for its own
// collectives, before, during and after iterations (the session's thread has its own duplicate).
//
// The cluster is options.cluster, else the search's cluster, else zoo::local(world size) (one
// node of all the ranks). ranks_per_node is options.ranks_per_node, else the cluster's when the
// cluster has exactly the world's ranks, else the world size.
//
// Iterations: begin(grads) takes one buffer per model tensor in model order (its element type
// must be the tensor's dtype: float, double, int32_t, int64_t, or exec::gradient for f16/bf16
// and device memory); ready(name | index) marks a gradient final (backward order or any order:
// buckets start as soon as their gradients are); finish() (or wait()) waits for every bucket
// and returns the iteration's timing. Floating gradients are averaged over the ranks by default
// (PyTorch DDP's semantics); session_options::reduce = reduction::sum keeps the sums. Integer
// tensors are always summed.
//
// on_bucket_done(f): f(bucket_info) once per bucket and iteration, when the bucket's tensors
// hold the synchronized result (on a device backend: when the bucket's work is enqueued on the
// backend's stream, final in stream order), so a trainer can run the optimizer step of
// `info.completed` while other buckets still travel. Threading: f runs on the session's
// communication thread, or on the trainer's thread inside finish() (fifo plans on host
// backends run the last buckets there), never two at a time; it must not call begin, ready or
// finish. An exception from f fails the iteration (finish() throws it). Set it between
// iterations.
//
// Errors (autosync::error, naming the field, and the rank where the trainer made the mistake):
//   ready("fc9.weight") of a name the model lacks          'tensor': rank 2: ready("fc9.weight"): ...
//   ready(t) twice in one iteration                          'tensor': rank 0: ... already marked ready ...
//   finish() before every ready()                            'ready': rank 1: finish() before ready() of 2
//                                                            tensors: 'fc0.weight', 'fc0.bias' ...
//   begin() with a buffer of the wrong size or type          'grads[0].count': rank 0: tensor 'fc0.weight'
//                                                            has 8192 elements, got 8191
//   a strategy made for another cluster or layout            'made_for.world_size': strategy 'autosync' was
//                                                            made for 32 ranks ...; this job has 4 ranks
// A failed iteration, or a begin() refused for its buffers, leaves the session failed (the ranks
// may disagree about what ran: the others may have begun that iteration, and this rank's next
// one would be summed with it): later begin() calls throw, and the other ranks' buckets of the
// iteration time out (session_options::timeout) with an error naming the rank they waited for.
//
// Compile time: this header declares the session; its definitions are in
// <autosync/session_impl.hpp> (the executor, the plan compiler and the JSON strategy reader:
// ~15 s of compile time at -O2). Include session_impl.hpp in one translation unit of the program
// (a one-file trainer includes it instead of this header) and, when other translation units use
// the session too, instantiate it there once:
//   template class autosync::session<autosync::exec::mpi_backend>;
// Every other translation unit includes only this header (a few seconds).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/exchange_note.hpp>
#include <autosync/exec/executor_options.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace autosync {

// What finish() leaves in the gradients: the average over the ranks (DDP) or the sum.
enum class reduction : std::uint8_t { average, sum };

struct session_options {
  std::optional<cluster_spec> cluster{};          // the plan's cluster (see the header comment)
  int ranks_per_node = 0;                         // 0: from the cluster (see the header comment)
  reduction reduce = reduction::average;
  bool error_feedback = true;                     // compressed groups keep a residual
  exec::packing pack = exec::packing::automatic;  // see exec/executor_options.hpp
  double timeout = 0.0;                           // seconds a wait on a peer may take (0: the backend's)
};

// A strategy JSON file, read by rank 0.
struct strategy_file {
  std::filesystem::path path;
};

// Where rank 0 gets the strategy: a strategy_desc, a file, or a function it calls (the search:
// session_search.hpp's search_options convert to one).
class strategy_source {
 public:
  strategy_source(strategy_desc s) : strategy_(std::move(s)) {}  // NOLINT(google-explicit-constructor)
  strategy_source(strategy_file f) : file_(std::move(f.path)) {}  // NOLINT(google-explicit-constructor)
  // `make(model, world_size, ranks_per_node)` runs on rank 0 only and returns a strategy for the
  // session's model and layout (stamped with made_for: strategy/made_for.hpp); `cluster` is the
  // cluster it searches on (the session's default cluster); `what` names it ("the search").
  using maker = std::function<strategy_desc(const model_spec& model, int world_size, int ranks_per_node)>;
  strategy_source(std::string what, maker make, std::optional<cluster_spec> cluster)
      : what_(std::move(what)), make_(std::move(make)), cluster_(std::move(cluster)) {}

  [[nodiscard]] const std::optional<strategy_desc>& strategy() const noexcept { return strategy_; }
  [[nodiscard]] const std::optional<std::filesystem::path>& file() const noexcept { return file_; }
  [[nodiscard]] const maker& make() const noexcept { return make_; }
  [[nodiscard]] const std::optional<cluster_spec>& cluster() const noexcept { return cluster_; }
  [[nodiscard]] const std::string& what() const noexcept { return what_; }

 private:
  std::optional<strategy_desc> strategy_;
  std::optional<std::filesystem::path> file_;
  std::string what_;
  maker make_;
  std::optional<cluster_spec> cluster_;
};

// One bucket that finished (on_bucket_done). The spans are valid during the call.
struct bucket_info {
  std::size_t index = 0;                       // the plan's bucket number, 0 .. buckets()-1
  std::uint32_t group = 0;                     // its strategy group
  std::span<const std::uint32_t> tensors;      // model tensors with a piece in it (ascending)
  std::span<const std::uint32_t> completed;    // tensors whose every piece is now final (ascending)
};

namespace detail::session {

template <class T>
inline constexpr bool element_type_ok =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

// A buffer of one tensor's gradient: exec::gradient, or anything with data() and size() over
// float, double, int32_t or int64_t (std::span, std::vector, Eigen matrices and maps).
template <class T>
concept gradient_buffer = std::is_same_v<std::remove_cvref_t<T>, exec::gradient> || requires(T& t) {
  { std::data(t) };
  { std::size(t) } -> std::convertible_to<std::size_t>;
  requires std::is_pointer_v<decltype(std::data(t))>;
  requires element_type_ok<std::remove_cv_t<std::remove_pointer_t<decltype(std::data(t))>>>;
};

template <class T>
[[nodiscard]] exec::gradient view_of(T& t) {
  if constexpr (std::is_same_v<std::remove_cvref_t<T>, exec::gradient>) {
    return t;
  } else {
    using E = std::remove_cv_t<std::remove_pointer_t<decltype(std::data(t))>>;
    return exec::gradient{const_cast<E*>(std::data(t)), exec::dtype_of<E>(), static_cast<std::int64_t>(std::size(t))};
  }
}

}  // namespace detail::session

// A range of gradient buffers, one per model tensor in model order.
template <class R>
concept gradient_range = std::ranges::input_range<R> && detail::session::gradient_buffer<std::ranges::range_reference_t<R>>;

template <exec::Backend B>
class session {
 public:
  // Collective over `world` (see the header comment). Throws autosync::error on every rank when
  // any rank cannot set up.
  session(B& world, model_spec model, strategy_source source, session_options options = {});
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Starts an iteration on these buffers (one per model tensor, in model order).
  template <gradient_range R>
  void begin(R&& grads) {
    views_.clear();
    for (auto&& g : grads) views_.push_back(detail::session::view_of(g));
    begin(std::span<const exec::gradient>(views_));
  }
  void begin(std::span<const exec::gradient> grads);
  void begin(std::span<exec::gradient> grads) { begin(std::span<const exec::gradient>(grads)); }

  void ready(std::size_t tensor);      // the model's tensor index
  void ready(std::string_view name);   // the model's tensor name
  exec::iteration_timing finish();
  exec::iteration_timing wait() { return finish(); }

  void on_bucket_done(std::function<void(const bucket_info&)> f);

  [[nodiscard]] const strategy_desc& strategy() const noexcept;
  [[nodiscard]] const model_spec& model() const noexcept;
  [[nodiscard]] const cluster_spec& cluster() const noexcept;
  [[nodiscard]] int rank() const noexcept;
  [[nodiscard]] int world_size() const noexcept;
  [[nodiscard]] int ranks_per_node() const noexcept;
  [[nodiscard]] std::size_t buckets() const noexcept;
  [[nodiscard]] reduction reduce() const noexcept;
  [[nodiscard]] exec::packing packing() const noexcept;  // session_options::pack
  // The index of a tensor of the model; throws autosync::error('tensor') for an unknown name.
  [[nodiscard]] std::size_t tensor_index(std::string_view name) const;
  // The session's own communicator (a duplicate of `world`): idle between finish() and the next
  // begin(), when the trainer may use it (learn::record_trial gathers timings over it).
  [[nodiscard]] B& communicator() noexcept;
  // What the compressors' exchanges reported so far (exec/exchange_note.hpp; e.g. Accordion's
  // level switches), the same on every rank. Between iterations.
  [[nodiscard]] std::vector<exec::exchange_note> exchange_notes() const;
  // This rank's compressor state (error-feedback residuals, PowerSGD's Q, fitted levels,
  // Accordion's detector, iteration counts) as bytes to keep with a checkpoint, one per rank;
  // load_state() restores it into a session of the same strategy, plan and rank (see
  // exec::executor::save_state). Between iterations. Mismatched or damaged bytes throw
  // autosync::error('state').
  [[nodiscard]] std::string save_state() const;
  void load_state(std::string_view bytes);

  struct impl;

 private:
  std::unique_ptr<impl> p_;
  std::vector<exec::gradient> views_;
};

template <exec::Backend B>
session(B&, model_spec, strategy_source, session_options = {}) -> session<B>;

}  // namespace autosync
