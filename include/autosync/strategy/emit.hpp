// autosync/strategy/emit.hpp — a searched strategy as a C++ header of type aliases.
//
// The reverse of dispatch.hpp: instead of finding types for a descriptor at run time, write
// the types down so the user's build instantiates exactly the searched strategy.
//
//   strategy_desc ──emit_header(s, "my::sync")──> strategy.hpp
//
//   // strategy.hpp (generated)
//   #pragma once
//   #include <autosync/strategy/static_strategy.hpp>
//   namespace my::sync {
//   inline constexpr std::string_view name = "autosync";
//   using group_0 = autosync::strategy<
//       autosync::arch::all_reduce,
//       autosync::part::none, ...
//       autosync::fuse::bucket_cap<26214400ull, 1048576ull>,
//       autosync::sched::fifo>;
//   using group_1 = autosync::strategy<autosync::arch::parameter_server, autosync::part::even<4, 1>, ...>;
//   using groups = autosync::type_list<group_0, group_1>;
//   using strategy_t = autosync::static_strategy<group_0, group_1>;   (strategy/emit_typed.hpp)
//   inline constexpr std::int32_t shard_groups_1[] = {0, 1};
//   inline constexpr std::array<autosync::static_assignment, 2> assignments{{
//       {"fc.weight", 0, 0, {}},
//       {"emb", 0, 0, shard_groups_1},    // split along axis 0: shard 0 -> group 0, shard 1 -> group 1
//   }};
//   }  // namespace my::sync
//
// Every slot is written out in canonical order (no reliance on defaults), numbers become
// template arguments, and compressors are named by registry index (autosync::compression_at<I>,
// with the name in a comment). Registered compressors and extension slots (registry/extensions.hpp)
// are spelled by their entry's cpp_type, and the header includes each entry's `header`.
// autosync::to_descriptor<my::sync::groups>(my::sync::assignments, my::sync::name) gives the
// strategy_desc back, equal to the one emitted; exec::typed_executor<my::sync::strategy_t, B> runs
// it with no runtime dispatch (exec/typed_executor.hpp).
#pragma once

#include <autosync/error.hpp>
#include <autosync/policy/pack.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/emit_typed.hpp>
#include <autosync/strategy/static_strategy.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace autosync {

namespace detail::emit {

// A C++ string literal holding exactly the bytes of `s` (octal escapes are never ambiguous).
[[nodiscard]] inline std::string literal(std::string_view s) {
  std::string r = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      r += '\\';
      r += ch;
    } else if (c >= 0x20 && c < 0x7F && c != '?') {  // '?' escaped: no trigraph surprises
      r += ch;
    } else {
      r += '\\';
      r += static_cast<char>('0' + ((c >> 6) & 7));
      r += static_cast<char>('0' + ((c >> 3) & 7));
      r += static_cast<char>('0' + (c & 7));
    }
  }
  return r + "\"";
}

[[nodiscard]] inline bool is_identifier(std::string_view s) {
  static constexpr std::string_view keywords[] = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char",
      "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr", "constinit",
      "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
      "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or",
      "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires", "return", "short", "signed",
      "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
      "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq"};
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  for (auto k : keywords)
    if (s == k) return false;
  return true;
}

// "a::b::c": each part an identifier.
inline void check_namespace(std::string_view ns) {
  if (ns.empty()) throw error("namespace", "must not be empty (e.g. \"my_trainer::sync\")");
  std::size_t i = 0;
  while (true) {
    const auto sep = ns.find("::", i);
    const auto part = ns.substr(i, sep == std::string_view::npos ? std::string_view::npos : sep - i);
    if (!is_identifier(part))
      throw error("namespace", "'" + std::string(ns) + "' is not a C++ namespace name ('" + std::string(part) +
                                   "' is not an identifier)");
    if (sep == std::string_view::npos) break;
    i = sep + 2;
  }
}

// The group's policies, one per slot, in slot_list order (each slot's slot_traits::cpp_type),
// then the extension slots not at their default.
[[nodiscard]] inline std::vector<std::string> policies(const group_desc& g) {
  std::vector<std::string> r;
  for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) { r.push_back(slot_traits<Slot>::cpp_type(slot_traits<Slot>::field(g))); });
  for (const auto& x : g.ext.v) {  // extension slots (absent: the slot's default, not written)
    if (x.slot == 0) break;
    const auto* se = registry::find_slot(x.slot);
    if (!se || !se->cpp_type) throw error(se ? se->name : "ext", "extension slot has no cpp_type: emit_header cannot name its policy");
    r.push_back(se->cpp_type(x));
  }
  return r;
}

// The headers that declare the registered policies a strategy uses (sorted, once each).
[[nodiscard]] inline std::vector<std::string> extension_headers(const strategy_desc& s) {
  std::vector<std::string> r;
  for (const auto& g : s.groups) {
    for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {  // slots whose values can come from the registry
      if constexpr (requires { slot_traits<Slot>::header(slot_traits<Slot>::field(g)); })
        if (auto h = slot_traits<Slot>::header(slot_traits<Slot>::field(g)); !h.empty()) r.push_back(std::move(h));
    });
    for (const auto& x : g.ext.v)
      if (const auto* se = x.slot ? registry::find_slot(x.slot) : nullptr; se && !se->header.empty()) r.push_back(se->header);
  }
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

}  // namespace detail::emit

// The header text for strategy `s` in namespace `ns` (e.g. "my_trainer::sync"). Throws
// autosync::error naming the field when `ns` is not a namespace name or `s` is not a valid
// strategy (validate_groups, group indices, split axes).
[[nodiscard]] inline std::string emit_header(const strategy_desc& s, std::string_view ns) {
  detail::emit::check_namespace(ns);
  s.validate_groups();
  const auto ngroups = static_cast<std::int32_t>(s.groups.size());
  for (std::size_t i = 0; i < s.assignments.size(); ++i) {
    const auto& a = s.assignments[i];
    const std::string f = "assignments[" + std::to_string(i) + "]";
    auto check_group = [&](std::int32_t gi, const std::string& field) {
      if (gi < 0 || gi >= ngroups)
        throw error(field, "group " + std::to_string(gi) + " does not exist (the strategy has " + std::to_string(ngroups) + " groups)");
    };
    if (a.split()) {
      if (a.split_axis < 0) throw error(f + ".split_axis", "must be >= 0");
      for (std::size_t k = 0; k < a.shard_groups.size(); ++k) check_group(a.shard_groups[k], f + ".shard_groups[" + std::to_string(k) + "]");
    } else {
      check_group(a.group, f + ".group");
    }
  }

  std::string h;
  h += "// Generated by autosync::emit_header from strategy " + detail::emit::literal(s.name) + ". Do not edit.\n";
  h += "// " + std::to_string(s.groups.size()) + " group(s), " + std::to_string(s.assignments.size()) + " assignment(s).\n";
  h += "// autosync::to_descriptor<" + std::string(ns) + "::groups>(" + std::string(ns) + "::assignments, " + std::string(ns) +
       "::name) rebuilds the strategy_desc.\n";
  h += "#pragma once\n\n#include <autosync/strategy/static_strategy.hpp>\n";
  for (const auto& inc : detail::emit::extension_headers(s)) h += "#include <" + inc + ">\n";
  h += "\n#include <array>\n#include <cstdint>\n#include <string_view>\n\n";
  h += "namespace " + std::string(ns) + " {\n\n";
  h += "inline constexpr std::string_view name = " + detail::emit::literal(s.name) + ";\n\n";
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    h += "using group_" + std::to_string(i) + " = autosync::strategy<";  // one policy per line
    const auto ps = detail::emit::policies(s.groups[i]);
    for (std::size_t k = 0; k < ps.size(); ++k) h += (k ? ",\n    " : "\n    ") + ps[k];
    h += ">;\n";
  }
  h += "\nusing groups = autosync::type_list<";
  for (std::size_t i = 0; i < s.groups.size(); ++i) h += (i ? ", group_" : "group_") + std::to_string(i);
  h += ">;\n\n";
  h += detail::emit::typed_section(s.groups.size());  // strategy_t: strategy/emit_typed.hpp
  for (std::size_t i = 0; i < s.assignments.size(); ++i) {
    const auto& a = s.assignments[i];
    if (!a.split()) continue;
    h += "inline constexpr std::int32_t shard_groups_" + std::to_string(i) + "[] = {";
    for (std::size_t k = 0; k < a.shard_groups.size(); ++k) h += (k ? ", " : "") + std::to_string(a.shard_groups[k]);
    h += "};\n";
  }
  h += "\n// {tensor, group, split_axis, shard groups}\n";
  h += "inline constexpr std::array<autosync::static_assignment, " + std::to_string(s.assignments.size()) + "> assignments{{\n";
  for (std::size_t i = 0; i < s.assignments.size(); ++i) {
    const auto& a = s.assignments[i];
    h += "    {" + detail::emit::literal(a.tensor) + ", " + std::to_string(a.group) + ", " + std::to_string(a.split_axis) + ", " +
         (a.split() ? "shard_groups_" + std::to_string(i) : std::string("{}")) + "},\n";
  }
  h += "}};\n\n}  // namespace " + std::string(ns) + "\n";
  return h;
}

}  // namespace autosync
