// autosync/search/serial.hpp — search::serial_replay: a strategy's iteration as the executors run
// it, one bucket at a time (cost/replay.hpp says where the cost model and the executors agree and
// where they do not).
//
// search::optimize scores its pick by max(estimate, serial replay) (options.serial_executor,
// on by default): the walk itself uses the estimate (cheaper: one pass, no timeline), so it may
// visit parameter-server strategies the executor would run slower, but the answer is chosen by
// what the executor does.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/replay.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

namespace autosync::search {

struct serial_result {
  double iteration = 0.0;      // with one bucket at a time
  double estimate = 0.0;       // cost::estimate's iteration (lanes in parallel)
  bool parameter_servers = false;  // the strategy has parameter-server transfers (the two may differ)
};

[[nodiscard]] inline serial_result serial_replay(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  const auto r = cost::estimate_and_replay(m, c, s);
  return {r.replay.iteration, r.estimate.iteration, r.replay.parameter_servers};
}

}  // namespace autosync::search
