// autosync/search/random.hpp — portable random draws for the search and the sampler.
//
// std::mt19937_64's output sequence is fixed by the standard, its distributions are not
// (libstdc++ and libc++ map the same bits to different integers): the draws here are, so the
// same seed gives the same strategy with every standard library.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

namespace autosync::search {

// ---- portable random numbers -----------------------------------------------------------------
// std::mt19937_64's output is fixed by the standard, its distributions are not; these are.
class random {
 public:
  explicit random(std::uint64_t seed) : g_(seed) {}
  // Uniform in [0, n), n >= 1 (rejection sampling: no modulo bias).
  std::uint64_t below(std::uint64_t n) {
    if (n <= 1) return 0;
    const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
    std::uint64_t x;
    do x = g_(); while (x >= limit);
    return x % n;
  }
  // Uniform in [lo, hi], lo <= hi.
  std::int64_t between(std::int64_t lo, std::int64_t hi) { return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1)); }
  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }
  template <class T>
  const T& pick(std::span<const T> v) { return v[below(v.size())]; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

 private:
  std::mt19937_64 g_;
};

}  // namespace autosync::search
