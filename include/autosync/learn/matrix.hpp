// autosync/learn/matrix.hpp — training rows as XGBoost (learn/xgboost.hpp) and gbt::forest's
// batch predict take them: one row-major float matrix and one target per row.
//
// A sample is anything with a fixed-width `row` of floats and a `target()`:
//   learn::sample              strategy rows (learn/dataset.hpp, cost/features.hpp)
//   learn::collective_sample   collective rows (learn/collectives.hpp, cost/collective_features.hpp)
#pragma once

#include <array>
#include <cstddef>
#include <ranges>
#include <tuple>
#include <vector>

namespace autosync::learn {

// Row-major: the samples' rows one after the other.
template <std::ranges::sized_range R>
[[nodiscard]] std::vector<float> feature_matrix(const R& samples) {
  constexpr std::size_t width = std::tuple_size_v<decltype(std::ranges::range_value_t<R>::row)>;
  std::vector<float> x;
  x.reserve(std::ranges::size(samples) * width);
  for (const auto& s : samples) x.insert(x.end(), s.row.begin(), s.row.end());
  return x;
}

// y = log(measured / analytical) of each sample, as float.
template <std::ranges::sized_range R>
[[nodiscard]] std::vector<float> targets(const R& samples) {
  std::vector<float> y;
  y.reserve(std::ranges::size(samples));
  for (const auto& s : samples) y.push_back(static_cast<float>(s.target()));
  return y;
}

}  // namespace autosync::learn
