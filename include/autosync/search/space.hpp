// autosync/search/space.hpp — the factorized strategy space the search walks.
//
// A point of the space (`candidate`) is kept in flat arrays and only turned into a
// strategy_desc (`materialize`) to be costed:
//
//   dense tensors in backward (ready) order            override slots
//   d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 ...                   sparse tensors, then dense tensors
//   |run 0   |run 1      |run 2 ...                    of at least large_bytes:
//   starts = {0, 3, 7, ...}                             own[s] = 1: the tensor leaves its run
//   runs[r] = the group strategy of run r               and gets owned[s] (e.g. partitioned
//                                                       even<K, axis> on parameter servers)
//
// Runs are contiguous in backward order, so run boundaries are fusion boundaries: a run is
// one group, its buckets form in ready order under the group's fusion cap. Sparse tensors
// always own a group (parameter_server or all_gather). The choices per group: search/aspects.hpp.
//
// A move between a collective and a parameter server (`variants` / `randomize` of the
// architecture) also chooses the aspects only the new architecture reads (every topology, or
// every replication with placement load_balanced): one at a time they would not be reachable
// (a parameter-server group without local replication pushes p copies through lane 0's NICs,
// cost/estimate.hpp, 8, so that single step is far uphill even next to the optimum).

// Every option list is filtered by the knowledge rules of constraints.hpp, and `feasible`
// checks the rules that depend on a run's members (tiny tensors fused, even partitions fit),
// so every candidate the search evaluates obeys all of them.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>
#include <autosync/search/constraints.hpp>
#include <autosync/search/random.hpp>
#include <autosync/registry/core.hpp>
#include <autosync/search/aspects.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>
namespace autosync::search {
struct candidate {
  std::vector<std::uint32_t> starts;  // run starts in space::dense(), ascending, starts[0] == 0
  std::vector<group_desc> runs;       // one per run
  std::vector<std::uint8_t> own;      // per override slot: 1 = the tensor has its own group
  std::vector<group_desc> owned;      // per override slot
  friend bool operator==(const candidate&, const candidate&) = default;
  [[nodiscard]] std::size_t run_count() const noexcept { return runs.size(); }
  [[nodiscard]] std::uint32_t run_end(std::size_t r, std::size_t dense_count) const noexcept {
    return r + 1 < starts.size() ? starts[r + 1] : static_cast<std::uint32_t>(dense_count);
  }
};
class space {
 public:
  space(const model_spec& m, const cluster_spec& c, const space_options& o = {})
      : model_(&m), cluster_(&c), opt_(o), rules_{o.tiny_bytes, o.allow_lossy, o.lossy} {
    m.validate();
    c.validate();
    opt_.large_bytes = std::max(opt_.large_bytes, opt_.tiny_bytes);
    const auto order = m.backward_order();
    slot_of_.assign(m.tensors.size(), -1);
    for (auto i : order) {
      const auto& t = m.tensors[i];
      if (t.sparse) {
        slot_of_[i] = static_cast<std::int32_t>(slots_.size());
        slots_.push_back(static_cast<std::uint32_t>(i));
      }
    }
    for (auto i : order) {
      const auto& t = m.tensors[i];
      if (t.sparse) continue;
      dense_.push_back(static_cast<std::uint32_t>(i));
      tiny_.push_back(is_tiny(t, rules_) ? 1 : 0);
      if (static_cast<std::uint64_t>(t.bytes()) >= opt_.large_bytes) {
        slot_of_[i] = static_cast<std::int32_t>(slots_.size());
        slots_.push_back(static_cast<std::uint32_t>(i));
      }
    }
    servers_ = c.server_count();
    // option lists
    for (auto a : {architecture_kind::all_reduce, architecture_kind::sharded, architecture_kind::parameter_server})
      dense_arch_.push_back(a);
    for (auto k : {topology_kind::ring, topology_kind::tree, topology_kind::halving_doubling}) flat_topo_.push_back(topology_value{k});
    if (hierarchical_allowed(c))
      for (auto i : {topology_kind::ring, topology_kind::tree, topology_kind::halving_doubling})
        for (auto o2 : {topology_kind::ring, topology_kind::tree, topology_kind::halving_doubling})
          flat_topo_.push_back(topology_value{topology_kind::hierarchical, i, o2});
    for (const auto& t : flat_topo_) {
      if (topology_allowed(architecture_kind::all_reduce, t, c)) topo_ar_.push_back(t);
      if (topology_allowed(architecture_kind::sharded, t, c)) topo_sh_.push_back(t);
    }
    for (compression_id i = 0; i < compression_registry.size(); ++i) push_compression(compression_value{i});
    // registered compressors run on host-memory backends only: none proposed on an NCCL cluster
    if (c.backend != collective_backend::nccl)
      for (const auto& e : registry::compressions())
        for (const auto& a : registry::proposed_params(e)) push_compression(compression_value{stable_id(e.name), a});
    aspects_.assign(all_aspects.begin(), all_aspects.end());
    for (std::size_t k = 0; k < registry::slots().size(); ++k) aspects_.push_back(extension_aspect(k));
    placements_ = {placement_value{placement_kind::round_robin, 0}, placement_value{placement_kind::load_balanced, 0},
                   placement_value{placement_kind::hashed, 0}};
    for (int s = 0; s < servers_; ++s) placements_.push_back(placement_value{placement_kind::pinned, s});
    replications_.push_back(replication_kind::none);
    if (local_replication_allowed(c)) replications_.push_back(replication_kind::local);
  }

  [[nodiscard]] const model_spec& model() const noexcept { return *model_; }
  [[nodiscard]] const cluster_spec& cluster() const noexcept { return *cluster_; }
  [[nodiscard]] const knowledge& rules() const noexcept { return rules_; }
  [[nodiscard]] const space_options& options() const noexcept { return opt_; }
  // Dense tensors (forward indices) in backward order: the sequence runs cut.
  [[nodiscard]] const std::vector<std::uint32_t>& dense() const noexcept { return dense_; }
  // Override slots (forward indices): sparse tensors, then dense tensors >= large_bytes.
  [[nodiscard]] const std::vector<std::uint32_t>& slots() const noexcept { return slots_; }
  [[nodiscard]] bool slot_sparse(std::size_t s) const noexcept { return model_->tensors[slots_[s]].sparse; }
  [[nodiscard]] std::int32_t slot_of(std::size_t tensor_index) const noexcept { return slot_of_[tensor_index]; }
  [[nodiscard]] bool tiny_at(std::size_t dense_position) const noexcept { return tiny_[dense_position] != 0; }
  [[nodiscard]] int servers() const noexcept { return servers_; }

  [[nodiscard]] std::span<const topology_value> topologies(architecture_kind a) const noexcept {
    if (a == architecture_kind::all_reduce) return topo_ar_;
    if (a == architecture_kind::sharded) return topo_sh_;
    return {};
  }
  [[nodiscard]] std::span<const architecture_kind> dense_architectures() const noexcept { return dense_arch_; }
  [[nodiscard]] std::span<const compression_value> compressions() const noexcept { return comp_; }
  [[nodiscard]] std::span<const aspect> aspects() const noexcept { return aspects_; }  // + extension slots

  [[nodiscard]] std::span<const placement_value> placements() const noexcept { return placements_; }
  [[nodiscard]] std::span<const replication_kind> replications() const noexcept { return replications_; }

  // A group strategy with the fields its architecture does not read reset to their defaults.
  [[nodiscard]] static constexpr group_desc normalized(group_desc g) noexcept {
    if (is_collective(g.architecture)) {
      g.placement = placement_value{};
      g.replication = replication_kind::none;
    } else {
      g.topology = topology_value{};
    }
    return g;
  }

  // The group strategy every dense tensor gets in `uniform`; the sparse default is
  // parameter_server, load_balanced (a valid home for every sparse gradient).
  [[nodiscard]] candidate uniform(const group_desc& dense_group) const {
    candidate c;
    c.starts = {0};
    c.runs = {normalized(dense_group)};
    c.own.assign(slots_.size(), 0);
    c.owned.resize(slots_.size());
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (slot_sparse(s)) {
        c.own[s] = 1;
        c.owned[s] = sparse_default();
      } else {
        c.owned[s] = c.runs[0];
      }
    }
    return c;
  }
  [[nodiscard]] static constexpr group_desc sparse_default() noexcept {
    group_desc g;
    g.architecture = architecture_kind::parameter_server;
    g.placement = placement_value{placement_kind::load_balanced, 0};
    return g;
  }

  // Runs of about equal bytes in backward order (AutoSync: groups filled in order until each
  // holds about total/G bytes), every run with `g`; tiny tensors never end up alone.
  [[nodiscard]] candidate equal_runs(const group_desc& g, std::size_t count) const {
    candidate c = uniform(g);
    if (dense_.empty() || count <= 1) return c;
    std::int64_t total = 0;
    for (auto i : dense_) total += model_->tensors[i].bytes();
    const double per = static_cast<double>(total) / static_cast<double>(count);
    std::int64_t acc = 0;
    for (std::uint32_t p = 0; p + 1 < dense_.size() && c.starts.size() < count; ++p) {
      acc += model_->tensors[dense_[p]].bytes();
      if (static_cast<double>(acc) >= per * static_cast<double>(c.starts.size())) c.starts.push_back(p + 1);
    }
    c.runs.assign(c.starts.size(), c.runs[0]);
    repair_tiny(c);
    return c;
  }

  // Merges runs so that every run holding a tiny tensor in a collective group has company.
  void repair_tiny(candidate& c) const {
    for (std::size_t r = 0; r < c.runs.size();) {
      if (run_ok(c, r) || c.runs.size() == 1) {
        ++r;
        continue;
      }
      const std::size_t drop = r + 1 < c.runs.size() ? r + 1 : r;  // merge with the next (or previous) run
      c.starts.erase(c.starts.begin() + static_cast<std::ptrdiff_t>(drop));
      c.runs.erase(c.runs.begin() + static_cast<std::ptrdiff_t>(drop));
      if (r > 0) --r;
    }
  }

  // Whether every knowledge rule and every validation rule that depends on the candidate's
  // structure holds (option lists already obey the rest; this checks them again).
  [[nodiscard]] bool feasible(const candidate& c) const {
    if (c.runs.empty() || c.starts.size() != c.runs.size() || c.starts[0] != 0) return false;
    if (c.own.size() != slots_.size() || c.owned.size() != slots_.size()) return false;
    for (std::size_t r = 1; r < c.starts.size(); ++r)
      if (c.starts[r] <= c.starts[r - 1] || c.starts[r] >= dense_.size()) return false;
    for (std::size_t r = 0; r < c.runs.size(); ++r)
      if (!group_ok(c.runs[r], nullptr) || !run_ok(c, r)) return false;
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (slot_sparse(s) && !c.own[s]) return false;
      if (c.own[s] && !group_ok(c.owned[s], &model_->tensors[slots_[s]])) return false;
    }
    return true;
  }

  // The strategy_desc of c, written into `out` (its buffers are reused: pass the same `out`
  // again and only group indices change). Groups: non-empty runs in backward order, then
  // owned groups in slot order.
  void materialize(const candidate& c, strategy_desc& out) const {
    const auto& ts = model_->tensors;
    out.name = "autosync";
    out.groups.clear();
    if (out.assignments.size() != ts.size()) out.assignments.resize(ts.size());
    for (std::size_t i = 0; i < ts.size(); ++i) {
      auto& a = out.assignments[i];
      if (a.tensor != ts[i].name) a.tensor = ts[i].name;
      a.split_axis = 0;
      a.shard_groups.clear();
    }
    for (std::size_t r = 0; r < c.runs.size(); ++r) {
      const auto gi = static_cast<std::int32_t>(out.groups.size());
      bool used = false;
      for (auto p = c.starts[r]; p < c.run_end(r, dense_.size()); ++p) {
        const auto ti = dense_[p];
        const auto sl = slot_of_[ti];
        if (sl >= 0 && c.own[static_cast<std::size_t>(sl)]) continue;
        out.assignments[ti].group = gi;
        used = true;
      }
      if (used) out.groups.push_back(c.runs[r]);
    }
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (!c.own[s]) continue;
      out.assignments[slots_[s]].group = static_cast<std::int32_t>(out.groups.size());
      out.groups.push_back(c.owned[s]);
    }
  }
  [[nodiscard]] strategy_desc materialize(const candidate& c) const {
    strategy_desc s;
    materialize(c, s);
    return s;
  }

  // The candidate that materializes to (a regrouping of) s, when the space can express it:
  // unsplit assignments, or splits whose shards share one unpartitioned group; s must obey
  // the knowledge rules. Runs follow s's groups in backward order.
  [[nodiscard]] std::optional<candidate> lift(const strategy_desc& s) const {
    const auto& ts = model_->tensors;
    if (s.assignments.size() != ts.size()) return std::nullopt;
    std::vector<group_desc> of(ts.size());
    std::vector<std::int32_t> gid(ts.size(), -1);
    for (std::size_t a = 0; a < s.assignments.size(); ++a) {
      const auto& as = s.assignments[a];
      const auto ti = (ts[a].name == as.tensor) ? std::optional<std::size_t>(a) : model_->find(as.tensor);
      if (!ti) return std::nullopt;
      if (!as.split()) {
        if (as.group < 0 || static_cast<std::size_t>(as.group) >= s.groups.size()) return std::nullopt;
        of[*ti] = s.groups[static_cast<std::size_t>(as.group)];
        gid[*ti] = as.group;
        continue;
      }
      const auto g0 = as.shard_groups[0];
      for (auto g : as.shard_groups)
        if (g != g0) return std::nullopt;
      if (g0 < 0 || static_cast<std::size_t>(g0) >= s.groups.size()) return std::nullopt;
      auto g = s.groups[static_cast<std::size_t>(g0)];
      if (g.partitioner.kind != partitioner_kind::none) return std::nullopt;
      g.partitioner = partitioner_value{partitioner_kind::even, static_cast<std::int32_t>(as.shard_groups.size()), as.split_axis, 0};
      of[*ti] = g;
      gid[*ti] = -2 - static_cast<std::int32_t>(*ti);  // a group of its own
    }
    candidate c;
    c.own.assign(slots_.size(), 0);
    c.owned.resize(slots_.size());
    for (std::size_t sl = 0; sl < slots_.size(); ++sl) {
      const auto ti = slots_[sl];
      c.owned[sl] = of[ti];
      if (slot_sparse(sl) || of[ti].partitioner.kind == partitioner_kind::even) c.own[sl] = 1;
    }
    std::int32_t current = -1;
    for (std::uint32_t p = 0; p < dense_.size(); ++p) {
      const auto ti = dense_[p];
      const auto sl = slot_of_[ti];
      if (sl >= 0 && c.own[static_cast<std::size_t>(sl)]) continue;
      if (gid[ti] < 0) return std::nullopt;  // a split the runs cannot hold
      if (c.runs.empty() || gid[ti] != current) {
        c.starts.push_back(c.runs.empty() ? 0 : p);
        c.runs.push_back(of[ti]);
        current = gid[ti];
      }
    }
    if (c.runs.empty()) {  // every dense tensor has its own group
      c.starts = {0};
      c.runs = {group_desc{}};
    }
    if (!feasible(c)) return std::nullopt;
    return c;
  }

  // ---- random choices (used by the construction and the local search) ----------------------
  // Sets aspect `a` of g to a random allowed value (for tensor t when g is an override group,
  // nullptr for a run). Returns false when the aspect has a single value for g.
  bool randomize(group_desc& g, aspect a, random& rng, const tensor* t) const {
    const group_desc before = g;
    const auto i = static_cast<std::size_t>(a);
    if (i < core_slot_count) {
      const bool moved = visit_core_slot<bool>(i, [&]<class Slot>(std::type_identity<Slot>) {
        static_assert(requires { randomize_slot(Slot{}, g, rng, t); }, "autosync::search::space: a core slot has no randomize_slot/variants_slot overload (its search moves)");
        return randomize_slot(Slot{}, g, rng, t);
      });
      if (!moved) return false;
    } else {  // an extension slot
      const auto k = i - core_slot_count;
      const auto vs = k < registry::slots().size() ? extension_proposals(k, g) : std::vector<ext_value>{};
      if (vs.empty()) return false;
      g = with_extension(g, vs[rng.below(vs.size())]);
    }
    return !(g == before);
  }

  // Every allowed value of aspect `a` for g (t: the override tensor, nullptr for a run),
  // appended to `out` as whole group strategies (g itself included when allowed).
  void variants(const group_desc& g, aspect a, const tensor* t, std::vector<group_desc>& out) const {
    const auto i = static_cast<std::size_t>(a);
    if (i < core_slot_count) {
      (void)visit_core_slot<bool>(i, [&]<class Slot>(std::type_identity<Slot>) {
        variants_slot(Slot{}, g, t, out);
        return true;
      });
    } else if (const auto k = i - core_slot_count; k < registry::slots().size()) {  // an extension slot
      for (const auto& x : extension_proposals(k, g)) out.push_back(with_extension(g, x));
    }
  }

  // A random partitioner: for an override tensor even<K, axis> (K in [1, max_shards]) or
  // by_bytes; for a run none, by_bytes or even<K, 0> (feasible() checks the members).
  [[nodiscard]] partitioner_value random_partitioner(random& rng, const tensor* t) const {
    const auto r = rng.below(3);
    if (r == 0) return partitioner_value{};
    if (r == 1 && (!t || !t->sparse)) return partitioner_value{partitioner_kind::by_bytes, 1, 0, partition_bytes[rng.below(partition_bytes.size())]};
    std::int32_t axis = 0;
    if (t) {
      std::vector<std::int32_t> axes;
      for (std::int32_t ax = 0; ax < static_cast<std::int32_t>(t->shape.size()); ++ax)
        if (max_shards(*t, ax, *cluster_) >= 2) axes.push_back(ax);
      if (axes.empty()) return partitioner_value{};
      axis = rng.pick(axes);
    }
    const auto hi = t ? max_shards(*t, axis, *cluster_) : static_cast<std::int64_t>(servers_);
    if (hi < 2) return partitioner_value{};
    return partitioner_value{partitioner_kind::even, static_cast<std::int32_t>(rng.between(2, hi)), axis, 0};
  }

  // Whether run r obeys the member-dependent rules (tiny tensors fused, even partitions fit).
  [[nodiscard]] bool run_ok(const candidate& c, std::size_t r) const {
    const auto& g = c.runs[r];
    const bool collective = is_collective(g.architecture);
    const bool even = g.partitioner.kind == partitioner_kind::even && g.partitioner.shards > 1;
    std::size_t members = 0;
    bool tiny = false;
    for (auto p = c.starts[r]; p < c.run_end(r, dense_.size()); ++p) {
      const auto ti = dense_[p];
      const auto sl = slot_of_[ti];
      if (sl >= 0 && c.own[static_cast<std::size_t>(sl)]) continue;
      ++members;
      tiny = tiny || tiny_[p];
      if (even) {
        const auto& t = model_->tensors[ti];
        if (static_cast<std::size_t>(g.partitioner.axis) >= t.shape.size() || g.partitioner.shards > t.shape[static_cast<std::size_t>(g.partitioner.axis)])
          return false;
      }
    }
    if (!collective || !tiny) return true;
    return fuses_tiny(g.fusion, rules_) && (members >= 2 || dense_.size() <= 1);
  }

 private:
  // ---- each core slot's moves: randomize_slot (false: the aspect has a single value for g) and
  // variants_slot, found by overload on the slot tag ----------------------------------------
  bool randomize_slot(slot::architecture, group_desc& g, random& rng, const tensor* t) const {
    const group_desc before = g;
    if (t && t->sparse) {
      g.architecture = g.architecture == architecture_kind::parameter_server ? architecture_kind::all_gather
                                                                              : architecture_kind::parameter_server;
      g.partitioner = partitioner_value{};
    } else {
      g.architecture = rng.pick(std::span<const architecture_kind>(dense_arch_));
    }
    g = normalized(g);
    if (is_collective(g.architecture)) {
      const auto tops = topologies(g.architecture);
      // from a parameter server: the topology is the new architecture's own choice
      if (!is_collective(before.architecture) || std::find(tops.begin(), tops.end(), g.topology) == tops.end()) g.topology = rng.pick(tops);
      if (g.fusion.cap_bytes == 0 && !t) g.fusion = fusion_value{std::uint64_t{1} << 24, std::uint64_t{1} << 24};
    } else if (g.architecture == architecture_kind::parameter_server && before.architecture != g.architecture) {
      g.placement = placement_value{placement_kind::load_balanced, 0};
      g.replication = rng.pick(std::span<const replication_kind>(replications_));
    }
    return true;
  }
  bool randomize_slot(slot::topology, group_desc& g, [[maybe_unused]] random& rng, [[maybe_unused]] const tensor* t) const {
    const auto tops = topologies(g.architecture);
    if (tops.empty()) return false;
    g.topology = rng.pick(tops);
    return true;
  }
  bool randomize_slot(slot::compression, group_desc& g, [[maybe_unused]] random& rng, [[maybe_unused]] const tensor* t) const {
    if (t && t->type != dtype::f32 && t->type != dtype::f64) return false;
    g.compression = rng.pick(std::span<const compression_value>(comp_));
    return true;
  }
  bool randomize_slot(slot::fusion, group_desc& g, [[maybe_unused]] random& rng, [[maybe_unused]] const tensor* t) const {
    const std::size_t n = fusion_caps.size();
    const auto cap = fusion_caps[rng.below(n)];
    const bool small = rng.chance(0.25);
    g.fusion = fusion_value{cap, small && cap > small_first_bucket ? small_first_bucket : cap};
    return true;
  }
  bool randomize_slot(slot::schedule, group_desc& g, [[maybe_unused]] random& rng, [[maybe_unused]] const tensor* t) const {
    g.schedule = g.schedule == schedule_kind::fifo ? schedule_kind::priority : schedule_kind::fifo;
    return true;
  }
  bool randomize_slot(slot::placement, group_desc& g, [[maybe_unused]] random& rng, [[maybe_unused]] const tensor* t) const {
    if (g.architecture != architecture_kind::parameter_server) return false;
    g.placement = rng.pick(std::span<const placement_value>(placements_));
    return true;
  }
  bool randomize_slot(slot::replication, group_desc& g, [[maybe_unused]] random& rng, [[maybe_unused]] const tensor* t) const {
    if (g.architecture != architecture_kind::parameter_server || replications_.size() < 2) return false;
    g.replication = g.replication == replication_kind::none ? replication_kind::local : replication_kind::none;
    return true;
  }
  bool randomize_slot(slot::partitioner, group_desc& g, [[maybe_unused]] random& rng, [[maybe_unused]] const tensor* t) const {
    if (g.architecture == architecture_kind::all_gather) return false;
    g.partitioner = random_partitioner(rng, t);
    return true;
  }
  void variants_slot(slot::architecture, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    if (t && t->sparse) {
      for (auto k : {architecture_kind::parameter_server, architecture_kind::all_gather}) {
        group_desc v = g;
        v.architecture = k;
        v.partitioner = k == architecture_kind::all_gather ? partitioner_value{} : v.partitioner;
        push(normalized(v));
      }
      return;
    }
    for (auto k : dense_arch_) {
      group_desc v = g;
      v.architecture = k;
      v = normalized(v);
      if (is_collective(k)) {
        if (v.fusion.cap_bytes == 0 && !t) v.fusion = fusion_value{std::uint64_t{1} << 24, std::uint64_t{1} << 24};
        const auto tops = topologies(k);
        if (is_collective(g.architecture) && std::find(tops.begin(), tops.end(), v.topology) != tops.end()) {
          push(v);
          continue;
        }
        for (const auto& tp : tops) {  // from a parameter server: every topology with it
          v.topology = tp;
          push(v);
        }
      } else if (k == g.architecture) {
        push(v);
      } else {
        v.placement = placement_value{placement_kind::load_balanced, 0};
        for (auto r : replications_) {  // every replication with it
          v.replication = r;
          push(v);
        }
      }
    }
  }
  void variants_slot(slot::topology, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    for (const auto& tp : topologies(g.architecture)) {
      group_desc v = g;
      v.topology = tp;
      push(v);
    }
  }
  void variants_slot(slot::compression, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    for (const auto& c : comp_) {
      group_desc v = g;
      v.compression = c;
      push(v);
    }
  }
  void variants_slot(slot::fusion, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    for (auto cap : fusion_caps)
      for (bool small : {false, true}) {
        if (small && cap <= small_first_bucket) continue;
        group_desc v = g;
        v.fusion = fusion_value{cap, small ? small_first_bucket : cap};
        push(v);
      }
  }
  void variants_slot(slot::schedule, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    for (auto k : {schedule_kind::fifo, schedule_kind::priority}) {
      group_desc v = g;
      v.schedule = k;
      push(v);
    }
  }
  void variants_slot(slot::placement, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    if (g.architecture != architecture_kind::parameter_server) return;
    for (const auto& pl : placements_) {
      group_desc v = g;
      v.placement = pl;
      push(v);
    }
  }
  void variants_slot(slot::replication, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    if (g.architecture != architecture_kind::parameter_server) return;
    for (auto r : replications_) {
      group_desc v = g;
      v.replication = r;
      push(v);
    }
  }
  void variants_slot(slot::partitioner, const group_desc& g, [[maybe_unused]] const tensor* t, std::vector<group_desc>& out) const {
    auto push = [&](group_desc v) { out.push_back(v); };
    if (g.architecture == architecture_kind::all_gather) return;
    group_desc v = g;
    v.partitioner = partitioner_value{};
    push(v);
    if (!t || !t->sparse)
      for (auto b : partition_bytes) {
        v.partitioner = partitioner_value{partitioner_kind::by_bytes, 1, 0, b};
        push(v);
      }
    const auto rank = t ? static_cast<std::int32_t>(t->shape.size()) : 1;
    for (std::int32_t ax = 0; ax < rank; ++ax) {
      const auto hi = t ? max_shards(*t, ax, *cluster_) : static_cast<std::int64_t>(servers_);
      for (std::int64_t k = 2; k <= hi; ++k) {
        v.partitioner = partitioner_value{partitioner_kind::even, static_cast<std::int32_t>(k), ax, 0};
        push(v);
      }
    }
  }
  void push_compression(const compression_value& c) {
    if (compression_allowed(c, rules_)) comp_.push_back(c);
  }
  // The aspect-level rules for one group (t: the override tensor, nullptr for a run).
  [[nodiscard]] bool group_ok(const group_desc& g, const tensor* t) const {
    if (t ? !architecture_allowed(*t, g.architecture) : g.architecture == architecture_kind::all_gather) return false;
    if (!topology_allowed(g.architecture, g.topology, *cluster_)) return false;
    if (!compression_allowed(g.compression, rules_)) return false;
    if (!exchange_breach(g).empty() || !codec_conflict(g).empty()) return false;
    if (cluster_->backend == collective_backend::nccl && runs_registered_codecs(g)) return false;  // the NCCL executor refuses them
    if (g.replication == replication_kind::local && !local_replication_allowed(*cluster_)) return false;
    if (g.placement.kind == placement_kind::pinned && (g.placement.server < 0 || g.placement.server >= servers_)) return false;
    if (g.fusion.first_cap_bytes > g.fusion.cap_bytes && g.fusion.cap_bytes != 0) return false;
    const auto& p = g.partitioner;
    if (p.kind == partitioner_kind::even && p.shards > 1) {
      if (p.shards > servers_) return false;
      if (t && p.shards > max_shards(*t, p.axis, *cluster_)) return false;
      if (!t && p.axis != 0) return false;
    }
    if (p.kind == partitioner_kind::even && p.shards < 1) return false;
    if (p.kind == partitioner_kind::by_bytes && p.max_bytes < 1) return false;
    return true;
  }

  const model_spec* model_;
  const cluster_spec* cluster_;
  space_options opt_;
  knowledge rules_;
  std::vector<std::uint32_t> dense_, slots_;
  std::vector<std::int32_t> slot_of_;
  std::vector<std::uint8_t> tiny_;
  int servers_ = 1;
  std::vector<architecture_kind> dense_arch_;
  std::vector<topology_value> flat_topo_, topo_ar_, topo_sh_;
  std::vector<compression_value> comp_;
  std::vector<aspect> aspects_;
  std::vector<placement_value> placements_;
  std::vector<replication_kind> replications_;
};

}  // namespace autosync::search
