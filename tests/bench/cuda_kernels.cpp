// bench_cuda_kernels — the NCCL executor's bucket kernels and its one-rank bucket pipeline,
// against the device's own copy bandwidth, printed as ratios in one run (needs a GPU; built when
// nvcc and NCCL are found; the kernels come from cuda_kernels_tu.cu).
//
//   anchor    cudaMemcpyAsync device-to-device of the measured buckets' bytes: 2 x bytes / time
//             (read + write) = the device's copy bandwidth
//   pack      one launch per DDP bucket (25 MiB, strategy/baselines.hpp) of >= 4 MiB, tensors in
//             separate allocations: read + write of every element, as a fraction of the anchor
//   unpack    the same back, and with the average (x 1/8) fused
//   fp16      pack+encode with error feedback (f32 read, f16 write, f64 residual read + write:
//             22 B per element) and decode+unpack (6 B per element), as a fraction of the anchor
//   pipeline  executor<nccl_backend> on one rank: begin_iteration, ready() in backward order,
//             finish(), per iteration, against 2 x the anchor's time for the gradient bytes (a
//             packed one-rank iteration must at least pack and unpack them): the ratio is the
//             pipeline's overhead factor (NCCL's one-rank all-reduce is a copy too)
// for the resnet50 and bert-large gradient sets of zoo/models.hpp.
//
// Method: gradients are random floats (not memset zeros: a compressor or a zero-page cannot
// flatter the figures); every output is poisoned (0xff bytes) before each timed repetition,
// outside the timed region; each repetition is timed with its own pair of CUDA events after
// three warm-ups, and the median of `reps` (default 31, at least 20) is printed. The pipeline is
// timed on the host per iteration (finish() waits for the device), median of `reps`.
//
// Usage: bench_cuda_kernels [reps] [--timeline]    (a Release build on a quiet GPU)
//   --timeline: one more fp32 pipeline iteration per model between cudaProfilerStart / Stop, for
//   the timeline of the buckets in flight:
//     nsys profile --capture-range=cudaProfilerApi --capture-range-end=repeat -t cuda,nvtx \
//       -o pipeline build/tests/bench/bench_cuda_kernels 20 --timeline
//     nsys stats --report cuda_gpu_trace pipeline.nsys-rep   (kernels and NCCL per stream, in time)
#include <autosync/exec/executor.hpp>
#include <autosync/exec/nccl/backend.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw error("cuda", std::string(what) + ": " + cudaGetErrorString(e));
}

int reps = 31;
bool timeline = false;  // --timeline

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The median over `reps` repetitions of f on stream s, each timed with its own events;
// `poison` runs before each repetition, outside the timed region.
struct timer {
  cudaEvent_t a{}, b{};
  timer() {
    ok(cudaEventCreate(&a), "event");
    ok(cudaEventCreate(&b), "event");
  }
  ~timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  template <class P, class F>
  double seconds(cudaStream_t s, P&& poison, F&& f) {
    for (int i = 0; i < 3; ++i) {  // warm-up
      poison();
      f();
    }
    ok(cudaStreamSynchronize(s), "sync");
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      poison();
      ok(cudaEventRecord(a, s), "record");
      f();
      ok(cudaEventRecord(b, s), "record");
      ok(cudaEventSynchronize(b), "sync");
      float ms = 0.0f;
      ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
      t.push_back(static_cast<double>(ms) * 1e-3);
    }
    return median(t);
  }
};

// Random floats in [-1, 1) (xorshift64*), `n` of them, copied to device memory at p.
void fill_random(void* p, std::size_t bytes, dtype t, std::uint64_t seed) {
  std::vector<unsigned char> h(bytes);
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545f4914f6cdd1dull;
  };
  const std::size_t es = size_of(t);
  for (std::size_t i = 0; i + es <= bytes; i += es) {
    const double u = static_cast<double>(next() >> 11) * 0x1p-52 - 1.0;
    if (t == dtype::f64) {
      std::memcpy(h.data() + i, &u, 8);
    } else if (es == 4) {
      const auto f = static_cast<float>(u);
      std::memcpy(h.data() + i, &f, 4);
    } else {
      const auto v = static_cast<std::uint16_t>(next());
      std::memcpy(h.data() + i, &v, es < 2 ? es : 2);
    }
  }
  ok(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

struct device_tensors {
  std::vector<void*> ptrs;
  explicit device_tensors(const model_spec& m) {
    for (const auto& t : m.tensors) {
      void* p = nullptr;
      ok(cudaMalloc(&p, static_cast<std::size_t>(t.bytes())), "cudaMalloc");
      fill_random(p, static_cast<std::size_t>(t.bytes()), t.type, ptrs.size() + 1);
      ptrs.push_back(p);
    }
  }
  ~device_tensors() {
    for (auto* p : ptrs) cudaFree(p);
  }
};

void run_model(const model_spec& m, nccl::device_kernels k, comms<nccl_backend>& c) {
  const auto cluster = zoo::dgx_h100(1);
  auto s = baselines::ddp(m);
  const auto p = compile_plan(m, cluster, s, layout{1, 1});
  auto s16 = s;
  for (auto& g : s16.groups) g.compression = comp::fp16::value;
  const auto p16 = compile_plan(m, cluster, s16, layout{1, 1});
  const double all_bytes = static_cast<double>(m.total_bytes());
  const double elems = static_cast<double>(m.total_elements());
  constexpr double min_bucket = 4.0 * 1048576.0;  // the kernels are judged on buckets >= 4 MiB
  cudaStream_t st = nullptr;
  ok(cudaStreamCreate(&st), "stream");
  timer tm;

  device_tensors tensors(m);
  auto poison_tensors = [&] {
    for (std::size_t t = 0; t < tensors.ptrs.size(); ++t) ok(cudaMemsetAsync(tensors.ptrs[t], 0xff, static_cast<std::size_t>(m.tensors[t].bytes()), st), "poison");
  };
  void *src = nullptr, *dst = nullptr;
  const std::size_t slack = 256 * (p.buckets.size() + p16.buckets.size());  // bucket regions start 256-byte aligned
  ok(cudaMalloc(&src, static_cast<std::size_t>(all_bytes) + slack), "cudaMalloc");
  ok(cudaMalloc(&dst, static_cast<std::size_t>(all_bytes) + slack), "cudaMalloc");
  fill_random(src, static_cast<std::size_t>(all_bytes), dtype::f32, 99);
  void** dtab = nullptr;
  ok(cudaMalloc(&dtab, tensors.ptrs.size() * sizeof(void*)), "cudaMalloc");
  ok(cudaMemcpy(dtab, tensors.ptrs.data(), tensors.ptrs.size() * sizeof(void*), cudaMemcpyHostToDevice), "table");
  // the buckets of >= 4 MiB, each with its own fused region of dst (as the executor's buffers)
  double bytes = 0.0;
  std::size_t small = 0;
  auto tables = [&](const plan& pl, double* measured) {
    std::vector<nccl::bucket_args> args;
    std::size_t at = 0;
    for (const auto& b : pl.buckets) {
      const double bb = static_cast<double>(b.elements) * static_cast<double>(size_of(b.type));
      if (bb < min_bucket) {
        if (measured == &bytes) ++small;
        continue;
      }
      std::vector<nccl::ew::segment_row> rows;
      for (const auto& sg : b.segments) rows.push_back({sg.fused, sg.offset, sg.block, sg.stride, sg.blocks, sg.tensor, 0});
      nccl::ew::segment_row* d = nullptr;
      ok(cudaMalloc(&d, rows.size() * sizeof rows[0]), "cudaMalloc");
      ok(cudaMemcpy(d, rows.data(), rows.size() * sizeof rows[0], cudaMemcpyHostToDevice), "rows");
      nccl::bucket_args a;
      a.rows = d;
      a.nrows = static_cast<int>(rows.size());
      a.tensors = dtab;
      a.n = b.elements;
      a.type = b.type;
      a.fused = static_cast<unsigned char*>(dst) + at;  // 256-byte aligned regions
      at += (static_cast<std::size_t>(bb) + 255) / 256 * 256;
      if (measured) *measured += bb;
      args.push_back(a);
    }
    return args;
  };
  auto args = tables(p, &bytes);
  const auto ubytes = static_cast<std::size_t>(bytes);

  // anchor: the same bytes, one device-to-device copy
  const double t_copy = tm.seconds(
      st, [&] { ok(cudaMemsetAsync(dst, 0xff, ubytes, st), "poison"); },
      [&] { ok(cudaMemcpyAsync(dst, src, ubytes, cudaMemcpyDeviceToDevice, st), "copy"); });
  const double bw_copy = 2.0 * bytes / t_copy;
  const double t_copy_all = tm.seconds(
      st, [] {}, [&] { ok(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(all_bytes), cudaMemcpyDeviceToDevice, st), "copy"); });

  auto poison_fused = [&] { ok(cudaMemsetAsync(dst, 0xff, static_cast<std::size_t>(all_bytes) + slack, st), "poison"); };
  const double t_pack = tm.seconds(st, poison_fused, [&] { for (auto& a : args) ok(k.pack(a, st), "pack"); });
  // the fused buffers hold random data for the unpacks
  ok(cudaMemcpyAsync(dst, src, ubytes, cudaMemcpyDeviceToDevice, st), "copy");
  const double t_unpack = tm.seconds(st, poison_tensors, [&] { for (auto& a : args) ok(k.unpack(a, st), "unpack"); });
  for (auto& a : args) a.factor = 0.125;
  const double t_unpack_avg = tm.seconds(st, poison_tensors, [&] { for (auto& a : args) ok(k.unpack(a, st), "unpack"); });

  std::vector<std::size_t> index16;  // the compressed buckets >= 4 MiB of p16, in args16 order
  double bytes16 = 0.0;
  auto args16 = tables(p16, &bytes16);
  for (std::size_t i = 0; i < p16.buckets.size(); ++i)
    if (static_cast<double>(p16.buckets[i].elements) * static_cast<double>(size_of(p16.buckets[i].type)) >= min_bucket) index16.push_back(i);
  std::uint16_t* wire = nullptr;
  double* residual = nullptr;
  ok(cudaMalloc(&wire, static_cast<std::size_t>(elems) * 2 + slack), "cudaMalloc");
  ok(cudaMalloc(&residual, static_cast<std::size_t>(elems) * 8), "cudaMalloc");
  fill_random(residual, static_cast<std::size_t>(elems) * 8, dtype::f64, 7);
  std::size_t at = 0;
  double enc_bytes = 0.0, dec_bytes = 0.0;
  for (std::size_t i = 0; i < args16.size(); ++i) {
    const bool compressed = p16.buckets[index16[i]].compressed;
    args16[i].wire = wire + at;
    args16[i].residual = compressed ? residual + at : nullptr;
    args16[i].wire_type = dtype::f16;
    args16[i].scale = 1.0;
    at += (static_cast<std::size_t>(args16[i].n) + 127) / 128 * 128;
    if (compressed) {
      enc_bytes += 22.0 * static_cast<double>(args16[i].n);
      dec_bytes += 6.0 * static_cast<double>(args16[i].n);
    }
  }
  auto poison_wire = [&] { ok(cudaMemsetAsync(wire, 0xff, static_cast<std::size_t>(elems) * 2, st), "poison"); };
  const double t_enc = tm.seconds(st, poison_wire, [&] {
    for (std::size_t i = 0; i < args16.size(); ++i)
      if (p16.buckets[index16[i]].compressed) ok(k.pack_encode(args16[i], st), "pack_encode");
  });
  const double t_dec = tm.seconds(st, poison_tensors, [&] {
    for (std::size_t i = 0; i < args16.size(); ++i)
      if (p16.buckets[index16[i]].compressed) ok(k.decode_unpack(args16[i], st), "decode_unpack");
  });

  // the one-rank pipeline, on random gradients
  for (std::size_t t = 0; t < tensors.ptrs.size(); ++t) fill_random(tensors.ptrs[t], static_cast<std::size_t>(m.tensors[t].bytes()), m.tensors[t].type, t + 1);
  std::vector<gradient> grads;
  for (std::size_t t = 0; t < m.tensors.size(); ++t) grads.push_back({tensors.ptrs[t], m.tensors[t].type, m.tensors[t].elements()});
  const auto order = m.backward_order();
  auto pipeline = [&](const plan& pl) {
    executor<nccl_backend> ex(c, m, pl, {});
    ex.setup();
    auto once = [&] {
      ex.begin_iteration(grads);
      for (auto t : order) ex.ready(t);
      (void)ex.finish();
    };
    for (int i = 0; i < 3; ++i) once();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(t);
  };
  const double t_pipe = pipeline(p), t_pipe16 = pipeline(p16);
  if (timeline) {  // one more fp32 iteration inside the profiler's capture range (nsys --capture-range=cudaProfilerApi)
    executor<nccl_backend> ex(c, m, p, {});
    ex.setup();
    for (int i = 0; i < 3; ++i) {
      ex.begin_iteration(grads);
      for (auto t : order) ex.ready(t);
      (void)ex.finish();
    }
    ok(cudaProfilerStart(), "cudaProfilerStart");
    ex.begin_iteration(grads);
    for (auto t : order) ex.ready(t);
    (void)ex.finish();
    ok(cudaProfilerStop(), "cudaProfilerStop");
  }

  std::printf("\n%s: %zu tensors, %.1f MiB of gradients, %zu DDP buckets (%zu of them < 4 MiB, not in the kernel rows); median of %d\n",
              m.name.c_str(), m.tensors.size(), all_bytes / 1048576.0, p.buckets.size(), small, reps);
  std::printf("  anchor  cudaMemcpy D2D of %.1f MiB  %8.1f GB/s  (%.1f us)\n", bytes / 1048576.0, bw_copy * 1e-9, t_copy * 1e6);
  auto row = [&](const char* what, double moved, double t) {
    std::printf("  %-30s %8.1f GB/s  fraction of copy %.2f\n", what, moved / t * 1e-9, moved / t / bw_copy);
  };
  row("pack", 2.0 * bytes, t_pack);
  row("unpack", 2.0 * bytes, t_unpack);
  row("unpack + average", 2.0 * bytes, t_unpack_avg);
  row("fp16 pack+encode (feedback)", enc_bytes, t_enc);
  row("fp16 decode+unpack", dec_bytes, t_dec);
  (void)bytes16;
  std::printf("  %-30s %8.1f us   byte floor 2 x cudaMemcpy of all gradients %.1f us  ratio %.2f\n", "pipeline per iteration", t_pipe * 1e6,
              2.0 * t_copy_all * 1e6, t_pipe / (2.0 * t_copy_all));
  std::printf("  %-30s %8.1f us   byte floor 2 x cudaMemcpy of all gradients %.1f us  ratio %.2f\n", "pipeline per iteration (fp16)",
              t_pipe16 * 1e6, 2.0 * t_copy_all * 1e6, t_pipe16 / (2.0 * t_copy_all));
  for (auto& a : args) cudaFree(const_cast<nccl::ew::segment_row*>(a.rows));
  for (auto& a : args16) cudaFree(const_cast<nccl::ew::segment_row*>(a.rows));
  cudaFree(dtab);
  cudaFree(src);
  cudaFree(dst);
  cudaFree(wire);
  cudaFree(residual);
  cudaStreamDestroy(st);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--timeline") == 0) {
      timeline = true;
      continue;
    }
    reps = std::atoi(argv[i]);
    if (reps < 20) {
      std::fprintf(stderr, "bench_cuda_kernels: reps must be >= 20 (a median of fewer is noise), got '%s'\n", argv[i]);
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("bench_cuda_kernels: SKIPPED (no CUDA device)\n");
    return 0;
  }
  try {
    cudaDeviceProp prop{};
    ok(cudaGetDeviceProperties(&prop, 0), "properties");
    std::printf("bench_cuda_kernels on %s\n", prop.name);
    ncclUniqueId id{};
    if (ncclGetUniqueId(&id) != ncclSuccess) throw error("nccl", "ncclGetUniqueId failed");
    auto c = comms<nccl_backend>::make(nccl_backend::init(id, 1, 0, 0), 1);
    const auto k = c.world.kernels();
    if (!k.complete()) throw error("kernels", "no kernel table registered (cuda_kernels_tu.cu not linked)");
    run_model(zoo::resnet50(), k, c);
    run_model(zoo::bert_large(), k, c);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_kernels: %s\n", e.what());
    return 1;
  }
}
