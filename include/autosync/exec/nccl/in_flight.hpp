// autosync/exec/nccl/in_flight.hpp — which buckets the NCCL bucket runner keeps in flight, and
// when it waits for them (host logic only: no CUDA; tests/cuda/in_flight.cpp checks it).
//
// The runner issues every bucket on one of `depth` slots (a CUDA stream, its completion event
// and its own fused / wire buffers) and returns without waiting, so the pack of bucket i + 1
// runs while the collective of bucket i does, and so on. A slot is reused only after the bucket
// on it completed. The window says, for each bucket the executor hands over, which earlier
// buckets must be waited for first, always oldest first, so buckets complete (and their errors
// surface) in the order they were issued:
//
//   window full (depth buckets in flight)   wait for the oldest, reuse its slot
//   an exclusive bucket                      wait for every bucket in flight first, and for
//                                            itself after issuing it: nothing overlaps it
//   a bucket already issued since the last  a new iteration: wait for every bucket first
//   drain (every bucket runs once per iteration)
//   the iteration's last bucket              wait for every bucket after issuing it (the
//                                            executor's finish() returns when the gradients are
//                                            final)
// An iteration the executor abandons (finish() before every ready()) fails the executor; when a
// fifo plan's iteration stops early anyway, the next one starts with a bucket already issued
// and so drains the leftovers first.
#pragma once

#include <autosync/error.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace autosync::exec::nccl {

class in_flight_window {
 public:
  struct slot_wait {
    int slot = 0;
    std::uint32_t bucket = 0;
    friend bool operator==(const slot_wait&, const slot_wait&) = default;
  };
  // What to do for one bucket: wait for `before` (oldest first), issue on `slot`, then wait for
  // `after` (oldest first, the bucket itself last when it is the iteration's last).
  struct step {
    std::vector<slot_wait> before;
    int slot = 0;
    std::vector<slot_wait> after;
  };

  in_flight_window(int depth, std::size_t buckets) : depth_(depth), seen_(buckets, 0) {
    if (depth < 1) throw error("buckets_in_flight", "nccl executor: must be >= 1, got " + std::to_string(depth));
  }

  [[nodiscard]] int depth() const noexcept { return depth_; }
  [[nodiscard]] std::size_t size() const noexcept { return flying_.size(); }

  [[nodiscard]] step issue(std::uint32_t bucket, bool exclusive) {
    if (bucket >= seen_.size()) throw error("bucket", "nccl executor: bucket " + std::to_string(bucket) + " is not in the plan");
    step s;
    if (seen_[bucket] != 0 || exclusive) {
      s.before = drain();
      if (seen_[bucket] != 0) reset_seen();
    }
    if (static_cast<int>(flying_.size()) >= depth_) {
      s.before.push_back(flying_.front());
      flying_.pop_front();
    }
    s.slot = free_slot();
    flying_.push_back({s.slot, bucket});
    seen_[bucket] = 1;
    const bool last = ++issued_ == seen_.size();
    if (last || exclusive) s.after = drain();
    if (last) reset_seen();
    return s;
  }
  // Every bucket in flight, oldest first; the window is empty afterwards (a new iteration starts).
  [[nodiscard]] std::vector<slot_wait> drain() {
    std::vector<slot_wait> w(flying_.begin(), flying_.end());
    flying_.clear();
    return w;
  }
  // Forgets everything (after a failure: the backend aborted the communicator).
  void reset() noexcept {
    flying_.clear();
    reset_seen();
  }

 private:
  void reset_seen() noexcept {
    for (auto& x : seen_) x = 0;
    issued_ = 0;
  }
  int free_slot() const {
    for (int k = 0; k < depth_; ++k) {
      bool used = false;
      for (const auto& f : flying_) used = used || f.slot == k;
      if (!used) return k;
    }
    throw error("buckets_in_flight", "nccl executor: internal: no free slot");
  }

  int depth_;
  std::vector<unsigned char> seen_;
  std::size_t issued_ = 0;
  std::deque<slot_wait> flying_;
};

}  // namespace autosync::exec::nccl
