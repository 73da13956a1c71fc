// autosync/session_search.hpp — a session whose strategy rank 0 searches for.
//
//   autosync::session s(world, model, autosync::search_options{cluster});
//
// search_options converts to a strategy_source (session.hpp): rank 0 runs search::optimize(model,
// cluster, options) (deterministic: counted budgets, the same strategy for the same inputs on any
// machine load), stamps the result with what it was made for (the cluster and the session's
// layout: strategy/made_for.hpp) and the session broadcasts it; the other ranks do not search.
// Only the translation units that include this header compile the search.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/session.hpp>
#include <autosync/strategy/made_for.hpp>

namespace autosync {

struct search_options {
  cluster_spec cluster{};   // the cluster searched on (and, unless session_options::cluster says otherwise, the plan's)
  search::options options{};  // search/options.hpp: seed, counted budgets, allow_lossy, a learned correction, ...

  operator strategy_source() const {  // NOLINT(google-explicit-constructor): what the session takes
    return strategy_source(
        "the search",
        [c = cluster, o = options](const model_spec& m, int world_size, int ranks_per_node) {
          auto s = search::optimize(m, c, o).strategy;
          s.made_for = made_for_of(c, world_size, ranks_per_node);
          return s;
        },
        cluster);
  }
};

}  // namespace autosync
