// autosync/exec/executor_options.hpp — what a caller hands exec::executor and gets back: the
// options (timeout, error feedback, averaging, packing), one tensor's gradient buffer, and one
// iteration's timing. Part of exec/executor.hpp.
#pragma once

#include <autosync/model.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

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

}  // namespace autosync::exec
