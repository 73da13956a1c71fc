// autosync/learn/proposals.hpp — candidate strategies for trials: AutoSync's sampler.
//
// AutoSync proposes thousands of strategies under its knowledge constraints, scores them
// with the simulator, and trial-runs a diverse top-k. Here:
//
// * sample_strategies   random points of the search's own factorized space (search/space.hpp,
//                       so every knowledge rule holds): runs of about equal bytes (1 .. 8 of
//                       them), every run starting from one random group strategy with 1-4 of
//                       its aspects randomized independently, each large tensor given its own
//                       (possibly partitioned, parameter-server) group with probability 1/4.
//                       Infeasible draws are redrawn; duplicates (same strategy up to its name)
//                       are dropped. Deterministic for a seed.
// * random_strategies   random draws spread over the whole space, for trial sweeps
//                       (`autosync sample`): random cut points, every aspect redrawn with
//                       probability 1/2 (see below).
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
#include <autosync/search/space.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace autosync::learn {

[[nodiscard]] inline std::vector<strategy_desc> sample_strategies(const search::space& sp, std::size_t n, std::uint64_t seed) {
  search::random rng(seed);
  std::vector<strategy_desc> out;
  std::set<std::string> seen;
  const auto dense = sp.dense().size();
  if (dense == 0) throw error("sample_strategies", "the model has no dense tensor to fuse");
  const std::size_t max_runs = std::min<std::size_t>(8, dense);
  using search::aspect;
  for (std::size_t attempt = 0; out.size() < n && attempt < n * 50 + 100; ++attempt) {
    group_desc base;
    for (auto a : search::all_aspects) (void)sp.randomize(base, a, rng, nullptr);
    auto c = sp.equal_runs(base, static_cast<std::size_t>(rng.between(1, static_cast<std::int64_t>(max_runs))));
    for (auto& run : c.runs) {
      const auto k = rng.between(1, 4);
      for (std::int64_t q = 0; q < k; ++q) (void)sp.randomize(run, search::all_aspects[rng.below(search::all_aspects.size())], rng, nullptr);
    }
    sp.repair_tiny(c);
    for (std::size_t s = 0; s < sp.slots().size(); ++s) {
      const tensor& t = sp.model().tensors[sp.slots()[s]];
      if (!sp.slot_sparse(s)) {
        if (!rng.chance(0.25)) continue;
        c.own[s] = 1;
        c.owned[s] = c.runs[0];
      }
      const auto k = rng.between(0, 3);
      for (std::int64_t q = 0; q < k; ++q) (void)sp.randomize(c.owned[s], search::all_aspects[rng.below(search::all_aspects.size())], rng, &t);
    }
    if (!sp.feasible(c)) continue;
    auto s = sp.materialize(c);
    try {
      s.validate(sp.model(), sp.cluster());
    } catch (const error&) {
      continue;
    }
    if (!seen.insert(strategy_key(s)).second) continue;
    s.name = "sample-" + std::to_string(out.size());
    out.push_back(std::move(s));
  }
  return out;
}

// Random draws from the search space for trial sweeps (`autosync sample`): unlike
// sample_strategies, the runs are cut at random points and every aspect is redrawn with
// probability 1/2, so the draws spread over the whole space rather than near plausible ones.
//
//   runs:      1..max_runs contiguous runs of the dense tensors in backward order (random cut
//              points; runs whose tiny tensors would go unfused are merged, space::repair_tiny)
//   per run:   architecture drawn first (it chooses the aspects only it reads), then each other
//              aspect redrawn with probability 1/2 (space::randomize: only allowed values)
//   overrides: sparse tensors always own a group (parameter_server or all_gather), each large
//              dense tensor with probability 1/2 (its own partitioner, placement, ...)
//
// random_strategies keeps the draws that are feasible (space::feasible), validate, and differ
// from every earlier one (JSON without the name); it gives up after 200 x count + 1000 draws
// and may return fewer. Names: random-<seed>-<i>. Deterministic for a seed.
inline void randomize_group(const search::space& sp, group_desc& g, search::random& rng, const tensor* t) {
  if (!t || !t->sparse || rng.chance(0.5)) (void)sp.randomize(g, search::aspect::architecture, rng, t);
  for (auto a : search::all_aspects)
    if (a != search::aspect::architecture && rng.chance(0.5)) (void)sp.randomize(g, a, rng, t);
}

[[nodiscard]] inline search::candidate random_candidate(const search::space& sp, search::random& rng, std::size_t max_runs) {
  const auto& m = sp.model();
  const std::size_t n = sp.dense().size();
  search::candidate c = sp.uniform(group_desc{});
  if (n > 1) {
    const std::size_t runs = 1 + rng.below(std::min<std::size_t>(max_runs, n));
    std::vector<std::uint32_t> cuts;
    while (cuts.size() + 1 < runs) {
      const auto p = static_cast<std::uint32_t>(1 + rng.below(n - 1));
      if (std::find(cuts.begin(), cuts.end(), p) == cuts.end()) cuts.push_back(p);
    }
    std::sort(cuts.begin(), cuts.end());
    c.starts = {0};
    c.starts.insert(c.starts.end(), cuts.begin(), cuts.end());
    c.runs.assign(c.starts.size(), group_desc{});
  }
  for (auto& g : c.runs) randomize_group(sp, g, rng, nullptr);
  for (std::size_t s = 0; s < sp.slots().size(); ++s) {
    const tensor& t = m.tensors[sp.slots()[s]];
    if (!sp.slot_sparse(s) && !rng.chance(0.5)) continue;
    c.own[s] = 1;
    c.owned[s] = t.sparse ? search::space::sparse_default() : group_desc{};
    randomize_group(sp, c.owned[s], rng, &t);
  }
  sp.repair_tiny(c);
  return c;
}

[[nodiscard]] inline std::vector<strategy_desc> random_strategies(const search::space& sp, std::size_t count, std::uint64_t seed,
                                                                  std::size_t max_runs) {
  if (max_runs < 1) throw error("max_runs", "must be >= 1");
  search::random rng(seed);
  std::vector<strategy_desc> out;
  std::vector<std::string> seen;
  const auto attempts = 200 * count + 1000;
  for (std::size_t a = 0; a < attempts && out.size() < count; ++a) {
    const auto cand = random_candidate(sp, rng, max_runs);
    if (!sp.feasible(cand)) continue;
    auto s = sp.materialize(cand);
    s.name = "random-" + std::to_string(seed) + "-" + std::to_string(out.size());
    try {
      s.validate(sp.model(), sp.cluster());
    } catch (const error&) {
      continue;  // the space's rules let it through, the descriptor's do not: draw again
    }
    auto text = io::to_json(s).dump();
    text.erase(0, text.find(",\"groups\""));  // compare without the name
    if (std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
    seen.push_back(std::move(text));
    out.push_back(std::move(s));
  }
  return out;
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
  double best = std::numeric_limits<double>::infinity();
  for (double v : scores) best = std::min(best, v);
  std::vector<char> used(cands.size(), 0);
  std::vector<double> div(cands.size(), 1.0);  // distance to the nearest picked candidate
  while (picked.size() < std::min(k, cands.size())) {
    std::size_t arg = cands.size();
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (used[i]) continue;
      const double v = -(scores[i] / best - 1.0) + weight * div[i];
      if (v > top) {
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
