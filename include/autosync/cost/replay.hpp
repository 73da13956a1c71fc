// autosync/cost/replay.hpp — the iteration as the executors run it: one bucket at a time.
//
// Where the cost model (cost/estimate.hpp) and the executors (exec/executor.hpp, the MPI and
// the NCCL backends) agree, and where they do not:
//
//   agree     lane 0: every all_reduce, sharded and all_gather bucket of every group runs on one
//             communicator, one bucket at a time, in the same launch order (fifo: bucket number
//             = ready order; priority groups first by lowest forward tensor index:
//             cost/estimate.hpp step 6 = exec/plan.hpp's key). Compression encodes and decodes
//             on the same lane before and after the bytes move.
//   differ    parameter servers. The model gives each server a lane of its own that runs in
//             parallel with the other servers and with lane 0 (bounded by the shared NICs,
//             step 8). The executor has one communication thread: the uncompressed pieces of a
//             parameter-server bucket without local replication run as one batch, their
//             servers side by side (exec::ps_push_pull_concurrent), as the model's lanes do;
//             with local replication, compression or registered codecs (an extension slot's or
//             a registered compressor's, which may cost no codec time) the pieces run one after
//             another, each a blocking push and pull through its server rank; and no collective
//             runs meanwhile.
//
// `cost::serial_replay` plays the estimate's own events as the executor runs them: each bucket's
// events (its collective, or its transfers to every server, and its compression work) back to
// back (a batch's transfers side by side: the longest, or twice the busiest NIC's share of the
// batch, push phase then pull phase), one bucket at a time, each launch after a readiness round
// when the plan has a priority group (the executor agrees on readiness before every launch: an
// all-reduce of one int32 per plan bucket; the estimate has no such term), a bucket starting
// when it is ready and the communication thread is free, in the executor's launch order. For a strategy without parameter servers it is the
// estimate itself (the same order, the same durations). With parameter servers it is what the
// executor does with the model's per-transfer costs (each transfer's own time, without the waits
// for NICs that transfers on other lanes kept busy in the estimate). The learned correction's
// target is measured over max(estimate, replay) (cost/features.hpp: features::executor).
//
// search::optimize scores (search/serial.hpp) its pick by max(estimate, serial replay) (options.serial_executor,
// on by default): the walk itself uses the estimate (cheaper: one pass, no timeline), so it may
// visit parameter-server strategies the executor would run slower, but the answer is chosen by
// what the executor does.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/timeline.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace autosync::cost {

struct replay_result {
  double iteration = 0.0;          // with one bucket at a time
  bool parameter_servers = false;  // the strategy has parameter-server transfers (the two may differ)
};

// The replay of prediction p (cost::estimate with its timeline) of strategy s: bs and items are
// the estimate's buckets (cost::buckets) and items (expand), fab the cluster's fabric.
[[nodiscard]] inline replay_result serial_replay(const prediction& p, std::span<const bucket> bs, std::span<const sync_item> items,
                                                 const strategy_desc& s, const fabric& fab) {
  bool ps_any = false;
  // a bucket's busy time: its events back to back, except the transfers of an uncompressed
  // parameter-server bucket without local replication, which the executor runs as one batch,
  // its servers side by side (exec/executor.hpp): the longest of them. A transfer counts its own
  // time (local reduce + exchange + local broadcast), not its span in the estimate, which also
  // holds its waits for NICs that transfers on other lanes kept busy there: one bucket at a time,
  // those transfers are not running.
  // A batch's servers share the senders' NICs: in its push phase every rank sends one piece to
  // each server, in its pull phase receives one from each, so the batch also takes twice the
  // busiest worker node's NIC time over all its pieces (ps_nic_unit: one direction per byte).
  const std::size_t W = fab.workers.size();
  std::vector<double> busy(bs.size(), 0.0), longest(bs.size(), 0.0), nic(bs.size() * W, 0.0);
  std::vector<std::uint8_t> compressed(bs.size(), 0);
  std::vector<std::uint32_t> pieces(bs.size(), 0);  // parameter-server transfers: the executor's plan buckets
  for (const auto& e : p.events) {
    const bool ps = e.kind == event_ps_transfer;
    if (e.bucket < busy.size()) {
      double d = e.end - e.start;
      if (ps) {
        workspace::job j;
        double bw = 0.0;
        const auto sv = static_cast<std::size_t>(e.lane - 1);
        const bool local = s.groups[e.group].replication == replication_kind::local;
        detail::ps_transfer(fab, sv, static_cast<double>(e.bytes), local, j, bw);
        d = j.t1 + j.t2 + j.t3;
        ++pieces[e.bucket];
        for (std::size_t k = 0; k < W; ++k) nic[e.bucket * W + k] += static_cast<double>(e.bytes) * ps_nic_unit(fab, sv, local, k);
      }
      busy[e.bucket] += d;
      if (ps) longest[e.bucket] = std::max(longest[e.bucket], d);
      if (e.kind == event_compression) compressed[e.bucket] = 1;
    }
    ps_any = ps_any || ps;
  }
  // launches: one per bucket, one per piece of a parameter-server bucket that does not batch
  std::vector<std::uint8_t> hooked(s.groups.size(), 0);
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi)
    hooked[gi] = s.groups[gi].architecture == architecture_kind::parameter_server && runs_registered_codecs(s.groups[gi]) ? 1 : 0;  // (a hooked plan bucket)
  std::vector<std::uint32_t> launches(bs.size(), 1);
  std::size_t plan_buckets = 0;
  for (std::size_t b = 0; b < bs.size(); ++b) {
    const auto& g = s.groups[bs[b].group];
    plan_buckets += std::max<std::uint32_t>(pieces[b], 1);
    if (g.architecture != architecture_kind::parameter_server) continue;
    if (g.replication != replication_kind::local && !compressed[b] && !hooked[bs[b].group]) {
      double nic_max = 0.0;
      for (std::size_t k = 0; k < W; ++k) nic_max = std::max(nic_max, nic[b * W + k]);
      busy[b] = std::max(longest[b], 2.0 * nic_max);
    } else {
      launches[b] = std::max<std::uint32_t>(pieces[b], 1);
    }
  }
  // launch keys as exec/plan.hpp: priority groups first by lowest forward tensor index, then fifo by number
  std::vector<std::uint64_t> key(bs.size());
  bool any_priority = false;
  for (std::uint32_t b = 0; b < bs.size(); ++b) {
    const bool prio = s.groups[bs[b].group].schedule == schedule_kind::priority;
    std::uint32_t lo = std::numeric_limits<std::uint32_t>::max();
    for (auto i : bs[b].items) lo = std::min(lo, items[i].tensor);
    key[b] = prio ? (static_cast<std::uint64_t>(lo) << 32) | b : (std::uint64_t{1} << 63) | b;
    any_priority = any_priority || prio;
  }
  // With a priority group every launch waits for a readiness round (exec/executor.hpp): an
  // all-reduce of one int32 per plan bucket over the world, halving-doubling on host backends.
  const double round = any_priority ? all_reduce(fab, topology_value{topology_kind::halving_doubling}, 4.0 * static_cast<double>(plan_buckets)) : 0.0;
  double t = p.forward;  // nothing is ready before the backward starts
  if (!any_priority) {
    for (std::size_t b = 0; b < bs.size(); ++b)  // fifo: by number (numbers are in ready order)
      t = std::max(t, bs[b].ready) + busy[b] + launches[b] * round;
    return {std::max(p.forward + p.backward, t), ps_any};
  }
  // Priority: each launch takes the smallest key among the buckets ready by then, or waits for the
  // next to be ready. In ready order (cost::buckets' own: the stable sort leaves it as it is) the
  // ready buckets are a prefix, queued in a min-heap of their keys (distinct: each holds its
  // bucket's number).
  std::vector<std::uint32_t> by_ready(bs.size());
  for (std::uint32_t b = 0; b < by_ready.size(); ++b) by_ready[b] = b;
  std::stable_sort(by_ready.begin(), by_ready.end(), [&](std::uint32_t a, std::uint32_t b) { return bs[a].ready < bs[b].ready; });
  std::vector<std::uint64_t> heap;
  heap.reserve(bs.size());
  const auto greater = [](std::uint64_t a, std::uint64_t b) { return a > b; };
  std::size_t k = 0;  // by_ready[0, k) are launched or queued
  for (std::size_t n = 0; n < bs.size(); ++n) {
    if (heap.empty() && bs[by_ready[k]].ready > t) t = bs[by_ready[k]].ready;  // none ready: wait for the next
    for (; k < bs.size() && bs[by_ready[k]].ready <= t; ++k) {
      heap.push_back(key[by_ready[k]]);
      std::push_heap(heap.begin(), heap.end(), greater);
    }
    std::pop_heap(heap.begin(), heap.end(), greater);
    const auto pick = static_cast<std::size_t>(heap.back() & 0xffffffffu);
    heap.pop_back();
    t = std::max(t, bs[pick].ready) + busy[pick] + launches[pick] * round;
  }
  return {std::max(p.forward + p.backward, t), ps_any};
}

// The estimate of s (with its timeline) and its replay, from one evaluation: the buckets and
// items the replay reads are the ones the estimate made.
struct replayed_estimate {
  prediction estimate;
  replay_result replay;
};
[[nodiscard]] inline replayed_estimate estimate_and_replay(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  auto e = evaluate(m, c, s, options{.timeline = true}, true);
  const auto replay = serial_replay(e.p, e.buckets, e.ws.items, s, e.ctx.fab);
  return {std::move(e.p), replay};
}

}  // namespace autosync::cost
