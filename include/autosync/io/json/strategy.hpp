// autosync/io/json/strategy.hpp — a strategy (and one group of it) as JSON:
//
//   strategy: {"name": "...",
//              "groups": [{                                                          <- required
//                 "architecture": "all_reduce",
//                 "partitioner": "none" | {"kind": "even", "shards": 4, "axis": 0}
//                                       | {"kind": "by_bytes", "max_bytes": 4096000},
//                 "placement":   "round_robin" | "load_balanced" | "hashed" | {"kind": "pinned", "server": 1},
//                 "replication": "none" | "local",
//                 "topology":    "ring" | "tree" | "halving_doubling"
//                                       | {"kind": "hierarchical", "intra": "ring", "inter": "tree"},
//                 "compression": "none" | "fp16" | "bf16" (any name of comp::all)
//                                | a registered compressor: "int16" | {"kind": "int16", <parameters>},
//                 "fusion":      {"cap_bytes": 26214400, "first_cap_bytes": 1048576},
//                 "schedule":    "fifo" | "priority",
//                 <extension slot>: "kind" | {"kind": ..., <parameters>}}],   (registry/extensions.hpp;
//                                        written only when not at the slot's default)
//              "assignments": [{"tensor": "x", "group": 0},
//                              {"tensor": "y", "split_axis": 0, "shard_groups": [0, 1]}]}
//
// Writing emits the compact forms (a bare string where a policy has no number); reading
// accepts both. from_json(to_json(s)) == s for every valid s.
// Part of io/json.hpp (io/json/text.hpp: how errors are located).
#pragma once

#include <autosync/error.hpp>
#include <autosync/io/json/fields.hpp>
#include <autosync/io/json/pretty.hpp>
#include <autosync/io/json/text.hpp>
#include <autosync/cluster.hpp>
#include <autosync/model.hpp>
#include <autosync/registry/extensions.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace autosync {
namespace detail::jio {

[[nodiscard]] inline partitioner_value read_partitioner(const json& j, const std::string& f) {
  partitioner_value p;
  if (j.is_string()) {
    p.kind = read_enum<partitioner_kind>(j, f, "partitioner");
    if (p.kind == partitioner_kind::even)
      throw error(f, "'even' needs its numbers: {\"kind\": \"even\", \"shards\": K, \"axis\": A}");
    if (p.kind == partitioner_kind::by_bytes)
      throw error(f, "'by_bytes' needs its number: {\"kind\": \"by_bytes\", \"max_bytes\": B}");
    return p;
  }
  expect_object(j, f, "a partitioner: \"none\", {\"kind\": \"even\", ...} or {\"kind\": \"by_bytes\", ...}");
  p.kind = read_enum<partitioner_kind>(require(j, f, "kind"), member(f, "kind"), "partitioner");
  switch (p.kind) {
    case partitioner_kind::none: check_keys(j, f, {"kind"}, "for partitioner 'none'"); break;
    case partitioner_kind::even:
      check_keys(j, f, {"kind", "shards", "axis"}, "for partitioner 'even'");
      p.shards = read_int32(require(j, f, "shards"), member(f, "shards"));
      if (const json* v = find(j, "axis")) p.axis = read_int32(*v, member(f, "axis"));
      break;
    case partitioner_kind::by_bytes:
      check_keys(j, f, {"kind", "max_bytes"}, "for partitioner 'by_bytes'");
      p.max_bytes = read_uint64(require(j, f, "max_bytes"), member(f, "max_bytes"));
      break;
  }
  return p;
}

[[nodiscard]] inline placement_value read_placement(const json& j, const std::string& f) {
  placement_value p;
  if (j.is_string()) {
    p.kind = read_enum<placement_kind>(j, f, "placement");
    if (p.kind == placement_kind::pinned) throw error(f, "'pinned' needs its server: {\"kind\": \"pinned\", \"server\": I}");
    return p;
  }
  expect_object(j, f, "a placement: a name or {\"kind\": \"pinned\", \"server\": I}");
  p.kind = read_enum<placement_kind>(require(j, f, "kind"), member(f, "kind"), "placement");
  if (p.kind == placement_kind::pinned) {
    check_keys(j, f, {"kind", "server"}, "for placement 'pinned'");
    p.server = read_int32(require(j, f, "server"), member(f, "server"));
  } else {
    check_keys(j, f, {"kind"}, "for placement '" + std::string(name_of(p.kind)) + "'");
  }
  return p;
}

[[nodiscard]] inline topology_value read_topology(const json& j, const std::string& f) {
  topology_value t;
  if (j.is_string()) {
    t.kind = read_enum<topology_kind>(j, f, "topology");
    if (t.kind == topology_kind::hierarchical)
      throw error(f, "'hierarchical' needs its parts: {\"kind\": \"hierarchical\", \"intra\": \"ring\", \"inter\": \"tree\"}");
    return t;
  }
  expect_object(j, f, "a topology: a name or {\"kind\": \"hierarchical\", \"intra\": ..., \"inter\": ...}");
  t.kind = read_enum<topology_kind>(require(j, f, "kind"), member(f, "kind"), "topology");
  if (t.kind == topology_kind::hierarchical) {
    check_keys(j, f, {"kind", "intra", "inter"}, "for topology 'hierarchical'");
    if (const json* v = find(j, "intra")) t.intra = read_enum<topology_kind>(*v, member(f, "intra"), "topology");
    if (const json* v = find(j, "inter")) t.inter = read_enum<topology_kind>(*v, member(f, "inter"), "topology");
  } else {
    check_keys(j, f, {"kind"}, "for topology '" + std::string(name_of(t.kind)) + "'");
  }
  return t;
}

[[nodiscard]] inline fusion_value read_fusion(const json& j, const std::string& f) {
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s == "none") return fuse::none::value;
    if (s == "unbounded") return fuse::unbounded::value;
    throw error(f, "unknown fusion '" + s + "' (valid: none, unbounded, or {\"cap_bytes\": B, \"first_cap_bytes\": F})");
  }
  expect_object(j, f, "a fusion: {\"cap_bytes\": B, \"first_cap_bytes\": F}");
  check_keys(j, f, {"cap_bytes", "first_cap_bytes"});
  fusion_value v;
  v.cap_bytes = read_uint64(require(j, f, "cap_bytes"), member(f, "cap_bytes"));
  v.first_cap_bytes = v.cap_bytes;  // as bucket_cap<Cap, First = Cap>
  if (const json* x = find(j, "first_cap_bytes")) v.first_cap_bytes = read_uint64(*x, member(f, "first_cap_bytes"));
  return v;
}

// A kind's parameters from {"kind": ..., <param>: number, ...}; missing ones take their defaults.
[[nodiscard]] inline param_list read_params(const json& j, const std::string& f, const std::vector<registry::param_spec>& specs,
                                            const std::string& kind) {
  param_list p = registry::defaults(specs);
  if (!j.is_object()) return p;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "kind") continue;
    std::size_t i = 0;
    while (i < specs.size() && specs[i].name != it.key()) ++i;
    if (i == specs.size()) {
      std::string valid = "kind";
      for (const auto& s : specs) valid += ", " + s.name;
      throw error(member(f, it.key()), "unknown key '" + it.key() + "' for '" + kind + "' (valid: " + valid + ")");
    }
    p[i] = read_double(*it, member(f, it.key()));
  }
  if (auto why = registry::param_problem(specs, p); !why.empty())
    throw error(member(f, why.substr(0, why.find(':'))), why.substr(why.find(':') + 2));
  return p;
}

// The parameters that differ from their defaults, as members of o.
inline void write_params(ojson& o, const std::vector<registry::param_spec>& specs, const param_list& p) {
  for (std::size_t i = 0; i < specs.size() && i < p.size(); ++i)
    if (p[i] != specs[i].default_value) {
      if (specs[i].integer) o[specs[i].name] = static_cast<std::int64_t>(p[i]);
      else o[specs[i].name] = p[i];
    }
}

// "fp16", or {"kind": "int16", <param>: ...} for a registered compressor with parameters.
[[nodiscard]] inline compression_value read_compression(const json& j, const std::string& f) {
  const bool obj = j.is_object();
  if (obj) expect_object(j, f, "a compression: a name or {\"kind\": ..., <parameters>}");
  const auto s = obj ? read_string(require(j, f, "kind"), member(f, "kind")) : read_string(j, f);
  if (const auto c = parse_compression(s)) {
    if (obj) check_keys(j, f, {"kind"}, "for compression '" + s + "'");
    return compression_value{*c};
  }
  const auto* e = registry::find_compression(s);
  if (!e) throw error(obj ? member(f, "kind") : f, "unknown compression '" + s + "' (valid: " + all_compression_names() + ")");
  return compression_value{stable_id(e->name), read_params(j, f, e->params, s)};
}

[[nodiscard]] inline ojson write_compression(const compression_value& c) {
  const auto* e = is_extension_id(c.id) ? registry::find_compression(c.id) : nullptr;
  if (!e || c.params == registry::defaults(e->params)) return compression_name(c);
  ojson o;
  o["kind"] = e->name;
  write_params(o, e->params, c.params);
  return o;
}

// An extension slot's value: "kind" or {"kind": ..., <parameters>}.
[[nodiscard]] inline ext_value read_ext(const json& j, const std::string& f, const registry::slot_entry& se) {
  const bool obj = j.is_object();
  const auto s = obj ? read_string(require(j, f, "kind"), member(f, "kind")) : read_string(j, f);
  const auto* k = registry::find_kind(se, s);
  if (!k) {
    std::string valid;
    for (const auto& x : se.kinds) valid += (valid.empty() ? "" : ", ") + x.name;
    throw error(obj ? member(f, "kind") : f, "unknown " + se.name + " '" + s + "' (valid: " + valid + ")");
  }
  return registry::value_of(se, *k, read_params(j, f, k->params, s));
}

[[nodiscard]] inline ojson write_ext(const ext_value& x) {
  const auto* se = registry::find_slot(x.slot);
  const auto* k = se ? registry::find_kind(*se, x.kind) : nullptr;
  if (!k) return std::string("?");
  if (x.params == registry::defaults(k->params)) return k->name;
  ojson o;
  o["kind"] = k->name;
  write_params(o, k->params, x.params);
  return o;
}

[[nodiscard]] inline group_desc read_group(const json& j, const std::string& f) {
  expect_object(j, f, "a group");
  static constexpr std::string_view core_keys[] = {"architecture", "partitioner", "placement", "replication",
                                                   "topology",     "compression", "fusion",    "schedule"};
  group_desc g;
  for (auto it = j.begin(); it != j.end(); ++it) {  // core keys, then the registered extension slots
    const std::string& k = it.key();
    if (std::find(std::begin(core_keys), std::end(core_keys), std::string_view(k)) != std::end(core_keys)) continue;
    if (const auto* se = registry::find_slot(k)) {
      const auto v = read_ext(*it, member(f, k), *se);
      if (v == registry::default_value(*se)) continue;  // a default is stored as absent
      if (!g.ext.set(v)) throw error(member(f, k), "a group holds at most " + std::to_string(max_extension_slots) + " extension slots");
      continue;
    }
    std::string valid;
    for (auto c : core_keys) valid += (valid.empty() ? "" : ", ") + std::string(c);
    for (const auto& se : registry::slots()) valid += ", " + se.name;
    throw error(member(f, k), "unknown key '" + k + "' (valid: " + valid + ")");
  }
  if (const json* v = find(j, "architecture")) g.architecture = read_enum<architecture_kind>(*v, member(f, "architecture"), "architecture");
  if (const json* v = find(j, "partitioner")) g.partitioner = read_partitioner(*v, member(f, "partitioner"));
  if (const json* v = find(j, "placement")) g.placement = read_placement(*v, member(f, "placement"));
  if (const json* v = find(j, "replication")) g.replication = read_enum<replication_kind>(*v, member(f, "replication"), "replication");
  if (const json* v = find(j, "topology")) g.topology = read_topology(*v, member(f, "topology"));
  if (const json* v = find(j, "compression")) g.compression = read_compression(*v, member(f, "compression"));
  if (const json* v = find(j, "fusion")) g.fusion = read_fusion(*v, member(f, "fusion"));
  if (const json* v = find(j, "schedule")) g.schedule = read_enum<schedule_kind>(*v, member(f, "schedule"), "schedule");
  return g;
}

[[nodiscard]] inline strategy_desc read_strategy(const json& j) {
  expect_object(j, "", "a strategy");
  check_keys(j, "", {"name", "groups", "assignments"});
  strategy_desc s;
  if (const json* v = find(j, "name")) s.name = read_string(*v, "name");
  const json& gs = require(j, "", "groups");
  expect_array(gs, "groups");
  for (std::size_t i = 0; i < gs.size(); ++i) s.groups.push_back(read_group(gs[i], element("groups", i)));
  s.validate_groups();
  const auto ngroups = static_cast<std::int64_t>(s.groups.size());
  auto group_index = [&](const json& v, const std::string& f) {
    const auto g = read_int32(v, f);
    if (g < 0 || g >= ngroups)
      throw error(f, "group " + std::to_string(g) + " does not exist (the strategy has " + std::to_string(ngroups) + " groups)");
    return g;
  };
  if (const json* as = find(j, "assignments")) {
    expect_array(*as, "assignments");
    std::unordered_map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < as->size(); ++i) {
      const auto f = element("assignments", i);
      const json& e = (*as)[i];
      expect_object(e, f, "an assignment: {\"tensor\": ..., \"group\": G} or {\"tensor\": ..., \"split_axis\": A, \"shard_groups\": [...]}");
      check_keys(e, f, {"tensor", "group", "split_axis", "shard_groups"});
      assignment a;
      a.tensor = read_string(require(e, f, "tensor"), member(f, "tensor"));
      if (a.tensor.empty()) throw error(member(f, "tensor"), "must not be empty");
      if (auto [it, fresh] = seen.emplace(a.tensor, i); !fresh)
        throw error(member(f, "tensor"), "tensor '" + a.tensor + "' is assigned twice (also at assignments[" + std::to_string(it->second) + "])");
      const json* sg = find(e, "shard_groups");
      const json* gr = find(e, "group");
      const json* ax = find(e, "split_axis");
      if (sg) {
        if (gr) throw error(member(f, "group"), "give either \"group\" or \"split_axis\" + \"shard_groups\", not both");
        expect_array(*sg, member(f, "shard_groups"));
        if (sg->empty()) throw error(member(f, "shard_groups"), "must not be empty (to keep the tensor whole, use \"group\")");
        for (std::size_t k = 0; k < sg->size(); ++k) a.shard_groups.push_back(group_index((*sg)[k], element(member(f, "shard_groups"), k)));
        if (ax) {
          a.split_axis = read_int32(*ax, member(f, "split_axis"));
          if (a.split_axis < 0) throw error(member(f, "split_axis"), "must be >= 0, got " + std::to_string(a.split_axis));
        }
      } else {
        if (ax) throw error(member(f, "split_axis"), "only with \"shard_groups\"");
        a.group = group_index(require(e, f, "group"), member(f, "group"));
      }
      s.assignments.push_back(std::move(a));
    }
  }
  return s;
}

[[nodiscard]] inline ojson write_group(const group_desc& g) {
  ojson o;
  o["architecture"] = std::string(name_of(g.architecture));
  switch (g.partitioner.kind) {
    case partitioner_kind::even:
      o["partitioner"] = {{"kind", "even"}, {"shards", g.partitioner.shards}, {"axis", g.partitioner.axis}};
      break;
    case partitioner_kind::by_bytes: o["partitioner"] = {{"kind", "by_bytes"}, {"max_bytes", g.partitioner.max_bytes}}; break;
    default: o["partitioner"] = std::string(name_of(g.partitioner.kind)); break;
  }
  if (g.placement.kind == placement_kind::pinned)
    o["placement"] = {{"kind", "pinned"}, {"server", g.placement.server}};
  else
    o["placement"] = std::string(name_of(g.placement.kind));
  o["replication"] = std::string(name_of(g.replication));
  if (g.topology.kind == topology_kind::hierarchical)
    o["topology"] = {{"kind", "hierarchical"}, {"intra", std::string(name_of(g.topology.intra))}, {"inter", std::string(name_of(g.topology.inter))}};
  else
    o["topology"] = std::string(name_of(g.topology.kind));
  o["compression"] = write_compression(g.compression);
  o["fusion"] = {{"cap_bytes", g.fusion.cap_bytes}};
  if (g.fusion.first_cap_bytes != g.fusion.cap_bytes) o["fusion"]["first_cap_bytes"] = g.fusion.first_cap_bytes;
  o["schedule"] = std::string(name_of(g.schedule));
  for (const auto& x : g.ext.v)  // extension slots at a non-default value, by slot id
    if (x.slot != 0) {
      const auto* se = registry::find_slot(x.slot);
      o[se ? se->name : "ext_" + std::to_string(x.slot)] = write_ext(x);
    }
  return o;
}

[[nodiscard]] inline ojson write_strategy(const strategy_desc& s) {
  ojson j;
  j["name"] = s.name;
  ojson gs = ojson::array();
  for (const auto& g : s.groups) gs.push_back(write_group(g));
  j["groups"] = std::move(gs);
  ojson as = ojson::array();
  for (const auto& a : s.assignments) {
    ojson o;
    o["tensor"] = a.tensor;
    if (a.split()) {
      o["split_axis"] = a.split_axis;
      o["shard_groups"] = a.shard_groups;
    } else {
      o["group"] = a.group;
    }
    as.push_back(std::move(o));
  }
  j["assignments"] = std::move(as);
  return j;
}

}  // namespace detail::jio

// nlohmann ADL hooks: `nlohmann::json j = s; j.get<strategy_desc>()`, the same for group_desc
// (validated: validate_group).
template <detail::jio::basic_json_type J>
void to_json(J& j, const strategy_desc& s) { j = J(detail::jio::write_strategy(s)); }
template <detail::jio::basic_json_type J>
void from_json(const J& j, strategy_desc& s) { s = detail::jio::read_strategy(detail::jio::as_json(j)); }
template <detail::jio::basic_json_type J>
void to_json(J& j, const group_desc& g) { j = J(detail::jio::write_group(g)); }
template <detail::jio::basic_json_type J>
void from_json(const J& j, group_desc& g) {
  g = detail::jio::read_group(detail::jio::as_json(j), "");
  try {
    validate_group(g, "");
  } catch (const error& e) {  // validate_group writes ".field" for an empty prefix
    std::string f = e.field(), msg = e.what();
    msg.erase(0, f.size() + 4);
    if (!f.empty() && f.front() == '.') f.erase(0, 1);
    throw error(f, msg);
  }
}

namespace io {

// The JSON value of a strategy (keys in the documented order), and back (validated; errors carry the
// field path: a value has no lines).
[[nodiscard]] inline nlohmann::ordered_json to_json(const strategy_desc& s) { return detail::jio::write_strategy(s); }
[[nodiscard]] inline strategy_desc strategy_from_json(const nlohmann::json& j) { return j.get<strategy_desc>(); }

// Text and files; `file` names the source in messages ("strategy.json:14: 'field': ...").
[[nodiscard]] inline strategy_desc parse_strategy(std::string_view text, const std::string& file = "<strategy>") {
  return detail::jio::parse_text(text, file, [](const nlohmann::json& j) { return detail::jio::read_strategy(j); });
}
[[nodiscard]] inline std::string to_json_text(const strategy_desc& s) { return detail::jio::to_text(detail::jio::write_strategy(s)); }
[[nodiscard]] inline strategy_desc load_strategy_file(const std::filesystem::path& path) {
  return parse_strategy(detail::jio::read_file(path), path.string());
}
inline void save_strategy_file(const std::filesystem::path& path, const strategy_desc& s) { detail::jio::write_file(path, to_json_text(s)); }
// Also checks the strategy against a model and a cluster (strategy_desc::validate).
[[nodiscard]] inline strategy_desc parse_strategy(std::string_view text, const model_spec& model, const cluster_spec& cluster,
                                                  const std::string& file = "<strategy>") {
  return detail::jio::parse_text(text, file, [&](const nlohmann::json& j) {
    auto s = detail::jio::read_strategy(j);
    s.validate(model, cluster);
    return s;
  });
}
[[nodiscard]] inline strategy_desc load_strategy_file(const std::filesystem::path& path, const model_spec& model,
                                                      const cluster_spec& cluster) {
  return parse_strategy(detail::jio::read_file(path), model, cluster, path.string());
}

// One group's JSON value, and back (validated).
[[nodiscard]] inline nlohmann::ordered_json to_json(const group_desc& g) { return detail::jio::write_group(g); }
[[nodiscard]] inline group_desc group_from_json(const nlohmann::json& j) { return j.get<group_desc>(); }

}  // namespace io
}  // namespace autosync
