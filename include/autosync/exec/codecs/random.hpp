// autosync/exec/codecs/random.hpp — counter-based random numbers for codecs.
//
// Stochastic rounding (QSGD), random-k index sets and PowerSGD's first Q must be reproducible:
// the same (seed, stream, counter) gives the same number on every rank, in every run, whatever
// the thread or call order. A counter-based generator gives that without shared state:
//
//   bits(seed, stream, i) = splitmix64(splitmix64(seed ^ splitmix64(stream)) + i * golden)
//
// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA
// 2014; the finalizer of Java's SplittableRandom) is a bijection of 64-bit words with full
// avalanche; keyed by seed and stream and indexed by i it is the counter-based form used by
// JAX's and NumPy's splittable generators. `uniform` takes the top 24 bits, so every value is
// an exact float in [0, 1) (k / 2^24) and the same on every platform (no libm involved).
#pragma once

#include <cstdint>

// Host and device: the CUDA codec kernels (exec/nccl/codec_kernels.cuh) draw the same numbers.
#if defined(__CUDACC__)
#define AUTOSYNC_CODEC_HD __host__ __device__ __forceinline__
#else
#define AUTOSYNC_CODEC_HD inline
#endif

namespace autosync::exec::codecs {

[[nodiscard]] AUTOSYNC_CODEC_HD constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A stream of random words: one per counter value, independent of the call order.
struct counter_rng {
  std::uint64_t key = 0;
  AUTOSYNC_CODEC_HD constexpr counter_rng(std::uint64_t seed, std::uint64_t stream) noexcept : key(splitmix64(seed ^ splitmix64(stream))) {}
  [[nodiscard]] AUTOSYNC_CODEC_HD constexpr std::uint64_t bits(std::uint64_t i) const noexcept {
    return splitmix64(key + i * 0x9E3779B97F4A7C15ull);
  }
  // In [0, 1), a multiple of 2^-24: exact in float.
  [[nodiscard]] AUTOSYNC_CODEC_HD constexpr float uniform(std::uint64_t i) const noexcept {
    return static_cast<float>(bits(i) >> 40) * 0x1p-24f;
  }
  // In [0, n) for n >= 1: Lemire's multiply-shift on 32 bits for n < 2^32 (bias below
  // n / 2^32), the remainder of 64 bits above.
  [[nodiscard]] AUTOSYNC_CODEC_HD constexpr std::uint64_t below(std::uint64_t i, std::uint64_t n) const noexcept {
    if (n <= 0xFFFFFFFFull) return ((bits(i) >> 32) * n) >> 32;
    return bits(i) % n;
  }
};

// The stream of one bucket at one iteration: every rank that compresses the same bucket at the
// same iteration with the same seed draws the same numbers (shared randomness), and a rank's own
// stream (stochastic rounding, where ranks must differ) adds its rank.
[[nodiscard]] AUTOSYNC_CODEC_HD constexpr std::uint64_t stream_of(std::uint64_t bucket, std::uint64_t iteration, std::uint64_t rank = ~0ull) noexcept {
  return splitmix64(splitmix64(bucket) ^ (iteration * 0xD1B54A32D192ED03ull)) ^ splitmix64(rank);
}

}  // namespace autosync::exec::codecs
