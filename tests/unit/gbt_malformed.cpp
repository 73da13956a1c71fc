// Malformed models: truncated files, wrong types, out-of-range children, cycles, bad feature
// indices, non-finite thresholds, huge counts and unsupported features are rejected with a
// gbt::model_error naming the source, the field (and for LightGBM the line).
#include <autosync/gbt/lightgbm.hpp>
#include <autosync/gbt/xgboost.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

namespace gbt = autosync::gbt;

namespace {

std::string read(const std::string& name) {
  std::ifstream in(std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests" / "data" / "gbt" / name, std::ios::binary);
  REQUIRE_MESSAGE(in, name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return s.replace(at, from.size(), to);
}

template <class Parse>
std::string error_of(Parse&& parse, const std::string& text) {
  try {
    (void)parse(text);
  } catch (const gbt::model_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a model_error) ") + e.what();
  }
  return "(accepted)";
}

std::string xgb(const std::string& text) {
  return error_of([](const std::string& t) { return gbt::parse_xgboost_json(t, "m.json"); }, text);
}
std::string lgb(const std::string& text) {
  return error_of([](const std::string& t) { return gbt::parse_lightgbm_text(t, "m.txt"); }, text);
}

const std::string tree0 = "'learner.gradient_booster.model.trees[0]";

}  // namespace

TEST_CASE("gbt malformed: XGBoost JSON") {
  const std::string ok = read("xgb_hand.json");
  REQUIRE(xgb(ok) == "(accepted)");
  CHECK(xgb(ok.substr(0, ok.size() / 2)).rfind("m.json: not valid JSON: ", 0) == 0);
  CHECK(xgb("") .rfind("m.json: not valid JSON: ", 0) == 0);
  CHECK(xgb("[1, 2]") == "m.json: the model must be a JSON object");
  CHECK(xgb("{}") == "m.json: 'learner': is missing");
  CHECK(xgb(replaced(ok, "\"left_children\": [1, -1, 3, -1, -1]", "\"left_children\": \"x\"")) ==
        "m.json: " + tree0 + ".left_children': must be an array");
  CHECK(xgb(replaced(ok, "\"left_children\": [1, -1, 3, -1, -1]", "\"left_children\": [1, -1, 7, -1, -1]")) ==
        "m.json: " + tree0 + ".left_children[2]': 7 is out of range [-1, 4]");
  CHECK(xgb(replaced(ok, "\"left_children\": [1, -1, 3, -1, -1]", "\"left_children\": [1, -1, 3.5, -1, -1]")) ==
        "m.json: " + tree0 + ".left_children[2]': must be an integer");
  CHECK(xgb(replaced(ok, "\"left_children\": [1, -1, 3, -1, -1]", "\"left_children\": [1, -1, 0, -1, -1]")) ==
        "m.json: " + tree0 + "': node 2 has the root (node 0) as a child: a cycle");
  CHECK(xgb(replaced(ok, "\"left_children\": [1, -1, 3, -1, -1]", "\"left_children\": [1, -1, 1, -1, -1]")) ==
        "m.json: " + tree0 + "': node 1 is a child of both node 0 and node 2");
  CHECK(xgb(replaced(ok, "\"right_children\": [2, -1, 4, -1, -1]", "\"right_children\": [2, -1, -1, -1, -1]")) ==
        "m.json: " + tree0 + ".left_children[2]': a node needs both children or none (left 3, right -1)");
  CHECK(xgb(replaced(ok, "\"split_indices\": [0, 0, 1, 0, 0]", "\"split_indices\": [0, 0, 5, 0, 0]")) ==
        "m.json: " + tree0 + ".split_indices[2]': feature 5 is out of range (num_feature is 2)");
  CHECK(xgb(replaced(ok, "\"split_indices\": [0, 0, 1, 0, 0]", "\"split_indices\": [0, 0, -1, 0, 0]")) ==
        "m.json: " + tree0 + ".split_indices[2]': -1 is out of range [0, 4294967295]");
  CHECK(xgb(replaced(ok, "\"split_conditions\": [5E-1,", "\"split_conditions\": [1E39,")) ==
        "m.json: not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1E39'");  // beyond float
  CHECK(xgb(replaced(ok, "\"split_conditions\": [5E-1,", "\"split_conditions\": [NaN,")).rfind("m.json: not valid JSON", 0) == 0);
  CHECK(xgb(replaced(ok, "\"split_conditions\": [5E-1,", "\"split_conditions\": [null,")) ==
        "m.json: " + tree0 + ".split_conditions[0]': must be a number");
  CHECK(xgb(replaced(ok, "\"split_conditions\": [5E-1, 2.5E-1,", "\"split_conditions\": [5E-1,")) ==
        "m.json: " + tree0 + ".split_conditions': has 4 entries; left_children has 5");
  CHECK(xgb(replaced(ok, "\"default_left\": [1, 0, 0, 0, 0]", "\"default_left\": [1, 0, 0, 0, \"x\"]")) ==
        "m.json: " + tree0 + ".default_left[4]': must be an integer");
  // huge or inconsistent counts
  CHECK(xgb(replaced(ok, "\"num_trees\": \"2\"", "\"num_trees\": \"99999999999\"")) ==
        "m.json: 'learner.gradient_booster.model.gbtree_model_param.num_trees': 99999999999 is too large (at most 4294967295)");
  CHECK(xgb(replaced(ok, "\"num_trees\": \"2\"", "\"num_trees\": \"3\"")) ==
        "m.json: 'learner.gradient_booster.model.gbtree_model_param.num_trees': is 3 but there are 2 trees");
  CHECK(xgb(replaced(ok, "\"num_feature\": \"2\", \"num_target\"", "\"num_feature\": \"18446744073709551616\", \"num_target\"")) ==
        "m.json: 'learner.learner_model_param.num_feature': must be a decimal count, not \"18446744073709551616\"");
  CHECK(xgb(replaced(ok, "\"num_feature\": \"2\", \"num_target\"", "\"num_feature\": \"-2\", \"num_target\"")) ==
        "m.json: 'learner.learner_model_param.num_feature': must be a decimal count, not \"-2\"");
  CHECK(xgb(replaced(ok, "\"num_nodes\": \"5\"", "\"num_nodes\": \"4000000000\"")) ==
        "m.json: " + tree0 + ".tree_param.num_nodes': is 4000000000 but the tree has 5 nodes");
  // unsupported models
  CHECK(xgb(replaced(ok, "\"split_type\": [0, 0, 0, 0, 0]", "\"split_type\": [0, 0, 1, 0, 0]")) ==
        "m.json: " + tree0 + ".split_type[2]': categorical splits are not supported");
  CHECK(xgb(replaced(ok, "\"name\": \"gbtree\"", "\"name\": \"dart\"")) ==
        "m.json: 'learner.gradient_booster.name': dart boosters are not supported (their trees carry drop weights); use gbtree");
  CHECK(xgb(replaced(ok, "\"name\": \"gbtree\"", "\"name\": \"gblinear\"")) ==
        "m.json: 'learner.gradient_booster.name': booster 'gblinear' is not supported (only gbtree)");
  CHECK(xgb(replaced(ok, "\"num_class\": \"0\"", "\"num_class\": \"3\"")) ==
        "m.json: 'learner.learner_model_param.num_class': multi-class models are not supported");
  CHECK(xgb(replaced(ok, "\"num_target\": \"1\"", "\"num_target\": \"2\"")) ==
        "m.json: 'learner.learner_model_param.num_target': multi-target models are not supported");
  CHECK(xgb(replaced(ok, "\"tree_info\": [0, 0]", "\"tree_info\": [0, 1]")) ==
        "m.json: 'learner.gradient_booster.model.tree_info[1]': trees of several output groups (multi-class) are not supported");
  CHECK(xgb(replaced(ok, "\"binary:logistic\"", "\"multi:softprob\"")).find("objective 'multi:softprob' is not supported (supported: ") !=
        std::string::npos);
  CHECK(xgb(replaced(ok, "\"base_score\": \"5E-1\"", "\"base_score\": \"1.5E0\"")) ==
        "m.json: 'learner.learner_model_param.base_score': must be in (0, 1) for a logistic objective");
  CHECK(xgb(replaced(ok, "\"base_score\": \"5E-1\"", "\"base_score\": \"half\"")) ==
        "m.json: 'learner.learner_model_param.base_score': must be a number in a string, not \"half\"");
  CHECK(xgb(replaced(ok, "\"base_score\": \"5E-1\"", "\"base_score\": \"[5E-1]\"")) == "(accepted)");  // XGBoost 2.x
  // The file loader names the file.
  CHECK_THROWS_WITH_AS(gbt::load_xgboost_json("no/such/model.json"), "no/such/model.json: cannot open the file", gbt::model_error);
}

TEST_CASE("gbt malformed: LightGBM text") {
  const std::string ok = read("lgb_binary.txt");
  REQUIRE(lgb(ok) == "(accepted)");
  CHECK(lgb(ok.substr(0, ok.find("Tree=2"))) == "m.txt:50: no 'end of trees' line: the model is truncated");
  CHECK(lgb("") == "m.txt:1: not a LightGBM text model (the first line must be 'tree')");
  CHECK(lgb("{\"learner\": 1}") == "m.txt:1: not a LightGBM text model (the first line must be 'tree')");
  CHECK(lgb(replaced(ok, "threshold=0.5 0.75", "threshold=0.5 abc")) == "m.txt:17: 'Tree=0.threshold[1]': must be a number, not \"abc\"");
  CHECK(lgb(replaced(ok, "threshold=0.5 0.75", "threshold=nan 0.75")) == "m.txt:17: 'Tree=0.threshold[0]': is not a finite double");
  CHECK(lgb(replaced(ok, "threshold=0.5 0.75", "threshold=0.5 1e400")) == "m.txt:17: 'Tree=0.threshold[1]': is not a finite double");
  CHECK(lgb(replaced(ok, "threshold=0.5 0.75", "threshold=0.5")) == "m.txt:17: 'Tree=0.threshold': has 1 entries; num_leaves implies 2");
  CHECK(lgb(replaced(ok, "threshold=0.5 0.75", "threshold=0.5 0.75 1")) ==
        "m.txt:17: 'Tree=0.threshold': has more than the 2 entries num_leaves implies");
  CHECK(lgb(replaced(ok, "left_child=1 -1", "left_child=5 -1")) == "m.txt:19: 'Tree=0.left_child[0]': 5 is out of range [-3, 1]");
  CHECK(lgb(replaced(ok, "left_child=1 -1", "left_child=1 -4")) == "m.txt:19: 'Tree=0.left_child[1]': -4 is out of range [-3, 1]");
  CHECK(lgb(replaced(ok, "left_child=1 -1", "left_child=1 0")) == "m.txt:12: 'Tree=0': internal node 1 has the root (node 0) as a child: a cycle");
  CHECK(lgb(replaced(ok, "right_child=-2 -3", "right_child=1 -3")) == "m.txt:12: 'Tree=0': internal node 0 both children are node 1");
  CHECK(lgb(replaced(ok, "right_child=-2 -3", "right_child=-1 -3")) == "m.txt:12: 'Tree=0': leaf 0 is a child of both node 0 and node 1");
  CHECK(lgb(replaced(ok, "split_feature=0 1", "split_feature=0 3")) ==
        "m.txt:15: 'Tree=0.split_feature[1]': feature 3 is out of range (max_feature_idx is 2)");
  CHECK(lgb(replaced(ok, "split_feature=0 1", "split_feature=0 x")) == "m.txt:15: 'Tree=0.split_feature[1]': must be an integer, not \"x\"");
  // huge counts
  CHECK(lgb(replaced(ok, "num_leaves=3", "num_leaves=1000000000")) == "m.txt:13: 'Tree=0.num_leaves': 1000000000 is out of range [1, 536870912]");
  CHECK(lgb(replaced(ok, "num_leaves=3", "num_leaves=400")) == "m.txt:21: 'Tree=0.leaf_value': has 3 entries; num_leaves implies 400");
  CHECK(lgb(replaced(ok, "num_leaves=3", "num_leaves=99999999999999999999")) ==
        "m.txt:13: 'Tree=0.num_leaves': 99999999999999999999 is out of range [1, 536870912]");
  CHECK(lgb(replaced(ok, "max_feature_idx=2", "max_feature_idx=99999999999")) ==
        "m.txt:6: 'max_feature_idx': 99999999999 is out of range [0, 4294967294]");
  CHECK(lgb(replaced(ok, "num_leaves=3\n", "")) == "m.txt:12: 'Tree=0.num_leaves': is missing");
  CHECK(lgb(replaced(ok, "max_feature_idx=2\n", "")) == "m.txt:1: 'max_feature_idx': is missing");
  // structure of the file
  CHECK(lgb(replaced(ok, "Tree=1", "Tree=7")) == "m.txt:31: 'Tree': trees must be numbered 0, 1, ...; expected Tree=1");
  CHECK(lgb(replaced(ok, "num_cat=0\nsplit_feature=0 1", "num_leaves=3\nsplit_feature=0 1")) == "m.txt:14: 'Tree=0.num_leaves': appears twice");
  CHECK(lgb(replaced(ok, "tree_sizes=420 330 360\n", "tree_sizes=420 330 360\ngarbage\n")) == "m.txt:11: expected 'key=value', not \"garbage\"");
  // unsupported models
  CHECK(lgb(replaced(ok, "decision_type=10 4", "decision_type=11 4")) == "m.txt:18: 'Tree=0.decision_type[0]': categorical splits are not supported");
  CHECK(lgb(replaced(ok, "decision_type=10 4", "decision_type=10 12")) == "m.txt:18: 'Tree=0.decision_type[1]': missing type 3 is not defined");
  CHECK(lgb(replaced(ok, "num_leaves=3\nnum_cat=0", "num_leaves=3\nnum_cat=1")) == "m.txt:14: 'Tree=0.num_cat': categorical splits are not supported");
  CHECK(lgb(replaced(ok, "is_linear=0\nshrinkage=1\n\n\nTree=1", "is_linear=1\nshrinkage=1\n\n\nTree=1")) ==
        "m.txt:27: 'Tree=0.is_linear': linear trees are not supported");
  CHECK(lgb(replaced(ok, "num_class=1", "num_class=3")) == "m.txt:3: 'num_class': multi-class models are not supported");
  CHECK(lgb(replaced(ok, "num_tree_per_iteration=1", "num_tree_per_iteration=3")) ==
        "m.txt:4: 'num_tree_per_iteration': several trees per iteration (multi-class) are not supported");
  CHECK(lgb(replaced(ok, "label_index=0", "average_output")) == "m.txt:5: expected 'key=value', not \"average_output\"");
  CHECK(lgb(replaced(ok, "label_index=0", "average_output=")) == "m.txt:5: 'average_output': random-forest models (average_output) are not supported");
  CHECK(lgb(replaced(ok, "objective=binary sigmoid:2", "objective=multiclass num_class:3")).find("objective 'multiclass' is not supported") !=
        std::string::npos);
  CHECK(lgb(replaced(ok, "objective=binary sigmoid:2", "objective=binary")) == "m.txt:7: 'objective': 'binary' without a 'sigmoid:' parameter");
  CHECK(lgb(replaced(ok, "objective=binary sigmoid:2", "objective=binary sigmoid:-1")) == "m.txt:7: 'objective.sigmoid': must be positive");
  CHECK(lgb(replaced(ok, "objective=binary sigmoid:2", "objective=regression sqrt")) ==
        "m.txt:7: 'objective': 'regression sqrt' (a square-root-transformed label) is not supported");
  CHECK_THROWS_WITH_AS(gbt::load_lightgbm_text("no/such/model.txt"), "no/such/model.txt: cannot open the file", gbt::model_error);
}

TEST_CASE("gbt malformed: CRLF line ends and a model without trees are fine") {
  std::string crlf;
  for (const char c : read("lgb_regression.txt")) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  const auto f = gbt::parse_lightgbm_text(crlf);
  CHECK(f.num_trees() == 2);
  const auto empty = gbt::parse_lightgbm_text("tree\nnum_class=1\nmax_feature_idx=0\nobjective=regression\n\nend of trees\n");
  CHECK(empty.num_trees() == 0);
  const float row[] = {1.0f};
  CHECK(empty.predict(row) == 0.0f);
}
