// autosync/gbt/evidence_box.hpp — where a learned correction has evidence, and what it may say
// outside it.
//
// A forest trained on a few machines answers for any row, also for rows unlike every training
// row (a machine with 64 nodes when it saw 2, a size 1000x past the largest). There its output is
// an extrapolation of whatever the nearest leaves learned. An evidence box bounds it:
//
//   lo[i], hi[i]   the range of feature i over the training rows
//   y_lo, y_hi     the range of the training targets (log factors)
//
//   bounded(y, row) = clamp(y, y_lo, y_hi) x w(row)
//   w(row)          = max(0, 1 - max_i d_i),  d_i = (how far row[i] lies outside [lo_i, hi_i])
//                                                    / max(hi_i - lo_i, 1)
//
// Inside the box the forest's output stands (clamped to what it was trained on); a row one box
// width (or one unit, for a feature of narrow range) outside in any feature gets no correction
// at all, and in between the correction shrinks linearly toward 0 (the analytical model). A NaN
// feature counts as outside by one width. `autosync learn --collectives` writes the box of the
// training rows next to the embedded forest.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <span>

namespace autosync::gbt {

template <std::size_t N>
struct evidence_box {
  std::array<float, N> lo{};
  std::array<float, N> hi{};
  float y_lo = 0.0f;
  float y_hi = 0.0f;

  [[nodiscard]] static constexpr std::size_t num_features() noexcept { return N; }

  // The weight of the correction at `row` (1 inside the box, 0 one width or more outside).
  [[nodiscard]] constexpr double weight(std::span<const float> row) const noexcept {
    double d = 0.0;
    const std::size_t n = std::min(row.size(), N);
    for (std::size_t i = 0; i < n; ++i) {
      const double x = row[i], l = lo[i], h = hi[i];
      const double width = std::max(h - l, 1.0);
      double out = 0.0;
      if (!(x == x)) out = 1.0;  // NaN
      else if (x < l) out = (l - x) / width;
      else if (x > h) out = (x - h) / width;
      d = std::max(d, out);
    }
    return std::max(0.0, 1.0 - d);
  }

  // The bounded correction of a prediction y at `row`.
  [[nodiscard]] constexpr float bound(float y, std::span<const float> row) const noexcept {
    const float c = std::clamp(y, y_lo, y_hi);
    return static_cast<float>(static_cast<double>(c) * weight(row));
  }

  // The box of a set of rows (row-major, N per row) and their targets.
  [[nodiscard]] static evidence_box of(std::span<const float> rows, std::span<const float> y) noexcept {
    evidence_box b;
    b.lo.fill(INFINITY);
    b.hi.fill(-INFINITY);
    b.y_lo = INFINITY;
    b.y_hi = -INFINITY;
    for (std::size_t r = 0; r + N <= rows.size(); r += N)
      for (std::size_t i = 0; i < N; ++i) {
        b.lo[i] = std::min(b.lo[i], rows[r + i]);
        b.hi[i] = std::max(b.hi[i], rows[r + i]);
      }
    for (float v : y) {
      b.y_lo = std::min(b.y_lo, v);
      b.y_hi = std::max(b.y_hi, v);
    }
    if (y.empty()) b.y_lo = b.y_hi = 0.0f;
    return b;
  }
};

}  // namespace autosync::gbt
