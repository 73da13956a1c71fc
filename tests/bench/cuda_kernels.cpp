// bench_cuda_kernels — the NCCL executor's bucket kernels and its one-rank bucket pipeline,
// against the device's own cudaMemcpy, printed as ratios in one run (needs a GPU; built when
// nvcc and NCCL are found; the kernels come from cuda_kernels_tu.cu).
//
//   anchor    cudaMemcpyAsync device-to-device of the model's gradient bytes: 2 x bytes / time
//             (read + write) = the device's copy bandwidth
//   pack      one launch per 25 MiB bucket (DDP's buckets, strategy/baselines.hpp), tensors in
//             separate allocations: read + write of every element       target >= 80 % of anchor
//   unpack    the same back, and with the average (x 1/8) fused
//   fp16      pack+encode with error feedback (f32 read, f16 write, f64 residual read + write:
//             22 B per element) and decode+unpack (6 B per element), as bandwidth
//   pipeline  executor<nccl_backend> on one rank: begin_iteration, ready() in backward order,
//             finish(), per iteration, against 2 x the anchor's time for the gradient bytes (a
//             packed one-rank iteration must at least pack and unpack them): the ratio is the
//             pipeline's overhead factor (NCCL's one-rank all-reduce is a copy too)
// for the resnet50 and bert-large gradient sets of zoo/models.hpp.
#include <autosync/exec/executor.hpp>
#include <autosync/exec/nccl/backend.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw error("cuda", std::string(what) + ": " + cudaGetErrorString(e));
}

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
  template <class F>
  double seconds(cudaStream_t s, int reps, F&& f) {
    f();  // warm-up
    ok(cudaEventRecord(a, s), "record");
    for (int i = 0; i < reps; ++i) f();
    ok(cudaEventRecord(b, s), "record");
    ok(cudaEventSynchronize(b), "sync");
    float ms = 0.0f;
    ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
    return static_cast<double>(ms) * 1e-3 / reps;
  }
};

struct device_tensors {
  std::vector<void*> ptrs;
  explicit device_tensors(const model_spec& m) {
    for (const auto& t : m.tensors) {
      void* p = nullptr;
      ok(cudaMalloc(&p, static_cast<std::size_t>(t.bytes())), "cudaMalloc");
      ok(cudaMemset(p, 0, static_cast<std::size_t>(t.bytes())), "cudaMemset");
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
  const double bytes = static_cast<double>(m.total_bytes());
  const double elems = static_cast<double>(m.total_elements());
  cudaStream_t st = nullptr;
  ok(cudaStreamCreate(&st), "stream");
  timer tm;
  const int reps = 10;

  // anchor
  void *src = nullptr, *dst = nullptr;
  ok(cudaMalloc(&src, static_cast<std::size_t>(bytes)), "cudaMalloc");
  ok(cudaMalloc(&dst, static_cast<std::size_t>(bytes)), "cudaMalloc");
  const double t_copy = tm.seconds(st, reps, [&] { ok(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, st), "copy"); });
  const double bw_copy = 2.0 * bytes / t_copy;

  device_tensors tensors(m);
  void** dtab = nullptr;
  ok(cudaMalloc(&dtab, tensors.ptrs.size() * sizeof(void*)), "cudaMalloc");
  ok(cudaMemcpy(dtab, tensors.ptrs.data(), tensors.ptrs.size() * sizeof(void*), cudaMemcpyHostToDevice), "table");
  auto tables = [&](const plan& pl) {
    std::vector<nccl::bucket_args> args;
    for (const auto& b : pl.buckets) {
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
      a.fused = dst;  // the fused buffer: the anchor's destination (large enough for any bucket)
      args.push_back(a);
    }
    return args;
  };
  auto args = tables(p);
  const double t_pack = tm.seconds(st, reps, [&] { for (auto& a : args) ok(k.pack(a, st), "pack"); });
  const double t_unpack = tm.seconds(st, reps, [&] { for (auto& a : args) ok(k.unpack(a, st), "unpack"); });
  for (auto& a : args) a.factor = 0.125;
  const double t_unpack_avg = tm.seconds(st, reps, [&] { for (auto& a : args) ok(k.unpack(a, st), "unpack"); });

  auto args16 = tables(p16);
  std::uint16_t* wire = nullptr;
  double* residual = nullptr;
  ok(cudaMalloc(&wire, static_cast<std::size_t>(elems) * 2), "cudaMalloc");
  ok(cudaMalloc(&residual, static_cast<std::size_t>(elems) * 8), "cudaMalloc");
  ok(cudaMemset(residual, 0, static_cast<std::size_t>(elems) * 8), "cudaMemset");
  std::size_t at = 0;
  for (std::size_t i = 0; i < args16.size(); ++i) {
    args16[i].wire = wire + at;
    args16[i].residual = p16.buckets[i].compressed ? residual + at : nullptr;
    args16[i].wire_type = dtype::f16;
    args16[i].scale = 1.0;
    at += static_cast<std::size_t>(args16[i].n);
  }
  double enc_bytes = 0.0, dec_bytes = 0.0;
  for (std::size_t i = 0; i < args16.size(); ++i)
    if (p16.buckets[i].compressed) {
      enc_bytes += 22.0 * static_cast<double>(args16[i].n);
      dec_bytes += 6.0 * static_cast<double>(args16[i].n);
    }
  const double t_enc = tm.seconds(st, reps, [&] {
    for (std::size_t i = 0; i < args16.size(); ++i)
      if (p16.buckets[i].compressed) ok(k.pack_encode(args16[i], st), "pack_encode");
  });
  const double t_dec = tm.seconds(st, reps, [&] {
    for (std::size_t i = 0; i < args16.size(); ++i)
      if (p16.buckets[i].compressed) ok(k.decode_unpack(args16[i], st), "decode_unpack");
  });

  // the one-rank pipeline
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
    once();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) once();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  };
  const double t_pipe = pipeline(p), t_pipe16 = pipeline(p16);

  std::printf("\n%s: %zu tensors, %.1f MiB of gradients, %zu buckets of <= 25 MiB\n", m.name.c_str(), m.tensors.size(), bytes / 1048576.0,
              p.buckets.size());
  std::printf("  anchor  cudaMemcpy D2D          %8.1f GB/s  (%.1f us)\n", bw_copy * 1e-9, t_copy * 1e6);
  auto row = [&](const char* what, double moved, double t) {
    std::printf("  %-30s %8.1f GB/s  ratio to anchor %.2f\n", what, moved / t * 1e-9, moved / t / bw_copy);
  };
  row("pack", 2.0 * bytes, t_pack);
  row("unpack", 2.0 * bytes, t_unpack);
  row("unpack + average", 2.0 * bytes, t_unpack_avg);
  row("fp16 pack+encode (feedback)", enc_bytes, t_enc);
  row("fp16 decode+unpack", dec_bytes, t_dec);
  std::printf("  %-30s %8.1f us   anchor 2 x cudaMemcpy %.1f us  ratio %.2f\n", "pipeline per iteration", t_pipe * 1e6, 2.0 * t_copy * 1e6,
              t_pipe / (2.0 * t_copy));
  std::printf("  %-30s %8.1f us   anchor 2 x cudaMemcpy %.1f us  ratio %.2f\n", "pipeline per iteration (fp16)", t_pipe16 * 1e6, 2.0 * t_copy * 1e6,
              t_pipe16 / (2.0 * t_copy));
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

int main() {
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
