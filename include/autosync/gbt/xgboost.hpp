// autosync/gbt/xgboost.hpp — load an XGBoost model saved as JSON (`save_model("x.json")`,
// XGBoosterSaveModel with a .json name) into a gbt::forest. Reads the format of XGBoost 1.7 and
// 2.x; needs nlohmann-json, never XGBoost itself.
//
// What is read:
//   learner.learner_model_param   num_feature; base_score (a string, "5E-1" in 1.7, "[5E-1]" in
//                                 2.x); num_class and num_target must be 0 or 1
//   learner.objective.name        the output transform and the link that turns base_score (stored
//                                 in output space) into the base margin:
//       reg:squarederror reg:linear reg:squaredlogerror reg:pseudohubererror reg:absoluteerror
//                                   identity          margin = base_score
//       binary:logistic reg:logistic sigmoid          margin = -log(1/base_score - 1)
//       binary:logitraw              identity          margin = base_score (as XGBoost 1.7 does)
//       count:poisson reg:gamma reg:tweedie  exp       margin = log(base_score)
//     anything else (multi:*, rank:*, survival:*, binary:hinge, reg:quantileerror) is rejected.
//   learner.gradient_booster      name "gbtree" (dart and gblinear are rejected); model.trees[t]:
//       left_children, right_children  child node numbers, -1 for a leaf
//       split_indices                  feature of an internal node
//       split_conditions               threshold of an internal node, value of a leaf
//       default_left                   where a missing value goes
//       base_weights                   checked for length only: they are the leaf weights before
//                                      the learning rate, not what prediction adds
//       split_type, categories         must be numerical (0) and empty: categorical splits are
//                                      rejected
//     model.tree_info must be all 0 (one output group).
// Prediction then follows XGBoost's CPU predictor: `x < threshold` goes left, NaN goes to the
// default child, the margin is base margin + trees in order, accumulated in float, and the
// transforms are evaluated in float (expf). Numbers are parsed as float (strtof), the type XGBoost
// wrote them from, so thresholds and leaves are bit-identical.
//
// Every error is a gbt::model_error "source: 'field.path': what is wrong".
#pragma once

#include <autosync/gbt/forest.hpp>
#include <autosync/gbt/model_error.hpp>

#include <nlohmann/json.hpp>

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

namespace detail::xgb {

// Numbers as float: nlohmann's lexer then uses strtof, the inverse of XGBoost's float printing.
using json = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t, std::uint64_t, float>;

struct reader {
  std::string_view source;

  [[noreturn]] void fail(const std::string& field, const std::string& message) const { throw model_error(source, 0, field, message); }

  const json& member(const json& obj, const char* key, const std::string& path) const {
    if (!obj.is_object()) fail(path, "must be an object");
    const auto it = obj.find(key);
    if (it == obj.end()) fail(path.empty() ? key : path + "." + key, "is missing");
    return *it;
  }
  const json* optional_member(const json& obj, const char* key) const {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  const json& array(const json& obj, const char* key, const std::string& path) const {
    const json& a = member(obj, key, path);
    if (!a.is_array()) fail(path + "." + key, "must be an array");
    return a;
  }
  std::string string(const json& obj, const char* key, const std::string& path) const {
    const json& s = member(obj, key, path);
    if (!s.is_string()) fail(path + "." + key, "must be a string");
    return s.get<std::string>();
  }
  // XGBoost writes counts as decimal strings ("num_feature": "10").
  std::uint64_t count_string(const json& obj, const char* key, const std::string& path, std::uint64_t max) const {
    const std::string s = string(obj, key, path);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty())
      fail(path + "." + key, "must be a decimal count, not \"" + s + "\"");
    if (v > max) fail(path + "." + key, std::to_string(v) + " is too large (at most " + std::to_string(max) + ")");
    return v;
  }
  std::int64_t integer(const json& v, const std::string& field, std::int64_t lo, std::int64_t hi) const {
    std::int64_t x = 0;
    if (v.is_number_integer() && !v.is_number_unsigned())
      x = v.get<std::int64_t>();
    else if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(hi)) fail(field, std::to_string(u) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      x = static_cast<std::int64_t>(u);
    } else
      fail(field, "must be an integer");
    if (x < lo || x > hi) fail(field, std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  float number(const json& v, const std::string& field) const {
    float x = 0;
    if (v.is_number_float())
      x = v.get<float>();
    else if (v.is_number_integer() && !v.is_number_unsigned())
      x = static_cast<float>(v.get<std::int64_t>());
    else if (v.is_number_unsigned())
      x = static_cast<float>(v.get<std::uint64_t>());
    else
      fail(field, "must be a number");
    if (!std::isfinite(x)) fail(field, "is not a finite float");
    return x;
  }
};

inline float parse_float_text(const reader& r, std::string s, const std::string& field) {
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);  // XGBoost 2.x: "[5E-1]"
  float v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) r.fail(field, "must be a number in a string, not \"" + s + "\"");
  if (!std::isfinite(v)) r.fail(field, "is not finite");
  return v;
}

enum class link : std::uint8_t { identity, logit, log };

struct objective_info {
  output_transform transform;
  link base_link;
};

inline bool objective_of(std::string_view name, objective_info& out) {
  struct entry {
    std::string_view name;
    objective_info info;
  };
  static constexpr entry table[] = {
      {"reg:squarederror", {output_transform::identity, link::identity}},
      {"reg:linear", {output_transform::identity, link::identity}},
      {"reg:squaredlogerror", {output_transform::identity, link::identity}},
      {"reg:pseudohubererror", {output_transform::identity, link::identity}},
      {"reg:absoluteerror", {output_transform::identity, link::identity}},
      {"binary:logistic", {output_transform::sigmoid, link::logit}},
      {"reg:logistic", {output_transform::sigmoid, link::logit}},
      {"binary:logitraw", {output_transform::identity, link::identity}},  // XGBoost 1.7: base_score is the margin
      {"count:poisson", {output_transform::exp, link::log}},
      {"reg:gamma", {output_transform::exp, link::log}},
      {"reg:tweedie", {output_transform::exp, link::log}},
  };
  for (const auto& e : table)
    if (e.name == name) {
      out = e.info;
      return true;
    }
  return false;
}

inline constexpr const char* supported_objectives =
    "reg:squarederror, reg:linear, reg:squaredlogerror, reg:pseudohubererror, reg:absoluteerror, binary:logistic, reg:logistic, "
    "binary:logitraw, count:poisson, reg:gamma, reg:tweedie";

// Turns XGBoost's stored base_score (output space) into the base margin, in float as XGBoost's
// ProbToMargin does.
inline float base_margin(const reader& r, link l, float base_score, const std::string& field) {
  switch (l) {
    case link::identity: return base_score;
    case link::logit:
      if (!(base_score > 0.0f && base_score < 1.0f)) r.fail(field, "must be in (0, 1) for a logistic objective");
      return -std::log(1.0f / base_score - 1.0f);
    case link::log:
      if (!(base_score > 0.0f)) r.fail(field, "must be positive for a log-link objective");
      return std::log(base_score);
  }
  return base_score;
}

inline tree_nodes read_tree(const reader& r, const json& tree, const std::string& path, std::size_t num_features) {
  if (!tree.is_object()) r.fail(path, "must be an object");
  const json& left = r.array(tree, "left_children", path);
  const json& right = r.array(tree, "right_children", path);
  const json& split_indices = r.array(tree, "split_indices", path);
  const json& split_conditions = r.array(tree, "split_conditions", path);
  const json& default_left = r.array(tree, "default_left", path);
  const std::size_t n = left.size();
  if (n == 0) r.fail(path + ".left_children", "is empty: a tree needs at least a root");
  if (n > forest::max_nodes) r.fail(path + ".left_children", "has too many nodes");
  const auto same_length = [&](const json& a, const char* name) {
    if (a.size() != n)
      r.fail(path + "." + name, "has " + std::to_string(a.size()) + " entries; left_children has " + std::to_string(n));
  };
  same_length(right, "right_children");
  same_length(split_indices, "split_indices");
  same_length(split_conditions, "split_conditions");
  same_length(default_left, "default_left");
  if (const json* bw = r.optional_member(tree, "base_weights")) {
    if (!bw->is_array()) r.fail(path + ".base_weights", "must be an array");
    same_length(*bw, "base_weights");
  }
  if (const json* tp = r.optional_member(tree, "tree_param")) {
    const std::string tpp = path + ".tree_param";
    const auto nodes = r.count_string(*tp, "num_nodes", tpp, std::numeric_limits<std::uint32_t>::max());
    if (nodes != n) r.fail(tpp + ".num_nodes", "is " + std::to_string(nodes) + " but the tree has " + std::to_string(n) + " nodes");
    if (r.optional_member(*tp, "size_leaf_vector") && r.count_string(*tp, "size_leaf_vector", tpp, 1u << 20) > 1)
      r.fail(tpp + ".size_leaf_vector", "vector leaves (multi-target trees) are not supported");
  }
  if (const json* st = r.optional_member(tree, "split_type")) {
    if (!st->is_array()) r.fail(path + ".split_type", "must be an array");
    same_length(*st, "split_type");
    for (std::size_t i = 0; i < n; ++i)
      if (r.integer((*st)[i], path + ".split_type[" + std::to_string(i) + "]", 0, 1) != 0)
        r.fail(path + ".split_type[" + std::to_string(i) + "]", "categorical splits are not supported");
  }
  if (const json* cats = r.optional_member(tree, "categories"); cats && !(cats->is_array() && cats->empty()))
    r.fail(path + ".categories", "categorical splits are not supported");

  tree_nodes t;
  t.left.resize(n);
  t.right.resize(n);
  t.feature.resize(n);
  t.threshold.resize(n);
  t.flags.resize(n);
  t.value.resize(n);
  const auto max_child = static_cast<std::int64_t>(n) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    t.left[i] = static_cast<std::int32_t>(r.integer(left[i], path + ".left_children" + at, -1, max_child));
    t.right[i] = static_cast<std::int32_t>(r.integer(right[i], path + ".right_children" + at, -1, max_child));
    const float c = r.number(split_conditions[i], path + ".split_conditions" + at);
    const bool leaf = t.left[i] == -1;
    if ((t.right[i] == -1) != leaf)
      r.fail(path + (leaf ? ".right_children" : ".left_children") + at, "a node needs both children or none (left " +
                                                                        std::to_string(t.left[i]) + ", right " + std::to_string(t.right[i]) + ")");
    const json& dl = default_left[i];
    bool dleft = false;
    if (dl.is_boolean())
      dleft = dl.get<bool>();
    else
      dleft = r.integer(dl, path + ".default_left" + at, 0, 1) != 0;
    if (leaf) {
      t.value[i] = c;
      // Deleted (pruned) nodes carry split index 2^31 - 1; a leaf's index is not used.
      (void)r.integer(split_indices[i], path + ".split_indices" + at, 0, std::numeric_limits<std::uint32_t>::max());
      continue;
    }
    const auto f = r.integer(split_indices[i], path + ".split_indices" + at, 0, std::numeric_limits<std::uint32_t>::max());
    if (static_cast<std::uint64_t>(f) >= num_features)
      r.fail(path + ".split_indices" + at, "feature " + std::to_string(f) + " is out of range (num_feature is " + std::to_string(num_features) + ")");
    t.feature[i] = static_cast<std::uint32_t>(f);
    t.threshold[i] = c;
    t.flags[i] = dleft ? node_flag::default_left : std::uint8_t{0};
  }
  return t;
}

}  // namespace detail::xgb

inline forest parse_xgboost_json(std::string_view text, std::string_view source = "<string>") {
  using detail::xgb::json;
  const detail::xgb::reader r{source};
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    r.fail("", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) r.fail("", "the model must be a JSON object");
  const json& learner = r.member(root, "learner", "");
  const std::string lp = "learner";
  const json& param = r.member(learner, "learner_model_param", lp);
  const std::string pp = lp + ".learner_model_param";
  const auto num_features = r.count_string(param, "num_feature", pp, std::numeric_limits<std::uint32_t>::max());
  if (r.optional_member(param, "num_class") && r.count_string(param, "num_class", pp, std::numeric_limits<std::uint32_t>::max()) > 1)
    r.fail(pp + ".num_class", "multi-class models are not supported");
  if (r.optional_member(param, "num_target") && r.count_string(param, "num_target", pp, std::numeric_limits<std::uint32_t>::max()) > 1)
    r.fail(pp + ".num_target", "multi-target models are not supported");
  const float base_score = detail::xgb::parse_float_text(r, r.string(param, "base_score", pp), pp + ".base_score");

  const std::string objective = r.string(r.member(learner, "objective", lp), "name", lp + ".objective");
  detail::xgb::objective_info obj{};
  if (!detail::xgb::objective_of(objective, obj))
    r.fail(lp + ".objective.name", "objective '" + objective + "' is not supported (supported: " + detail::xgb::supported_objectives + ")");

  const json& booster = r.member(learner, "gradient_booster", lp);
  const std::string bp = lp + ".gradient_booster";
  const std::string booster_name = r.string(booster, "name", bp);
  if (booster_name == "dart") r.fail(bp + ".name", "dart boosters are not supported (their trees carry drop weights); use gbtree");
  if (booster_name != "gbtree") r.fail(bp + ".name", "booster '" + booster_name + "' is not supported (only gbtree)");
  const json& model = r.member(booster, "model", bp);
  const std::string mp = bp + ".model";
  const json& trees = r.array(model, "trees", mp);
  if (const json* mparam = r.optional_member(model, "gbtree_model_param")) {
    const auto declared = r.count_string(*mparam, "num_trees", mp + ".gbtree_model_param", std::numeric_limits<std::uint32_t>::max());
    if (declared != trees.size())
      r.fail(mp + ".gbtree_model_param.num_trees", "is " + std::to_string(declared) + " but there are " + std::to_string(trees.size()) + " trees");
  }
  if (const json* info = r.optional_member(model, "tree_info")) {
    if (!info->is_array()) r.fail(mp + ".tree_info", "must be an array");
    if (info->size() != trees.size())
      r.fail(mp + ".tree_info", "has " + std::to_string(info->size()) + " entries for " + std::to_string(trees.size()) + " trees");
    for (std::size_t i = 0; i < info->size(); ++i)
      if (r.integer((*info)[i], mp + ".tree_info[" + std::to_string(i) + "]", 0, std::numeric_limits<std::int32_t>::max()) != 0)
        r.fail(mp + ".tree_info[" + std::to_string(i) + "]", "trees of several output groups (multi-class) are not supported");
  }

  forest_spec spec;
  spec.num_features = num_features;
  spec.acc = accumulation::f32;
  spec.transform = obj.transform;
  spec.base_margin = detail::xgb::base_margin(r, obj.base_link, base_score, pp + ".base_score");
  spec.trees.reserve(trees.size());
  for (std::size_t t = 0; t < trees.size(); ++t)
    spec.trees.push_back(detail::xgb::read_tree(r, trees[t], mp + ".trees[" + std::to_string(t) + "]", num_features));
  try {
    return forest(spec);
  } catch (const forest_error& e) {
    r.fail(mp + ".trees[" + std::to_string(e.tree()) + "]",
           (e.node() == forest_error::no_node ? std::string() : "node " + std::to_string(e.node()) + " ") + e.message());
  } catch (const model_error&) {
    throw;
  } catch (const error& e) {
    r.fail("", e.what());
  }
}

inline forest load_xgboost_json(const std::filesystem::path& path) {
  return parse_xgboost_json(read_model_file(path), path.string());
}

}  // namespace autosync::gbt
