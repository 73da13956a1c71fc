// Regenerates the XGBoost fixtures in this folder with XGBoost's C API:
//
//   xgb_<name>.json           a booster trained on random data with NaNs, saved as JSON
//   xgb_<name>.expected.txt   rows and XGBoost's predictions on them (XGBoosterPredict on a fresh
//                             DMatrix, after reloading the JSON), as hexadecimal floats
//
// Built as gbt_generate_fixtures when CMake finds XGBoost (autosync::xgboost); run it with this
// folder as its argument. Training is single-threaded and seeded, so a given XGBoost version
// writes the same files again. tests/unit/gbt_fixtures.cpp checks the loader against them, so the
// loader is tested against XGBoost's numbers even where libxgboost is not installed.
#include "../../unit/gbt_xgboost_support.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

void write_fixture(const std::filesystem::path& dir, const std::string& name, const std::string& objective, const std::string& kind,
                   int depth, int rounds, std::uint64_t seed) {
  const std::size_t n_train = 400, n_rows = 64, m = 6;
  const auto x = gbt_test::random_rows(n_train, m, 0.2, seed);
  const auto y = gbt_test::labels(x, n_train, m, kind, seed + 1);
  const gbt_test::dmatrix d(x, n_train, m);
  gbt_test::xgb_check(XGDMatrixSetFloatInfo(d.get(), "label", y.data(), n_train), "label");
  gbt_test::booster b(d);
  gbt_test::train(b, d,
                  {{"objective", objective}, {"max_depth", std::to_string(depth)}, {"eta", "0.3"}, {"tree_method", "hist"},
                   {"nthread", "1"}, {"seed", std::to_string(seed)}},
                  rounds);
  const std::string json = b.save_json();
  gbt_test::booster reloaded;
  reloaded.load_json(json);
  const auto rows = gbt_test::random_rows(n_rows, m, 0.25, seed + 2);
  const auto margin = reloaded.predict(rows, n_rows, m, true);
  const auto pred = reloaded.predict(rows, n_rows, m, false);

  std::ofstream(dir / ("xgb_" + name + ".json"), std::ios::binary) << json;
  std::ofstream out(dir / ("xgb_" + name + ".expected.txt"), std::ios::binary);
  out << "# rows (" << m << " features, nan = missing) | XGBoost's margin and prediction, hexadecimal floats\n";
  out << "# objective " << objective << ", " << rounds << " trees of depth <= " << depth << "; written by generate_fixtures.cpp\n";
  char buf[64];
  for (std::size_t i = 0; i < n_rows; ++i) {
    for (std::size_t j = 0; j < m; ++j) {
      std::snprintf(buf, sizeof buf, "%a ", static_cast<double>(rows[i * m + j]));
      out << buf;
    }
    std::snprintf(buf, sizeof buf, "| %a %a\n", static_cast<double>(margin[i]), static_cast<double>(pred[i]));
    out << buf;
  }
  std::printf("wrote xgb_%s.json and xgb_%s.expected.txt\n", name.c_str(), name.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gbt_generate_fixtures <tests/data/gbt folder>\n");
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    write_fixture(dir, "regression", "reg:squarederror", "real", 3, 8, 101);
    write_fixture(dir, "logistic", "binary:logistic", "binary", 4, 8, 202);
    write_fixture(dir, "poisson", "count:poisson", "count", 2, 5, 303);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gbt_generate_fixtures: %s\n", e.what());
    return 1;
  }
  return 0;
}
