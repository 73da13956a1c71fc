// autosync/learn/proposals.hpp — candidate strategies for trials: AutoSync's sampler.
//
// AutoSync proposes thousands of strategies under its knowledge constraints, scores them
// with the simulator, and trial-runs a diverse top-k. Here:
//
// * sample_strategies   tune's proposals and
// * random_strategies   `autosync sample`'s draws: both are search::sample (search/sampler.hpp),
//                       the one sampler of the space (random cut points, every aspect redrawn
//                       with probability 1/2, only feasible, valid, distinct draws), so the
//                       records the correction is trained on and the proposals it ranks come
//                       from one distribution. Deterministic for a seed.
// * neighbors           one move away from a strategy (the loop explores around the best
//                       measured ones: a local search under the corrected estimate).
// * diverse_top_k       greedy: the best-scored candidate first, then repeatedly the one with
//                       the best score + diversity trade-off, where diversity is the fraction
//                       of tensors whose group strategy differs from every already-picked
//                       candidate (AutoSync's "score + diversity").
#pragma once

#include <autosync/error.hpp>
#include <autosync/io/json.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/model.hpp>
#include <autosync/search/sampler.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace autosync::learn {

// `autosync tune`'s proposals: n draws of search/sampler.hpp (the one sampler of the space, the
// one `autosync sample` uses, so the correction ranks strategies like those it was trained on),
// named sample-<i>. Throws autosync::error when the model has no dense tensor.
[[nodiscard]] inline std::vector<strategy_desc> sample_strategies(const search::space& sp, std::size_t n, std::uint64_t seed) {
  if (sp.dense().empty()) throw error("sample_strategies", "the model has no dense tensor to fuse");
  return search::sample(sp, n, seed, 8, "sample-");
}

// `autosync sample`'s draws: search::sample with runs up to max_runs, named random-<seed>-<i>.
[[nodiscard]] inline std::vector<strategy_desc> random_strategies(const search::space& sp, std::size_t count, std::uint64_t seed,
                                                                  std::size_t max_runs) {
  return search::sample(sp, count, seed, max_runs, "random-" + std::to_string(seed) + "-");
}

// Up to n strategies one move away from s (when the search space can express s): one aspect
// of one run or of one override group randomized, or a large tensor given its own group / taken
// back into its run. Valid, distinct from s and from each other; deterministic for a seed.
[[nodiscard]] inline std::vector<strategy_desc> neighbors(const search::space& sp, const strategy_desc& s, std::size_t n, std::uint64_t seed) {
  std::vector<strategy_desc> out;
  const auto base = sp.lift(s);
  if (!base) return out;
  search::random rng(seed);
  std::set<std::string> seen{strategy_key(s)};
  for (std::size_t attempt = 0; out.size() < n && attempt < n * 20 + 20; ++attempt) {
    auto c = *base;
    const auto move = rng.below(3);
    const auto a = search::all_aspects[rng.below(search::all_aspects.size())];
    if (move == 0 || sp.slots().empty()) {
      (void)sp.randomize(c.runs[rng.below(c.runs.size())], a, rng, nullptr);
    } else {
      const auto sl = static_cast<std::size_t>(rng.below(sp.slots().size()));
      const tensor& t = sp.model().tensors[sp.slots()[sl]];
      if (move == 1 && c.own[sl]) {
        (void)sp.randomize(c.owned[sl], a, rng, &t);
      } else if (!sp.slot_sparse(sl)) {
        c.own[sl] = c.own[sl] ? 0 : 1;
        if (c.own[sl]) (void)sp.randomize(c.owned[sl], a, rng, &t);
      }
    }
    if (!sp.feasible(c)) continue;
    auto x = sp.materialize(c);
    try {
      x.validate(sp.model(), sp.cluster());
    } catch (const error&) {
      continue;
    }
    if (!seen.insert(strategy_key(x)).second) continue;
    x.name = s.name + "~" + std::to_string(out.size());
    out.push_back(std::move(x));
  }
  return out;
}

// Per tensor, the group strategy it gets (shards: the first shard's group) — the signature
// diversity is measured on.
[[nodiscard]] inline std::vector<group_desc> tensor_groups(const strategy_desc& s) {
  std::vector<group_desc> g;
  g.reserve(s.assignments.size());
  for (const auto& a : s.assignments) {
    const auto gi = a.split() ? a.shard_groups.front() : a.group;
    g.push_back(gi >= 0 && static_cast<std::size_t>(gi) < s.groups.size() ? s.groups[static_cast<std::size_t>(gi)] : group_desc{});
  }
  return g;
}

// Indices of k candidates: scores are predicted times (lower is better); weight trades the
// relative score gap to the best against diversity in [0, 1].
[[nodiscard]] inline std::vector<std::size_t> diverse_top_k(std::span<const strategy_desc> cands, std::span<const double> scores,
                                                            std::size_t k, double weight = 0.5) {
  std::vector<std::size_t> picked;
  if (cands.empty() || k == 0) return picked;
  std::vector<std::vector<group_desc>> sig;
  sig.reserve(cands.size());
  for (const auto& c : cands) sig.push_back(tensor_groups(c));
  if (scores.size() != cands.size()) throw error("scores", "one score per candidate");
  double best = std::numeric_limits<double>::infinity();
  for (double v : scores)
    if (std::isfinite(v)) best = std::min(best, v);
  // the gap to the best: relative when the best is a positive time, else in the scores' own
  // units (every predicted time 0, as with no compute and one rank); a score that is not a
  // finite number ranks after every finite one
  auto gap = [&](double v) {
    if (!std::isfinite(v) || !std::isfinite(best)) return std::numeric_limits<double>::infinity();
    return best > 0.0 ? v / best - 1.0 : v - best;
  };
  std::vector<char> used(cands.size(), 0);
  std::vector<double> div(cands.size(), 1.0);  // distance to the nearest picked candidate
  while (picked.size() < std::min(k, cands.size())) {
    std::size_t arg = cands.size();
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (used[i]) continue;
      const double v = -gap(scores[i]) + weight * div[i];
      if (arg == cands.size() || v > top) {  // the first unused one when every value is -inf
        top = v;
        arg = i;
      }
    }
    used[arg] = 1;
    picked.push_back(arg);
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (used[i] || sig[i].size() != sig[arg].size()) continue;
      std::size_t diff = 0;
      for (std::size_t t = 0; t < sig[i].size(); ++t) diff += sig[i][t] == sig[arg][t] ? 0 : 1;
      const double d = sig[i].empty() ? 0.0 : static_cast<double>(diff) / static_cast<double>(sig[i].size());
      div[i] = std::min(div[i], d);
    }
  }
  return picked;
}

}  // namespace autosync::learn
