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
//                              {"tensor": "y", "split_axis": 0, "shard_groups": [0, 1]}],
//              "made_for": {"cluster": "local-4", "fingerprint": "fnv1a64:...",            <- optional
//                           "world_size": 4, "ranks_per_node": 4}}   (strategy/made_for.hpp)
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
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace autosync {
namespace detail::jio {

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

// The spelling adapters a core slot's traits read and write through (policy/slots.hpp):
// `slot_reader` over one JSON value at field path f, `slot_writer` into one ordered_json value.
class slot_reader {
 public:
  slot_reader(const json& j, std::string f) : j_(j), f_(std::move(f)) {}
  [[nodiscard]] const std::string& field() const noexcept { return f_; }
  [[nodiscard]] bool bare() const noexcept { return j_.is_string(); }  // a name, not an object
  [[nodiscard]] bool has(std::string_view key) const { return j_.is_object() && find(j_, key) != nullptr; }
  void expect_object(std::string_view what) const { jio::expect_object(j_, f_, what); }
  void keys(std::initializer_list<std::string_view> allowed, std::string_view context = {}) const { check_keys(j_, f_, allowed, context); }
  [[nodiscard]] std::string str() const { return read_string(j_, f_); }
  // The bare name, or the object's "kind".
  [[nodiscard]] std::string kind_string() const { return j_.is_object() ? read_string(require(j_, f_, "kind"), member(f_, "kind")) : read_string(j_, f_); }
  template <class E>
  [[nodiscard]] E enum_name(std::string_view what) const { return read_enum<E>(j_, f_, what); }
  template <class E>
  [[nodiscard]] E kind_enum(std::string_view what) const { return read_enum<E>(require(j_, f_, "kind"), member(f_, "kind"), what); }
  template <class E>
  [[nodiscard]] E enum_at(std::string_view key, std::string_view what) const { return read_enum<E>(require(j_, f_, key), member(f_, key), what); }
  [[nodiscard]] std::int32_t i32(std::string_view key) const { return read_int32(require(j_, f_, key), member(f_, key)); }
  [[nodiscard]] std::uint64_t u64(std::string_view key) const { return read_uint64(require(j_, f_, key), member(f_, key)); }
  [[nodiscard]] param_list params(const std::vector<registry::param_spec>& specs, const std::string& kind) const { return read_params(j_, f_, specs, kind); }
  [[noreturn]] void fail(const std::string& why) const { throw error(f_, why); }
  [[noreturn]] void fail_kind(const std::string& why) const { throw error(j_.is_object() ? member(f_, "kind") : f_, why); }

 private:
  const json& j_;
  std::string f_;
};

class slot_writer {
 public:
  explicit slot_writer(ojson& o) : o_(o) {}
  void name(std::string_view s) { o_ = std::string(s); }
  void kind(std::string_view k) {
    o_ = ojson::object();
    o_["kind"] = std::string(k);
  }
  void object() { o_ = ojson::object(); }
  void set(std::string_view key, std::int64_t v) { o_[std::string(key)] = v; }
  void set(std::string_view key, std::uint64_t v) { o_[std::string(key)] = v; }
  void set(std::string_view key, double v) { o_[std::string(key)] = v; }
  void set(std::string_view key, std::string_view v) { o_[std::string(key)] = std::string(v); }
  void params(const std::vector<registry::param_spec>& specs, const param_list& p) { write_params(o_, specs, p); }

 private:
  ojson& o_;
};

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
  group_desc g;
  for (auto it = j.begin(); it != j.end(); ++it) {  // core keys, then the registered extension slots
    const std::string& k = it.key();
    if (std::find(core_slot_names.begin(), core_slot_names.end(), std::string_view(k)) != core_slot_names.end()) continue;
    if (const auto* se = registry::find_slot(k)) {
      const auto v = read_ext(*it, member(f, k), *se);
      if (v == registry::default_value(*se)) continue;  // a default is stored as absent
      if (!g.ext.set(v)) throw error(member(f, k), "a group holds at most " + std::to_string(max_extension_slots) + " extension slots");
      continue;
    }
    std::string valid;
    for (auto c : core_slot_names) valid += (valid.empty() ? "" : ", ") + std::string(c);
    for (const auto& se : registry::slots()) valid += ", " + se.name;
    throw error(member(f, k), "unknown key '" + k + "' (valid: " + valid + ")");
  }
  for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {
    if (const json* v = find(j, Slot::name)) {
      slot_reader r(*v, member(f, Slot::name));
      slot_traits<Slot>::field(g) = slot_traits<Slot>::read(r);
    }
  });
  return g;
}

[[nodiscard]] inline made_for_info read_made_for(const json& j) {
  const std::string f = "made_for";
  expect_object(j, f, "{\"cluster\": NAME, \"fingerprint\": F, \"world_size\": P, \"ranks_per_node\": G}");
  check_keys(j, f, {"cluster", "fingerprint", "world_size", "ranks_per_node"});
  made_for_info m;
  m.cluster = read_string(require(j, f, "cluster"), member(f, "cluster"));
  m.fingerprint = read_string(require(j, f, "fingerprint"), member(f, "fingerprint"));
  m.world_size = read_int32(require(j, f, "world_size"), member(f, "world_size"));
  m.ranks_per_node = read_int32(require(j, f, "ranks_per_node"), member(f, "ranks_per_node"));
  if (m.world_size < 1) throw error(member(f, "world_size"), "must be >= 1, got " + std::to_string(m.world_size));
  if (m.ranks_per_node < 1 || m.world_size % m.ranks_per_node != 0)
    throw error(member(f, "ranks_per_node"), std::to_string(m.ranks_per_node) + " does not divide world_size " + std::to_string(m.world_size));
  {  // what cluster_fingerprint writes: "fnv1a64:" and 16 hex digits
    const std::string_view fp = m.fingerprint, head = "fnv1a64:";
    const bool hex = fp.size() == head.size() + 16 && fp.substr(0, head.size()) == head &&
                     fp.substr(head.size()).find_first_not_of("0123456789abcdef") == std::string_view::npos;
    if (!hex) throw error(member(f, "fingerprint"), "must be \"fnv1a64:\" and 16 hex digits (as written by the search), got '" + m.fingerprint + "'");
  }
  return m;
}

[[nodiscard]] inline strategy_desc read_strategy(const json& j) {
  expect_object(j, "", "a strategy");
  check_keys(j, "", {"name", "groups", "assignments", "made_for"});
  strategy_desc s;
  if (const json* v = find(j, "name")) s.name = read_string(*v, "name");
  if (const json* v = find(j, "made_for")) s.made_for = read_made_for(*v);
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
  for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {
    slot_writer w(o[std::string(Slot::name)]);
    slot_traits<Slot>::write(w, slot_traits<Slot>::field(g));
  });
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
  if (s.made_for)
    j["made_for"] = {{"cluster", s.made_for->cluster}, {"fingerprint", s.made_for->fingerprint},
                     {"world_size", s.made_for->world_size}, {"ranks_per_node", s.made_for->ranks_per_node}};
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
    std::string f = e.field();
    if (!f.empty() && f.front() == '.') f.erase(0, 1);
    throw error(f, e.message());
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
