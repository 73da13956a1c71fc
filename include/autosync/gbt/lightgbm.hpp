// autosync/gbt/lightgbm.hpp — load a LightGBM text model (`save_model("model.txt")`, the
// `tree` / `Tree=N` format of LightGBM 3 and 4) into a gbt::forest. Needs nothing but the standard
// library.
//
// What is read:
//   header       max_feature_idx (num_features = max_feature_idx + 1); num_class and
//                num_tree_per_iteration must be 1; objective:
//                  regression regression_l1 huber fair quantile mape lambdarank rank_xendcg custom
//                  (or no objective line: a custom objective)   identity
//                  binary sigmoid:S                             1 / (1 + exp(-S·margin))
//                  cross_entropy                                1 / (1 + exp(-margin))
//                  poisson gamma tweedie                        exp(margin)
//                anything else (multiclass, multiclassova, cross_entropy_lambda, regression
//                with `sqrt`) and `average_output` (random-forest mode) are rejected.
//   Tree=N       num_leaves; split_feature, threshold, decision_type, left_child, right_child
//                (num_leaves - 1 entries; a child c < 0 is leaf ~c); leaf_value (num_leaves
//                entries). A tree with num_leaves=1 is its leaf. num_cat must be 0 and is_linear
//                0: categorical splits and linear trees are rejected. Trees are numbered 0, 1, …
//                and end at `end of trees`.
// decision_type bits: 1 categorical (rejected), 2 default left, bits 2-3 the missing type
// (0 None, 1 Zero, 2 NaN). LightGBM's rule, in double: NaN becomes 0 unless the missing type is
// NaN; a missing value (NaN for type NaN; NaN or -1e-35 <= x <= 1e-35 for type Zero) goes to the
// default child; otherwise `x <= threshold` goes left. The loader maps this exactly onto the
// forest's float rule: for a float x, x <= t (t a double) iff x < t', t' the smallest float above
// t; type None sends NaN where 0 goes (default left iff 0 <= t); type Zero sets
// node_flag::zero_is_missing. Leaves stay double and the forest accumulates in double, as
// LightGBM does (its init score is already in the first tree's leaves).
//
// Every error is a gbt::model_error "source:line: 'Tree=N.field[i]': what is wrong".
#pragma once

#include <autosync/gbt/forest.hpp>
#include <autosync/gbt/model_error.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::gbt {

namespace detail::lgb {

struct entry {
  std::string_view value;
  std::size_t line = 0;
};

struct section {
  std::string name;  // "" for the header, "Tree=N" for a tree
  std::size_t line = 0;
  std::map<std::string_view, entry, std::less<>> keys;
};

struct reader {
  std::string_view source;
  [[noreturn]] void fail(std::size_t line, const std::string& field, const std::string& message) const {
    throw model_error(source, line, field, message);
  }

  const entry* find(const section& s, std::string_view key) const {
    const auto it = s.keys.find(key);
    return it == s.keys.end() ? nullptr : &it->second;
  }
  const entry& need(const section& s, std::string_view key) const {
    const entry* e = find(s, key);
    if (!e) fail(s.line, field(s, key), "is missing");
    return *e;
  }
  static std::string field(const section& s, std::string_view key) {
    return s.name.empty() ? std::string(key) : s.name + "." + std::string(key);
  }

  template <class Int>
  Int integer(std::string_view text, std::size_t line, const std::string& field_name, Int lo, Int hi) const {
    long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size())
      fail(line, field_name, "must be an integer, not \"" + std::string(text.substr(0, 40)) + "\"");
    if (ec == std::errc::result_out_of_range || v < static_cast<long long>(lo) || v > static_cast<long long>(hi))
      fail(line, field_name, std::string(text.substr(0, 40)) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return static_cast<Int>(v);
  }
  double real(std::string_view text, std::size_t line, const std::string& field_name) const {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size())
      fail(line, field_name, "must be a number, not \"" + std::string(text.substr(0, 40)) + "\"");
    if (ec == std::errc::result_out_of_range || !std::isfinite(v)) fail(line, field_name, "is not a finite double");
    return v;
  }

  // A space-separated list; exactly `expected` entries.
  std::vector<std::string_view> list(const section& s, std::string_view key, std::size_t expected) const {
    const entry& e = need(s, key);
    std::vector<std::string_view> out;
    std::string_view v = e.value;
    while (!v.empty()) {
      const auto sp = v.find(' ');
      const std::string_view tok = v.substr(0, sp);
      if (!tok.empty()) {
        if (out.size() == expected)
          fail(e.line, field(s, key), "has more than the " + std::to_string(expected) + " entries num_leaves implies");
        out.push_back(tok);
      }
      if (sp == std::string_view::npos) break;
      v.remove_prefix(sp + 1);
    }
    if (out.size() != expected)
      fail(e.line, field(s, key), "has " + std::to_string(out.size()) + " entries; num_leaves implies " + std::to_string(expected));
    return out;
  }
};

// LightGBM's `x <= t` (x a float widened to double) as the forest's `x < t'`: t' is the smallest
// float strictly greater than t.
inline float strict_threshold(double t) {
  const auto f = static_cast<float>(t);
  if (static_cast<double>(f) > t) return f;
  return std::nextafter(f, std::numeric_limits<float>::infinity());
}

struct objective_info {
  output_transform transform = output_transform::identity;
  double sigmoid_scale = 1.0;
};

inline objective_info objective(const reader& r, const section& header) {
  const entry* e = r.find(header, "objective");
  if (!e) return {};  // trained with a custom objective: raw scores
  std::vector<std::string_view> tokens;
  std::string_view v = e->value;
  while (!v.empty()) {
    const auto sp = v.find(' ');
    if (sp != 0) tokens.push_back(v.substr(0, sp));
    if (sp == std::string_view::npos) break;
    v.remove_prefix(sp + 1);
  }
  if (tokens.empty()) r.fail(e->line, "objective", "is empty");
  const std::string_view name = tokens[0];
  auto has = [&](std::string_view p) {
    for (std::size_t i = 1; i < tokens.size(); ++i)
      if (tokens[i] == p) return true;
    return false;
  };
  for (const std::string_view id : {"regression", "regression_l2", "regression_l1", "huber", "fair", "quantile", "mape", "lambdarank",
                                    "rank_xendcg", "custom"})
    if (name == id) {
      if (has("sqrt")) r.fail(e->line, "objective", "'" + std::string(name) + " sqrt' (a square-root-transformed label) is not supported");
      return {};
    }
  if (name == "binary") {
    for (std::size_t i = 1; i < tokens.size(); ++i)
      if (tokens[i].substr(0, 8) == "sigmoid:") {
        const double s = r.real(tokens[i].substr(8), e->line, "objective.sigmoid");
        if (!(s > 0)) r.fail(e->line, "objective.sigmoid", "must be positive");
        return {output_transform::sigmoid, s};
      }
    r.fail(e->line, "objective", "'binary' without a 'sigmoid:' parameter");
  }
  if (name == "cross_entropy" || name == "xentropy") return {output_transform::sigmoid, 1.0};
  if (name == "poisson" || name == "gamma" || name == "tweedie") return {output_transform::exp, 1.0};
  r.fail(e->line, "objective",
         "objective '" + std::string(name) +
             "' is not supported (supported: regression, regression_l1, huber, fair, quantile, mape, lambdarank, rank_xendcg, binary, "
             "cross_entropy, poisson, gamma, tweedie)");
}

inline tree_nodes read_tree(const reader& r, const section& s, std::size_t num_features) {
  const entry& nl = r.need(s, "num_leaves");
  const auto leaves = r.integer<std::int64_t>(nl.value, nl.line, r.field(s, "num_leaves"), 1, std::int64_t{1} << 29);
  if (const entry* nc = r.find(s, "num_cat"); nc && r.integer<std::int64_t>(nc->value, nc->line, r.field(s, "num_cat"), 0, 1 << 30) != 0)
    r.fail(nc->line, r.field(s, "num_cat"), "categorical splits are not supported");
  if (const entry* lin = r.find(s, "is_linear"); lin && r.integer<int>(lin->value, lin->line, r.field(s, "is_linear"), 0, 1) != 0)
    r.fail(lin->line, r.field(s, "is_linear"), "linear trees are not supported");
  const auto n_leaves = static_cast<std::size_t>(leaves);
  const std::size_t n_internal = n_leaves - 1;
  const auto values = r.list(s, "leaf_value", n_leaves);
  const std::size_t value_line = r.need(s, "leaf_value").line;

  tree_nodes t;
  const std::size_t n = n_internal + n_leaves;
  t.left.assign(n, -1);
  t.right.assign(n, -1);
  t.feature.assign(n, 0);
  t.threshold.assign(n, 0.0f);
  t.flags.assign(n, 0);
  t.value.assign(n, 0.0);
  for (std::size_t j = 0; j < n_leaves; ++j)
    t.value[n_internal + j] = r.real(values[j], value_line, r.field(s, "leaf_value") + "[" + std::to_string(j) + "]");
  if (n_internal == 0) {
    // A single-leaf tree: node 0 is the leaf.
    return t;
  }
  const auto features = r.list(s, "split_feature", n_internal);
  const auto thresholds = r.list(s, "threshold", n_internal);
  const auto lefts = r.list(s, "left_child", n_internal);
  const auto rights = r.list(s, "right_child", n_internal);
  std::vector<std::string_view> types;
  if (r.find(s, "decision_type")) types = r.list(s, "decision_type", n_internal);
  const std::size_t fl = r.need(s, "split_feature").line, tl = r.need(s, "threshold").line, ll = r.need(s, "left_child").line,
                    rl = r.need(s, "right_child").line, dl = types.empty() ? 0 : r.need(s, "decision_type").line;
  const auto lo = -static_cast<std::int64_t>(n_leaves), hi = static_cast<std::int64_t>(n_internal) - 1;
  auto child = [&](std::string_view tok, std::size_t line, const std::string& f) -> std::int32_t {
    const auto c = r.integer<std::int64_t>(tok, line, f, lo, hi);
    return static_cast<std::int32_t>(c >= 0 ? c : static_cast<std::int64_t>(n_internal) + ~c);
  };
  for (std::size_t i = 0; i < n_internal; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    const auto f = r.integer<std::int64_t>(features[i], fl, r.field(s, "split_feature") + at, 0, std::numeric_limits<std::uint32_t>::max());
    if (static_cast<std::uint64_t>(f) >= num_features)
      r.fail(fl, r.field(s, "split_feature") + at,
             "feature " + std::to_string(f) + " is out of range (max_feature_idx is " + std::to_string(num_features - 1) + ")");
    const double threshold = r.real(thresholds[i], tl, r.field(s, "threshold") + at);
    const int type = types.empty() ? 0 : r.integer<int>(types[i], dl, r.field(s, "decision_type") + at, 0, 15);
    if (type & 1) r.fail(dl, r.field(s, "decision_type") + at, "categorical splits are not supported");
    const int missing = (type >> 2) & 3;
    if (missing == 3) r.fail(dl, r.field(s, "decision_type") + at, "missing type 3 is not defined");
    t.left[i] = child(lefts[i], ll, r.field(s, "left_child") + at);
    t.right[i] = child(rights[i], rl, r.field(s, "right_child") + at);
    t.feature[i] = static_cast<std::uint32_t>(f);
    t.threshold[i] = strict_threshold(threshold);
    const bool default_left = missing == 0 ? 0.0 <= threshold : (type & 2) != 0;
    t.flags[i] = static_cast<std::uint8_t>((default_left ? node_flag::default_left : 0) | (missing == 1 ? node_flag::zero_is_missing : 0));
  }
  return t;
}

}  // namespace detail::lgb

inline forest parse_lightgbm_text(std::string_view text, std::string_view source = "<string>") {
  using namespace detail::lgb;
  const reader r{source};
  // Split into the header and the Tree= sections, up to "end of trees".
  std::vector<section> sections(1);
  sections.front().line = 1;  // a missing header key is reported at the 'tree' line
  std::size_t line_no = 0;
  bool ended = false, first = true;
  for (std::size_t pos = 0;;) {
    const auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    ++line_no;
    if (nl != std::string_view::npos) pos = nl + 1;
    const bool last = nl == std::string_view::npos;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (first) {
      first = false;
      if (line != "tree") r.fail(line_no, "", "not a LightGBM text model (the first line must be 'tree')");
      if (last) break;
      continue;
    }
    if (line.empty()) {
      if (last) break;
      continue;
    }
    if (line == "end of trees") {
      ended = true;
      break;
    }
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) r.fail(line_no, "", "expected 'key=value', not \"" + std::string(line.substr(0, 40)) + "\"");
    const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "Tree") {
      const auto index = r.integer<std::int64_t>(value, line_no, "Tree", 0, std::numeric_limits<std::int32_t>::max());
      if (static_cast<std::size_t>(index) != sections.size() - 1)
        r.fail(line_no, "Tree", "trees must be numbered 0, 1, ...; expected Tree=" + std::to_string(sections.size() - 1));
      sections.push_back({"Tree=" + std::to_string(index), line_no, {}});
    } else if (!sections.back().keys.emplace(key, entry{value, line_no}).second) {
      r.fail(line_no, reader::field(sections.back(), key), "appears twice");
    }
    if (last) break;
  }
  if (!ended) r.fail(line_no, "", "no 'end of trees' line: the model is truncated");
  const section& header = sections.front();

  const entry& mfi = r.need(header, "max_feature_idx");
  const auto max_feature = r.integer<std::int64_t>(mfi.value, mfi.line, "max_feature_idx", 0, std::numeric_limits<std::uint32_t>::max() - 1);
  const entry& ncl = r.need(header, "num_class");
  if (r.integer<std::int64_t>(ncl.value, ncl.line, "num_class", 1, std::numeric_limits<std::int32_t>::max()) != 1)
    r.fail(ncl.line, "num_class", "multi-class models are not supported");
  if (const entry* tpi = r.find(header, "num_tree_per_iteration");
      tpi && r.integer<std::int64_t>(tpi->value, tpi->line, "num_tree_per_iteration", 1, std::numeric_limits<std::int32_t>::max()) != 1)
    r.fail(tpi->line, "num_tree_per_iteration", "several trees per iteration (multi-class) are not supported");
  if (const entry* avg = r.find(header, "average_output"))
    r.fail(avg->line, "average_output", "random-forest models (average_output) are not supported");
  const objective_info obj = objective(r, header);

  forest_spec spec;
  spec.num_features = static_cast<std::size_t>(max_feature) + 1;
  spec.acc = accumulation::f64;
  spec.transform = obj.transform;
  spec.sigmoid_scale = obj.sigmoid_scale;
  spec.base_margin = 0.0;
  spec.trees.reserve(sections.size() - 1);
  for (std::size_t t = 1; t < sections.size(); ++t) spec.trees.push_back(read_tree(r, sections[t], spec.num_features));
  try {
    return forest(spec);
  } catch (const forest_error& e) {
    const section& s = sections[e.tree() + 1];
    std::string where;
    if (e.node() != forest_error::no_node) {
      const std::size_t internal = spec.trees[e.tree()].left.size() / 2;  // n = 2·leaves - 1
      where = e.node() < internal ? "internal node " + std::to_string(e.node()) + " " : "leaf " + std::to_string(e.node() - internal) + " ";
    }
    r.fail(s.line, s.name, where + e.message());
  }
}

inline forest load_lightgbm_text(const std::filesystem::path& path) {
  return parse_lightgbm_text(read_model_file(path), path.string());
}

}  // namespace autosync::gbt
