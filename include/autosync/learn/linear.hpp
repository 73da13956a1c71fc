// autosync/learn/linear.hpp — the baseline: AutoSync's simulator as a linear model.
//
// AutoSync's released simulator scored a strategy with a linear function of 12 aggregate
// features (cost/features.hpp, autosync_row: transmission, overhead and kernel latency, max
// and sum over parameter servers and over all-reduce groups). `linear_model` fits
//
//     measured iteration ~ w . standardize(autosync features) + b
//
// by ridge-regularized least squares (normal equations, Cholesky; lambda = 1e-6 x rows keeps
// constant columns — e.g. no parameter servers at all — from making the system singular).
// Columns are standardized with the training mean and deviation; a constant column gets
// deviation 1 (it then only moves the intercept, which the ridge keeps at 0 weight).
#pragma once

#include <autosync/cost/features.hpp>
#include <autosync/error.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace autosync::learn {

class linear_model {
 public:
  static constexpr std::size_t width = cost::autosync_feature_count;

  // Fits on rows x[i] with targets y[i]; throws autosync::error without rows or with a
  // non-finite input.
  static linear_model fit(std::span<const cost::autosync_row> x, std::span<const double> y, double ridge = 1e-6) {
    if (x.empty()) throw error("linear_model", "no training rows");
    if (x.size() != y.size()) throw error("linear_model", "rows and targets differ in number");
    linear_model m;
    const double n = static_cast<double>(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(y[i])) throw error("linear_model", "target " + std::to_string(i) + " is not finite");
      for (std::size_t k = 0; k < width; ++k) {
        if (!std::isfinite(x[i][k])) throw error("linear_model", "row " + std::to_string(i) + " feature " + std::to_string(k) + " is not finite");
        m.mean_[k] += x[i][k] / n;
      }
    }
    for (const auto& r : x)
      for (std::size_t k = 0; k < width; ++k) m.scale_[k] += (r[k] - m.mean_[k]) * (r[k] - m.mean_[k]) / n;
    for (auto& s : m.scale_) s = s > 0.0 ? std::sqrt(s) : 1.0;
    // normal equations over [z, 1]
    constexpr std::size_t D = width + 1;
    std::array<double, D * D> a{};
    std::array<double, D> b{};
    std::array<double, D> z{};
    for (std::size_t i = 0; i < x.size(); ++i) {
      for (std::size_t k = 0; k < width; ++k) z[k] = (x[i][k] - m.mean_[k]) / m.scale_[k];
      z[width] = 1.0;
      for (std::size_t r = 0; r < D; ++r) {
        b[r] += z[r] * y[i];
        for (std::size_t c = 0; c < D; ++c) a[r * D + c] += z[r] * z[c];
      }
    }
    for (std::size_t k = 0; k < width; ++k) a[k * D + k] += ridge * n + 1e-300;
    // Cholesky a = L L^T (in place, lower triangle)
    for (std::size_t j = 0; j < D; ++j) {
      double d = a[j * D + j];
      for (std::size_t k = 0; k < j; ++k) d -= a[j * D + k] * a[j * D + k];
      if (!(d > 0.0)) throw error("linear_model", "the normal equations are singular (too few distinct rows)");
      a[j * D + j] = std::sqrt(d);
      for (std::size_t i = j + 1; i < D; ++i) {
        double s = a[i * D + j];
        for (std::size_t k = 0; k < j; ++k) s -= a[i * D + k] * a[j * D + k];
        a[i * D + j] = s / a[j * D + j];
      }
    }
    std::array<double, D> t{};
    for (std::size_t i = 0; i < D; ++i) {
      double s = b[i];
      for (std::size_t k = 0; k < i; ++k) s -= a[i * D + k] * t[k];
      t[i] = s / a[i * D + i];
    }
    for (std::size_t i = D; i-- > 0;) {
      double s = t[i];
      for (std::size_t k = i + 1; k < D; ++k) s -= a[k * D + i] * t[k];
      t[i] = s / a[i * D + i];
    }
    for (std::size_t k = 0; k < width; ++k) m.w_[k] = t[k];
    m.b_ = t[width];
    return m;
  }

  [[nodiscard]] double predict(const cost::autosync_row& r) const noexcept {
    double s = b_;
    for (std::size_t k = 0; k < width; ++k) s += w_[k] * (r[k] - mean_[k]) / scale_[k];
    return s;
  }
  [[nodiscard]] const std::array<double, width>& weights() const noexcept { return w_; }
  [[nodiscard]] double intercept() const noexcept { return b_; }

 private:
  std::array<double, width> mean_{}, scale_{}, w_{};
  double b_ = 0.0;
};

}  // namespace autosync::learn
