// autosync/learn/metrics.hpp — how well a predictor ranks strategies.
//
// A simulator is used to pick strategies, so what matters is order, not absolute error:
//
// * pairwise accuracy  over every pair (i, j) of the same ranking group whose measured times
//                      differ by more than `min_gap` (relative: |a - b| > min_gap x min(a, b)),
//                      the fraction the prediction orders like the measurement (a tie in the
//                      prediction counts one half). AutoSync reports 0.83-0.94 for its
//                      simulator's linear ranker.
// * Spearman's rho     within each group (average ranks for ties), averaged over the groups
//                      weighted by their size; groups of fewer than 3 are left out.
//
// Both return NaN when there is nothing to compare (no pair, no group of 3).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace autosync::learn {

[[nodiscard]] inline double pairwise_accuracy(std::span<const double> predicted, std::span<const double> measured,
                                              std::span<const std::string> groups, double min_gap = 0.0) {
  double good = 0.0, total = 0.0;
  const auto n = predicted.size();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      if (groups[i] != groups[j]) continue;
      const double a = measured[i], b = measured[j];
      if (!(std::abs(a - b) > min_gap * std::min(a, b))) continue;
      total += 1.0;
      const double pa = predicted[i], pb = predicted[j];
      if (pa == pb) good += 0.5;
      else if ((pa < pb) == (a < b)) good += 1.0;
    }
  return total > 0.0 ? good / total : std::numeric_limits<double>::quiet_NaN();
}

// 1-based ranks, ties get their average rank.
[[nodiscard]] inline std::vector<double> average_ranks(std::span<const double> v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

// Pearson correlation of the ranks (NaN when either side is constant).
[[nodiscard]] inline double spearman(std::span<const double> a, std::span<const double> b) {
  const auto ra = average_ranks(a), rb = average_ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0.0, saa = 0.0, sbb = 0.0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0.0 && sbb > 0.0 ? sab / std::sqrt(saa * sbb) : std::numeric_limits<double>::quiet_NaN();
}

[[nodiscard]] inline double grouped_spearman(std::span<const double> predicted, std::span<const double> measured,
                                             std::span<const std::string> groups) {
  std::map<std::string, std::vector<std::size_t>> by;
  for (std::size_t i = 0; i < groups.size(); ++i) by[groups[i]].push_back(i);
  double sum = 0.0, weight = 0.0;
  for (const auto& [g, idx] : by) {
    if (idx.size() < 3) continue;
    std::vector<double> p, m;
    for (auto i : idx) {
      p.push_back(predicted[i]);
      m.push_back(measured[i]);
    }
    const double rho = spearman(p, m);
    if (std::isnan(rho)) continue;
    sum += rho * static_cast<double>(idx.size());
    weight += static_cast<double>(idx.size());
  }
  return weight > 0.0 ? sum / weight : std::numeric_limits<double>::quiet_NaN();
}

// Both measures of one predictor on the same rows.
struct ranking {
  double pairwise = NAN, spearman = NAN;
};
[[nodiscard]] inline ranking ranking_of(std::span<const double> predicted, std::span<const double> measured,
                                        std::span<const std::string> groups) {
  return {pairwise_accuracy(predicted, measured, groups), grouped_spearman(predicted, measured, groups)};
}

}  // namespace autosync::learn
