// tests/cuda/kernels_gpu.cu — the bucket kernels of exec/nccl/kernels.cuh on a GPU, against the
// CPU reference (the executor's memcpy pack/unpack, exec/compress.hpp encode/decode, the
// executor's average). Plans come from random strategies (strided shards, odd sizes, every
// dtype); every result is compared bit for bit. On half of the trials the tensors start off a
// 16-byte boundary (a random element offset inside a larger allocation, as tensors of one arena
// do), with poisoned guard bytes around each that must survive every kernel: the vector, funnel
// shift and element paths of exec/nccl/bucket_walk.hpp all run on the device. Exits 77 (ctest
// SKIP_RETURN_CODE) when cudaGetDeviceCount finds no device.
#include <autosync/exec/compress.hpp>
#include <autosync/exec/nccl/kernels.cuh>
#include <autosync/exec/plan.hpp>

#include "../common/random_strategies.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace nc = autosync::exec::nccl;
using autosync::dtype;

namespace {

int failures = 0;
#define EXPECT(cond, ...)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      ++failures;                                           \
      if (failures < 20) {                                  \
        std::fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
        std::fprintf(stderr, __VA_ARGS__);                  \
        std::fprintf(stderr, "\n");                         \
      }                                                     \
    }                                                       \
  } while (0)

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <class T>
T* to_device(const std::vector<T>& v) {
  T* d = nullptr;
  cuda_ok(cudaMalloc(&d, v.size() * sizeof(T) + 1), "cudaMalloc");
  if (!v.empty()) cuda_ok(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  return d;
}
template <class T>
std::vector<T> to_host(const T* d, std::size_t n) {
  std::vector<T> v(n);
  if (n) cuda_ok(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return v;
}

// Random floating bytes that are real numbers (f16/bf16/f32/f64 of moderate magnitude).
void fill(std::vector<unsigned char>& bytes, dtype t, std::mt19937& rng) {
  std::normal_distribution<double> nd(0.0, 3.0);
  const std::size_t es = autosync::size_of(t), n = bytes.size() / es;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = nd(rng);
    unsigned char* e = bytes.data() + i * es;
    switch (t) {
      case dtype::f32: { const float f = static_cast<float>(x); std::memcpy(e, &f, 4); break; }
      case dtype::f64: std::memcpy(e, &x, 8); break;
      case dtype::f16: { const auto h = autosync::exec::to_f16(x); std::memcpy(e, &h, 2); break; }
      case dtype::bf16: { const auto h = autosync::exec::to_bf16(x); std::memcpy(e, &h, 2); break; }
      default: for (std::size_t k = 0; k < es; ++k) e[k] = static_cast<unsigned char>(rng());
    }
  }
}

// The executor's host average of n elements (exec/executor.hpp `scale`).
void host_average(unsigned char* buf, std::size_t n, dtype t, double factor) {
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char* e = buf + i * autosync::size_of(t);
    switch (t) {
      case dtype::f32: { float v; std::memcpy(&v, e, 4); v = static_cast<float>(v * factor); std::memcpy(e, &v, 4); break; }
      case dtype::f64: { double v; std::memcpy(&v, e, 8); v *= factor; std::memcpy(e, &v, 8); break; }
      case dtype::f16: { std::uint16_t h; std::memcpy(&h, e, 2); h = autosync::exec::to_f16(static_cast<double>(autosync::exec::from_f16(h)) * factor); std::memcpy(e, &h, 2); break; }
      case dtype::bf16: { std::uint16_t h; std::memcpy(&h, e, 2); h = autosync::exec::to_bf16(static_cast<double>(autosync::exec::from_bf16(h)) * factor); std::memcpy(e, &h, 2); break; }
      default: return;
    }
  }
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device (cudaGetDeviceCount found none); the bucket kernels need a GPU\n");
    return 77;
  }
  const auto k = nc::kernel_table();
  if (!k.complete()) {
    std::fprintf(stderr, "kernel table incomplete\n");
    return 1;
  }
  std::mt19937 rng(5);
  std::size_t buckets = 0, compressed = 0;
  for (int trial = 0; trial < 60; ++trial) {
    auto rc = autosync::testing::random_strategy(rng, 2, trial % 2 == 1);
    const auto cluster = autosync::testing::make_cluster(2, 2);
    const auto p = autosync::exec::compile_plan(rc.model, cluster, rc.strategy, {4, 2});
    const std::size_t T = rc.model.tensors.size();
    std::vector<std::vector<unsigned char>> host(T);
    std::vector<unsigned char*> dev(T), alloc(T);
    std::vector<std::size_t> off(T, 0);
    constexpr std::size_t guard = 32;  // poisoned bytes before and after each tensor
    for (std::size_t t = 0; t < T; ++t) {
      host[t].resize(static_cast<std::size_t>(rc.model.tensors[t].bytes()));
      fill(host[t], rc.model.tensors[t].type, rng);
      const std::size_t es = autosync::size_of(rc.model.tensors[t].type);
      off[t] = trial % 4 >= 2 ? es * (rng() % (16 / es)) : 0;  // compressed or not (trial % 2)
      std::vector<unsigned char> with_guards(guard + off[t] + host[t].size() + guard, 0xa5);
      std::memcpy(with_guards.data() + guard + off[t], host[t].data(), host[t].size());
      alloc[t] = to_device(with_guards);
      dev[t] = alloc[t] + guard + off[t];
    }
    auto guards_intact = [&] {
      for (std::size_t t = 0; t < T; ++t) {
        const auto all = to_host(alloc[t], guard + off[t] + host[t].size() + guard);
        for (std::size_t i = 0; i < guard + off[t]; ++i)
          if (all[i] != 0xa5) return false;
        for (std::size_t i = guard + off[t] + host[t].size(); i < all.size(); ++i)
          if (all[i] != 0xa5) return false;
      }
      return true;
    };
    std::vector<void*> ptrs(dev.begin(), dev.end());
    void** dptrs = to_device(ptrs);
    for (const auto& b : p.buckets) {
      ++buckets;
      const std::size_t es = autosync::size_of(b.type), n = static_cast<std::size_t>(b.elements);
      std::vector<nc::ew::segment_row> rows;
      for (const auto& s : b.segments) rows.push_back({s.fused, s.offset, s.block, s.stride, s.blocks, s.tensor, 0});
      auto* drows = to_device(rows);
      std::vector<unsigned char> ref(n * es);
      for (const auto& s : b.segments)
        for (std::int64_t q = 0; q < s.blocks; ++q)
          std::memcpy(ref.data() + static_cast<std::size_t>(s.fused + q * s.block) * es,
                      host[s.tensor].data() + static_cast<std::size_t>(s.offset + q * s.stride) * es, static_cast<std::size_t>(s.block) * es);
      nc::bucket_args a;
      a.rows = drows;
      a.nrows = static_cast<int>(rows.size());
      a.tensors = dptrs;
      a.n = b.elements;
      a.type = b.type;
      // pack
      unsigned char* fused = to_device(std::vector<unsigned char>(n * es, 0));
      a.fused = fused;
      cuda_ok(k.pack(a, nullptr), "pack");
      cuda_ok(cudaDeviceSynchronize(), "pack sync");
      EXPECT(to_host(fused, n * es) == ref, "pack differs (bucket of %zu elements, %zu segments)", n, rows.size());
      // unpack with the average over 3 ranks (a fresh "sum": the packed bytes)
      const double factor = 1.0 / 3.0;
      a.factor = factor;
      cuda_ok(k.unpack(a, nullptr), "unpack");
      std::vector<unsigned char> avg = ref;
      host_average(avg.data(), n, b.type, factor);
      std::vector<std::vector<unsigned char>> want = host;
      for (const auto& s : b.segments)
        for (std::int64_t q = 0; q < s.blocks; ++q)
          std::memcpy(want[s.tensor].data() + static_cast<std::size_t>(s.offset + q * s.stride) * es,
                      avg.data() + static_cast<std::size_t>(s.fused + q * s.block) * es, static_cast<std::size_t>(s.block) * es);
      cuda_ok(cudaDeviceSynchronize(), "unpack sync");
      for (std::size_t t = 0; t < T; ++t) EXPECT(to_host(dev[t], host[t].size()) == want[t], "unpack+average differs on tensor %zu", t);
      EXPECT(guards_intact(), "unpack+average wrote outside a tensor (trial %d)", trial);
      // in-place average of the fused buffer
      cuda_ok(k.scale(fused, b.elements, b.type, factor, nullptr), "scale");
      cuda_ok(cudaDeviceSynchronize(), "scale sync");
      EXPECT(to_host(fused, n * es) == avg, "scale differs");
      // restore the tensors
      for (std::size_t t = 0; t < T; ++t) cuda_ok(cudaMemcpy(dev[t], host[t].data(), host[t].size(), cudaMemcpyHostToDevice), "restore");
      if (b.compressed) {
        ++compressed;
        const double scale = autosync::exec::wire_scale(b.wire, 4);
        std::vector<double> r_ref(n, 0.0);
        double* dres = to_device(r_ref);
        std::uint16_t* dwire = to_device(std::vector<std::uint16_t>(n, 0));
        a.wire = dwire;
        a.residual = dres;
        a.wire_type = b.wire;
        a.scale = scale;
        a.factor = 0.25;
        for (int iter = 0; iter < 3; ++iter) {
          std::vector<std::uint16_t> w_ref(n);
          if (b.type == dtype::f32) autosync::exec::encode(reinterpret_cast<const float*>(ref.data()), r_ref.data(), w_ref.data(), n, b.wire, scale);
          else autosync::exec::encode(reinterpret_cast<const double*>(ref.data()), r_ref.data(), w_ref.data(), n, b.wire, scale);
          cuda_ok(k.pack_encode(a, nullptr), "pack_encode");
          cuda_ok(cudaDeviceSynchronize(), "pack_encode sync");
          EXPECT(to_host(dwire, n) == w_ref, "pack_encode wire differs (iteration %d)", iter);
          const auto r_dev = to_host(dres, n);
          EXPECT(std::memcmp(r_dev.data(), r_ref.data(), n * sizeof(double)) == 0, "residual differs (iteration %d)", iter);
        }
        // decode_unpack of the wire with the average over 4 ranks
        std::vector<unsigned char> dec(n * es);
        const auto w_now = to_host(dwire, n);
        if (b.type == dtype::f32) autosync::exec::decode(w_now.data(), reinterpret_cast<float*>(dec.data()), n, b.wire, scale, 0.25);
        else autosync::exec::decode(w_now.data(), reinterpret_cast<double*>(dec.data()), n, b.wire, scale, 0.25);
        cuda_ok(k.decode_unpack(a, nullptr), "decode_unpack");
        cuda_ok(cudaDeviceSynchronize(), "decode_unpack sync");
        std::vector<std::vector<unsigned char>> want2 = host;
        for (const auto& s : b.segments)
          for (std::int64_t q = 0; q < s.blocks; ++q)
            std::memcpy(want2[s.tensor].data() + static_cast<std::size_t>(s.offset + q * s.stride) * es,
                        dec.data() + static_cast<std::size_t>(s.fused + q * s.block) * es, static_cast<std::size_t>(s.block) * es);
        for (std::size_t t = 0; t < T; ++t) EXPECT(to_host(dev[t], host[t].size()) == want2[t], "decode_unpack differs on tensor %zu", t);
        EXPECT(guards_intact(), "decode_unpack wrote outside a tensor (trial %d)", trial);
        for (std::size_t t = 0; t < T; ++t) cuda_ok(cudaMemcpy(dev[t], host[t].data(), host[t].size(), cudaMemcpyHostToDevice), "restore");
        cudaFree(dres);
        cudaFree(dwire);
        a.wire = nullptr;
        a.residual = nullptr;
      }
      cudaFree(fused);
      cudaFree(drows);
    }
    for (auto* d : alloc) cudaFree(d);
    cudaFree(dptrs);
  }
  std::printf("kernels_gpu: %zu buckets (%zu compressed), %d failures\n", buckets, compressed, failures);
  if (compressed == 0) {
    std::fprintf(stderr, "no compressed bucket was drawn\n");
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
