// autosync/io/json/fields.hpp — reading one JSON field: the checks every format's reader uses
// (object, array, allowed keys, required members), numbers in range, quantities with units
// ("25Gb/s", "5us"), policy names. Each throws autosync::error(field path, message); parse_text
// (io/json/text.hpp) adds the file and line.
//
// Part of io/json.hpp.
#pragma once

#include <autosync/error.hpp>
#include <autosync/io/json/text.hpp>
#include <autosync/policy/slots.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace autosync::detail::jio {

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
    throw error(fld.empty() ? prefix : (fld.front() == '[' || fld.front() == '.' ? prefix + fld : prefix + "." + fld), e.message());
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

template <class J>
concept basic_json_type = nlohmann::detail::is_basic_json<J>::value;
template <class J>
[[nodiscard]] nlohmann::json as_json(const J& j) {
  if constexpr (std::is_same_v<J, nlohmann::json>) return j;
  else return nlohmann::json(j);
}

}  // namespace autosync::detail::jio
