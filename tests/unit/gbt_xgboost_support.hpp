// tests/unit/gbt_xgboost_support.hpp — train, save and predict with XGBoost's own C API, for the
// agreement tests (gbt_xgboost_capi.cpp), the benchmark (tests/bench/gbt_predict.cpp) and the
// fixture generator (tests/data/gbt/generate_fixtures.cpp). Needs autosync::xgboost.
#pragma once

#include <xgboost/c_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace gbt_test {

inline void xgb_check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string(what) + ": " + XGBGetLastError());
}

class dmatrix {
 public:
  dmatrix(const std::vector<float>& rows, std::size_t n, std::size_t m) {
    xgb_check(XGDMatrixCreateFromMat(rows.data(), static_cast<bst_ulong>(n), static_cast<bst_ulong>(m), std::nanf(""), &h_),
              "XGDMatrixCreateFromMat");
  }
  dmatrix(const dmatrix&) = delete;
  dmatrix& operator=(const dmatrix&) = delete;
  ~dmatrix() { XGDMatrixFree(h_); }
  [[nodiscard]] DMatrixHandle get() const { return h_; }

 private:
  DMatrixHandle h_ = nullptr;
};

class booster {
 public:
  booster() { xgb_check(XGBoosterCreate(nullptr, 0, &h_), "XGBoosterCreate"); }
  explicit booster(const dmatrix& train) {
    DMatrixHandle d = train.get();
    xgb_check(XGBoosterCreate(&d, 1, &h_), "XGBoosterCreate");
  }
  booster(const booster&) = delete;
  booster& operator=(const booster&) = delete;
  ~booster() { XGBoosterFree(h_); }
  [[nodiscard]] BoosterHandle get() const { return h_; }

  void set(const std::string& k, const std::string& v) { xgb_check(XGBoosterSetParam(h_, k.c_str(), v.c_str()), "XGBoosterSetParam"); }

  [[nodiscard]] std::string save_json() const {
    bst_ulong len = 0;
    const char* buf = nullptr;
    xgb_check(XGBoosterSaveModelToBuffer(h_, R"({"format": "json"})", &len, &buf), "XGBoosterSaveModelToBuffer");
    return std::string(buf, len);
  }
  void load_json(const std::string& text) {
    xgb_check(XGBoosterLoadModelFromBuffer(h_, text.data(), static_cast<bst_ulong>(text.size())), "XGBoosterLoadModelFromBuffer");
  }

  // XGBoosterPredict on a fresh DMatrix (no prediction cache): transformed, or the margin.
  [[nodiscard]] std::vector<float> predict(const std::vector<float>& rows, std::size_t n, std::size_t m, bool margin) const {
    const dmatrix d(rows, n, m);
    bst_ulong len = 0;
    const float* out = nullptr;
    xgb_check(XGBoosterPredict(h_, d.get(), margin ? 1 : 0, 0, 0, &len, &out), "XGBoosterPredict");
    return {out, out + len};
  }
  // XGBoosterPredictFromDense (the inplace predictor).
  [[nodiscard]] std::vector<float> predict_dense(const std::vector<float>& rows, std::size_t n, std::size_t m, bool margin) const {
    char iface[256];
    std::snprintf(iface, sizeof iface, R"({"data": [%llu, true], "shape": [%zu, %zu], "typestr": "<f4", "version": 3})",
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(rows.data())), n, m);
    const std::string config = std::string(R"({"type": )") + (margin ? "1" : "0") +
                               R"(, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false, "cache_id": 0, "missing": NaN})";
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* out = nullptr;
    xgb_check(XGBoosterPredictFromDense(h_, iface, config.c_str(), nullptr, &shape, &dim, &out), "XGBoosterPredictFromDense");
    return {out, out + n};
  }

 private:
  BoosterHandle h_ = nullptr;
};

// n rows of m standard-normal features; each value is NaN with probability nan_fraction.
inline std::vector<float> random_rows(std::size_t n, std::size_t m, double nan_fraction, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> x(n * m);
  for (auto& v : x) v = u(g) < nan_fraction ? std::nanf("") : normal(g);
  return x;
}

// A label with interactions and a dependence on missingness, so trees are deep and default
// directions matter. binary: 0/1; count: a non-negative count-like value; else real.
inline std::vector<float> labels(const std::vector<float>& x, std::size_t n, std::size_t m, const std::string& kind, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float* r = &x[i * m];
    auto v = [&](std::size_t j) { return std::isnan(r[j % m]) ? 0.7f : r[j % m]; };
    const float s = 1.5f * v(0) - v(1) * v(2) + (std::isnan(r[3 % m]) ? 1.0f : 0.0f) + 0.5f * std::sin(3.0f * v(4)) + noise(g);
    if (kind == "binary")
      y[i] = s > 0.2f ? 1.0f : 0.0f;
    else if (kind == "count")
      y[i] = std::floor(std::exp(0.5f * std::tanh(s)) * 2.0f);
    else
      y[i] = s;
  }
  return y;
}

// Trains `rounds` boosting rounds through the C API.
inline void train(booster& b, const dmatrix& d, const std::map<std::string, std::string>& params, int rounds) {
  for (const auto& [k, v] : params) b.set(k, v);
  for (int i = 0; i < rounds; ++i) xgb_check(XGBoosterUpdateOneIter(b.get(), i, d.get()), "XGBoosterUpdateOneIter");
}

}  // namespace gbt_test
