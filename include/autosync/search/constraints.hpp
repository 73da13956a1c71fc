// autosync/search/constraints.hpp — domain knowledge that prunes the search space.
//
// AutoSync's sampler never proposes strategies that an engineer would reject on sight; the
// same rules are written here as small named predicates over a strategy descriptor, each
// with its own test, and as the aspect-level helpers the search space is built from (so the
// space only proposes what the predicates accept):
//
//   name                        rule
//   sparse_not_collective       a sparse gradient goes to parameter_server or all_gather
//   tiny_tensors_fused          a tensor under `tiny_bytes` in a collective group shares its
//                               group with a neighbour and the group fuses (caps >= tiny_bytes)
//   partition_axes_valid        partition along an axis of the tensor with >= 2 slices per
//                               shard count; sparse tensors along axis 0 only
//   shards_within_servers       an even partition or split has at most as many shards as the
//                               cluster has parameter servers
//   local_replication_useful    replication local only where a node holds > 1 device
//   hierarchical_useful         hierarchical topologies only with > 1 node and > 1 device/node
//   no_tree_for_sharded         sharded groups need a reduce-scatter: no tree anywhere
//   lossy_opt_in                lossy compression only when the user allows it
//
// Deliberate exemptions: parameter-server groups talk per key (AutoDist, BytePS), so the
// tiny-tensor rule reads collective groups only; by_bytes partitions are bounded by bytes
// (BytePS's 4,096,000), not by a shard count, so shards_within_servers reads even partitions
// and splits only. Predicates read a strategy that passed strategy_desc::validate.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace autosync::search {

// The user's budget for lossy compression (read only with allow_lossy): which lossy
// compressors may be used (`only`, by id; none listed: any) and the largest compression ratio
// one may reach, 32 / its bits per element on a large f32 tensor (registered compressors:
// compression_entry::nominal_bits, a square 1024 x 1024 matrix where the shape matters; fp16 and
// bf16: 2). 0: no limit. Lossless compressors are never limited.
struct lossy_budget {
  static constexpr std::size_t max_listed = 16;
  std::array<compression_id, max_listed> only{};
  std::size_t only_count = 0;
  double max_ratio = 0.0;
  // Adds a compressor by name (built-in or registered); false when unknown or the list is full.
  bool allow(std::string_view name) {
    compression_id id;
    if (const auto b = parse_compression(name)) id = *b;
    else if (registry::find_compression(name)) id = stable_id(name);
    else return false;
    if (only_count == max_listed) return false;
    only[only_count++] = id;
    return true;
  }
};

// Thresholds and the user's opt-ins that the rules read.
struct knowledge {
  std::uint64_t tiny_bytes = 64 * 1024;  // below: a tensor is never synchronized on its own
  bool allow_lossy = false;              // accuracy-changing options are opt-in
  lossy_budget lossy{};                  // with allow_lossy: which lossy compressors, how far
};

// ---- aspect-level rules (the space is generated from these) ----------------------------------

[[nodiscard]] constexpr bool is_collective(architecture_kind a) noexcept {
  return a == architecture_kind::all_reduce || a == architecture_kind::sharded;
}
[[nodiscard]] constexpr bool architecture_allowed(const tensor& t, architecture_kind a) noexcept {
  return t.sparse ? (a == architecture_kind::parameter_server || a == architecture_kind::all_gather)
                  : a != architecture_kind::all_gather;
}
[[nodiscard]] constexpr bool is_tiny(const tensor& t, const knowledge& k) noexcept {
  return static_cast<std::uint64_t>(t.bytes()) < k.tiny_bytes;
}
[[nodiscard]] constexpr bool fuses_tiny(const fusion_value& f, const knowledge& k) noexcept {
  return f.cap_bytes >= k.tiny_bytes && f.first_cap_bytes >= k.tiny_bytes;
}
[[nodiscard]] constexpr bool hierarchical_allowed(const cluster_spec& c) noexcept {
  return c.worker_nodes() > 1 && c.max_devices_per_node() > 1;
}
[[nodiscard]] constexpr bool local_replication_allowed(const cluster_spec& c) noexcept { return c.max_devices_per_node() > 1; }
[[nodiscard]] constexpr bool topology_allowed(architecture_kind a, const topology_value& t, const cluster_spec& c) noexcept {
  if (!is_collective(a)) return t == topology_value{};
  if (t.kind == topology_kind::hierarchical && !hierarchical_allowed(c)) return false;
  if (a == architecture_kind::sharded &&
      (t.kind == topology_kind::tree || t.intra == topology_kind::tree || t.inter == topology_kind::tree))
    return false;
  return true;
}
[[nodiscard]] constexpr bool compression_allowed(compression_id id, const knowledge& k) noexcept {
  if (is_extension_id(id))  // a registered compressor (registry/extensions.hpp): a run-time entry
    return !std::is_constant_evaluated() && registry::find_compression(id) && (compression_lossless(id) || k.allow_lossy);
  const auto info = find_compression(id);
  return info.has_value() && (info->lossless || k.allow_lossy);
}
// The compression ratio of a value on a large f32 tensor (lossy_budget), 1 for lossless ones.
[[nodiscard]] inline double compression_ratio(const compression_value& c) {
  if (is_extension_id(c.id)) {
    const auto* e = registry::find_compression(c.id);
    if (!e || e->lossless || !e->nominal_bits) return 1.0;
    const double bits = e->nominal_bits(c.params);
    return bits > 0.0 ? 32.0 / bits : 1e300;
  }
  const auto info = find_compression(c.id);
  return info && info->wire_bytes_per_element > 0.0 ? 4.0 / info->wire_bytes_per_element : 1.0;
}
// A value (with its parameters): the id's rule, then the lossy budget.
[[nodiscard]] inline bool compression_allowed(const compression_value& c, const knowledge& k) {
  if (!compression_allowed(c.id, k)) return false;
  if (compression_lossless(c.id)) return true;
  const auto& b = k.lossy;
  if (b.only_count > 0 && std::find(b.only.begin(), b.only.begin() + static_cast<std::ptrdiff_t>(b.only_count), c.id) ==
                              b.only.begin() + static_cast<std::ptrdiff_t>(b.only_count))
    return false;
  return !(b.max_ratio > 0.0) || compression_ratio(c) <= b.max_ratio * (1.0 + 1e-12);
}
// The most shards an even partition of `t` along `axis` may have (1: not partitionable there).
[[nodiscard]] constexpr std::int64_t max_shards(const tensor& t, std::int32_t axis, const cluster_spec& c) {
  if (axis < 0 || static_cast<std::size_t>(axis) >= t.shape.size()) return 1;
  if (t.sparse && axis != 0) return 1;
  const auto servers = static_cast<std::int64_t>(c.server_count());
  const auto extent = t.shape[static_cast<std::size_t>(axis)];
  return std::max<std::int64_t>(1, std::min(extent, servers));
}

// ---- predicates over a whole strategy -------------------------------------------------------

struct context {
  const model_spec& model;
  const cluster_spec& cluster;
  knowledge rules{};
};

struct violation {
  std::string_view constraint;  // the predicate's name
  std::string field;            // where, as in autosync::error ("assignments[3]", "groups[1].topology")
  std::string what;
};

using predicate = std::optional<violation> (*)(const context&, const strategy_desc&);

namespace detail {
inline std::string group_field(std::size_t g, std::string_view tail = {}) {
  return "groups[" + std::to_string(g) + "]" + std::string(tail);
}
inline std::string assignment_field(std::size_t a) { return "assignments[" + std::to_string(a) + "]"; }
// Forward index of assignment a's tensor (usual case: model order).
inline std::optional<std::size_t> tensor_of(const model_spec& m, const strategy_desc& s, std::size_t a) {
  if (a < m.tensors.size() && m.tensors[a].name == s.assignments[a].tensor) return a;
  return m.find(s.assignments[a].tensor);
}
// Calls f(tensor, group index, field) for every piece (whole tensor or shard) of s.
template <class F>
std::optional<violation> each_piece(const context& cx, const strategy_desc& s, F&& f) {
  for (std::size_t a = 0; a < s.assignments.size(); ++a) {
    const auto ti = tensor_of(cx.model, s, a);
    if (!ti) continue;
    const auto& as = s.assignments[a];
    const auto& t = cx.model.tensors[*ti];
    if (as.split()) {
      for (std::size_t k = 0; k < as.shard_groups.size(); ++k)
        if (auto v = f(t, static_cast<std::size_t>(as.shard_groups[k]), assignment_field(a) + ".shard_groups[" + std::to_string(k) + "]"))
          return v;
    } else if (auto v = f(t, static_cast<std::size_t>(as.group), assignment_field(a) + ".group")) {
      return v;
    }
  }
  return std::nullopt;
}
}  // namespace detail

inline std::optional<violation> sparse_not_collective(const context& cx, const strategy_desc& s) {
  return detail::each_piece(cx, s, [&](const tensor& t, std::size_t g, const std::string& f) -> std::optional<violation> {
    if (t.sparse && g < s.groups.size() && !architecture_allowed(t, s.groups[g].architecture))
      return violation{"sparse_not_collective", f,
                       "sparse tensor '" + t.name + "' in a " + std::string(name_of(s.groups[g].architecture)) + " group"};
    return std::nullopt;
  });
}

inline std::optional<violation> tiny_tensors_fused(const context& cx, const strategy_desc& s) {
  std::vector<std::int64_t> members(s.groups.size(), 0);
  std::int64_t dense = 0;
  for (std::size_t a = 0; a < s.assignments.size(); ++a) {
    const auto& as = s.assignments[a];
    if (as.split()) {
      for (auto g : as.shard_groups)
        if (static_cast<std::size_t>(g) < members.size()) ++members[static_cast<std::size_t>(g)];
    } else if (static_cast<std::size_t>(as.group) < members.size()) {
      ++members[static_cast<std::size_t>(as.group)];
    }
  }
  for (const auto& t : cx.model.tensors) dense += t.sparse ? 0 : 1;
  for (std::size_t a = 0; a < s.assignments.size(); ++a) {
    const auto ti = detail::tensor_of(cx.model, s, a);
    const auto& as = s.assignments[a];
    if (!ti || as.split()) continue;
    const auto& t = cx.model.tensors[*ti];
    const auto g = static_cast<std::size_t>(as.group);
    if (!is_tiny(t, cx.rules) || g >= s.groups.size() || !is_collective(s.groups[g].architecture)) continue;
    if (!fuses_tiny(s.groups[g].fusion, cx.rules))
      return violation{"tiny_tensors_fused", detail::group_field(g, ".fusion"),
                       "tiny tensor '" + t.name + "' (" + std::to_string(t.bytes()) + " bytes) in a group whose buckets hold less than " +
                           std::to_string(cx.rules.tiny_bytes) + " bytes"};
    if (members[g] < 2 && dense > 1)
      return violation{"tiny_tensors_fused", detail::assignment_field(a),
                       "tiny tensor '" + t.name + "' is alone in group " + std::to_string(g)};
  }
  return std::nullopt;
}

inline std::optional<violation> partition_axes_valid(const context& cx, const strategy_desc& s) {
  for (std::size_t a = 0; a < s.assignments.size(); ++a) {
    const auto ti = detail::tensor_of(cx.model, s, a);
    const auto& as = s.assignments[a];
    if (!ti || !as.split()) continue;
    const auto& t = cx.model.tensors[*ti];
    const auto ax = as.split_axis;
    if (ax < 0 || static_cast<std::size_t>(ax) >= t.shape.size() || (t.sparse && ax != 0) ||
        static_cast<std::int64_t>(as.shard_groups.size()) > t.shape[static_cast<std::size_t>(ax)])
      return violation{"partition_axes_valid", detail::assignment_field(a) + ".split_axis",
                       "tensor '" + t.name + "' cannot be split in " + std::to_string(as.shard_groups.size()) + " along axis " +
                           std::to_string(ax)};
  }
  return detail::each_piece(cx, s, [&](const tensor& t, std::size_t g, const std::string& f) -> std::optional<violation> {
    if (g >= s.groups.size()) return std::nullopt;
    const auto& p = s.groups[g].partitioner;
    if (p.kind != partitioner_kind::even || p.shards <= 1) return std::nullopt;
    if (p.axis < 0 || static_cast<std::size_t>(p.axis) >= t.shape.size() || (t.sparse && p.axis != 0) ||
        p.shards > t.shape[static_cast<std::size_t>(p.axis)])
      return violation{"partition_axes_valid", f,
                       "group " + std::to_string(g) + " partitions '" + t.name + "' in " + std::to_string(p.shards) + " along axis " +
                           std::to_string(p.axis)};
    return std::nullopt;
  });
}

inline std::optional<violation> shards_within_servers(const context& cx, const strategy_desc& s) {
  const auto servers = static_cast<std::int64_t>(cx.cluster.server_count());
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    const auto& p = s.groups[g].partitioner;
    if (p.kind == partitioner_kind::even && p.shards > servers)
      return violation{"shards_within_servers", detail::group_field(g, ".partitioner.shards"),
                       std::to_string(p.shards) + " shards but the cluster has " + std::to_string(servers) + " server(s)"};
  }
  for (std::size_t a = 0; a < s.assignments.size(); ++a)
    if (static_cast<std::int64_t>(s.assignments[a].shard_groups.size()) > servers)
      return violation{"shards_within_servers", detail::assignment_field(a) + ".shard_groups",
                       std::to_string(s.assignments[a].shard_groups.size()) + " shards but the cluster has " + std::to_string(servers) +
                           " server(s)"};
  return std::nullopt;
}

inline std::optional<violation> local_replication_useful(const context& cx, const strategy_desc& s) {
  if (local_replication_allowed(cx.cluster)) return std::nullopt;
  for (std::size_t g = 0; g < s.groups.size(); ++g)
    if (s.groups[g].replication == replication_kind::local)
      return violation{"local_replication_useful", detail::group_field(g, ".replication"),
                       "local replication with one device per node"};
  return std::nullopt;
}

inline std::optional<violation> hierarchical_useful(const context& cx, const strategy_desc& s) {
  if (hierarchical_allowed(cx.cluster)) return std::nullopt;
  for (std::size_t g = 0; g < s.groups.size(); ++g)
    if (s.groups[g].topology.kind == topology_kind::hierarchical)
      return violation{"hierarchical_useful", detail::group_field(g, ".topology"),
                       "hierarchical topology on a cluster of " + std::to_string(cx.cluster.worker_nodes()) + " node(s) x " +
                           std::to_string(cx.cluster.max_devices_per_node()) + " device(s)"};
  return std::nullopt;
}

inline std::optional<violation> no_tree_for_sharded(const context&, const strategy_desc& s) {
  for (std::size_t g = 0; g < s.groups.size(); ++g)
    if (s.groups[g].architecture == architecture_kind::sharded &&
        (s.groups[g].topology.kind == topology_kind::tree || s.groups[g].topology.intra == topology_kind::tree ||
         s.groups[g].topology.inter == topology_kind::tree))
      return violation{"no_tree_for_sharded", detail::group_field(g, ".topology"), "a sharded group uses a tree"};
  return std::nullopt;
}

inline std::optional<violation> lossy_opt_in(const context& cx, const strategy_desc& s) {
  for (std::size_t g = 0; g < s.groups.size(); ++g)
    if (!compression_allowed(s.groups[g].compression, cx.rules))
      return violation{"lossy_opt_in", detail::group_field(g, ".compression"),
                       cx.rules.allow_lossy ? "compressor '" + compression_name(s.groups[g].compression) + "' is outside the lossy budget (allowed compressors, maximum compression ratio)"
                                            : std::string("lossy compression needs allow_lossy")};
  return std::nullopt;
}

// A registered compressor that owns its exchange (registry::compression_entry::make_exchange)
// replaces the group's collective on the world's ranks: the cost model prices it as an
// all-reduce, so it belongs to all_reduce and sharded groups (parameter servers would be priced
// as transfers to servers that never see the bytes).
inline std::optional<violation> exchange_in_collective(const context&, const strategy_desc& s) {
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    const auto& gr = s.groups[g];
    if (exchange_breach(gr) != "compression") continue;
    return violation{"exchange_in_collective", detail::group_field(g, ".compression"),
                     "compressor '" + registry::exchange_owner(gr.compression.id)->name +
                         "' replaces the collective: it needs an all_reduce or sharded group, not " + std::string(name_of(gr.architecture))};
  }
  return std::nullopt;
}

struct constraint {
  std::string_view name;
  predicate check;
};

inline constexpr std::array<constraint, 9> all_constraints{{
    {"sparse_not_collective", &sparse_not_collective},
    {"tiny_tensors_fused", &tiny_tensors_fused},
    {"partition_axes_valid", &partition_axes_valid},
    {"shards_within_servers", &shards_within_servers},
    {"local_replication_useful", &local_replication_useful},
    {"hierarchical_useful", &hierarchical_useful},
    {"no_tree_for_sharded", &no_tree_for_sharded},
    {"lossy_opt_in", &lossy_opt_in},
    {"exchange_in_collective", &exchange_in_collective},
}};

// The first violation of each constraint (empty: the strategy obeys every rule).
[[nodiscard]] inline std::vector<violation> violations(const context& cx, const strategy_desc& s) {
  std::vector<violation> r;
  for (const auto& c : all_constraints)
    if (auto v = c.check(cx, s)) r.push_back(std::move(*v));
  return r;
}
[[nodiscard]] inline bool satisfies(const context& cx, const strategy_desc& s) {
  for (const auto& c : all_constraints)
    if (c.check(cx, s)) return false;
  return true;
}

}  // namespace autosync::search
