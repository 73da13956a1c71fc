// The XGBoost loader against XGBoost itself: boosters trained through the C API at test time on
// random data with NaNs (so default directions matter), saved as JSON, loaded with
// gbt::parse_xgboost_json, and predicted by both on the same rows — fresh rows, not the training
// set, through XGBoosterPredict on a new DMatrix and through XGBoosterPredictFromDense.
//
// Agreement is exact (bit for bit): the loader reads thresholds and leaves as the floats XGBoost
// wrote, walks the same `x < threshold` / default-left rule, adds the trees in the same order in
// float, and the sigmoid/exp use the same float functions of the same C library.
// Built only with autosync::xgboost (Debian's libxgboost-dev).
#ifdef AUTOSYNC_HAS_XGBOOST

#include "gbt_xgboost_support.hpp"

#include <autosync/gbt/xgboost.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

namespace {

struct agreement {
  std::size_t rows = 0, equal_margin = 0, equal_pred = 0, equal_dense = 0;
};

agreement compare(const std::string& objective, const std::string& kind, int depth, int rounds, std::uint64_t seed,
                  const std::string& base_score = "") {
  const std::size_t n_train = 2000, n_test = 1500, m = 8;
  const auto x = gbt_test::random_rows(n_train, m, 0.15, seed);
  const auto y = gbt_test::labels(x, n_train, m, kind, seed + 1);
  const gbt_test::dmatrix d(x, n_train, m);
  gbt_test::xgb_check(XGDMatrixSetFloatInfo(d.get(), "label", y.data(), n_train), "label");
  gbt_test::booster b(d);
  gbt_test::train(b, d,
                  {{"objective", objective}, {"max_depth", std::to_string(depth)}, {"eta", "0.3"}, {"tree_method", "hist"},
                   {"nthread", "1"}, {"seed", std::to_string(seed)}, {"subsample", "0.9"}},
                  0);
  if (!base_score.empty()) b.set("base_score", base_score);  // stored in output space; the link makes the margin
  gbt_test::train(b, d, {}, rounds);
  const std::string json = b.save_json();
  // What XGBoost predicts from the saved file, not from the booster's training-time state.
  gbt_test::booster reloaded;
  reloaded.load_json(json);

  const autosync::gbt::forest f = autosync::gbt::parse_xgboost_json(json, objective + ".json");
  CHECK(f.num_trees() == static_cast<std::size_t>(rounds));
  CHECK(f.num_features() == m);
  if (!base_score.empty()) CHECK(f.base_margin() != 0.0);  // the setting reached the saved model

  auto t = gbt_test::random_rows(n_test, m, 0.2, seed + 2);
  t[0] = 1e30f;  // far outside the training range
  t[1] = -1e30f;
  const auto ref_margin = reloaded.predict(t, n_test, m, true);
  const auto ref_pred = reloaded.predict(t, n_test, m, false);
  const auto ref_dense = reloaded.predict_dense(t, n_test, m, false);
  REQUIRE(ref_margin.size() == n_test);
  REQUIRE(ref_pred.size() == n_test);

  std::vector<float> batch(n_test), batch_margin(n_test);
  f.predict(t, n_test, batch);
  f.predict_margin(t, n_test, batch_margin);
  agreement a;
  a.rows = n_test;
  for (std::size_t i = 0; i < n_test; ++i) {
    const std::span<const float> row(&t[i * m], m);
    const float margin = f.predict_margin(row), pred = f.predict(row);
    a.equal_margin += std::bit_cast<std::uint32_t>(margin) == std::bit_cast<std::uint32_t>(ref_margin[i]);
    a.equal_pred += std::bit_cast<std::uint32_t>(pred) == std::bit_cast<std::uint32_t>(ref_pred[i]);
    a.equal_dense += std::bit_cast<std::uint32_t>(pred) == std::bit_cast<std::uint32_t>(ref_dense[i]);
    // batch == single row, bit for bit
    CHECK(std::bit_cast<std::uint32_t>(batch[i]) == std::bit_cast<std::uint32_t>(pred));
    CHECK(std::bit_cast<std::uint32_t>(batch_margin[i]) == std::bit_cast<std::uint32_t>(margin));
    if (std::bit_cast<std::uint32_t>(pred) != std::bit_cast<std::uint32_t>(ref_pred[i]))
      MESSAGE(objective << " row " << i << ": autosync " << pred << " (margin " << margin << "), xgboost " << ref_pred[i] << " (margin "
                        << ref_margin[i] << ")");
  }
  return a;
}

}  // namespace

TEST_CASE("gbt xgboost C API: predictions agree bit for bit (100 trees, depth 6, NaNs)") {
  struct cfg {
    const char* objective;
    const char* kind;
    int depth;
  };
  for (const cfg c : {cfg{"reg:squarederror", "real", 6}, cfg{"binary:logistic", "binary", 6}, cfg{"binary:logitraw", "binary", 4},
                      cfg{"count:poisson", "count", 5}, cfg{"reg:pseudohubererror", "real", 3}}) {
    CAPTURE(c.objective);
    const agreement a = compare(c.objective, c.kind, c.depth, 100, 7);
    CHECK(a.equal_margin == a.rows);
    CHECK(a.equal_pred == a.rows);
    CHECK(a.equal_dense == a.rows);
  }
}

TEST_CASE("gbt xgboost C API: base_score other than 0.5 goes through the objective's link") {
  for (const auto& [objective, kind, base] : {std::tuple{"binary:logistic", "binary", "0.3"}, std::tuple{"count:poisson", "count", "2.5"},
                                              std::tuple{"reg:squarederror", "real", "1.7"}, std::tuple{"binary:logitraw", "binary", "0.2"}}) {
    CAPTURE(objective);
    const agreement a = compare(objective, kind, 3, 10, 21, base);
    CHECK(a.equal_margin == a.rows);
    CHECK(a.equal_pred == a.rows);
  }
}

TEST_CASE("gbt xgboost C API: shallow and single-leaf trees, several seeds") {
  for (std::uint64_t seed = 11; seed < 14; ++seed) {
    const agreement a = compare("binary:logistic", "binary", 1, 20, seed);
    CHECK(a.equal_pred == a.rows);
  }
  // min_child_weight so large that no split is allowed: every tree is a single leaf.
  const std::size_t n = 50, m = 3;
  const auto x = gbt_test::random_rows(n, m, 0.1, 5);
  const auto y = gbt_test::labels(x, n, m, "real", 6);
  const gbt_test::dmatrix d(x, n, m);
  gbt_test::xgb_check(XGDMatrixSetFloatInfo(d.get(), "label", y.data(), n), "label");
  gbt_test::booster b(d);
  gbt_test::train(b, d, {{"objective", "reg:squarederror"}, {"min_child_weight", "1000"}, {"nthread", "1"}}, 5);
  const auto f = autosync::gbt::parse_xgboost_json(b.save_json());
  CHECK(f.num_nodes() == 0);
  CHECK(f.num_leaves() == 5);
  const auto ref = b.predict(x, n, m, false);
  for (std::size_t i = 0; i < n; ++i) CHECK(f.predict(std::span<const float>(&x[i * m], m)) == ref[i]);
}

#endif  // AUTOSYNC_HAS_XGBOOST

#ifdef AUTOSYNC_HAS_XGBOOST
TEST_CASE("gbt xgboost C API: the hand-written fixture is a model XGBoost loads and predicts the same way") {
  std::ifstream in(std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests" / "data" / "gbt" / "xgb_hand.json", std::ios::binary);
  REQUIRE(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  gbt_test::booster b;
  b.load_json(ss.str());
  const auto f = autosync::gbt::parse_xgboost_json(ss.str());
  const float nan = std::nanf("");
  const std::vector<float> rows = {0.25f, 7.0f, 0.5f, -1.0f, 0.5f, -1.5f, nan, 0.0f, 1.0f, nan, nan, nan};
  const auto ref = b.predict(rows, 6, 2, false);
  std::vector<float> ours(6);
  f.predict(rows, 6, ours);
  for (std::size_t i = 0; i < 6; ++i) CHECK(std::bit_cast<std::uint32_t>(ours[i]) == std::bit_cast<std::uint32_t>(ref[i]));
}
#endif

#ifdef AUTOSYNC_HAS_XGBOOST
TEST_CASE("gbt xgboost C API: extreme margins (sigmoid saturation) agree with XGBoost") {
  std::ifstream in(std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests" / "data" / "gbt" / "xgb_hand.json", std::ios::binary);
  REQUIRE(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  // Leaves far beyond expf's range: margins of -120, +95 and -87 (just inside).
  std::string text = ss.str();
  const std::string from = "\"split_conditions\": [5E-1, 2.5E-1, -1E0, -5E-1, 7.5E-1]";
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), "\"split_conditions\": [5E-1, -1.20125E2, -1E0, -8.7125E1, 9.4875E1]");
  gbt_test::booster b;
  b.load_json(text);
  const auto f = autosync::gbt::parse_xgboost_json(text);
  const std::vector<float> rows = {0.25f, 0.0f, 0.5f, -1.5f, 0.5f, 0.0f};
  const auto ref = b.predict(rows, 3, 2, false);
  const auto ref_margin = b.predict(rows, 3, 2, true);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::span<const float> row(&rows[i * 2], 2);
    CAPTURE(i);
    CHECK(f.predict_margin(row) == ref_margin[i]);
    CHECK(std::bit_cast<std::uint32_t>(f.predict(row)) == std::bit_cast<std::uint32_t>(ref[i]));
  }
}
#endif
