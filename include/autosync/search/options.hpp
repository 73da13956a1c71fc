// autosync/search/options.hpp — what search::optimize takes and what it returns.
//
// Budgets. The search is ended by work, never by the clock, so the same model, cluster,
// options and seed give the same strategy, byte for byte, on any machine and under any load:
//
//   max_evaluations   strategies costed by the analytical model (default 4,000);
//   max_work          sync items costed, summed over those evaluations (default 3,000,000):
//                     a strategy costs about in proportion to its items (tensors, plus every
//                     shard of a partitioned tensor), so a model whose strategies expand into
//                     thousands of shards (gpt2-xl: up to about 6,000 items each) gets fewer
//                     evaluations and a bounded run time. On a cluster of more than 24
//                     servers and worker nodes a parameter-server item counts
//                     (servers + worker nodes) / 24 (search_work_per_ps_item, selection.hpp):
//                     its server lanes visit every server and node per transfer.
//   Both are deterministic counts: whichever is reached first ends the walk. The polish
//   (search/optimizer.hpp) has a small budget of its own (a few evaluations per group).
//
// Epsilon. Gains far inside the model's error are not worth a complicated strategy: the answer
// is the simplest strategy (fewest groups, then fewest non-default aspects) predicted within
// (1 + epsilon) x the best prediction the search found. `default_epsilon` (5 %) is the
// documented default: the analytical model and its correction are not trusted to finer than
// that (their held-out errors are larger still); a caller with a calibrated cluster passes
// the calibration's own relative residual. epsilon = 0: the fastest strategy found.
//
// Re-rank. With `correction` set (cost::corrected_evaluator with a learned forest, e.g. the
// embedded cost::default_correction), the `rerank_count` best candidates of the walk, the
// simplest ones for their time, every baseline and each family's best are scored by
//
//   score = corrected iteration x exp(uncertainty_weight x max(0, -log correction factor))
//
// The corrected iteration already moves a strategy the analytical model underestimates back
// (the correction's features hold the executor's replay too), so the pick is not the strategy
// the model underestimates most; a correction that says a strategy is faster than the model is
// the one that could be wrong in the pick's favour, and is trusted less the further it goes. The
// best-scored candidate B anchors the simplest-strategy rule: a simpler candidate qualifies when
// the model puts it within epsilon of B and its score is within epsilon + uncertainty_weight x
// max(0, -log factor of B) of B's (search/pick.hpp). Without a correction, score = analytical
// iteration. With serial_executor (the default) a strategy with parameter servers or a priority
// group is scored by max(estimate, serial replay): the executors run one bucket at a time and agree on readiness before every
// launch of a priority plan, the model's server lanes run in parallel (cost/replay.hpp says
// where the two agree); a correction multiplies that same executor time (features::executor).
#pragma once

#include <autosync/cost/corrected.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/search/constraints.hpp>
#include <autosync/search/selection.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::search {

inline constexpr std::size_t default_max_evaluations = 4000;
inline constexpr std::uint64_t default_max_work = 3'000'000;
inline constexpr double default_epsilon = 0.05;
inline constexpr double default_uncertainty_weight = 0.5;

struct progress {
  std::size_t iteration = 0;   // annealing steps taken (0 during seeding and construction)
  double best = 0.0;           // best predicted iteration time so far, seconds
  std::size_t evaluated = 0;   // strategies costed so far
  std::string_view phase;      // "seed", "construct", "anneal", "polish", "done"
};

struct options {
  std::uint64_t seed = 1;
  std::size_t max_evaluations = default_max_evaluations;  // strategies costed (deterministic)
  std::uint64_t max_work = default_max_work;              // sync items costed (deterministic); 0: no limit
  bool allow_lossy = false;             // lossy compression (fp16, bf16, the registered family) changes accuracy: opt-in
  lossy_budget lossy{};                 // with allow_lossy: which lossy compressors, the largest compression ratio
  std::uint64_t tiny_bytes = 64 * 1024;
  std::uint64_t large_bytes = 4 * 1024 * 1024;
  std::size_t beam_width = 4;
  double epsilon = default_epsilon;     // relative tolerance of the simplest-strategy rule, >= 0
  cost::corrected_evaluator correction{}; // re-rank with a learned correction (empty: analytical only)
  double uncertainty_weight = default_uncertainty_weight;  // >= 0
  std::size_t rerank_count = 8;         // best candidates of the walk the correction re-ranks
  bool serial_executor = true;          // score the pick as the executors run it: one bucket at a time (search/serial.hpp)
  std::function<void(const progress&)> on_progress{};  // called at phase ends and every progress_every evaluations
  std::size_t progress_every = 250;
};

struct baseline_result {
  std::string name;
  strategy_desc strategy;
  cost::prediction prediction;
};

// The fastest strategy the search saw in one family (selection.hpp), with its prediction.
struct family_result {
  family kind = family::mixed;
  strategy_desc strategy;
  cost::prediction prediction;
};

struct result {
  strategy_desc strategy;               // named "autosync"
  cost::prediction prediction;          // analytical
  double score = 0.0;                   // what the pick was chosen by: corrected + uncertainty, or analytical
                                        // (x serial replay / estimate with serial_executor)
  double serial_iteration = 0.0;        // the pick run one bucket at a time (search/serial.hpp)
  double log_factor = 0.0;              // the correction's log(measured / analytical) for the pick (0: none)
  double best_score = 0.0;              // the best score of any strategy considered
  double best_prediction = 0.0;         // the fastest analytical prediction the search found
  double reference = 0.0;               // the best-scored candidate's model time (estimate, x serial replay / estimate
                                        // with serial_executor): the pick is within epsilon of it
  double epsilon = 0.0;                 // options.epsilon
  double tolerance = 0.0;               // the score's relative tolerance: epsilon (+ w |log factor| of the best, re-ranked)
  bool reranked = false;                // a correction scored the candidates
  complexity simplicity;                // of the pick
  std::vector<baseline_result> baselines;
  std::string best_baseline;            // the name of the best rule-abiding baseline
  std::vector<family_result> families;  // the best of each family seen, in pure_families order
  std::size_t evaluated = 0;            // strategies costed
  std::uint64_t work = 0;               // sync items costed
  std::size_t pruned = 0;               // candidates rejected by the lower bound, uncosted
  std::size_t steps = 0;                // annealing steps
  double wall_seconds = 0.0;            // measured, informative only: it decides nothing
};

}  // namespace autosync::search
