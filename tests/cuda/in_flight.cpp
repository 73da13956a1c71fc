// tests/cuda/in_flight.cpp — the NCCL bucket runner's window of buckets in flight
// (exec/nccl/in_flight.hpp), host logic only: which buckets are waited for before and after each
// bucket is issued, that they complete in issue order, that no slot is reused while its bucket
// is in flight, and that finish() sees every bucket done. No GPU needed; runs in CI.
#include <doctest/doctest.h>

#include <autosync/exec/nccl/in_flight.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

using autosync::exec::nccl::in_flight_window;
using W = in_flight_window::slot_wait;

namespace {

// Drives a window like the runner: a simulated device where a bucket is "done" only once waited.
struct sim {
  in_flight_window w;
  std::vector<int> slot_of;             // bucket -> slot while in flight, -1 otherwise
  std::vector<std::uint32_t> completed;  // in the order the runner waited
  std::size_t max_in_flight = 0;
  sim(int depth, std::size_t buckets) : w(depth, buckets), slot_of(buckets, -1) {}
  void wait(const std::vector<W>& ws) {
    for (const auto& x : ws) {
      REQUIRE(slot_of[x.bucket] == x.slot);
      slot_of[x.bucket] = -1;
      completed.push_back(x.bucket);
    }
  }
  void run(std::uint32_t b, bool exclusive = false) {
    const auto s = w.issue(b, exclusive);
    wait(s.before);
    if (exclusive) REQUIRE(std::count_if(slot_of.begin(), slot_of.end(), [](int x) { return x >= 0; }) == 0);
    for (int x : slot_of) REQUIRE(x != s.slot);  // the slot is free
    REQUIRE(s.slot >= 0);
    REQUIRE(s.slot < w.depth());
    slot_of[b] = s.slot;
    max_in_flight = std::max<std::size_t>(max_in_flight, static_cast<std::size_t>(std::count_if(slot_of.begin(), slot_of.end(), [](int x) { return x >= 0; })));
    wait(s.after);
    if (exclusive) REQUIRE(w.size() == 0);  // nothing overlaps an exclusive bucket
  }
};

}  // namespace

TEST_CASE("buckets in flight: depth bounds them, they complete in issue order, the last bucket drains") {
  for (int depth : {1, 2, 4, 7})
    for (std::size_t nb : {1u, 3u, 4u, 10u}) {
      sim s(depth, nb);
      for (int iter = 0; iter < 3; ++iter) {
        const auto before = s.completed.size();
        for (std::uint32_t b = 0; b < nb; ++b) s.run(b);
        // after the iteration's last bucket every bucket of it completed, in issue order
        REQUIRE(s.completed.size() == before + nb);
        for (std::uint32_t b = 0; b < nb; ++b) CHECK(s.completed[before + b] == b);
        REQUIRE(s.w.size() == 0);
      }
      CHECK(s.max_in_flight == std::min<std::size_t>(static_cast<std::size_t>(depth), nb));
    }
}

TEST_CASE("buckets in flight: a full window waits for exactly its oldest bucket") {
  in_flight_window w(2, 5);
  auto s0 = w.issue(0, false), s1 = w.issue(1, false), s2 = w.issue(2, false);
  CHECK(s0.before.empty());
  CHECK(s1.before.empty());
  CHECK(s0.slot != s1.slot);
  REQUIRE(s2.before.size() == 1);
  CHECK(s2.before[0] == W{s0.slot, 0});
  CHECK(s2.slot == s0.slot);
  CHECK(s2.after.empty());
  auto s3 = w.issue(3, false);
  CHECK(s3.before == std::vector<W>{{s1.slot, 1}});
  auto s4 = w.issue(4, false);  // the last: waits for 3 and 4 after issuing
  CHECK(s4.before == std::vector<W>{{s2.slot, 2}});
  CHECK(s4.after == std::vector<W>{{s3.slot, 3}, {s4.slot, 4}});
}

TEST_CASE("buckets in flight: exclusive buckets, negotiated orders, abandoned iterations") {
  // Fifo plans run the buckets in one fixed order; an iteration may be abandoned after a few
  // buckets (the executor then fails: exec/executor.hpp), and a later iteration starts with a
  // bucket already issued, which drains the leftovers first. Negotiated plans run every bucket
  // in an order that changes per iteration.
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const int depth = 1 + static_cast<int>(rng() % 5);
    const std::size_t nb = 1 + rng() % 9;
    const bool negotiated = rng() % 2 == 0;
    sim s(depth, nb);
    std::vector<std::uint32_t> order(nb);
    for (std::uint32_t b = 0; b < nb; ++b) order[b] = b;
    std::shuffle(order.begin(), order.end(), rng);
    for (int iter = 0; iter < 4; ++iter) {
      if (negotiated) std::shuffle(order.begin(), order.end(), rng);
      const bool abandon = !negotiated && nb > 1 && rng() % 3 == 0;
      const std::size_t runs = abandon ? 1 + rng() % (nb - 1) : nb;
      const std::size_t leftover = s.w.size();
      const auto before = s.completed.size();
      for (std::size_t i = 0; i < runs; ++i) s.run(order[i], rng() % 5 == 0);
      if (!abandon) {
        // finish() returns with every bucket done: the leftovers of an abandoned iteration, then
        // this iteration's in its issue order
        REQUIRE(s.completed.size() == before + leftover + nb);
        for (std::size_t i = 0; i < nb; ++i) REQUIRE(s.completed[before + leftover + i] == order[i]);
        REQUIRE(s.w.size() == 0);
      }
      REQUIRE(s.max_in_flight <= static_cast<std::size_t>(depth));
    }
  }
}

TEST_CASE("buckets in flight: bad depth and bucket indices are errors naming the field") {
  CHECK_THROWS_WITH_AS(in_flight_window(0, 3), doctest::Contains("buckets_in_flight"), autosync::error);
  in_flight_window w(2, 3);
  CHECK_THROWS_WITH_AS((void)w.issue(3, false), doctest::Contains("bucket"), autosync::error);
}
