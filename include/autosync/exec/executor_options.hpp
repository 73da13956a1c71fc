// autosync/exec/executor_options.hpp — what a caller hands exec::executor and gets back: the
// options (timeout, error feedback, averaging, packing), one tensor's gradient buffer, and one
// iteration's timing. Part of exec/executor.hpp.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>

#include <algorithm>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace autosync::exec {

// How a bucket of several segments reaches the wire (see the header comment): summed on the
// user's tensors where they lie, or packed into one fused buffer. Every rank must choose alike
// (setup() checks): the message pattern differs.
enum class packing : std::uint8_t { automatic, always, never };

// The names `autosync run --pack` and trial records (settings.pack) use.
[[nodiscard]] constexpr std::string_view packing_name(packing p) noexcept {
  return p == packing::always ? "always" : p == packing::never ? "never" : "automatic";
}
[[nodiscard]] constexpr std::optional<packing> packing_from_name(std::string_view s) noexcept {
  for (auto p : {packing::automatic, packing::always, packing::never})
    if (packing_name(p) == s) return p;
  return std::nullopt;
}

// automatic: a bucket runs on the tensors without packing when its runs hold at least
// executor_options::direct_run_bytes on average (a run is one message per ring step it touches;
// below that the per-message cost outweighs the pack and unpack copies it saves). This is the
// default and the floor: on shared memory (one node) 32 KiB runs already pay for their messages.
inline constexpr std::size_t direct_run_bytes = std::size_t{32} << 10;

// The average run size from which a bucket is cheaper summed where its tensors lie than packed,
// for messages of `alpha` seconds each (the per-message latency of the links the bucket's
// messages cross) on ranks that copy `copy_bandwidth` bytes/s. A bucket of B bytes in R runs
// sends about 2 R more messages where it lies (each run is one more message in the reduce-scatter's
// steps it touches and again in the all-gather's: 2 R alpha) and copies 2 B bytes when packed (pack
// and unpack: 2 B / copy_bandwidth), so it runs where it lies when B / R >= alpha x copy_bandwidth.
// Never below direct_run_bytes; capped at 1 GiB. On the 2-host testbed at 500 Mb/s (alpha 24 us,
// 4 GB/s) that is 96 KiB: resnet50's 161 runs of 45 KiB on average pack, and one bucket of them
// measured 142 ms packed against 153 ms where the tensors lie (median of 5).
[[nodiscard]] constexpr std::size_t direct_run_bytes_for(double alpha, double copy_bandwidth) noexcept {
  const double b = alpha * copy_bandwidth;
  if (!(b > static_cast<double>(direct_run_bytes))) return direct_run_bytes;  // also NaN, negative, zero
  constexpr double cap = static_cast<double>(std::size_t{1} << 30);
  return b >= cap ? std::size_t{1} << 30 : static_cast<std::size_t>(b);
}

// The threshold on cluster c for `world` ranks, `ranks_per_node` to a node: the per-message
// latency of the links a bucket's messages cross (the NICs when the ranks span nodes, else the
// device links; the slowest worker node's) and the slowest worker node's copy rate (its reduce
// bandwidth). A pure function of the cluster and the layout, so every rank agrees.
[[nodiscard]] constexpr std::size_t direct_run_bytes_for(const cluster_spec& c, int world, int ranks_per_node) noexcept {
  const bool nodes = ranks_per_node > 0 && world / ranks_per_node > 1;
  double alpha = 0.0, copy = 0.0;
  for (const auto& n : c.nodes) {
    if (n.server_only) continue;  // worker nodes only (cluster_spec::worker_nodes)
    alpha = std::max(alpha, nodes ? n.nic.latency : n.intra.latency);
    if (n.reduce_bandwidth > 0.0) copy = copy > 0.0 ? std::min(copy, n.reduce_bandwidth) : n.reduce_bandwidth;
  }
  return direct_run_bytes_for(alpha, copy);
}

struct executor_options {
  double timeout = 0.0;         // seconds a wait on a peer may take; 0: keep the backend's own
  bool error_feedback = true;   // compressed buckets keep a residual
  bool average = false;         // divide the sums by the world size
  packing pack = packing::automatic;
  std::size_t direct_run_bytes = exec::direct_run_bytes;  // packing::automatic's threshold (direct_run_bytes_for)
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

}  // namespace autosync::exec
