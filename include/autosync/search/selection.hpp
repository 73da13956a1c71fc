// autosync/search/selection.hpp — what the search keeps besides the point it walks.
//
// Predicted gains far inside the model's error are not worth a complicated strategy: the
// search answers with the simplest strategy within epsilon of the best prediction. To pick it
// without a second search, every costed candidate is offered to an `archive` that keeps
//
//   front      the Pareto front of (complexity, predicted time): for each complexity, a
//              candidate only when it is faster than every simpler one kept. Complexity is
//              ordered lexicographically: fewest groups first, then fewest non-default
//              aspects (the aspects of a group that differ from group_desc{}: the policies'
//              defaults, all_reduce over a ring, no fusion, fifo, ...).
//   top        the `top_count` fastest distinct candidates (the re-rank pool of a learned
//              correction: search/optimizer.hpp).
//   families   the fastest candidate whose dense groups all use one architecture: all-reduce
//              only, parameter servers only, sharded only (groups that hold only sparse
//              tensors do not count). Mixed strategies are not a family.
//
// Keeping is O(front + top) per candidate offered and copies a candidate only when it enters.
#pragma once

#include <autosync/model.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace autosync::search {

// Fewest groups first, then fewest non-default aspects.
struct complexity {
  std::size_t groups = 0;
  std::size_t aspects = 0;
  friend constexpr auto operator<=>(const complexity&, const complexity&) = default;
};

// The ways topology t differs from the default flat ring: a flat algorithm other than ring
// counts one; a hierarchy counts one, plus one for each level that is not a ring
// (hierarchical<ring, ring> is one step from the default, hierarchical<ring, halving_doubling>
// two), so that of two hierarchies the model prices alike the plainer is answered.
[[nodiscard]] constexpr std::size_t topology_steps(const topology_value& t) noexcept {
  if (t.kind != topology_kind::hierarchical) return std::size_t{t.kind != topology_kind::ring};
  return 1 + std::size_t{t.intra != topology_kind::ring} + std::size_t{t.inter != topology_kind::ring};
}

// The aspects of g that differ from the default group strategy (group_desc{}); a topology
// counts its topology_steps.
[[nodiscard]] constexpr std::size_t non_default_aspects(const group_desc& g) noexcept {
  const group_desc d{};
  return std::size_t{g.architecture != d.architecture} + std::size_t{!(g.partitioner == d.partitioner)} +
         std::size_t{!(g.placement == d.placement)} + std::size_t{g.replication != d.replication} +
         topology_steps(g.topology) + std::size_t{g.compression != d.compression} +
         std::size_t{!(g.fusion == d.fusion)} + std::size_t{g.schedule != d.schedule};
}

[[nodiscard]] constexpr complexity complexity_of(const strategy_desc& s) noexcept {
  complexity k{s.groups.size(), 0};
  for (const auto& g : s.groups) k.aspects += non_default_aspects(g);
  return k;
}

// Sync items of strategy s for model m: one per tensor, or one per shard of a partitioned one
// (even<K>: K; by_bytes<B>: ceil(bytes / B)). Each item of a parameter-server group counts
// `ps_item_work` (search_work_per_ps_item); items_of(m, s) counts every item once.
[[nodiscard]] inline std::uint64_t items_of(const model_spec& m, const strategy_desc& s, std::uint64_t ps_item_work = 1) {
  std::uint64_t n = 0;
  auto weight = [&](std::int32_t gi) -> std::uint64_t {
    if (gi < 0 || static_cast<std::size_t>(gi) >= s.groups.size()) return 1;
    return s.groups[static_cast<std::size_t>(gi)].architecture == architecture_kind::parameter_server ? ps_item_work : 1;
  };
  for (std::size_t i = 0; i < s.assignments.size() && i < m.tensors.size(); ++i) {
    const auto& as = s.assignments[i];
    if (as.split()) {
      for (const auto g : as.shard_groups) n += weight(g);
      continue;
    }
    if (as.group < 0 || static_cast<std::size_t>(as.group) >= s.groups.size()) continue;
    const auto& p = s.groups[static_cast<std::size_t>(as.group)].partitioner;
    std::uint64_t k = 1;
    if (p.kind == partitioner_kind::even && p.shards > 1) k = static_cast<std::uint64_t>(p.shards);
    if (p.kind == partitioner_kind::by_bytes && p.max_bytes > 0) {
      const auto b = static_cast<std::uint64_t>(std::max<std::int64_t>(0, m.tensors[i].bytes()));
      k = std::max<std::uint64_t>(1, (b + p.max_bytes - 1) / p.max_bytes);
    }
    n += k * weight(as.group);
  }
  return n;
}

// The search's unit of work is one sync item costed: an evaluation costs about in proportion to
// its items (about 40 ns each in the CLI's build). A parameter-server item costs more on a
// large cluster: the server lanes pick each transfer's server among all S servers and move its
// bytes through each of the W worker nodes' NICs, about 1.8 ns per item per server or node
// (bert-large's byteps strategy, 710 items: 28 us with 4 + 4, 1.3 ms with 500 + 500, 5.8 ms with
// 2,000 + 2,000). So a PS item counts (S + W) / 24 items once that exceeds one: below, the
// budget is what it always was; above, max_work keeps bounding the run time (2,000 nodes with
// co-located servers: 18 s before).
[[nodiscard]] constexpr std::uint64_t search_work_per_ps_item(std::size_t servers, std::size_t worker_nodes) noexcept {
  return std::max<std::uint64_t>(1, (static_cast<std::uint64_t>(servers) + worker_nodes) / 24);
}

// A family of strategies: every group that holds a dense tensor uses this architecture.
enum class family : std::uint8_t { all_reduce, parameter_server, sharded, mixed };
inline constexpr std::array<family, 3> pure_families{family::all_reduce, family::parameter_server, family::sharded};

[[nodiscard]] constexpr std::string_view name_of(family f) noexcept {
  switch (f) {
    case family::all_reduce: return "all-reduce only";
    case family::parameter_server: return "parameter servers";
    case family::sharded: return "sharded";
    case family::mixed: return "mixed";
  }
  return "mixed";
}

// The family of s for model m (s valid for m). A model without dense tensors is "mixed".
[[nodiscard]] inline family family_of(const model_spec& m, const strategy_desc& s) {
  std::optional<architecture_kind> seen;
  auto visit = [&](std::int32_t gi) {
    if (gi < 0 || static_cast<std::size_t>(gi) >= s.groups.size()) return false;
    const auto a = s.groups[static_cast<std::size_t>(gi)].architecture;
    if (seen && *seen != a) return false;
    seen = a;
    return true;
  };
  for (std::size_t i = 0; i < s.assignments.size() && i < m.tensors.size(); ++i) {
    if (m.tensors[i].sparse) continue;
    const auto& as = s.assignments[i];
    if (as.split()) {
      for (auto g : as.shard_groups)
        if (!visit(g)) return family::mixed;
    } else if (!visit(as.group)) {
      return family::mixed;
    }
  }
  if (!seen) return family::mixed;
  switch (*seen) {
    case architecture_kind::all_reduce: return family::all_reduce;
    case architecture_kind::parameter_server: return family::parameter_server;
    case architecture_kind::sharded: return family::sharded;
    default: return family::mixed;
  }
}

// One kept strategy: a point of the space (flat) or, for a baseline the space cannot express,
// its strategy_desc.
struct kept {
  double time = 0.0;
  complexity key;
  bool flat = true;
  candidate point;
  strategy_desc desc;
};

class archive {
 public:
  explicit archive(std::size_t top_count = 8) : top_count_(top_count) {}

  // Offers a costed strategy. `s` is its materialized form (complexity and family are read
  // from it); `c` the point (flat) or nullptr for a baseline kept as a strategy_desc.
  void offer(const model_spec& m, double time, const strategy_desc& s, const candidate* c) {
    const auto key = complexity_of(s);
    if (!c) {  // a baseline: every one is kept for the pick, whatever its time
      kept b;
      b.time = time;
      b.key = key;
      b.flat = false;
      b.desc = s;
      named_.push_back(std::move(b));
    }
    const bool front = enters_front(key, time);
    const bool top = enters_top(time, c);
    const auto f = family_of(m, s);
    const bool fam = f != family::mixed && (!families_[idx(f)] || time < families_[idx(f)]->time);
    if (!front && !top && !fam) return;
    kept k;
    k.time = time;
    k.key = key;
    k.flat = c != nullptr;
    if (c) k.point = *c;
    else k.desc = s;
    if (fam) families_[idx(f)] = k;
    if (top) insert_top(k);
    if (front) insert_front(std::move(k));
  }

  // Sorted by complexity ascending; times strictly decreasing along it.
  [[nodiscard]] const std::vector<kept>& front() const noexcept { return front_; }
  // Fastest first.
  [[nodiscard]] const std::vector<kept>& top() const noexcept { return top_; }
  [[nodiscard]] const std::optional<kept>& best_of(family f) const noexcept { return families_[idx(f)]; }
  // Every baseline offered, in the order offered.
  [[nodiscard]] const std::vector<kept>& baselines() const noexcept { return named_; }

 private:
  static constexpr std::size_t idx(family f) noexcept { return static_cast<std::size_t>(f); }

  [[nodiscard]] bool enters_front(const complexity& key, double time) const noexcept {
    for (const auto& e : front_) {
      if (e.key > key) break;
      if (e.time <= time) return false;  // as simple or simpler and as fast or faster
    }
    return true;
  }
  void insert_front(kept k) {
    std::erase_if(front_, [&](const kept& e) { return e.key >= k.key && e.time >= k.time; });
    auto at = front_.begin();
    while (at != front_.end() && at->key < k.key) ++at;
    front_.insert(at, std::move(k));
  }

  [[nodiscard]] bool enters_top(double time, const candidate* c) const {
    if (top_count_ == 0) return false;
    if (top_.size() >= top_count_ && !(time < top_.back().time)) return false;
    for (const auto& e : top_) {
      if (e.time != time) continue;
      if (c && e.flat && e.point == *c) return false;  // baselines are offered once each
    }
    return true;
  }
  void insert_top(const kept& k) {
    auto at = top_.begin();
    while (at != top_.end() && !(k.time < at->time)) ++at;
    top_.insert(at, k);
    if (top_.size() > top_count_) top_.pop_back();
  }

  std::size_t top_count_;
  std::vector<kept> front_, top_, named_;
  std::array<std::optional<kept>, 4> families_;
};

}  // namespace autosync::search
