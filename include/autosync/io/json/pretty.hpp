// autosync/io/json/pretty.hpp — the text of a written spec: two-space indentation, short
// containers on one line (a tensor per line, shapes inline), a final newline.
//
// Part of io/json.hpp.
#pragma once

#include <autosync/error.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace autosync::detail::jio {

using ojson = nlohmann::ordered_json;

// Pretty text: two-space indentation, but a container whose one-line form fits in `width`
// columns stays on one line (a tensor per line, shapes inline).
inline void pretty(const ojson& j, std::string& out, int indent, std::size_t width = 110) {
  auto one_line = [](const ojson& v, auto&& self) -> std::string {
    if (v.is_object()) {
      std::string s = "{";
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) s += ", ";
        first = false;
        s += ojson(it.key()).dump() + ": " + self(it.value(), self);
      }
      return s + "}";
    }
    if (v.is_array()) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + self(v[i], self);
      return s + "]";
    }
    return v.dump();
  };
  const std::string flat = one_line(j, one_line);
  if (!j.is_structured() || j.empty() || flat.size() + static_cast<std::size_t>(indent) <= width) {
    out += flat;
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  out += j.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += ",\n";
    first = false;
    out += pad;
    if (j.is_object()) out += ojson(it.key()).dump() + ": ";
    pretty(it.value(), out, indent + 2, width);
  }
  out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + (j.is_object() ? "}" : "]");
}

[[nodiscard]] inline std::string to_text(const ojson& j) {
  std::string s;
  try {
    pretty(j, s, 0);
  } catch (const nlohmann::json::type_error& e) {  // 316: a string is not valid UTF-8
    throw error(std::string("cannot write JSON: ") + e.what());
  }
  s += '\n';
  return s;
}

}  // namespace autosync::detail::jio
