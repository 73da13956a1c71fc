// autosync/search/sampler.hpp — the one sampler of the strategy space.
//
// `autosync sample` (trial sweeps whose records train the learned correction) and `autosync
// tune` (the proposals the correction ranks: learn/proposals.hpp) draw from this one
// distribution, so the correction ranks strategies like those it was trained on. Draws spread
// over the whole space rather than near plausible strategies:
//
//   runs:      1..max_runs contiguous runs of the dense tensors in backward order (random cut
//              points; runs whose tiny tensors would go unfused are merged, space::repair_tiny)
//   per run:   architecture drawn first (it chooses the aspects only it reads), then each other
//              aspect redrawn with probability 1/2 (space::randomize: only allowed values)
//   overrides: sparse tensors always own a group (parameter_server or all_gather), each large
//              dense tensor with probability 1/2 (its own partitioner, placement, ...)
//
// `sample` keeps the draws that are feasible (space::feasible), validate, and differ from every
// earlier one (the same groups and assignments, whatever the name); it gives up after
// 200 x count + 1000 draws and may return fewer. Names: <prefix><i>. Deterministic for a seed
// (search::random's portable draws).
#pragma once

#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/search/random.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace autosync::search {

// The architecture first, then every other aspect with probability 1/2 (t: the override tensor).
inline void randomize_group(const space& sp, group_desc& g, random& rng, const tensor* t) {
  if (!t || !t->sparse || rng.chance(0.5)) (void)sp.randomize(g, aspect_of<slot::architecture>, rng, t);
  for (auto a : sp.aspects())
    if (a != aspect_of<slot::architecture> && rng.chance(0.5)) (void)sp.randomize(g, a, rng, t);
}

// One draw (not yet checked: space::feasible).
[[nodiscard]] inline candidate random_candidate(const space& sp, random& rng, std::size_t max_runs) {
  const auto& m = sp.model();
  const std::size_t n = sp.dense().size();
  candidate c = sp.uniform(group_desc{});
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
    c.owned[s] = t.sparse ? space::sparse_default() : group_desc{};
    randomize_group(sp, c.owned[s], rng, &t);
  }
  sp.repair_tiny(c);
  return c;
}

namespace detail {
// The groups and assignments of s as bytes (not the name): equal keys, equal strategies.
[[nodiscard]] inline std::string sample_key(const strategy_desc& s) {
  std::string k;
  auto put = [&](const auto& v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    k.append(b, sizeof v);
  };
  put(s.groups.size());
  for (const auto& g : s.groups) {
    put(g.architecture);
    put(g.partitioner.kind), put(g.partitioner.shards), put(g.partitioner.axis), put(g.partitioner.max_bytes);
    put(g.placement.kind), put(g.placement.server);
    put(g.replication);
    put(g.topology.kind), put(g.topology.intra), put(g.topology.inter);
    put(g.compression.id);
    for (double x : g.compression.params) put(x);
    for (const auto& x : g.ext.v) put(x.slot), put(x.kind), put(x.params);
    put(g.fusion.cap_bytes), put(g.fusion.first_cap_bytes);
    put(g.schedule);
  }
  for (const auto& a : s.assignments) {
    put(a.group), put(a.split_axis), put(a.shard_groups.size());
    for (auto x : a.shard_groups) put(x);
  }
  return k;
}
}  // namespace detail

// Up to `count` distinct valid draws. Throws autosync::error("max_runs") when max_runs < 1.
[[nodiscard]] inline std::vector<strategy_desc> sample(const space& sp, std::size_t count, std::uint64_t seed, std::size_t max_runs = 8,
                                                       const std::string& prefix = "sample-") {
  if (max_runs < 1) throw error("max_runs", "must be >= 1");
  random rng(seed);
  std::vector<strategy_desc> out;
  std::set<std::string> seen;
  const auto attempts = 200 * count + 1000;
  for (std::size_t a = 0; a < attempts && out.size() < count; ++a) {
    const auto cand = random_candidate(sp, rng, max_runs);
    if (!sp.feasible(cand)) continue;
    auto s = sp.materialize(cand);
    try {
      s.validate(sp.model(), sp.cluster());
    } catch (const error&) {
      continue;  // the space's rules let it through, the descriptor's do not: draw again
    }
    if (!seen.insert(detail::sample_key(s)).second) continue;
    s.name = prefix + std::to_string(out.size());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace autosync::search
