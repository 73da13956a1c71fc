// The loaders on the checked-in models of tests/data/gbt/:
//   xgb_{regression,logistic,poisson}.json   trained by XGBoost 1.7.4 (generate_fixtures.cpp), with
//                                            XGBoost's own margins and predictions on 64 rows
//                                            with NaNs (.expected.txt): must agree bit for bit
//   xgb_hand.json, lgb_*.txt                 written by hand; predictions computed by hand below
#include <autosync/gbt/lightgbm.hpp>
#include <autosync/gbt/xgboost.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

namespace gbt = autosync::gbt;

namespace {

std::filesystem::path data(const std::string& name) { return std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests" / "data" / "gbt" / name; }

struct expected_rows {
  std::size_t features = 0;
  std::vector<float> rows, margin, pred;
};

// "x0 x1 ... | margin prediction" per line, hexadecimal floats, "nan" for missing.
expected_rows read_expected(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in, p.string());
  expected_rows e;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string tok;
    std::size_t n = 0;
    bool after_bar = false;
    std::vector<float> tail;
    while (ss >> tok) {
      if (tok == "|") {
        after_bar = true;
        continue;
      }
      const float v = std::strtof(tok.c_str(), nullptr);
      if (after_bar)
        tail.push_back(v);
      else {
        e.rows.push_back(v);
        ++n;
      }
    }
    REQUIRE(tail.size() == 2);
    if (e.features == 0) e.features = n;
    REQUIRE(n == e.features);
    e.margin.push_back(tail[0]);
    e.pred.push_back(tail[1]);
  }
  return e;
}

bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

}  // namespace

TEST_CASE("gbt fixtures: XGBoost-trained models agree with XGBoost's predictions bit for bit") {
  for (const char* name : {"regression", "logistic", "poisson"}) {
    CAPTURE(name);
    const auto f = gbt::load_xgboost_json(data(std::string("xgb_") + name + ".json"));
    const auto e = read_expected(data(std::string("xgb_") + name + ".expected.txt"));
    REQUIRE(f.num_features() == e.features);
    const std::size_t n = e.margin.size();
    REQUIRE(n == 64);
    std::size_t nan_rows = 0;
    std::vector<float> batch(n);
    f.predict(e.rows, n, batch);
    for (std::size_t i = 0; i < n; ++i) {
      const std::span<const float> row(&e.rows[i * e.features], e.features);
      for (const float v : row) nan_rows += std::isnan(v) ? 1 : 0;
      CHECK(same_bits(f.predict_margin(row), e.margin[i]));
      CHECK(same_bits(f.predict(row), e.pred[i]));
      CHECK(same_bits(batch[i], e.pred[i]));
    }
    CHECK(nan_rows > 20);  // the default directions are exercised
  }
  const auto reg = gbt::load_xgboost_json(data("xgb_regression.json"));
  CHECK(reg.num_trees() == 8);
  CHECK(reg.transform() == gbt::output_transform::identity);
  CHECK(reg.accumulation_type() == gbt::accumulation::f32);
  const auto logistic = gbt::load_xgboost_json(data("xgb_logistic.json"));
  CHECK(logistic.transform() == gbt::output_transform::sigmoid);
  CHECK(gbt::load_xgboost_json(data("xgb_poisson.json")).transform() == gbt::output_transform::exp);
}

TEST_CASE("gbt fixtures: hand-written XGBoost model, predictions by hand") {
  // tree 0: f0 < 0.5 (missing left) ? 0.25 : (f1 < -1 (missing right) ? -0.5 : 0.75); tree 1: 0.125.
  // binary:logistic, base_score 0.5 -> base margin -log(1/0.5 - 1) = 0.
  const auto f = gbt::load_xgboost_json(data("xgb_hand.json"));
  CHECK(f.num_features() == 2);
  CHECK(f.num_trees() == 2);
  CHECK(f.num_nodes() == 2);
  CHECK(f.num_leaves() == 4);
  CHECK(f.base_margin() == 0.0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct row_case {
    float a, b, margin;
  };
  for (const row_case c : {row_case{0.25f, 7.0f, 0.375f}, row_case{0.5f, -1.0f, 0.875f}, row_case{0.5f, -1.5f, -0.375f},
                           row_case{nan, 0.0f, 0.375f}, row_case{1.0f, nan, 0.875f}, row_case{std::nextafter(0.5f, 0.0f), -9.0f, 0.375f},
                           row_case{nan, nan, 0.375f}}) {
    CAPTURE(c.a);
    CAPTURE(c.b);
    const float row[] = {c.a, c.b};
    CHECK(f.predict_margin(row) == c.margin);
    CHECK(f.predict(row) == 1.0f / (1.0f + std::exp(-c.margin)));
  }
}

TEST_CASE("gbt fixtures: LightGBM binary model (sigmoid:2, missing types NaN/Zero/None, single-leaf tree)") {
  // Tree 0: node 0: a <= 0.5, decision_type 10 = NaN missing, default left -> node 1, else leaf 1 (-0.5)
  //         node 1: b <= 0.75, decision_type 4 = Zero missing, default right -> leaf 0 (0.25) / leaf 2 (1)
  // Tree 1: a single leaf 0.125
  // Tree 2: c <= 0.1 (the double 0.1), decision_type 0 = None: NaN counts as 0 -> leaf 0 (2) / leaf 1 (-3)
  const auto f = gbt::load_lightgbm_text(data("lgb_binary.txt"));
  CHECK(f.num_features() == 3);
  CHECK(f.num_trees() == 3);
  CHECK(f.transform() == gbt::output_transform::sigmoid);
  CHECK(f.sigmoid_scale() == 2.0);
  CHECK(f.accumulation_type() == gbt::accumulation::f64);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float just_above_0_1 = 0.1f;                          // 0.100000001490116... > 0.1
  const float just_below_0_1 = std::nextafter(0.1f, 0.0f);    // 0.0999999940...     <= 0.1
  struct row_case {
    float a, b, c;
    double margin;
  };
  for (const row_case r : {
           row_case{0.5f, 0.75f, 0.0f, 0.25 + 0.125 + 2},                    // both on their thresholds: <= goes left
           row_case{std::nextafter(0.5f, 1.0f), 0.0f, 0.0f, -0.5 + 0.125 + 2},  // just above
           row_case{nan, 0.5f, just_above_0_1, 0.25 + 0.125 - 3},            // NaN -> default left; 0.1f > 0.1
           row_case{0.0f, 0.0f, just_below_0_1, 1 + 0.125 + 2},              // b = 0 is missing (Zero type) -> default right
           row_case{0.0f, nan, nan, 1 + 0.125 + 2},                          // NaN -> 0 -> missing; c: NaN -> 0 <= 0.1 -> left
           row_case{0.0f, 1e-36f, 5.0f, 1 + 0.125 - 3},                      // |b| <= 1e-35: zero
           row_case{0.0f, -1e-35f, 5.0f, 1 + 0.125 - 3},                     // and -1e-35 (LightGBM 4: >= -kZeroThreshold)
           row_case{-7.0f, 0.9f, -1.0f, 1 + 0.125 + 2},                      // b > 0.75
       }) {
    CAPTURE(r.a);
    CAPTURE(r.b);
    CAPTURE(r.c);
    const float row[] = {r.a, r.b, r.c};
    CHECK(f.predict_margin(row) == static_cast<float>(r.margin));
    CHECK(f.predict(row) == static_cast<float>(1.0 / (1.0 + std::exp(-2.0 * r.margin))));
  }
}

TEST_CASE("gbt fixtures: LightGBM regression model (the 1e-35 zero threshold, None with default-left bit)") {
  // Tree 0: node 0: d <= 1.0000000180025095e-35 (the float 1e-35f), None -> node 1 / node 2
  //         node 1: a <= -0.5, NaN missing, default right -> 10 / 20
  //         node 2: b <= 2.5, None -> 30 / 40
  // Tree 1: -1.5
  const auto f = gbt::load_lightgbm_text(data("lgb_regression.txt"));
  CHECK(f.num_features() == 4);
  CHECK(f.transform() == gbt::output_transform::identity);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct row_case {
    float a, b, c, d, y;
  };
  for (const row_case r : {row_case{-0.5f, 0, 0, 0.0f, 8.5f}, row_case{nan, 0, 0, nan, 18.5f}, row_case{-0.75f, 0, 0, 1e-35f, 8.5f},
                           row_case{0, 2.5f, 0, std::nextafter(1e-35f, 1.0f), 28.5f}, row_case{0, nan, 0, 1.0f, 28.5f},
                           row_case{0, 3.0f, 0, 1.0f, 38.5f}, row_case{0, 0, 0, -1.0f, 18.5f}}) {
    const float row[] = {r.a, r.b, r.c, r.d};
    CHECK(f.predict(row) == r.y);
  }
}
