// autosync/search/serial.hpp — the iteration as the executors run it: one bucket at a time.
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
//             with local replication or compression the pieces run one after another, each a
//             blocking push and pull through its server rank; and no collective runs meanwhile.
//
// `serial_replay` plays the estimate's own events as the executor runs them: each bucket's
// events (its collective, or its transfers to every server, and its compression work) back to
// back (a batch's transfers side by side: the longest), one bucket at a time, a bucket starting
// when it is ready and the communication thread is free, in the executor's launch order. For a strategy without parameter servers it is the
// estimate itself (the same order, the same durations). With parameter servers it is what the
// executor does with the model's per-transfer costs: an upper estimate, since a transfer's
// modelled time also holds its waits for NICs that other, concurrent transfers kept busy.
//
// search::optimize scores its pick by max(estimate, serial replay) (options.serial_executor,
// on by default): the walk itself uses the estimate (cheaper: one pass, no timeline), so it may
// visit parameter-server strategies the executor would run slower, but the answer is chosen by
// what the executor does.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace autosync::search {

struct serial_result {
  double iteration = 0.0;      // with one bucket at a time
  double estimate = 0.0;       // cost::estimate's iteration (lanes in parallel)
  bool parameter_servers = false;  // the strategy has parameter-server transfers (the two may differ)
};

[[nodiscard]] inline serial_result serial_replay(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = true});
  const auto bs = cost::buckets(m, c, s);
  const auto items = expand(m, c, s);
  serial_result r;
  r.estimate = p.iteration;
  // a bucket's busy time: its events back to back, except the transfers of an uncompressed
  // parameter-server bucket without local replication, which the executor runs as one batch,
  // its servers side by side (exec/executor.hpp): the longest of them
  std::vector<double> busy(bs.size(), 0.0), longest(bs.size(), 0.0);
  std::vector<std::uint8_t> compressed(bs.size(), 0);
  for (const auto& e : p.events) {
    const bool ps = e.kind == cost::event_ps_transfer;
    if (e.bucket < busy.size()) {
      busy[e.bucket] += e.end - e.start;
      if (ps) longest[e.bucket] = std::max(longest[e.bucket], e.end - e.start);
      if (e.kind == cost::event_compression) compressed[e.bucket] = 1;
    }
    r.parameter_servers = r.parameter_servers || ps;
  }
  for (std::size_t b = 0; b < bs.size(); ++b) {
    const auto& g = s.groups[bs[b].group];
    if (g.architecture == architecture_kind::parameter_server && g.replication != replication_kind::local && !compressed[b])
      busy[b] = longest[b];
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
  double t = p.forward;  // nothing is ready before the backward starts
  std::vector<std::uint8_t> done(bs.size(), 0);
  for (std::size_t n = 0; n < bs.size(); ++n) {
    std::size_t pick = bs.size();
    if (!any_priority) {
      pick = n;  // fifo: the next by number (numbers are in ready order)
    } else {
      double next_ready = std::numeric_limits<double>::infinity();
      for (std::size_t b = 0; b < bs.size(); ++b) {
        if (done[b]) continue;
        next_ready = std::min(next_ready, bs[b].ready);
        if (bs[b].ready <= t && (pick == bs.size() || key[b] < key[pick])) pick = b;
      }
      if (pick == bs.size()) {  // none ready: wait for the next, then pick among those
        t = next_ready;
        for (std::size_t b = 0; b < bs.size(); ++b)
          if (!done[b] && bs[b].ready <= t && (pick == bs.size() || key[b] < key[pick])) pick = b;
      }
    }
    done[pick] = 1;
    t = std::max(t, bs[pick].ready) + busy[pick];
  }
  r.iteration = std::max(p.forward + p.backward, t);
  return r;
}

}  // namespace autosync::search
