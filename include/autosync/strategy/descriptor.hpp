// autosync/strategy/descriptor.hpp — the runtime form of a strategy.
//
// `group_desc` mirrors strategy<Policies...> one-to-one (an enum or a small aggregate per
// core slot, and the values of extension slots in `ext`, registry/values.hpp);
// `describe<S>()` gives the descriptor of a policy type at compile time.
// `strategy_desc` assigns every tensor of a model to a group, or splits it into even shards
// along one axis and assigns each shard (AutoSync: each shard carries its own synchronizer).
// The search works on descriptors; JSON round-trips them (io/json.hpp); emit.hpp turns them
// back into types.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/pack.hpp>
#include <autosync/registry/core.hpp>
#include <autosync/registry/extensions.hpp>
#include <autosync/registry/rules.hpp>
#include <autosync/strategy/made_for.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace autosync {

struct group_desc {
  architecture_kind architecture = default_policy<slot::architecture>::type::value;
  partitioner_value partitioner = default_policy<slot::partitioner>::type::value;
  placement_value placement = default_policy<slot::placement>::type::value;
  replication_kind replication = default_policy<slot::replication>::type::value;
  topology_value topology = default_policy<slot::topology>::type::value;
  compression_value compression{default_policy<slot::compression>::type::value};
  fusion_value fusion = default_policy<slot::fusion>::type::value;
  schedule_kind schedule = default_policy<slot::schedule>::type::value;
  ext_values ext{};  // extension slots (registry/extensions.hpp); absent = the slot's default
  friend constexpr bool operator==(const group_desc&, const group_desc&) = default;
};

namespace detail {
template <class... Ps>
constexpr void describe_ext(group_desc& g, type_list<Ps...>) noexcept {
  auto one = [&](auto t) {
    using P = typename decltype(t)::type;
    if constexpr (!in_list<typename P::slot, slot_list>) g.ext.set(P::value);
  };
  (one(std::type_identity<Ps>{}), ...);
}
}  // namespace detail

// The values registered extension slot k (its index in registry::slots()) proposes for g: its
// entry's alternatives, or every kind with its default parameters (the search's proposals).
[[nodiscard]] inline std::vector<ext_value> extension_proposals(std::size_t k, const group_desc& g) {
  const auto& se = registry::slots()[k];
  if (se.alternatives) return se.alternatives(g);
  std::vector<ext_value> r;
  for (const auto& kd : se.kinds) r.push_back(registry::value_of(se, kd, registry::defaults(kd.params)));
  return r;
}
// g with an extension slot at value x (the slot's default is stored as absent).
[[nodiscard]] inline group_desc with_extension(group_desc g, const ext_value& x) {
  const auto* se = registry::find_slot(x.slot);
  if (se && x == registry::default_value(*se)) g.ext.erase(x.slot);
  else (void)g.ext.set(x);
  return g;
}

template <StrategyType S>
[[nodiscard]] constexpr group_desc describe() noexcept {
  group_desc g;
  detail::describe_ext(g, typename S::policies{});
  for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) { slot_traits<Slot>::field(g) = S::template get<Slot>::value; });
  return g;
}

struct assignment {
  std::string tensor;                      // a tensor name of the model
  std::int32_t group = 0;                  // the whole tensor goes to this group
  std::int32_t split_axis = 0;             // with shard_groups: split along this axis ...
  std::vector<std::int32_t> shard_groups;  // ... into shard_groups.size() even shards, shard s to group shard_groups[s]
  friend bool operator==(const assignment&, const assignment&) = default;
  [[nodiscard]] constexpr bool split() const noexcept { return !shard_groups.empty(); }
};

struct strategy_desc {
  std::string name;                        // "autosync", "ddp", "horovod-128mb", ...
  std::vector<group_desc> groups;
  std::vector<assignment> assignments;     // exactly one per model tensor
  std::optional<made_for_info> made_for{}; // the cluster and layout it was searched for (strategy/made_for.hpp)
  friend bool operator==(const strategy_desc&, const strategy_desc&) = default;

  // Checks the strategy against a model and a cluster. Throws autosync::error naming the
  // first bad field (e.g. "groups[2].placement.server" or "assignments[7].tensor").
  void validate(const model_spec& model, const cluster_spec& cluster) const;
  // Checks what can be checked without a model or cluster.
  void validate_groups() const;
};

// Whether any group of s is a parameter server (its items are placed on servers).
[[nodiscard]] constexpr bool has_parameter_servers(const strategy_desc& s) noexcept {
  return std::any_of(s.groups.begin(), s.groups.end(), [](const group_desc& g) { return g.architecture == architecture_kind::parameter_server; });
}

// The most pieces (whole tensors and shards: sync items) one strategy may synchronize: a bound that
// keeps a strategy's expansion within memory (2^20 items take 80 MiB).
inline constexpr std::int64_t max_strategy_items = std::int64_t{1} << 20;

// The same group strategy for every tensor. constexpr for the host compiler (tests/static
// evaluates estimates at compile time); nvcc's front end does not take strategy_desc (its
// std::optional member) as a literal type, so under nvcc it is a plain inline function.
#if defined(__CUDACC__)
#define AUTOSYNC_DETAIL_STRATEGY_CONSTEXPR inline
#else
#define AUTOSYNC_DETAIL_STRATEGY_CONSTEXPR constexpr
#endif
[[nodiscard]] AUTOSYNC_DETAIL_STRATEGY_CONSTEXPR strategy_desc uniform_strategy(const model_spec& m, const group_desc& g, std::string_view name = {}) {
  strategy_desc s{std::string(name), {g}, {}};
  s.assignments.reserve(m.tensors.size());
  for (const auto& t : m.tensors) s.assignments.push_back(assignment{t.name, 0, 0, {}});
  return s;
}

// A compressor that owns its exchange (registry::exchange_owner) runs it among all ranks in
// place of the collective: the cost model prices it as a flat ring all-reduce of its bytes,
// which is what runs. A parameter server, an all-gather or a topology would be priced and never
// run. The field of g that breaks this ("compression": not all_reduce or sharded, "topology":
// not the ring), or "" when g keeps to it.
[[nodiscard]] inline std::string_view exchange_breach(const group_desc& g) noexcept {
  if (!registry::exchange_owner(g.compression.id)) return {};
  if (!rules::is_collective_architecture(g.architecture)) return "compression";
  if (!(g.topology == topology_value{})) return "topology";
  return {};
}

// Whether group g's buckets run registered codecs (an extension slot's or a registered
// compressor's): host-memory backends only (the NCCL executor refuses them), and a
// parameter-server bucket with them never batches (exec/executor.hpp: a hooked plan bucket).
// Per group: a codec that applies to some dtypes only counts for all.
[[nodiscard]] inline bool runs_registered_codecs(const group_desc& g) {
  for (const auto& x : g.ext.v) {
    if (x.slot == 0) break;
    if (const auto* se = registry::find_slot(x.slot); se != nullptr && se->make_codec) return true;
  }
  if (!is_extension_id(g.compression.id)) return false;
  const auto* e = registry::find_compression(g.compression.id);
  return e != nullptr && (e->make_codec || e->make_exchange);
}

// The executor runs a bucket's registered codecs or a built-in compressor's wire format (fp16,
// bf16), not both (exec/plan.hpp). The name of g's first extension slot whose codec would meet
// the built-in compressor's wire format on some dtype, or "" when there is none.
[[nodiscard]] inline std::string_view codec_conflict(const group_desc& g) {
  if (is_extension_id(g.compression.id)) return {};
  const auto info = find_compression(g.compression.id);
  if (!info) return {};
  for (const auto& x : g.ext.v) {
    if (x.slot == 0) break;
    const auto* se = registry::find_slot(x.slot);
    if (se == nullptr || !se->make_codec) continue;
    for (const auto t : all_dtypes)
      if (shrinks(t, info->wire_bytes_per_element) && (!se->applies || se->applies(t))) return se->name;
  }
  return {};
}

inline void validate_group(const group_desc& g, const std::string& f) {
  for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {
    slot_traits<Slot>::validate(slot_traits<Slot>::field(g), f + "." + std::string(Slot::name));
  });
  // the cross-slot rules: the same predicates strategy<...> checks at compile time
  rules::for_each_failure(g, [&](auto r) {
    using R = decltype(r);
    throw error(f + "." + std::string(rules::field<R>()), R::why(g));
  });
  for (std::size_t i = 0; i < g.ext.v.size(); ++i) {
    const auto& x = g.ext.v[i];
    if (x.slot == 0) continue;
    const auto* se = registry::find_slot(x.slot);
    if (!se) throw error(f + ".ext[" + std::to_string(i) + "]", "slot id " + std::to_string(x.slot) + " is not registered");
    const auto* k = registry::find_kind(*se, x.kind);
    if (!k) throw error(f + "." + se->name, "kind id " + std::to_string(x.kind) + " is not a kind of slot '" + se->name + "'");
    if (auto why = registry::param_problem(k->params, x.params); !why.empty())
      throw error(f + "." + se->name + "." + why.substr(0, why.find(':')), why.substr(why.find(':') + 2));
    if (se->check)
      if (auto why = se->check(g, x); !why.empty()) throw error(f + "." + se->name, why);
  }
  if (const auto slot = codec_conflict(g); !slot.empty())
    throw error(f + "." + std::string(slot), "the slot's codec and compressor '" + std::string(find_compression(g.compression.id)->name) +
                                                 "' would both encode the bucket; the executor runs one or the other (set compression to none, or drop the slot)");
  if (const auto breach = exchange_breach(g); !breach.empty()) {
    const std::string head = "compressor '" + registry::exchange_owner(g.compression.id)->name +
                             "' replaces the collective with its own exchange among all ranks: ";
    throw error(f + "." + std::string(breach),
                head + (breach == "compression" ? "it needs an all_reduce or sharded group, not " + std::string(name_of(g.architecture))
                                                : std::string("the topology is not used (leave it ring)")));
  }
}

inline void strategy_desc::validate_groups() const {
  if (groups.empty()) throw error("groups", "a strategy needs at least one group");
  for (std::size_t i = 0; i < groups.size(); ++i) validate_group(groups[i], "groups[" + std::to_string(i) + "]");
}

inline void strategy_desc::validate(const model_spec& model, const cluster_spec& cluster) const {
  validate_groups();
  const int servers = cluster.server_count();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    if (g.architecture == architecture_kind::parameter_server && g.placement.kind == placement_kind::pinned &&
        g.placement.server >= servers)
      throw error("groups[" + std::to_string(i) + "].placement.server",
                  "server " + std::to_string(g.placement.server) + " does not exist (the cluster has " +
                      std::to_string(servers) + " server" + (servers == 1 ? "" : "s") + ")");
  }
  std::vector<int> seen(model.tensors.size(), -1);
  std::unordered_map<std::string_view, std::size_t> index;
  index.reserve(model.tensors.size());
  for (std::size_t i = 0; i < model.tensors.size(); ++i) index.emplace(model.tensors[i].name, i);
  const auto ngroups = static_cast<std::int32_t>(groups.size());

  // the pieces (sync items) the strategy makes, at most max_strategy_items in all
  std::int64_t pieces = 0;
  auto count_pieces = [&](std::int64_t n, const std::string& f) {
    pieces += n;
    if (pieces > max_strategy_items)
      throw error(f, "the strategy would synchronize more than " + std::to_string(max_strategy_items) +
                         " pieces (shards of tensors); partition into fewer or larger shards");
  };
  auto check_piece = [&](const tensor& t, std::int64_t extent, std::int32_t gi, const std::string& f, int split_axis) {
    if (gi < 0 || gi >= ngroups)
      throw error(f, "group " + std::to_string(gi) + " does not exist (the strategy has " + std::to_string(ngroups) + " groups)");
    const auto& g = groups[static_cast<std::size_t>(gi)];
    if (t.sparse && (g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded))
      throw error(f, "tensor '" + t.name + "' has a sparse gradient; " + std::string(name_of(g.architecture)) +
                         " needs dense ones: use parameter_server or all_gather");
    if (!t.sparse && g.architecture == architecture_kind::all_gather)
      throw error(f, "tensor '" + t.name + "' is dense; all_gather is for sparse gradients");
    if (g.partitioner.kind == partitioner_kind::even) {
      const auto axis = g.partitioner.axis;
      if (static_cast<std::size_t>(axis) >= t.shape.size())
        throw error(f, "group " + std::to_string(gi) + " partitions along axis " + std::to_string(axis) + " but tensor '" +
                           t.name + "' has " + std::to_string(t.shape.size()) + " dimension(s)");
      if (t.sparse && axis != 0) throw error(f, "sparse tensor '" + t.name + "' can only be partitioned along axis 0");
      if (split_axis >= 0 && axis != split_axis)
        throw error(f, "a shard split along axis " + std::to_string(split_axis) + " can only be partitioned further along that axis");
      const auto d = split_axis >= 0 ? extent : t.shape[static_cast<std::size_t>(axis)];
      if (g.partitioner.shards > d)
        throw error(f, "group " + std::to_string(gi) + " asks for " + std::to_string(g.partitioner.shards) + " shards of tensor '" +
                           t.name + "' but the axis has only " + std::to_string(d));
      count_pieces(g.partitioner.shards, f);
    } else if (g.partitioner.kind == partitioner_kind::by_bytes) {
      if (split_axis > 0) throw error(f, "by_bytes partitions along axis 0; the shard was split along axis " + std::to_string(split_axis));
      // the shards expand cuts (rows: the shard's own when the tensor is split along axis 0)
      const auto rows = split_axis == 0 ? extent : t.shape[0];
      const auto row_bytes = static_cast<std::uint64_t>(t.slice_elements(0)) * static_cast<std::uint64_t>(size_of(t.type));
      count_pieces(detail::by_bytes_shards(rows, row_bytes, g.partitioner.max_bytes), f);
    } else {
      count_pieces(1, f);
    }
  };

  for (std::size_t a = 0; a < assignments.size(); ++a) {
    const auto& as = assignments[a];
    const std::string f = "assignments[" + std::to_string(a) + "]";
    auto it = index.find(as.tensor);
    if (it == index.end()) throw error(f + ".tensor", "unknown tensor '" + as.tensor + "' (not in model '" + model.name + "')");
    if (seen[it->second] >= 0)
      throw error(f + ".tensor", "tensor '" + as.tensor + "' is assigned twice (also at assignments[" + std::to_string(seen[it->second]) + "])");
    seen[it->second] = static_cast<int>(a);
    const auto& t = model.tensors[it->second];
    if (as.split()) {
      if (as.split_axis < 0 || static_cast<std::size_t>(as.split_axis) >= t.shape.size())
        throw error(f + ".split_axis", "tensor '" + t.name + "' has no axis " + std::to_string(as.split_axis));
      if (t.sparse && as.split_axis != 0) throw error(f + ".split_axis", "sparse tensor '" + t.name + "' can only be split along axis 0");
      const auto d = t.shape[static_cast<std::size_t>(as.split_axis)];
      const auto k = static_cast<std::int64_t>(as.shard_groups.size());
      if (k > d)
        throw error(f + ".shard_groups", std::to_string(k) + " shards but axis " + std::to_string(as.split_axis) + " of '" + t.name +
                                             "' has only " + std::to_string(d));
      for (std::size_t s = 0; s < as.shard_groups.size(); ++s) {
        const auto r = even_shard(d, k, static_cast<std::int64_t>(s));
        check_piece(t, r.end - r.begin, as.shard_groups[s], f + ".shard_groups[" + std::to_string(s) + "]", as.split_axis);
      }
    } else {
      check_piece(t, 0, as.group, f + ".group", -1);
    }
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i] < 0) throw error("assignments", "tensor '" + model.tensors[i].name + "' has no group");
}

}  // namespace autosync
