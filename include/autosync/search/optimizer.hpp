// autosync/search/optimizer.hpp — find the strategy with the least predicted iteration time.
//
//   optimize(model, cluster, options)
//     1. seed      every baseline (strategy/baselines.hpp) is costed; the best one that obeys
//                  the knowledge rules is the first incumbent, so the answer is never
//                  predicted worse than it. Baselines the space can express are lifted into
//                  it as starting points.
//     2. construct beam over uniform strategies (architecture x topology x fusion cap, or
//                  placement x replication x partition for parameter servers), then over run
//                  counts (runs of about equal bytes in backward order).
//     3. descend   coordinate descent from the best point: every allowed value of every aspect
//                  of every group, neighbouring runs exchanging strategies, every large tensor
//                  given its own group / taken back / exchanged with its run (30 % of budget).
//     4. anneal    three rounds of simulated annealing, each from the best point; one move per
//                  step:
//                    move a run boundary | split a run | merge two runs | two runs exchange
//                    strategies | change one aspect of one group | give a large tensor its
//                    own (partitioned) group or take it back | a large tensor and its run
//                    exchange strategies | change a PS placement
//                  (a change of architecture brings the new architecture's own topology or
//                  replication with it: search/space.hpp)
//                  A worse move is accepted with probability exp(-delta / (T x current)); T
//                  starts at half the median relative increase seen so far (many groups make
//                  moves small, few make them large) and falls 200-fold per round.
//     5. finish    descent again from the best point.
//     6. pick      the simplest strategy within epsilon of the best score, re-ranked by a
//                  learned correction when one is set, then simplified further under the same
//                  threshold (search/pick.hpp; epsilon and the re-rank: search/options.hpp).
//   Every strategy costed is offered to an archive (search/selection.hpp) that keeps the
//   simplest strategies for their time, the fastest few and the fastest of each family.
//   Pruning with the analytical bounds:
//     * before a candidate is costed, forward + max(backward, fabric lower_bound(dense
//       collective wire bytes)) — the lane-0 part of cost::prediction::lower_bound, additive
//       over buckets — is compared with the point the walk stands on; a candidate that
//       cannot beat it is rejected uncosted;
//     * an incumbent at forward + backward (communication fully hidden) is optimal: the
//       search stops there.
//
// Points are kept in flat arrays (search/space.hpp) and materialized into one reused
// strategy_desc for the cost::evaluator. Deterministic: the same model, cluster, options and
// seed give the same strategy, byte for byte, under any machine load (std::mt19937_64 with the
// portable draws of search::random; counted budgets, max_evaluations and max_work, end the
// walk — no clock decides anything: search/options.hpp).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>
#include <autosync/search/options.hpp>
#include <autosync/search/searcher.hpp>

#include <chrono>

namespace autosync::search {

// The simplest strategy within options.epsilon of the best the search finds for (m, c).
// Throws autosync::error on an invalid model, cluster or option (naming the field).
[[nodiscard]] inline result optimize(const model_spec& m, const cluster_spec& c, const options& o = {}) {
  const auto start = std::chrono::steady_clock::now();
  detail::searcher s(m, c, o);
  auto r = s.run();
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();  // reported only
  return r;
}

}  // namespace autosync::search
