// tests/fuzz/json_targets.hpp — the properties the JSON fuzzers check, shared with the unit test
// that replays the seed corpus (tests/unit/json_corpus.cpp), so a g++-only CI checks them too.
//
// For any bytes:
//   1. io::parse_model / parse_cluster / parse_strategy (and learn::parse_collective_cases, the
//      manifest of nccl-tests logs) either return a value or throw
//      autosync::error; anything else escaping (nlohmann exceptions, std::out_of_range,
//      bad_alloc from a runaway size, a sanitizer report) is a bug.
//   2. An error names the file and a line inside the text: "fuzz.json:<line>[:<col>]: ...",
//      1 <= line <= lines of the input.
//   3. What is accepted is valid (validate() passed inside) and round-trips: writing it and
//      reading it back gives the same value, and writing that again gives the same text.
// A violated property throws fuzz::violation (not an autosync::error), which libFuzzer reports
// as a crash and doctest as a failure.
#pragma once

#include <autosync/io/json.hpp>
#include <autosync/learn/collectives.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace autosync::fuzz {

struct violation : std::logic_error {
  using std::logic_error::logic_error;
};

inline constexpr std::string_view file_name = "fuzz.json";

inline void require(bool ok, const std::string& what) {
  if (!ok) throw violation("fuzz property violated: " + what);
}

inline void check_error(std::string_view text, const error& e) {
  const std::string_view w = e.what();
  const std::string prefix = std::string(file_name) + ":";
  require(w.substr(0, prefix.size()) == prefix, "error without the file name: " + std::string(w));
  std::size_t i = prefix.size();
  std::size_t line = 0;
  while (i < w.size() && w[i] >= '0' && w[i] <= '9' && line < 100000000) line = line * 10 + static_cast<std::size_t>(w[i++] - '0');
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  require(line >= 1 && line <= lines && i < w.size() && w[i] == ':', "error without a valid line: " + std::string(w));
}

inline bool same(const model_spec& a, const model_spec& b) {
  if (a.name != b.name || a.source != b.source || a.batch_per_device != b.batch_per_device || a.forward_flops != b.forward_flops ||
      a.tensors.size() != b.tensors.size())
    return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.shape != y.shape || x.type != y.type || x.sparse != y.sparse || x.sparse_density != y.sparse_density ||
        x.backward_flops != y.backward_flops || x.ready_order != y.ready_order)
      return false;
  }
  return true;
}
inline bool same(const cluster_spec& a, const cluster_spec& b) {
  if (a.name != b.name || a.device != b.device || a.source != b.source || a.nodes.size() != b.nodes.size()) return false;
  for (std::size_t i = 0; i < a.nodes.size(); ++i)
    if (a.nodes[i].name != b.nodes[i].name || !detail::jio::same_except_name(a.nodes[i], b.nodes[i])) return false;
  return true;
}
inline bool same(const strategy_desc& a, const strategy_desc& b) { return a == b; }
inline bool same(const learn::collective_manifest& a, const learn::collective_manifest& b) {
  if (a.source != b.source || a.cases.size() != b.cases.size()) return false;
  for (std::size_t i = 0; i < a.cases.size(); ++i) {
    const auto &x = a.cases[i], &y = b.cases[i];
    if (x.label != y.label || x.file != y.file || x.section != y.section || x.op != y.op || x.algorithm != y.algorithm ||
        x.cluster_name != y.cluster_name || x.note != y.note || !same(x.cluster, y.cluster))
      return false;
  }
  return true;
}

template <class Parse>
bool check(std::string_view text, Parse&& parse) {
  try {
    using io::to_json_text;  // and learn::to_json_text, found by argument-dependent lookup
    const auto x = parse(text, std::string(file_name));
    const auto written = to_json_text(x);
    std::remove_cvref_t<decltype(x)> back;
    try {
      back = parse(written, std::string("written.json"));
    } catch (const error& e) {
      throw violation("fuzz property violated: accepted, but its written form is rejected: " + std::string(e.what()) + "\n" + written);
    }
    require(same(x, back), "round trip changed the value:\n" + written);
    require(to_json_text(back) == written, "writing is not stable:\n" + written);
    return true;
  } catch (const error& e) {
    check_error(text, e);
    return false;
  }
}

inline bool model_json(std::string_view text) {
  return check(text, [](std::string_view t, const std::string& f) { return io::parse_model(t, f); });
}
inline bool cluster_json(std::string_view text) {
  return check(text, [](std::string_view t, const std::string& f) { return io::parse_cluster(t, f); });
}

inline bool collective_cases_json(std::string_view text) {
  return check(text, [](std::string_view t, const std::string& f) { return learn::parse_collective_cases(t, f); });
}

// A small model and cluster to check strategies against (strategy_desc::validate).
inline const model_spec& strategy_model() {
  static const model_spec m = [] {
    model_spec x;
    x.name = "fuzz";
    x.tensors = {{"x", {8, 4}, dtype::f32, false, 1.0, 0.0, -1},
                 {"y", {16}, dtype::f16, false, 1.0, 0.0, -1},
                 {"e", {100, 8}, dtype::f32, true, 0.1, 0.0, -1},
                 {"z", {3, 5, 7}, dtype::f32, false, 1.0, 0.0, -1}};
    return x;
  }();
  return m;
}
inline const cluster_spec& strategy_cluster() {
  static const cluster_spec c = [] {
    cluster_spec x;
    x.name = "fuzz";
    node_spec n{"w", 2, {1e10, 1e-6}, {1e9, 1e-5}, 1, false, 1e12, 1e10};
    x.nodes = {n, n};
    x.nodes[1].name = "v";
    return x;
  }();
  return c;
}

inline bool strategy_json(std::string_view text) {
  const bool plain = check(text, [](std::string_view t, const std::string& f) { return io::parse_strategy(t, f); });
  const bool fits = check(text, [](std::string_view t, const std::string& f) {
    return io::parse_strategy(t, strategy_model(), strategy_cluster(), f);
  });
  require(plain || !fits, "accepted against a model, but rejected on its own");
  return fits || plain;
}

}  // namespace autosync::fuzz
