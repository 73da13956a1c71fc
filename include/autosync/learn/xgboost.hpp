// autosync/learn/xgboost.hpp — training the learned corrections with XGBoost's C API.
//
// Needs the optional component autosync::xgboost (Debian: libxgboost-dev; CMake defines
// AUTOSYNC_HAS_XGBOOST=1 and links libxgboost). Without it this header declares nothing but
// `learn::has_xgboost == false`; inference never needs XGBoost (gbt::forest reads the saved
// JSON, or the header gbt::emit_header writes).
//
//   samples ──feature_matrix──> DMatrix ──XGBoosterUpdateOneIter x rounds──> booster
//   booster.save_json(path) ──> XGBoost JSON model (gbt::load_xgboost_json reads it back)
//
// The booster trains on any row-major matrix: the strategy rows of learn/train.hpp
// (cost/features.hpp) and the collective rows of learn/collectives.hpp
// (cost/collective_features.hpp) both go through it.
//
// Training is deterministic for a seed (XGBoost's exact tree method on one thread, no
// subsampling unless asked for).
#pragma once

#include <autosync/error.hpp>
#include <autosync/gbt/evidence_box.hpp>

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#if defined(AUTOSYNC_HAS_XGBOOST)
#include <xgboost/c_api.h>

#include <fstream>
#include <utility>
#endif

namespace autosync::learn {

#if defined(AUTOSYNC_HAS_XGBOOST)
inline constexpr bool has_xgboost = true;

struct xgb_params {
  int rounds = 200;            // boosting rounds (trees)
  int max_depth = 4;
  double eta = 0.1;            // learning rate
  double lambda = 1.0;         // L2 on leaf weights
  double min_child_weight = 1.0;
  double subsample = 1.0;
  unsigned seed = 0;
};

namespace detail {
inline void xgb_check(int rc, const char* what) {
  if (rc != 0) throw error(std::string("xgboost: ") + what + ": " + XGBGetLastError());
}
}  // namespace detail

// A trained XGBoost booster (owning handle). Satisfies cost::Correction.
class xgb_booster {
 public:
  xgb_booster() = default;
  xgb_booster(const xgb_booster&) = delete;
  xgb_booster& operator=(const xgb_booster&) = delete;
  xgb_booster(xgb_booster&& o) noexcept : h_(std::exchange(o.h_, nullptr)), nf_(o.nf_) {}
  xgb_booster& operator=(xgb_booster&& o) noexcept {
    std::swap(h_, o.h_);
    std::swap(nf_, o.nf_);
    return *this;
  }
  ~xgb_booster() {
    if (h_) XGBoosterFree(h_);
  }

  // Trains squared-error regression on row-major x (n_rows x n_features) and targets y.
  static xgb_booster train(std::span<const float> x, std::size_t n_rows, std::size_t n_features, std::span<const float> y,
                           const xgb_params& p = {}) {
    if (n_rows == 0) throw error("xgboost", "no training rows");
    if (x.size() != n_rows * n_features) throw error("xgboost", "the feature matrix is not n_rows x n_features");
    if (y.size() != n_rows) throw error("xgboost", "targets and rows differ in number");
    if (p.rounds < 1) throw error("rounds", "must be >= 1");
    DMatrixHandle d = nullptr;
    detail::xgb_check(XGDMatrixCreateFromMat(x.data(), n_rows, n_features, std::nanf(""), &d), "XGDMatrixCreateFromMat");
    struct dm_guard {
      DMatrixHandle h;
      ~dm_guard() { XGDMatrixFree(h); }
    } guard{d};
    detail::xgb_check(XGDMatrixSetFloatInfo(d, "label", y.data(), n_rows), "XGDMatrixSetFloatInfo(label)");
    xgb_booster b;
    detail::xgb_check(XGBoosterCreate(&d, 1, &b.h_), "XGBoosterCreate");
    auto set = [&](const char* k, const std::string& v) { detail::xgb_check(XGBoosterSetParam(b.h_, k, v.c_str()), k); };
    set("objective", "reg:squarederror");
    set("tree_method", "exact");
    set("nthread", "1");
    set("verbosity", "0");
    set("base_score", "0");
    set("max_depth", std::to_string(p.max_depth));
    // shortest round-trip text: std::to_string sent an eta of 1e-9 as "0.000000", every leaf 0
    set("eta", number_text(p.eta));
    set("lambda", number_text(p.lambda));
    set("min_child_weight", number_text(p.min_child_weight));
    set("subsample", number_text(p.subsample));
    set("seed", std::to_string(p.seed));
    for (int i = 0; i < p.rounds; ++i) detail::xgb_check(XGBoosterUpdateOneIter(b.h_, i, d), "XGBoosterUpdateOneIter");
    b.nf_ = n_features;
    return b;
  }

  static xgb_booster load(const std::filesystem::path& path) {
    xgb_booster b;
    detail::xgb_check(XGBoosterCreate(nullptr, 0, &b.h_), "XGBoosterCreate");
    detail::xgb_check(XGBoosterLoadModel(b.h_, path.c_str()), ("XGBoosterLoadModel('" + path.string() + "')").c_str());
    bst_ulong nf = 0;
    detail::xgb_check(XGBoosterGetNumFeature(b.h_, &nf), "XGBoosterGetNumFeature");
    b.nf_ = static_cast<std::size_t>(nf);
    return b;
  }

  [[nodiscard]] std::size_t num_features() const noexcept { return nf_; }

  // Batch prediction of row-major rows.
  void predict(std::span<const float> rows, std::size_t n_rows, std::span<float> out) const {
    if (!h_) throw error("xgboost", "predict on an empty booster");
    if (rows.size() != n_rows * nf_ || out.size() < n_rows) throw error("xgboost", "predict: rows are not n_rows x num_features");
    if (n_rows == 0) return;
    DMatrixHandle d = nullptr;
    detail::xgb_check(XGDMatrixCreateFromMat(rows.data(), n_rows, nf_, std::nanf(""), &d), "XGDMatrixCreateFromMat");
    bst_ulong len = 0;
    const float* res = nullptr;
    const int rc = XGBoosterPredict(h_, d, 0, 0, 0, &len, &res);
    if (rc == 0 && len == n_rows)
      for (std::size_t i = 0; i < n_rows; ++i) out[i] = res[i];
    XGDMatrixFree(d);
    detail::xgb_check(rc, "XGBoosterPredict");
    if (len != n_rows) throw error("xgboost", "predict returned " + std::to_string(len) + " values for " + std::to_string(n_rows) + " rows");
  }
  [[nodiscard]] float predict(std::span<const float> row) const {
    float v = 0.0f;
    predict(row, 1, std::span<float>(&v, 1));
    return v;
  }

  // The model as XGBoost JSON text.
  [[nodiscard]] std::string json() const {
    bst_ulong len = 0;
    const char* p = nullptr;
    detail::xgb_check(XGBoosterSaveModelToBuffer(h_, "{\"format\": \"json\"}", &len, &p), "XGBoosterSaveModelToBuffer");
    return std::string(p, len);
  }
  void save_json(const std::filesystem::path& path) const {
    const auto text = json();
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw error("cannot write the model to '" + path.string() + "'");
  }

 private:
  BoosterHandle h_ = nullptr;
  std::size_t nf_ = 0;
};

// A booster whose output is bounded by the evidence box of its training rows
// (gbt/evidence_box.hpp): clamped to the training targets' range, shrunk toward 0 outside the
// features' ranges. What `autosync learn --emit-header` ships at either level
// (learn::bounded_booster over cost::feature_count strategy features,
// learn::bounded_collective_booster over cost::collective_feature_count).
template <std::size_t N>
struct bounded_xgb_booster {
  xgb_booster booster;
  gbt::evidence_box<N> box;
  [[nodiscard]] std::size_t num_features() const noexcept { return booster.num_features(); }
  [[nodiscard]] float predict_unbounded(std::span<const float> row) const { return booster.predict(row); }
  [[nodiscard]] float predict(std::span<const float> row) const { return box.bound(booster.predict(row), row); }
};

#else
inline constexpr bool has_xgboost = false;
#endif

}  // namespace autosync::learn
