// autosync/io/json.hpp — models, clusters and strategies as JSON files, with precise errors.
//
// Formats (every field not marked "required" may be omitted and takes the C++ default):
//
//   model:    {"name": "resnet50", "batch_per_device": 32, "forward_flops": 1.2e10, "source": "...",
//              "tensors": [                                                          <- required
//                {"name": "conv1.weight", "shape": [64, 3, 7, 7],                    <- required
//                 "dtype": "f32", "sparse": false, "sparse_density": 1.0,
//                 "backward_flops": 1.2e9, "ready_order": 3, "ready_time": 0.0042}, ...],
//              "precision": "pytorch-fp32" | "fp32" | "tf32" | "bf16" | "fp16",
//              "layers": [{"name": "conv1", "kind": "conv", "tensor": 0, "m": 401408, "n": 64,
//                          "k": 147, "count": 1, "elements": 4816896, "outputs": 0, "bias": false,
//                          "causal": false, "input_grad": false, "channels_last": false}, ...],
//              "measured_forward": 0.0064, "measured_backward": 0.0129, "measured_on": "H100"}
//              (model.hpp: layer kinds and fields; a profile = every tensor's ready_time + the
//              measured times, written by examples/export_pytorch_model.py --profile)
//
//   cluster:  {"name": "...", "device": "V100", "source": "...",
//              "nodes": [                                                            <- required
//                {"name": "n", "count": 4, "devices": 8,
//                 "intra": {"bandwidth": 1.3e11, "latency": 5e-6},
//                 "nic": {"bandwidth": "25Gb/s", "latency": "20us"},
//                 "nics": 1, "server_only": false, "device_flops": 1.2e14, "reduce_bandwidth": 4e11,
//                 "compute": {"fp32": 6.7e13, "tf32": 4.945e14, "bf16": 9.895e14, "fp16": 9.895e14,
//                             "matmul_efficiency": 0.8, "memory_bandwidth": "3350GB/s",
//                             "memory_efficiency": 0.9, "multiprocessors": 132, "kernel_floor": "4us"}}]}
//              ("compute": the device's roofline, cluster.hpp device_compute; omitted: FLOPs alone)
//              "count": N replicates the entry N times, names suffixed -0 .. -(N-1).
//              Bandwidths: bytes/s as a number, or a string with a unit: B/s KB/s MB/s GB/s TB/s,
//              KiB/s MiB/s GiB/s TiB/s (bytes), b/s Kb/s Mb/s Gb/s Tb/s (bits), also written
//              Bps/GBps (bytes) and bps/Gbps (bits). Latencies: seconds, or "2ms", "5us", "100ns", "1s".
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
//                 "compression": "none" | "fp16" | "bf16" (any name of comp::all),
//                 "fusion":      {"cap_bytes": 26214400, "first_cap_bytes": 1048576},
//                 "schedule":    "fifo" | "priority"}],
//              "assignments": [{"tensor": "x", "group": 0},
//                              {"tensor": "y", "split_axis": 0, "shard_groups": [0, 1]}]}
//
// API (namespace autosync::io):
//   load_model_file(path), load_cluster_file(path), load_strategy_file(path [, model, cluster])
//   save_model_file(path, m), save_cluster_file(path, c), save_strategy_file(path, s)
//   parse_model(text, file), parse_cluster(...), parse_strategy(text [, model, cluster], file)
//   to_json_text(x) (the file text), to_json(x) (an ordered_json), model_from_json(j), ...
// plus nlohmann ADL hooks in namespace autosync: `nlohmann::json j = m; j.get<strategy_desc>()`.
//
// Writing emits the compact forms (a bare string where a policy has no number) and omits
// fields that hold their default; reading accepts both forms. from_json(to_json(x)) == x for
// every valid x.
//
// Errors. Every problem is an autosync::error whose message reads like a compiler's:
//
//   model.json:14: 'tensors[3].shape[1]': must be positive, got -2
//   cluster.json:3:18: 'nodes[0]': syntax error while parsing object - unexpected ']'; ...
//
// Syntax errors come from nlohmann's parser (a byte offset, turned into line:column here).
// Semantic errors (a wrong type, an unknown name or key, a number out of range, a duplicate
// key, and whatever model/cluster/strategy validate() find) carry a field path; a small
// tokenizer over the raw text (detail::json_text) maps that path back to the line of the
// value, falling back to the closest enclosing value that exists in the file:
//
//   text ──nlohmann SAX──> json ──read_*()──> spec ──validate()──> spec
//     │        │ byte offset            │ field path          │ field path
//     └────────┴──── json_text: offset -> line:col, path -> line ──> file_error
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace autosync {

// An error located in a file. what(): "<file>:<line>: '<field>': <message>" (syntax errors
// add the column: "<file>:<line>:<column>: ..."). field() is the JSON path, as for any error.
class file_error : public error {
 public:
  file_error(std::string file, int line, int column, const std::string& field, std::string message, bool show_column = false)
      : error(field, message), file_(std::move(file)), line_(line), column_(column), message_(std::move(message)) {
    text_ = file_ + ":" + std::to_string(line_) + (show_column ? ":" + std::to_string(column_) : std::string()) + ": " +
            (field.empty() ? std::string() : "'" + field + "': ") + message_;
  }
  [[nodiscard]] const char* what() const noexcept override { return text_.c_str(); }
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] int line() const noexcept { return line_; }      // 1-based
  [[nodiscard]] int column() const noexcept { return column_; }  // 1-based, in bytes
  [[nodiscard]] const std::string& message() const noexcept { return message_; }  // without location

 private:
  std::string file_;
  int line_ = 1, column_ = 1;
  std::string message_, text_;
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
      s += "[" + std::to_string(g.index) + "]";
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

// ---------------------------------------------------------------------------------------------
// Readers: json -> specs. Each throws autosync::error(field path, message).
// ---------------------------------------------------------------------------------------------
namespace jio {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

[[nodiscard]] inline std::string member(const std::string& f, std::string_view key) {
  return f.empty() ? std::string(key) : f + "." + std::string(key);
}
[[nodiscard]] inline std::string element(const std::string& f, std::size_t i) { return f + "[" + std::to_string(i) + "]"; }

// Runs f; an autosync::error from it gets `prefix.` in front of its field (a spec read or
// validated inside a larger document: a trial record's cluster, a manifest's cases).
template <class F>
auto nested(const std::string& prefix, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const file_error&) {
    throw;
  } catch (const error& e) {
    const std::string& fld = e.field();
    std::string msg = e.what();
    if (!fld.empty() && msg.size() >= fld.size() + 4) msg.erase(0, fld.size() + 4);  // "'<field>': "
    throw error(fld.empty() ? prefix : (fld.front() == '[' || fld.front() == '.' ? prefix + fld : prefix + "." + fld), msg);
  }
}

[[nodiscard]] inline std::string list(std::initializer_list<std::string_view> names) {
  std::string r;
  for (auto n : names) {
    if (!r.empty()) r += ", ";
    r += n;
  }
  return r;
}

// How a value is shown in a message: numbers and short strings as written, others by type.
[[nodiscard]] inline std::string shown(const json& j) {
  if (j.is_number() || j.is_boolean() || j.is_null()) return j.dump();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    // cutting may split a UTF-8 sequence: show the broken tail as U+FFFD instead of throwing
    return json(s.size() <= 40 ? s : s.substr(0, 40) + "...").dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return std::string("an ") + j.type_name();
}
[[nodiscard]] inline std::string a_type(const json& j) {
  const std::string_view t = j.type_name();
  return (t == "array" || t == "object") ? "an " + std::string(t) : "a " + std::string(t);
}

inline void expect_object(const json& j, const std::string& f, std::string_view what) {
  if (!j.is_object()) throw error(f, "must be " + std::string(what) + " (an object), got " + shown(j));
}
inline void expect_array(const json& j, const std::string& f) {
  if (!j.is_array()) throw error(f, "must be an array, got " + shown(j));
}
inline void check_keys(const json& j, const std::string& f, std::initializer_list<std::string_view> allowed,
                       std::string_view context = {}) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (std::find(allowed.begin(), allowed.end(), std::string_view(k)) == allowed.end())
      throw error(member(f, k), "unknown key '" + k + "'" + (context.empty() ? "" : " " + std::string(context)) +
                                    " (valid: " + list(allowed) + ")");
  }
}
[[nodiscard]] inline const json* find(const json& obj, std::string_view key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
[[nodiscard]] inline const json& require(const json& obj, const std::string& f, std::string_view key) {
  const json* v = find(obj, key);
  if (!v) throw error(member(f, key), "required field is missing");
  return *v;
}

[[nodiscard]] inline std::string read_string(const json& j, const std::string& f) {
  if (!j.is_string()) throw error(f, "must be a string, got " + shown(j));
  return j.get<std::string>();
}
[[nodiscard]] inline bool read_bool(const json& j, const std::string& f) {
  if (!j.is_boolean()) throw error(f, "must be true or false, got " + shown(j));
  return j.get<bool>();
}

// An integer in [lo, hi], range-checked before any cast. Integral floats (4.096e6) are accepted.
[[nodiscard]] inline std::int64_t read_int(const json& j, const std::string& f, std::int64_t lo, std::int64_t hi) {
  auto range = [&](const std::string& got) {
    return error(f, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + got);
  };
  if (j.is_number_unsigned()) {
    const auto v = j.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(hi) || (lo > 0 && v < static_cast<std::uint64_t>(lo))) throw range(std::to_string(v));
    return static_cast<std::int64_t>(v);
  }
  if (j.is_number_integer()) {
    const auto v = j.get<std::int64_t>();
    if (v < lo || v > hi) throw range(std::to_string(v));
    return v;
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) throw error(f, "must be an integer, got " + shown(j));
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) throw range(shown(j));
    const auto v = static_cast<std::int64_t>(d);
    if (v < lo || v > hi) throw range(shown(j));
    return v;
  }
  throw error(f, "must be an integer, got " + shown(j));
}
[[nodiscard]] inline std::uint64_t read_uint64(const json& j, const std::string& f) {
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer()) {
    const auto v = j.get<std::int64_t>();
    if (v < 0) throw error(f, "must not be negative, got " + std::to_string(v));
    return static_cast<std::uint64_t>(v);
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) throw error(f, "must be an integer, got " + shown(j));
    if (d < 0) throw error(f, "must not be negative, got " + shown(j));
    if (!(d < 18446744073709551616.0)) throw error(f, "does not fit in 64 bits, got " + shown(j));
    return static_cast<std::uint64_t>(d);
  }
  throw error(f, "must be a non-negative integer, got " + shown(j));
}
[[nodiscard]] inline std::int32_t read_int32(const json& j, const std::string& f) {
  return static_cast<std::int32_t>(read_int(j, f, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()));
}
[[nodiscard]] inline double read_double(const json& j, const std::string& f) {
  if (!j.is_number()) throw error(f, "must be a number, got " + shown(j));
  const double d = j.get<double>();
  if (!std::isfinite(d)) throw error(f, "must be finite");
  return d;
}

// "25Gb/s" -> 3.125e9 bytes/s; "5us" -> 5e-6 s. Strict: a plain decimal number, at most one
// space, then one of the listed units; nothing else.
enum class quantity { bandwidth, time };

[[nodiscard]] inline std::optional<double> parse_quantity(std::string_view s, quantity q) {
  std::size_t i = 0;
  auto digits = [&] {
    const auto b = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - b;
  };
  std::size_t n = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    n += digits();
  }
  if (n == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    // an exponent only when digits follow ("1e9GB/s"); "5E" alone is not a number
    std::size_t k = i + 1;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    if (k < s.size() && s[k] >= '0' && s[k] <= '9') {
      i = k;
      digits();
    }
  }
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + i, v);
  if (r.ec != std::errc{} || r.ptr != s.data() + i || !std::isfinite(v)) return std::nullopt;
  std::string_view unit = s.substr(i);
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale = 0;
  if (q == quantity::time) {
    // divide by an exact power of ten: "5us" is the double nearest 5e-6, as the literal 5e-6 is
    double div = 0;
    if (unit == "s") div = 1;
    else if (unit == "ms") div = 1e3;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") div = 1e6;  // us, micro sign, Greek mu
    else if (unit == "ns") div = 1e9;
    if (div == 0) return std::nullopt;
    return v / div;
  } else {
    double prefix = 1;
    std::string_view rest = unit;
    struct pre { std::string_view p; double f; };
    constexpr pre prefixes[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
                                {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};
    for (const auto& p : prefixes)
      if (rest.substr(0, p.p.size()) == p.p && rest.size() > p.p.size()) {
        prefix = p.f;
        rest.remove_prefix(p.p.size());
        break;
      }
    if (rest == "B/s" || rest == "Bps") scale = prefix;
    else if (rest == "b/s" || rest == "bps") scale = prefix / 8.0;
  }
  if (scale == 0) return std::nullopt;
  const double out = v * scale;
  if (!std::isfinite(out)) return std::nullopt;
  return out;
}

[[nodiscard]] inline double read_quantity(const json& j, const std::string& f, quantity q) {
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (auto v = parse_quantity(s, q)) return *v;
    throw error(f, "cannot read " + shown(j) +
                       (q == quantity::bandwidth
                            ? " as a bandwidth: write bytes/s as a number, or a number and a unit (B/s, KB/s, MB/s, GB/s, "
                              "TB/s, KiB/s, MiB/s, GiB/s, TiB/s; bits: b/s, Kb/s, Mb/s, Gb/s, Tb/s; or Bps/GBps, bps/Gbps), "
                              "e.g. \"25Gb/s\""
                            : " as a latency: write seconds as a number, or a number and a unit (s, ms, us, ns), e.g. \"5us\""));
  }
  if (!j.is_number())
    throw error(f, std::string("must be a number or a string with a unit, got ") + shown(j));
  return read_double(j, f);
}

template <class E>
[[nodiscard]] E read_enum(const json& j, const std::string& f, std::string_view what) {
  const auto s = read_string(j, f);
  E e{};
  if (!parse_enum(s, e))
    throw error(f, "unknown " + std::string(what) + " '" + s + "' (valid: " + std::string(valid_names_list<E>()) + ")");
  return e;
}

// --- model -----------------------------------------------------------------------------------
[[nodiscard]] inline std::string dtype_names() {
  std::string r;
  for (auto t : all_dtypes) {
    if (!r.empty()) r += ", ";
    r += name_of(t);
  }
  return r;
}

[[nodiscard]] inline tensor read_tensor(const json& j, const std::string& f) {
  expect_object(j, f, "a tensor");
  check_keys(j, f, {"name", "shape", "dtype", "sparse", "sparse_density", "backward_flops", "ready_order", "ready_time"});
  tensor t;
  t.name = read_string(require(j, f, "name"), member(f, "name"));
  const auto fs = member(f, "shape");
  const json& shape = require(j, f, "shape");
  expect_array(shape, fs);
  if (shape.size() > 32) throw error(fs, "has " + std::to_string(shape.size()) + " dimensions (at most 32)");
  for (std::size_t d = 0; d < shape.size(); ++d)
    t.shape.push_back(read_int(shape[d], element(fs, d), std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()));
  if (const json* v = find(j, "dtype")) {
    const auto s = read_string(*v, member(f, "dtype"));
    const auto dt = parse_dtype(s);
    if (!dt) throw error(member(f, "dtype"), "unknown dtype '" + s + "' (valid: " + dtype_names() + ")");
    t.type = *dt;
  }
  if (const json* v = find(j, "sparse")) t.sparse = read_bool(*v, member(f, "sparse"));
  if (const json* v = find(j, "sparse_density")) t.sparse_density = read_double(*v, member(f, "sparse_density"));
  if (const json* v = find(j, "backward_flops")) t.backward_flops = read_double(*v, member(f, "backward_flops"));
  if (const json* v = find(j, "ready_order")) t.ready_order = read_int32(*v, member(f, "ready_order"));
  if (const json* v = find(j, "ready_time")) t.ready_time = read_double(*v, member(f, "ready_time"));
  return t;
}

// A layer of the compute model (model.hpp `layer`).
[[nodiscard]] inline layer read_layer(const json& j, const std::string& f) {
  expect_object(j, f, "a layer");
  check_keys(j, f, {"name", "kind", "tensor", "m", "n", "k", "count", "elements", "outputs", "bias", "causal", "input_grad",
                    "channels_last"});
  layer l;
  if (const json* v = find(j, "name")) l.name = read_string(*v, member(f, "name"));
  const auto kind = read_string(require(j, f, "kind"), member(f, "kind"));
  const auto k = parse_layer_kind(kind);
  if (!k) {
    std::string valid;
    for (auto x : all_layer_kinds) valid += (valid.empty() ? "" : ", ") + std::string(name_of(x));
    throw error(member(f, "kind"), "unknown layer kind '" + kind + "' (valid: " + valid + ")");
  }
  l.kind = *k;
  constexpr std::int64_t big = std::int64_t{1} << 52;
  if (const json* v = find(j, "tensor")) l.tensor = static_cast<std::int32_t>(read_int(*v, member(f, "tensor"), -1, std::numeric_limits<std::int32_t>::max()));
  for (auto [key, dst] : {std::pair<const char*, std::int64_t*>{"m", &l.m}, {"n", &l.n}, {"k", &l.k}, {"count", &l.count},
                          {"elements", &l.elements}, {"outputs", &l.outputs}})
    if (const json* v = find(j, key)) *dst = read_int(*v, member(f, key), 0, big);
  for (auto [key, dst] : {std::pair<const char*, bool*>{"bias", &l.bias}, {"causal", &l.causal}, {"input_grad", &l.input_grad},
                          {"channels_last", &l.channels_last}})
    if (const json* v = find(j, key)) *dst = read_bool(*v, member(f, key));
  return l;
}

[[nodiscard]] inline model_spec read_model(const json& j) {
  expect_object(j, "", "a model");
  check_keys(j, "", {"name", "batch_per_device", "forward_flops", "source", "tensors", "precision", "layers", "measured_forward",
                     "measured_backward", "measured_on"});
  model_spec m;
  if (const json* v = find(j, "name")) m.name = read_string(*v, "name");
  if (const json* v = find(j, "source")) m.source = read_string(*v, "source");
  if (const json* v = find(j, "batch_per_device"))
    m.batch_per_device = read_int(*v, "batch_per_device", 0, std::numeric_limits<std::int64_t>::max());
  if (const json* v = find(j, "forward_flops")) m.forward_flops = read_double(*v, "forward_flops");
  const json& ts = require(j, "", "tensors");
  expect_array(ts, "tensors");
  m.tensors.reserve(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) m.tensors.push_back(read_tensor(ts[i], element("tensors", i)));
  if (const json* v = find(j, "precision")) {
    const auto s = read_string(*v, "precision");
    const auto p = parse_precision(s);
    if (!p) throw error("precision", "unknown precision '" + s + "' (valid: pytorch-fp32, fp32, tf32, bf16, fp16)");
    m.training_precision = *p;
  }
  if (const json* v = find(j, "layers")) {
    expect_array(*v, "layers");
    m.layers.reserve(v->size());
    for (std::size_t i = 0; i < v->size(); ++i) m.layers.push_back(read_layer((*v)[i], element("layers", i)));
  }
  if (const json* v = find(j, "measured_forward")) m.measured_forward = read_double(*v, "measured_forward");
  if (const json* v = find(j, "measured_backward")) m.measured_backward = read_double(*v, "measured_backward");
  if (const json* v = find(j, "measured_on")) m.measured_on = read_string(*v, "measured_on");
  m.validate();
  return m;
}

// --- cluster ---------------------------------------------------------------------------------
inline constexpr std::int64_t max_nodes = 65536;

[[nodiscard]] inline link read_link(const json& j, const std::string& f) {
  expect_object(j, f, "a link");
  check_keys(j, f, {"bandwidth", "latency"});
  link l;
  if (const json* v = find(j, "bandwidth")) l.bandwidth = read_quantity(*v, member(f, "bandwidth"), quantity::bandwidth);
  if (const json* v = find(j, "latency")) l.latency = read_quantity(*v, member(f, "latency"), quantity::time);
  return l;
}

// A device's compute roofline (cluster.hpp device_compute); cluster_spec::validate checks the values.
[[nodiscard]] inline device_compute read_device_compute(const json& j, const std::string& f) {
  expect_object(j, f, "a device compute description");
  check_keys(j, f, {"fp32", "tf32", "bf16", "fp16", "matmul_efficiency", "memory_bandwidth", "memory_efficiency",
                    "multiprocessors", "kernel_floor"});
  device_compute d;
  for (auto [key, dst] : {std::pair<const char*, double*>{"fp32", &d.fp32}, {"tf32", &d.tf32}, {"bf16", &d.bf16},
                          {"fp16", &d.fp16}, {"matmul_efficiency", &d.matmul_efficiency},
                          {"memory_efficiency", &d.memory_efficiency}})
    if (const json* v = find(j, key)) *dst = read_double(*v, member(f, key));
  if (const json* v = find(j, "memory_bandwidth"))
    d.memory_bandwidth = read_quantity(*v, member(f, "memory_bandwidth"), quantity::bandwidth);
  if (const json* v = find(j, "kernel_floor")) d.kernel_floor = read_quantity(*v, member(f, "kernel_floor"), quantity::time);
  if (const json* v = find(j, "multiprocessors")) d.multiprocessors = read_int32(*v, member(f, "multiprocessors"));
  return d;
}

[[nodiscard]] inline cluster_spec read_cluster(const json& j) {
  expect_object(j, "", "a cluster");
  check_keys(j, "", {"name", "device", "source", "nodes"});
  cluster_spec c;
  if (const json* v = find(j, "name")) c.name = read_string(*v, "name");
  if (const json* v = find(j, "device")) c.device = read_string(*v, "device");
  if (const json* v = find(j, "source")) c.source = read_string(*v, "source");
  const json& ns = require(j, "", "nodes");
  expect_array(ns, "nodes");
  std::vector<std::size_t> from;  // from[k]: the JSON entry node k came from ("count" expands)
  std::vector<bool> replicated(ns.size(), false);
  for (std::size_t i = 0; i < ns.size(); ++i) {
    const auto f = element("nodes", i);
    const json& e = ns[i];
    expect_object(e, f, "a node");
    check_keys(e, f, {"name", "count", "devices", "intra", "nic", "nics", "server_only", "device_flops", "reduce_bandwidth", "compute"});
    node_spec n;
    if (const json* v = find(e, "name")) n.name = read_string(*v, member(f, "name"));
    if (const json* v = find(e, "devices")) n.devices = read_int32(*v, member(f, "devices"));
    if (const json* v = find(e, "intra")) n.intra = read_link(*v, member(f, "intra"));
    if (const json* v = find(e, "nic")) n.nic = read_link(*v, member(f, "nic"));
    if (const json* v = find(e, "nics")) n.nics = read_int32(*v, member(f, "nics"));
    if (const json* v = find(e, "server_only")) n.server_only = read_bool(*v, member(f, "server_only"));
    if (const json* v = find(e, "device_flops")) n.device_flops = read_double(*v, member(f, "device_flops"));
    if (const json* v = find(e, "reduce_bandwidth"))
      n.reduce_bandwidth = read_quantity(*v, member(f, "reduce_bandwidth"), quantity::bandwidth);
    if (const json* v = find(e, "compute")) n.compute = read_device_compute(*v, member(f, "compute"));
    if (const json* v = find(e, "count")) {
      const auto k = read_int(*v, member(f, "count"), 1, max_nodes);
      if (static_cast<std::int64_t>(c.nodes.size()) + k > max_nodes)
        throw error(member(f, "count"), "the cluster would have more than " + std::to_string(max_nodes) + " nodes");
      replicated[i] = true;
      const std::string base = n.name;
      for (std::int64_t r = 0; r < k; ++r) {
        if (!base.empty()) n.name = base + "-" + std::to_string(r);
        c.nodes.push_back(n);
        from.push_back(i);
      }
    } else {
      if (static_cast<std::int64_t>(c.nodes.size()) + 1 > max_nodes)
        throw error(f, "the cluster would have more than " + std::to_string(max_nodes) + " nodes");
      c.nodes.push_back(std::move(n));
      from.push_back(i);
    }
  }
  try {
    c.validate();
  } catch (const error& e) {
    // validate() speaks of expanded nodes; point at the JSON entry they came from.
    const auto& fld = e.field();
    if (fld.rfind("nodes[", 0) != 0) throw;
    const auto close = fld.find(']');
    std::size_t k = 0;
    const auto r = std::from_chars(fld.data() + 6, fld.data() + close, k);
    if (r.ec != std::errc{} || k >= from.size()) throw;
    std::string msg = e.what();
    msg.erase(0, fld.size() + 4);  // "'<field>': "
    const std::string note = c.nodes[k].name.empty() ? "" : " '" + c.nodes[k].name + "'";
    if (replicated[from[k]]) msg += " (in node " + std::to_string(k) + note + ", a replica of this entry)";
    throw error("nodes[" + std::to_string(from[k]) + "]" + fld.substr(close + 1), msg);
  }
  return c;
}

// --- strategy --------------------------------------------------------------------------------
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

[[nodiscard]] inline compression_id read_compression(const json& j, const std::string& f) {
  const auto s = read_string(j, f);
  const auto c = parse_compression(s);
  if (!c) throw error(f, "unknown compression '" + s + "' (valid: " + compression_names_list() + ")");
  return *c;
}

[[nodiscard]] inline group_desc read_group(const json& j, const std::string& f) {
  expect_object(j, f, "a group");
  check_keys(j, f, {"architecture", "partitioner", "placement", "replication", "topology", "compression", "fusion", "schedule"});
  group_desc g;
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

// --- writers ---------------------------------------------------------------------------------
[[nodiscard]] inline ojson write_model(const model_spec& m) {
  ojson j;
  j["name"] = m.name;
  j["batch_per_device"] = m.batch_per_device;
  j["forward_flops"] = m.forward_flops;
  j["source"] = m.source;
  ojson ts = ojson::array();
  const tensor def{};
  for (const auto& t : m.tensors) {
    ojson o;
    o["name"] = t.name;
    o["shape"] = t.shape;
    o["dtype"] = std::string(name_of(t.type));
    if (t.sparse != def.sparse) o["sparse"] = t.sparse;
    if (t.sparse_density != def.sparse_density) o["sparse_density"] = t.sparse_density;
    if (t.backward_flops != def.backward_flops) o["backward_flops"] = t.backward_flops;
    if (t.ready_order != def.ready_order) o["ready_order"] = t.ready_order;
    if (t.ready_time != def.ready_time) o["ready_time"] = t.ready_time;
    ts.push_back(std::move(o));
  }
  j["tensors"] = std::move(ts);
  if (m.training_precision != precision::pytorch_fp32) j["precision"] = std::string(name_of(m.training_precision));
  if (!m.layers.empty()) {
    ojson ls = ojson::array();
    const layer ld{};
    for (const auto& l : m.layers) {
      ojson o;
      o["name"] = l.name;
      o["kind"] = std::string(name_of(l.kind));
      o["tensor"] = l.tensor;
      for (auto [key, v, d] : {std::tuple<const char*, std::int64_t, std::int64_t>{"m", l.m, ld.m}, {"n", l.n, ld.n}, {"k", l.k, ld.k},
                               {"count", l.count, ld.count}, {"elements", l.elements, ld.elements}, {"outputs", l.outputs, ld.outputs}})
        if (v != d) o[key] = v;
      for (auto [key, v, d] : {std::tuple<const char*, bool, bool>{"bias", l.bias, ld.bias}, {"causal", l.causal, ld.causal},
                               {"input_grad", l.input_grad, ld.input_grad}, {"channels_last", l.channels_last, ld.channels_last}})
        if (v != d) o[key] = v;
      ls.push_back(std::move(o));
    }
    j["layers"] = std::move(ls);
  }
  if (m.measured_forward != 0.0) j["measured_forward"] = m.measured_forward;
  if (m.measured_backward != 0.0) j["measured_backward"] = m.measured_backward;
  if (!m.measured_on.empty()) j["measured_on"] = m.measured_on;
  return j;
}

[[nodiscard]] inline bool same_except_name(const node_spec& a, const node_spec& b) noexcept {
  return a.devices == b.devices && a.intra.bandwidth == b.intra.bandwidth && a.intra.latency == b.intra.latency &&
         a.nic.bandwidth == b.nic.bandwidth && a.nic.latency == b.nic.latency && a.nics == b.nics &&
         a.server_only == b.server_only && a.device_flops == b.device_flops && a.reduce_bandwidth == b.reduce_bandwidth &&
         a.compute == b.compute;
}

[[nodiscard]] inline ojson write_cluster(const cluster_spec& c) {
  ojson j;
  j["name"] = c.name;
  j["device"] = c.device;
  j["source"] = c.source;
  ojson ns = ojson::array();
  const node_spec def{};
  for (std::size_t i = 0; i < c.nodes.size();) {
    const auto& n = c.nodes[i];
    // A run of identical nodes named base-0, base-1, ... (or all unnamed) becomes one entry with "count".
    std::size_t run = 1;
    std::string base;
    const bool unnamed = n.name.empty();
    if (!unnamed && n.name.size() > 2 && n.name.compare(n.name.size() - 2, 2, "-0") == 0) base = n.name.substr(0, n.name.size() - 2);
    if (unnamed || !base.empty())
      while (i + run < c.nodes.size() && same_except_name(n, c.nodes[i + run]) &&
             c.nodes[i + run].name == (unnamed ? std::string() : base + "-" + std::to_string(run)))
        ++run;
    ojson o;
    if (run > 1) {
      if (!unnamed) o["name"] = base;
      o["count"] = run;
    } else if (!unnamed) {
      o["name"] = n.name;
    }
    o["devices"] = n.devices;
    o["intra"] = {{"bandwidth", n.intra.bandwidth}, {"latency", n.intra.latency}};
    o["nic"] = {{"bandwidth", n.nic.bandwidth}, {"latency", n.nic.latency}};
    o["nics"] = n.nics;
    if (n.server_only != def.server_only) o["server_only"] = n.server_only;
    o["device_flops"] = n.device_flops;
    o["reduce_bandwidth"] = n.reduce_bandwidth;
    if (n.compute != device_compute{}) {
      const auto& d = n.compute;
      o["compute"] = {{"fp32", d.fp32}, {"tf32", d.tf32}, {"bf16", d.bf16}, {"fp16", d.fp16},
                      {"matmul_efficiency", d.matmul_efficiency}, {"memory_bandwidth", d.memory_bandwidth},
                      {"memory_efficiency", d.memory_efficiency}, {"multiprocessors", d.multiprocessors},
                      {"kernel_floor", d.kernel_floor}};
    }
    ns.push_back(std::move(o));
    i += run;
  }
  j["nodes"] = std::move(ns);
  return j;
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
  const auto c = find_compression(g.compression);
  o["compression"] = c ? std::string(c->name) : std::string("?");
  o["fusion"] = {{"cap_bytes", g.fusion.cap_bytes}};
  if (g.fusion.first_cap_bytes != g.fusion.cap_bytes) o["fusion"]["first_cap_bytes"] = g.fusion.first_cap_bytes;
  o["schedule"] = std::string(name_of(g.schedule));
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
    std::string msg = e.what();
    if (!fld.empty() && msg.size() >= fld.size() + 4) msg.erase(0, fld.size() + 4);  // "'<field>': "
    const auto loc = jt.at(jt.find(split_path(fld)));
    throw file_error(file, loc.line, loc.column, fld, msg);
  }
}

[[nodiscard]] inline std::string read_file(const std::filesystem::path& path) {
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

// ---------------------------------------------------------------------------------------------
// nlohmann ADL hooks: `json j = model;`, `j.get<cluster_spec>()`. from_json validates and throws
// autosync::error with the field path (no line: a json value has none; use io::parse_* for that).
// ---------------------------------------------------------------------------------------------
namespace detail::jio {
template <class J>
concept basic_json_type = nlohmann::detail::is_basic_json<J>::value;
template <class J>
[[nodiscard]] nlohmann::json as_json(const J& j) {
  if constexpr (std::is_same_v<J, nlohmann::json>) return j;
  else return nlohmann::json(j);
}
}  // namespace detail::jio

template <detail::jio::basic_json_type J>
void to_json(J& j, const model_spec& m) { j = J(detail::jio::write_model(m)); }
template <detail::jio::basic_json_type J>
void to_json(J& j, const cluster_spec& c) { j = J(detail::jio::write_cluster(c)); }
template <detail::jio::basic_json_type J>
void to_json(J& j, const group_desc& g) { j = J(detail::jio::write_group(g)); }
template <detail::jio::basic_json_type J>
void to_json(J& j, const strategy_desc& s) { j = J(detail::jio::write_strategy(s)); }

template <detail::jio::basic_json_type J>
void from_json(const J& j, model_spec& m) { m = detail::jio::read_model(detail::jio::as_json(j)); }
template <detail::jio::basic_json_type J>
void from_json(const J& j, cluster_spec& c) { c = detail::jio::read_cluster(detail::jio::as_json(j)); }
template <detail::jio::basic_json_type J>
void from_json(const J& j, strategy_desc& s) { s = detail::jio::read_strategy(detail::jio::as_json(j)); }
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

// ---------------------------------------------------------------------------------------------
// autosync::io: values, text and files. `file` names the source in messages.
// ---------------------------------------------------------------------------------------------
namespace io {

// The JSON value of a spec (keys in the documented order).
[[nodiscard]] inline nlohmann::ordered_json to_json(const model_spec& m) { return detail::jio::write_model(m); }
[[nodiscard]] inline nlohmann::ordered_json to_json(const cluster_spec& c) { return detail::jio::write_cluster(c); }
[[nodiscard]] inline nlohmann::ordered_json to_json(const group_desc& g) { return detail::jio::write_group(g); }
[[nodiscard]] inline nlohmann::ordered_json to_json(const strategy_desc& s) { return detail::jio::write_strategy(s); }

// A spec from a JSON value, validated; errors carry the field path (a value has no lines).
[[nodiscard]] inline model_spec model_from_json(const nlohmann::json& j) { return j.get<model_spec>(); }
[[nodiscard]] inline cluster_spec cluster_from_json(const nlohmann::json& j) { return j.get<cluster_spec>(); }
[[nodiscard]] inline group_desc group_from_json(const nlohmann::json& j) { return j.get<group_desc>(); }
[[nodiscard]] inline strategy_desc strategy_from_json(const nlohmann::json& j) { return j.get<strategy_desc>(); }

[[nodiscard]] inline model_spec parse_model(std::string_view text, const std::string& file = "<model>") {
  return detail::jio::parse_text(text, file, [](const nlohmann::json& j) { return detail::jio::read_model(j); });
}
[[nodiscard]] inline cluster_spec parse_cluster(std::string_view text, const std::string& file = "<cluster>") {
  return detail::jio::parse_text(text, file, [](const nlohmann::json& j) { return detail::jio::read_cluster(j); });
}
[[nodiscard]] inline strategy_desc parse_strategy(std::string_view text, const std::string& file = "<strategy>") {
  return detail::jio::parse_text(text, file, [](const nlohmann::json& j) { return detail::jio::read_strategy(j); });
}
// Also checks the strategy against a model and a cluster (strategy_desc::validate).
[[nodiscard]] inline strategy_desc parse_strategy(std::string_view text, const model_spec& model, const cluster_spec& cluster,
                                                  const std::string& file = "<strategy>") {
  return detail::jio::parse_text(text, file, [&](const nlohmann::json& j) {
    auto s = detail::jio::read_strategy(j);
    s.validate(model, cluster);
    return s;
  });
}

[[nodiscard]] inline std::string to_json_text(const model_spec& m) { return detail::jio::to_text(detail::jio::write_model(m)); }
[[nodiscard]] inline std::string to_json_text(const cluster_spec& c) { return detail::jio::to_text(detail::jio::write_cluster(c)); }
[[nodiscard]] inline std::string to_json_text(const strategy_desc& s) { return detail::jio::to_text(detail::jio::write_strategy(s)); }

[[nodiscard]] inline model_spec load_model_file(const std::filesystem::path& path) {
  return parse_model(detail::jio::read_file(path), path.string());
}
[[nodiscard]] inline cluster_spec load_cluster_file(const std::filesystem::path& path) {
  return parse_cluster(detail::jio::read_file(path), path.string());
}
[[nodiscard]] inline strategy_desc load_strategy_file(const std::filesystem::path& path) {
  return parse_strategy(detail::jio::read_file(path), path.string());
}
[[nodiscard]] inline strategy_desc load_strategy_file(const std::filesystem::path& path, const model_spec& model,
                                                      const cluster_spec& cluster) {
  return parse_strategy(detail::jio::read_file(path), model, cluster, path.string());
}

inline void save_model_file(const std::filesystem::path& path, const model_spec& m) { detail::jio::write_file(path, to_json_text(m)); }
inline void save_cluster_file(const std::filesystem::path& path, const cluster_spec& c) { detail::jio::write_file(path, to_json_text(c)); }
inline void save_strategy_file(const std::filesystem::path& path, const strategy_desc& s) { detail::jio::write_file(path, to_json_text(s)); }

}  // namespace io

}  // namespace autosync
