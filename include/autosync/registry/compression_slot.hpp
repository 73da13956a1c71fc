// autosync/registry/compression_slot.hpp — the traits of the core slot `compression`.
//
// Its values come from two places: the built-in compressors (comp::all, ids 0, 1, 2, ...) and
// those registered in the compressor registry (registry/extensions.hpp, ids stable_id(name)),
// so its traits live here rather than in policy/compression.hpp, which the registry includes.
//
// JSON: a name ("fp16", or a registered compressor at its default parameters), or
// {"kind": <registered compressor>, <parameter>: <number>, ...}. The policy emit_header writes is
// compression_at<id> for a built-in, the entry's cpp_type for a registered compressor.
#pragma once

#include <autosync/error.hpp>
#include <autosync/policy/compression.hpp>
#include <autosync/policy/slots.hpp>
#include <autosync/registry/extensions.hpp>

#include <string>

namespace autosync {

template <>
struct slot_traits<slot::compression> {
  using value_type = compression_value;
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.compression; }
  template <class W>
  static void write(W& w, const compression_value& c) {
    const auto* e = is_extension_id(c.id) ? registry::find_compression(c.id) : nullptr;
    if (!e || c.params == registry::defaults(e->params)) return w.name(compression_name(c));
    w.kind(e->name);
    w.params(e->params, c.params);
  }
  template <class R>
  static compression_value read(R& r) {
    const bool obj = !r.bare();
    if (obj) r.expect_object("a compression: a name or {\"kind\": ..., <parameters>}");
    const auto s = r.kind_string();
    if (const auto c = parse_compression(s)) {
      if (obj) r.keys({"kind"}, "for compression '" + s + "'");
      return compression_value{*c};
    }
    const auto* e = registry::find_compression(s);
    if (!e) r.fail_kind("unknown compression '" + s + "' (valid: " + all_compression_names() + ")");
    return compression_value{stable_id(e->name), r.params(e->params, s)};
  }
  // A registered compressor's parameters are fed only for it, so the built-ins' bytes are as
  // they always were.
  template <class H>
  static constexpr void hash(H& h, const compression_value& c) noexcept {
    h.u64(c.id);
    if (is_extension_id(c.id))
      for (double p : c.params) h.f64(p);
  }
  [[nodiscard]] static std::string cpp_type(const compression_value& c) {
    std::string cname = compression_name(c);
    for (auto p = cname.find("*/"); p != std::string::npos; p = cname.find("*/")) cname.replace(p, 2, "*_/");
    if (!is_extension_id(c.id)) return "autosync::compression_at<" + std::to_string(c.id) + "> /* " + cname + " */";
    const auto* e = registry::find_compression(c.id);
    if (!e || !e->cpp_type) throw error("compression", "registered compressor '" + cname + "' has no cpp_type: emit_header cannot name its policy");
    return e->cpp_type(c.params);
  }
  // The header that declares a registered compressor's policy ("" for the built-ins).
  [[nodiscard]] static std::string header(const compression_value& c) {
    const auto* e = is_extension_id(c.id) ? registry::find_compression(c.id) : nullptr;
    return e ? e->header : std::string();
  }
  static void validate(const compression_value& c, const std::string& f) {
    if (!is_extension_id(c.id)) {
      if (!find_compression(c.id))
        throw error(f, "unknown compressor id " + std::to_string(c.id) + " (valid: " + all_compression_names() + ")");
      if (!(c.params == param_list{})) throw error(f, "a built-in compressor has no parameters");
      return;
    }
    const auto* e = registry::find_compression(c.id);
    if (!e) throw error(f, "unknown compressor id " + std::to_string(c.id) + " (valid: " + all_compression_names() + ")");
    if (auto why = registry::param_problem(e->params, c.params); !why.empty())
      throw error(f + "." + why.substr(0, why.find(':')), why.substr(why.find(':') + 2));
  }
  static constexpr int search_order = 2;
  // The built-in compressors are a closed set of policies (strategy/dispatch.hpp dispatches on
  // the id); a registered compressor runs through its registry entry instead.
  using closed_set = comp::all;
  [[nodiscard]] static constexpr compression_id dispatch_key(const compression_value& c) noexcept { return c.id; }
};

}  // namespace autosync
