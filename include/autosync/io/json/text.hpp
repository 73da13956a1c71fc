// autosync/io/json/text.hpp — JSON text with locations: the error type that names a file, line
// and field, the tolerant tokenizer that maps a byte offset or a field path back to a line
// (detail::json_text), the SAX handler that keeps the position of the first syntax error, and
// parse_text, which runs a reader over a text and turns its errors into located ones.
//
//   text ──nlohmann SAX──> json ──read()──> spec
//     │        │ byte offset          │ field path
//     └────────┴── json_text: offset -> line:col, path -> line ──> file_error
//
// Part of io/json.hpp (the formats: io/json/model.hpp, cluster.hpp, strategy.hpp).
#pragma once

#include <autosync/error.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace autosync {

// An error located in a file. what(): "<file>:<line>: '<field>': <message>" (syntax errors
// add the column: "<file>:<line>:<column>: ..."). field() is the JSON path, as for any error.
class file_error : public error {
 public:
  file_error(std::string file, int line, int column, const std::string& field, const std::string& message, bool show_column = false)
      : error(field, message), file_(std::move(file)), line_(line), column_(column) {
    text_ = file_ + ":" + std::to_string(line_) + (show_column ? ":" + std::to_string(column_) : std::string()) + ": " +
            (field.empty() ? std::string() : "'" + field + "': ") + message;
  }
  [[nodiscard]] const char* what() const noexcept override { return text_.c_str(); }
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] int line() const noexcept { return line_; }      // 1-based
  [[nodiscard]] int column() const noexcept { return column_; }  // 1-based, in bytes

 private:
  std::string file_;
  int line_ = 1, column_ = 1;
  std::string text_;
};

namespace detail {

// ---------------------------------------------------------------------------------------------
// json_text: a tolerant tokenizer over the raw text. It never throws and never recurses, so it
// is safe on any input (it also serves the fuzzers' garbage).
// ---------------------------------------------------------------------------------------------
struct path_segment {
  std::string key;          // object member (when index < 0)
  std::int64_t index = -1;  // array element
  friend bool operator==(const path_segment&, const path_segment&) = default;
};

// "tensors[3].shape[1]" -> {tensors}{3}{shape}{1}. Keys holding '.', '[' or ']' cannot be
// expressed; such paths simply resolve to their closest expressible ancestor.
[[nodiscard]] inline std::vector<path_segment> split_path(std::string_view p) {
  std::vector<path_segment> out;
  std::size_t i = 0;
  while (i < p.size()) {
    if (p[i] == '.') { ++i; continue; }
    if (p[i] == '[') {
      const auto close = p.find(']', i);
      if (close == std::string_view::npos) break;
      std::int64_t v = 0;
      const auto* b = p.data() + i + 1;
      const auto* e = p.data() + close;
      const auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc{} || r.ptr != e || v < 0) break;
      out.push_back({{}, v});
      i = close + 1;
      continue;
    }
    const auto end = p.find_first_of(".[", i);
    const auto stop = end == std::string_view::npos ? p.size() : end;
    out.push_back({std::string(p.substr(i, stop - i)), -1});
    i = stop;
  }
  return out;
}

[[nodiscard]] inline std::string join_path(const std::vector<path_segment>& segs) {
  std::string s;
  for (const auto& g : segs) {
    if (g.index >= 0) {
      s += '[';  // appended piece by piece: "[" + to_string(...) trips GCC 12's -Wrestrict (a false positive)
      s += std::to_string(g.index);
      s += ']';
    } else {
      if (!s.empty()) s += '.';
      s += g.key;
    }
  }
  return s;
}

class json_text {
 public:
  static constexpr int max_depth = 64;

  explicit json_text(std::string_view text) : t_(text) {}

  struct location {
    int line = 1, column = 1;
  };
  [[nodiscard]] location at(std::size_t offset) const noexcept {
    offset = std::min(offset, t_.size());
    location l;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < offset; ++i)
      if (t_[i] == '\n') {
        ++l.line;
        line_start = i + 1;
      }
    l.column = static_cast<int>(offset - line_start) + 1;
    return l;
  }

  // The offset where the value at `target` starts; the closest existing ancestor when the file
  // has no such value (a missing field); the first value of the document for the empty path.
  [[nodiscard]] std::size_t find(const std::vector<path_segment>& target) const {
    std::size_t best_pos = first_value();
    std::size_t best_depth = 0;
    walk(t_.size(), [&](const std::vector<frame>& st, std::size_t pos) {
      if (st.size() > target.size() || st.size() <= best_depth) return;
      for (std::size_t i = 0; i < st.size(); ++i)
        if (!(st[i].segment() == target[i])) return;
      best_depth = st.size();
      best_pos = pos;
    });
    return best_pos;
  }

  // The path of the value being read at `offset` (for syntax errors).
  [[nodiscard]] std::string path_at(std::size_t offset) const {
    std::vector<path_segment> p;
    walk(std::min(offset, t_.size()), [](const std::vector<frame>&, std::size_t) {}, &p);
    return join_path(p);
  }

  // A structural problem the DOM hides: a key given twice in one object (nlohmann keeps the
  // last silently) or nesting deeper than max_depth.
  struct problem {
    std::size_t offset = 0;
    std::string path;
    std::string message;
  };
  [[nodiscard]] std::optional<problem> check_structure() const {
    std::optional<problem> found;
    walk(t_.size(), [](const std::vector<frame>&, std::size_t) {}, nullptr, &found);
    return found;
  }

 private:
  struct frame {
    bool object = false;
    bool has_key = false;     // object: a key was read, its value is (being) read
    std::string key;
    std::int64_t index = 0;   // array: the element being read
    std::set<std::string> keys;
    [[nodiscard]] path_segment segment() const { return object ? path_segment{key, -1} : path_segment{{}, index}; }
  };

  [[nodiscard]] static bool is_ws(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

  [[nodiscard]] std::size_t first_value() const noexcept {
    std::size_t i = 0;
    while (i < t_.size() && is_ws(t_[i])) ++i;
    return i;
  }

  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  [[nodiscard]] std::uint32_t hex4(std::size_t i, std::size_t end, bool& ok) const noexcept {
    std::uint32_t v = 0;
    if (i + 4 > end) { ok = false; return 0; }
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = t_[i + k];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else { ok = false; return 0; }
    }
    return v;
  }
  // Reads the string starting at t_[i] == '"'; returns the offset after it (tolerant: stops at `end`).
  std::size_t read_string(std::size_t i, std::size_t end, std::string* out) const {
    ++i;
    while (i < end) {
      const char c = t_[i];
      if (c == '"') return i + 1;
      if (c != '\\') {
        if (out) *out += c;
        ++i;
        continue;
      }
      if (i + 1 >= end) return end;
      const char e = t_[i + 1];
      i += 2;
      if (!out) {
        continue;
      }
      switch (e) {
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          bool ok = true;
          std::uint32_t cp = hex4(i, end, ok);
          if (!ok) break;
          i += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= end && t_[i] == '\\' && t_[i + 1] == 'u') {
            const std::uint32_t lo = hex4(i + 2, end, ok);
            if (ok && lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              i += 6;
            }
          }
          put_utf8(*out, cp);
          break;
        }
        default: *out += e; break;  // \" \\ \/ (and anything else, tolerated)
      }
    }
    return end;
  }

  // One pass over t_[0, end). `on_value(stack, offset)` is called where each value starts, with
  // the stack naming its path. `path_out` receives the path being read at `end`; `problem_out`
  // the first structural problem (the walk stops there).
  template <class OnValue>
  void walk(std::size_t end, OnValue&& on_value, std::vector<path_segment>* path_out = nullptr,
            std::optional<problem>* problem_out = nullptr) const {
    std::vector<frame> st;
    auto path_of = [&] {
      std::vector<path_segment> p;
      for (const auto& f : st)
        if (!f.object || f.has_key) p.push_back(f.segment());
      return p;
    };
    bool want_key = false;  // inside an object, before a key
    std::size_t i = 0;
    while (i < end) {
      const char c = t_[i];
      if (is_ws(c) || c == ':') { ++i; continue; }
      if (c == ',') {
        if (!st.empty()) {
          if (st.back().object) { st.back().has_key = false; want_key = true; }
          else ++st.back().index;
        }
        ++i;
        continue;
      }
      if (c == '}' || c == ']') {
        if (!st.empty()) st.pop_back();
        want_key = false;
        ++i;
        continue;
      }
      if (c == '"' && want_key && !st.empty() && st.back().object) {
        std::string k;
        const std::size_t start = i;
        i = read_string(i, end, &k);
        auto& f = st.back();
        if (problem_out && !f.keys.insert(k).second) {
          auto p = path_of();
          p.push_back({k, -1});
          *problem_out = problem{start, join_path(p), "key '" + k + "' appears twice in this object"};
          return;
        }
        f.key = std::move(k);
        f.has_key = true;
        want_key = false;
        continue;
      }
      // a value starts here
      on_value(st, i);
      if (c == '{' || c == '[') {
        if (problem_out && st.size() >= static_cast<std::size_t>(max_depth)) {
          *problem_out = problem{i, join_path(path_of()), "nesting deeper than " + std::to_string(max_depth) + " levels"};
          return;
        }
        frame f;
        f.object = c == '{';
        st.push_back(std::move(f));
        want_key = c == '{';
        ++i;
        continue;
      }
      if (c == '"') {
        i = read_string(i, end, nullptr);
        continue;
      }
      while (i < end && !is_ws(t_[i]) && t_[i] != ',' && t_[i] != ':' && t_[i] != '}' && t_[i] != ']' && t_[i] != '"' &&
             t_[i] != '{' && t_[i] != '[')
        ++i;
    }
    if (path_out) *path_out = path_of();
  }

  std::string_view t_;
};

// ---------------------------------------------------------------------------------------------
// SAX handler that builds the DOM and keeps the byte position of the first error.
// ---------------------------------------------------------------------------------------------
struct dom_builder {
  using json = nlohmann::json;
  json root;
  std::vector<json*> stack;
  json* member = nullptr;
  std::size_t error_position = 0;
  std::string error_message;

  template <class V>
  json* put(V&& v) {
    if (stack.empty()) {
      root = json(std::forward<V>(v));
      return &root;
    }
    json* top = stack.back();
    if (top->is_array()) {
      top->emplace_back(std::forward<V>(v));
      return &top->back();
    }
    *member = json(std::forward<V>(v));
    return member;
  }
  bool null() { put(nullptr); return true; }
  bool boolean(bool b) { put(b); return true; }
  bool number_integer(json::number_integer_t v) { put(v); return true; }
  bool number_unsigned(json::number_unsigned_t v) { put(v); return true; }
  bool number_float(json::number_float_t v, const json::string_t&) { put(v); return true; }
  bool string(json::string_t& s) { put(std::move(s)); return true; }
  bool binary(json::binary_t& b) { put(json::binary(b)); return true; }
  bool start_object(std::size_t) { stack.push_back(put(json::value_t::object)); return true; }
  bool key(json::string_t& k) { member = &(*stack.back())[k]; return true; }
  bool end_object() { stack.pop_back(); return true; }
  bool start_array(std::size_t) { stack.push_back(put(json::value_t::array)); return true; }
  bool end_array() { stack.pop_back(); return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& ex) {
    error_position = position;
    std::string m = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." -> "syntax error ..."
    if (!m.empty() && m.front() == '[') {
      const auto close = m.find("] ");
      if (close != std::string::npos) m.erase(0, close + 2);
    }
    if (m.rfind("parse error", 0) == 0) {
      const auto colon = m.find(": ");
      if (colon != std::string::npos) m.erase(0, colon + 2);
    }
    error_message = std::move(m);
    return false;
  }
};

namespace jio {

using json = nlohmann::json;

// --- text -> spec, with locations --------------------------------------------------------------
template <class Read>
auto parse_text(std::string_view text, const std::string& file, Read&& read) {
  const json_text jt(text);
  dom_builder dom;
  const bool ok = json::sax_parse(text.begin(), text.end(), &dom, json::input_format_t::json, true, false);
  if (!ok) {
    // nlohmann reports the count of bytes read; the offending byte is the last one read.
    const std::size_t at = dom.error_position == 0 ? 0 : dom.error_position - 1;
    const auto loc = jt.at(at);
    throw file_error(file, loc.line, loc.column, jt.path_at(at), dom.error_message, true);
  }
  if (auto p = jt.check_structure()) {
    const auto loc = jt.at(p->offset);
    throw file_error(file, loc.line, loc.column, p->path, p->message);
  }
  try {
    return read(dom.root);
  } catch (const file_error&) {
    throw;
  } catch (const error& e) {
    const auto& fld = e.field();
    const auto loc = jt.at(jt.find(split_path(fld)));
    throw file_error(file, loc.line, loc.column, fld, e.message());
  }
}

[[nodiscard]] inline std::string read_file(const std::filesystem::path& path) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec)) throw error("'" + path.string() + "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot open '" + path.string() + "' for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw error("cannot read '" + path.string() + "'");
  return std::move(ss).str();
}
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw error("cannot open '" + path.string() + "' for writing");
  out << text;
  out.flush();
  if (!out) throw error("cannot write '" + path.string() + "'");
}

}  // namespace jio
}  // namespace detail
}  // namespace autosync
