// gbt_emit_check <tests/data/gbt>: the headers gbt_emit_generate wrote (emitted_*.hpp), compiled
// here, must predict exactly what the runtime forests loaded from the same files predict — bit for
// bit, margins and outputs, on rows that hit every threshold from both sides and every missing
// rule — and be usable in constant expressions. ctest gbt_emit_roundtrip.
#include "emitted_lgb_binary.hpp"
#include "emitted_lgb_regression.hpp"
#include "emitted_xgb_hand.hpp"
#include "emitted_xgb_logistic.hpp"
#include "emitted_xgb_poisson.hpp"
#include "emitted_xgb_regression.hpp"

#include <autosync/gbt/lightgbm.hpp>
#include <autosync/gbt/xgboost.hpp>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <span>
#include <vector>

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();

// Compile time: the hand-written XGBoost model (see tests/unit/gbt_fixtures.cpp for the tree).
static_assert(gbt_emitted::xgb_hand.num_features() == 2 && gbt_emitted::xgb_hand.num_trees() == 2);
static_assert(gbt_emitted::xgb_hand.predict_margin({0.25f, 7.0f}) == 0.375f);
static_assert(gbt_emitted::xgb_hand.predict_margin({0.5f, -1.5f}) == -0.375f);
static_assert(gbt_emitted::xgb_hand.predict_margin({nan_f, 0.0f}) == 0.375f);
static_assert(gbt_emitted::xgb_hand.predict_margin({1.0f, nan_f}) == 0.875f);
// sigmoid(0.375) = 0.592666...; at compile time exp comes from a series (within an ulp or so)
static_assert(gbt_emitted::xgb_hand.predict({0.25f, 7.0f}) > 0.5926660f && gbt_emitted::xgb_hand.predict({0.25f, 7.0f}) < 0.5926670f);
// The LightGBM ones: `<=` on a double threshold, Zero and None missing types, double accumulation.
static_assert(gbt_emitted::lgb_binary.predict_margin({0.5f, 0.75f, 0.0f}) == 2.375f);
static_assert(gbt_emitted::lgb_binary.predict_margin({0.0f, 0.0f, 0.1f}) == -1.875f);
static_assert(gbt_emitted::lgb_regression.predict({nan_f, 0.0f, 0.0f, nan_f}) == 18.5f);
static_assert(gbt_emitted::lgb_regression.predict({0.0f, 3.0f, 0.0f, 1.0f}) == 38.5f);

int failures = 0;

template <class Static>
void compare(const char* name, const Static& s, const autosync::gbt::forest& f) {
  constexpr std::size_t m = Static::num_features();
  if (f.num_features() != m || f.num_trees() != Static::num_trees()) {
    std::fprintf(stderr, "%s: shape differs\n", name);
    ++failures;
    return;
  }
  // Values around every threshold of the forest, NaN, zeros, tiny values, and random values.
  std::vector<float> pool = {nan_f, 0.0f, -0.0f, 1e-36f, -1e-36f, 1e-35f, -1e-35f, 1e30f, -1e30f};
  for (const float t : f.threshold())
    if (std::isfinite(t)) pool.insert(pool.end(), {t, std::nextafter(t, -INFINITY), std::nextafter(t, INFINITY)});
  std::mt19937 g(42);
  std::normal_distribution<float> normal;
  const std::size_t n = 5000;
  std::vector<float> rows(n * m);
  for (auto& v : rows) v = g() % 2 ? pool[g() % pool.size()] : normal(g);
  std::vector<float> batch(n);
  f.predict(rows, n, batch);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<const float, m> row(&rows[i * m], m);
    const bool ok = std::bit_cast<std::uint32_t>(s.predict(row)) == std::bit_cast<std::uint32_t>(batch[i]) &&
                    std::bit_cast<std::uint32_t>(s.predict_margin(row)) == std::bit_cast<std::uint32_t>(f.predict_margin(row));
    if (!ok && bad++ < 5) std::fprintf(stderr, "%s: row %zu: emitted %a, runtime %a\n", name, i, static_cast<double>(s.predict(row)), static_cast<double>(batch[i]));
  }
  std::printf("%s: %zu rows, %zu differ\n", name, n, bad);
  failures += bad != 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gbt_emit_check <tests/data/gbt>\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  namespace gbt = autosync::gbt;
  compare("xgb_hand", gbt_emitted::xgb_hand, gbt::load_xgboost_json(dir / "xgb_hand.json"));
  compare("xgb_regression", gbt_emitted::xgb_regression, gbt::load_xgboost_json(dir / "xgb_regression.json"));
  compare("xgb_logistic", gbt_emitted::xgb_logistic, gbt::load_xgboost_json(dir / "xgb_logistic.json"));
  compare("xgb_poisson", gbt_emitted::xgb_poisson, gbt::load_xgboost_json(dir / "xgb_poisson.json"));
  compare("lgb_binary", gbt_emitted::lgb_binary, gbt::load_lightgbm_text(dir / "lgb_binary.txt"));
  compare("lgb_regression", gbt_emitted::lgb_regression, gbt::load_lightgbm_text(dir / "lgb_regression.txt"));
  return failures == 0 ? 0 : 1;
}
