// The collective-level correction trained on the real nccl-tests logs (tests/data/collectives/,
// learn/collectives.hpp) through XGBoost's C API: every machine costed by the NCCL model on its
// cluster calibrated from 4 of its own sizes, the correction learning what remains from
// machine-relative features. The embedded default is what XGBoost trains from the manifest today
// and predicts what XGBoost predicts (bounded by its evidence box), and it is judged leave one
// machine out: never on rows of a machine it was trained on. Bounds were set after measuring
// (`autosync learn --collectives` prints the table); each names the measured value.
#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/default_collective_correction.hpp>
#include <autosync/gbt/emit.hpp>
#include <autosync/gbt/xgboost.hpp>
#include <autosync/learn/collectives.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

using namespace autosync;

#if defined(AUTOSYNC_HAS_XGBOOST)

namespace {

const std::string manifest = std::string(AUTOSYNC_SOURCE_DIR) + "/tests/data/collectives/nccl_cases.json";

struct dataset {
  learn::collective_manifest m;
  std::vector<learn::collective_sample> rows;
};
const dataset& data() {
  static const dataset d = [] {
    dataset x;
    x.m = learn::load_collective_cases(manifest);
    x.rows = learn::load_collective_samples(x.m);
    return x;
  }();
  return d;
}

// The per-log medians' median (the figure of the table's last line).
struct lomo_figure {
  double calibrated, corrected, all_calibrated, all_corrected;
};
lomo_figure figure(const std::vector<learn::collective_sample>& rows, const std::vector<double>& y) {
  std::vector<double> a, b;
  for (const auto& c : learn::median_errors(data().m, rows, y)) {
    MESSAGE(c.label << ": calibrated " << c.analytical << ", corrected " << c.corrected);
    a.push_back(c.analytical);
    b.push_back(c.corrected);
  }
  const auto all = learn::overall_errors(rows, y);
  return {learn::median(a), learn::median(b), all.analytical, all.corrected};
}

}  // namespace

TEST_CASE("collective correction: the embedded default is XGBoost's model of the shipped logs, and predicts what XGBoost predicts") {
  const auto& d = data();
  const auto b = learn::train_bounded_collective_booster(d.rows);
  REQUIRE(b.booster.num_features() == cost::collective_feature_count);
  const auto forest = gbt::parse_xgboost_json(b.booster.json(), "<trained>");
  std::vector<float> xgb(d.rows.size());
  const auto x = learn::feature_matrix(d.rows);
  b.booster.predict(x, d.rows.size(), xgb);
  const cost::default_collective_correction embedded;
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    CAPTURE(i);
    CHECK(forest.predict(d.rows[i].row) == xgb[i]);                    // the loaded forest, bit for bit
    CHECK(embedded.predict_unbounded(d.rows[i].row) == xgb[i]);        // the checked-in header, bit for bit
    CHECK(embedded.predict(d.rows[i].row) == b.predict(d.rows[i].row));  // and its box is the training rows'
  }
  CHECK(gbt::default_collective_model_box.lo == b.box.lo);
  CHECK(gbt::default_collective_model_box.hi == b.box.hi);
  CHECK(gbt::default_collective_model_box.y_lo == b.box.y_lo);
  CHECK(gbt::default_collective_model_box.y_hi == b.box.y_hi);
  // the checked-in header holds exactly what gbt::emit_header writes for today's training:
  // regenerate it when this fails
  std::ifstream in(std::string(AUTOSYNC_SOURCE_DIR) + "/include/autosync/gbt/default_collective_model.hpp");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string header = ss.str(), emitted = gbt::emit_header(forest, "autosync::gbt::default_collective_model");
  CHECK(header.find(emitted) != std::string::npos);
  CHECK(header.find("autosync learn --collectives tests/data/collectives/nccl_cases.json") != std::string::npos);
  for (const auto& c : d.m.cases) CHECK(header.find(c.file) != std::string::npos);
}

TEST_CASE("collective correction: leave one machine out, the figure the shipped correction reaches") {
  const auto& d = data();
  // 8 logs of 6 machines: the two H100 2x8 sections, and the two costings of the H100 NVLS rows,
  // are one machine each and are left out together
  const auto folds = learn::machine_folds(d.m, d.rows);
  CHECK(*std::max_element(folds.begin(), folds.end()) == 5);
  const auto y = learn::leave_one_machine_out(d.m, d.rows);
  const auto f = figure(d.rows, y);
  MESSAGE("median over logs: calibrated " << f.calibrated << ", corrected " << f.corrected << "; all rows: calibrated "
                                          << f.all_calibrated << ", corrected " << f.all_corrected);
  // measured: the median over logs 0.066 -> 0.061 (better on A100 1 node and H100 2x8 RING),
  // but over all rows 0.068 -> 0.090 (worse on H100 2x8 default 0.020 -> 0.040, TCPXO 0.063 ->
  // 0.076, EFA 0.119 -> 0.135): it does not reliably help a machine it has not seen, so it ships
  // off by default. (Before calibration fitted NVLS: 0.050 over logs, 0.080 over all rows.)
  CHECK(f.calibrated == doctest::Approx(0.066).epsilon(0.05));
  CHECK(f.corrected < 0.063);
  CHECK(f.corrected < f.calibrated);
  CHECK(f.all_corrected > f.all_calibrated);  // the reason it is off by default: revisit when this fails
  // bounded: on no log more than 3 points worse than the calibrated model (measured at most +0.020)
  for (const auto& c : learn::median_errors(d.m, d.rows, y)) {
    CAPTURE(c.label);
    CHECK(c.corrected <= c.analytical + 0.03);
  }
}

TEST_CASE("collective correction: the held-out figure rejects a model trained on shuffled targets") {
  // the same rows with each target moved to another row: a correction that learned nothing of
  // the logs must not reach the shipped figure
  auto rows = data().rows;
  const auto n = rows.size();
  std::vector<double> y;
  for (const auto& r : rows) y.push_back(r.target());
  for (std::size_t i = 0; i < n; ++i) {
    const double t = y[(i * 37 + 11) % n];  // 37 is prime to 131: a permutation
    rows[i].measured = rows[i].analytical * std::exp(t);
  }
  const auto yl = learn::leave_one_machine_out(data().m, rows);
  // judged against the real measurements
  const auto f = figure(data().rows, yl);
  MESSAGE("shuffled: median over logs " << f.corrected << ", all rows " << f.all_corrected);
  CHECK_FALSE(f.corrected < 0.055);
}

TEST_CASE("collective correction: folds are balanced, deterministic, and every row is predicted once held out") {
  const auto& d = data();
  const auto f = learn::row_folds(d.rows, 5);
  std::vector<std::size_t> size(5, 0);
  for (auto k : f) ++size[k];
  for (auto s : size) CHECK((s == 26 || s == 27));  // 131 rows
  CHECK(learn::row_folds(d.rows, 5) == f);
  CHECK_THROWS_AS((void)learn::row_folds(d.rows, 1), error);
  // a model that predicts the fold its training left out: every row gets its own fold's model
  auto fold_of = [&](const learn::collective_sample& s) {
    for (std::size_t i = 0; i < d.rows.size(); ++i)
      if (d.rows[i].case_index == s.case_index && d.rows[i].what.bytes == s.what.bytes) return f[i];
    FAIL("a training row that is not in the data");
    return std::size_t{0};
  };
  struct constant {
    float value;
    [[nodiscard]] float predict(std::span<const float>) const { return value; }
    [[nodiscard]] std::size_t num_features() const { return cost::collective_feature_count; }
  };
  std::size_t fit_calls = 0;
  const auto y = learn::held_out_log_factors(d.rows, f, [&](std::span<const learn::collective_sample> train) {
    ++fit_calls;
    std::vector<bool> present(5, false);
    for (const auto& s : train) present[fold_of(s)] = true;
    std::size_t missing = 0, absent = 0;
    for (std::size_t k = 0; k < 5; ++k)
      if (!present[k]) {
        missing = k;
        ++absent;
      }
    CHECK(absent == 1);
    return constant{static_cast<float>(missing)};
  });
  CHECK(fit_calls == 5);
  for (std::size_t i = 0; i < d.rows.size(); ++i) CHECK(y[i] == static_cast<double>(f[i]));
}

#else

TEST_CASE("collective correction: training needs XGBoost (skipped)") { MESSAGE("built without autosync::xgboost"); }

#endif
