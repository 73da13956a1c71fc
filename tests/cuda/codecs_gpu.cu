// tests/cuda/codecs_gpu.cu — the codec kernels of exec/nccl/codec_kernels.cuh on a GPU against
// the CPU codecs of exec/codecs/, byte for byte (encodings) and bit for bit (decodings; a NaN
// matches any NaN, see same_bits), on odd sizes, several chunk / bucket sizes, uniform and
// exponential levels, L2 and max norms, inputs with offsets, zeros and non-finite values. Exits
// 77 (ctest SKIP_RETURN_CODE) without a device.
#include <autosync/exec/codecs/int8_minmax.hpp>
#include <autosync/exec/codecs/qsgd.hpp>
#include <autosync/exec/codecs/sparsify.hpp>
#include <autosync/exec/nccl/codec_kernels.cuh>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace cx = autosync::exec::codecs;
namespace gk = autosync::exec::nccl::codec;

namespace {

int failures = 0;
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      if (failures < 20) {                                                     \
        std::fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
        std::fprintf(stderr, __VA_ARGS__);                                     \
        std::fprintf(stderr, "\n");                                            \
      }                                                                        \
    }                                                                          \
  } while (0)

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
template <class T>
T* dev(const std::vector<T>& v, std::size_t extra = 0) {
  T* d = nullptr;
  ok(cudaMalloc(&d, (v.size() + extra) * sizeof(T) + 4), "cudaMalloc");
  ok(cudaMemset(d, 0xAB, (v.size() + extra) * sizeof(T) + 4), "cudaMemset");
  if (!v.empty()) ok(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "H2D");
  return d;
}
template <class T>
std::vector<T> host(const T* d, std::size_t n) {
  std::vector<T> v(n);
  if (n) ok(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "D2H");
  return v;
}
// Bit for bit, except that a NaN matches any NaN: a chunk holding an infinity decodes to NaN on
// both sides, but the hardware picks the NaN's bits (x86 makes 0 x inf the negative default NaN,
// 0xffc00000; CUDA the canonical 0x7fffffff).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && !(std::isnan(a[i]) && std::isnan(b[i]))) {
      std::uint32_t x = 0, y = 0;
      std::memcpy(&x, &a[i], 4);
      std::memcpy(&y, &b[i], 4);
      std::fprintf(stderr, "  first difference at %zu: 0x%08x against 0x%08x\n", i, x, y);
      return false;
    }
  return true;
}

std::vector<float> data(std::size_t n, std::uint32_t seed, int kind) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, kind == 1 ? 1e-3f : 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g) + (kind == 2 ? 1000.0f : 0.0f);
  if (kind == 3 && n > 5) {
    v[n / 2] = INFINITY;
    for (std::size_t i = 0; i < n / 3; ++i) v[i] = 0.0f;
  }
  return v;
}

void int8_case(std::size_t n, std::size_t chunk, int kind) {
  const auto x = data(n, static_cast<std::uint32_t>(n * 31 + chunk + static_cast<std::size_t>(kind)), kind);
  const std::size_t bytes = cx::int8_minmax::wire_bytes(n, chunk);
  std::vector<unsigned char> cpu(bytes);
  cx::int8_minmax::encode(x, cpu, chunk);
  float* dx = dev(x);
  unsigned char* dw = dev(std::vector<unsigned char>(bytes));
  ok(gk::int8_encode(dx, static_cast<std::int64_t>(n), static_cast<std::int64_t>(chunk), dw, nullptr), "int8_encode");
  ok(cudaDeviceSynchronize(), "sync");
  const auto gpu = host(dw, bytes);
  EXPECT(std::memcmp(cpu.data(), gpu.data(), bytes) == 0, "int8 encode n=%zu chunk=%zu kind=%d", n, chunk, kind);
  std::vector<float> y(n, 0.5f), cy = y;
  cx::int8_minmax::decode(cpu, cy, chunk, /*add=*/true);
  float* dy = dev(y);
  ok(gk::int8_decode(dw, static_cast<std::int64_t>(n), static_cast<std::int64_t>(chunk), dy, true, nullptr), "int8_decode");
  ok(cudaDeviceSynchronize(), "sync");
  EXPECT(same_bits(host(dy, n), cy), "int8 decode n=%zu chunk=%zu kind=%d", n, chunk, kind);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
}

void qsgd_case(std::size_t n, std::size_t bucket, const cx::qsgd::levels& lv, bool max_norm, int kind) {
  const auto x = data(n, static_cast<std::uint32_t>(n * 7 + bucket + static_cast<std::size_t>(kind)), kind);
  const int L = lv.count();
  const std::size_t bytes = cx::qsgd::wire_bytes(n, L, bucket);
  const cx::counter_rng rng(42, cx::stream_of(3, 9, 1));
  const auto nk = max_norm ? cx::qsgd::norm_kind::max : cx::qsgd::norm_kind::l2;
  std::vector<unsigned char> cpu(bytes);
  cx::qsgd::encode(x, cpu, lv, rng, bucket, nk, 17);
  float* dx = dev(x);
  float* dl = dev(lv.l);
  unsigned char* dw = dev(std::vector<unsigned char>(bytes));
  ok(gk::qsgd_encode(dx, static_cast<std::int64_t>(n), static_cast<std::int64_t>(bucket), dl, L, lv == cx::qsgd::uniform_levels(L), max_norm, rng, 17,
                     dw, nullptr),
     "qsgd_encode");
  ok(cudaDeviceSynchronize(), "sync");
  const auto gpu = host(dw, bytes);
  EXPECT(std::memcmp(cpu.data(), gpu.data(), bytes) == 0, "qsgd encode n=%zu bucket=%zu L=%d max=%d kind=%d", n, bucket, L, max_norm, kind);
  std::vector<float> y(n, -0.25f), cy = y;
  cx::qsgd::decode(cpu, cy, lv, bucket, /*add=*/true);
  float* dy = dev(y);
  ok(gk::qsgd_decode(dw, static_cast<std::int64_t>(n), static_cast<std::int64_t>(bucket), dl, L, dy, true, nullptr), "qsgd_decode");
  ok(cudaDeviceSynchronize(), "sync");
  EXPECT(same_bits(host(dy, n), cy), "qsgd decode n=%zu bucket=%zu L=%d", n, bucket, L);
  cudaFree(dx);
  cudaFree(dl);
  cudaFree(dw);
  cudaFree(dy);
}

void sparse_case(std::size_t n, double density) {
  const auto x = data(n, 5, 0);
  const std::size_t k = cx::sparsify::k_of(n, density);
  const auto idx = cx::sparsify::random_k_indices(n, k, cx::counter_rng(1, 2));
  std::vector<float> val(k);
  for (std::size_t j = 0; j < k; ++j) val[j] = x[idx[j]];
  float* dx = dev(x);
  std::uint32_t* di = dev(idx);
  float* dv = dev(std::vector<float>(k));
  ok(gk::gather_values(dx, di, static_cast<std::int64_t>(k), dv, nullptr), "gather_values");
  ok(cudaDeviceSynchronize(), "sync");
  EXPECT(same_bits(host(dv, k), val), "gather n=%zu k=%zu", n, k);
  std::vector<float> acc(n, 1.0f), cacc = acc;
  for (std::size_t j = 0; j < k; ++j) cacc[idx[j]] += val[j];
  float* da = dev(acc);
  ok(gk::scatter_add(di, dv, static_cast<std::int64_t>(k), da, static_cast<std::int64_t>(n), nullptr), "scatter_add");
  ok(cudaDeviceSynchronize(), "sync");
  EXPECT(same_bits(host(da, n), cacc), "scatter_add n=%zu k=%zu", n, k);
  cudaFree(dx);
  cudaFree(di);
  cudaFree(dv);
  cudaFree(da);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  for (std::size_t n : {1u, 7u, 255u, 1024u, 1025u, 70001u})
    for (std::size_t chunk : {1u, 5u, 512u, 1024u})
      for (int kind : {0, 1, 2, 3}) int8_case(n, chunk, kind);
  for (std::size_t n : {1u, 33u, 1000u, 8193u, 70001u})
    for (std::size_t bucket : {1u, 100u, 8192u})
      for (const auto& lv : {cx::qsgd::uniform_levels(1), cx::qsgd::uniform_levels(4), cx::qsgd::uniform_levels(9), cx::qsgd::exponential_levels(7)})
        for (bool mx : {false, true})
          for (int kind : {0, 3}) qsgd_case(n, bucket, lv, mx, kind);
  for (std::size_t n : {1u, 100u, 100003u})
    for (double d : {0.001, 0.1, 0.9}) sparse_case(n, d);
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}
