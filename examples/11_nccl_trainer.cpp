// 11 — the trainer of example 10 on GPUs: one rank per GPU, MPI only to start, NCCL for the
// gradients, the bucket kernels of exec/nccl/kernels.cuh for packing, compression and averaging.
//
//   mpirun -np 8 ./example_11_nccl_trainer [--steps 300] [--lr 0.1] [--batch 768] [--fp16]
//                                          [--ranks-per-node 8] [--strategy s.json]
//
// Every rank builds the same tanh MLP 64-128-128-10 (softmax cross-entropy) on its GPU (device
// = rank mod the devices of the node), the same synthetic data (Gaussian inputs labelled by a
// fixed random linear teacher) and the same initial weights. Each step it runs forward and
// backward on its 1/p of the global batch on a compute stream; as each layer's gradient kernel
// is enqueued, backward calls session.ready(tensor), and the session (autosync::session on
// exec::nccl_backend) starts the buckets whose gradients are done on its own stream (an event orders it after the gradient kernels),
// so the last layers' buckets travel while the first layers compute. The gradients live in one
// flat device buffer in model order, so buckets of adjacent tensors run in place (no packing).
// The strategy is what search::optimize finds on rank 0 for the MLP on `--ranks-per-node` H100s
// per node (the DGX H100 node of zoo/clusters.hpp), or the one of --strategy, read by rank 0; the
// session broadcasts it over NCCL (host memory, staged) and builds the plan and the executor. Rank 0 prints the loss
// curve and the sync timings. The CUDA half is 11_nccl_trainer_kernels.cu.
#include <autosync/cost/estimate.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/nccl/backend.hpp>
#include <autosync/io/json.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/session_impl.hpp>
#include <autosync/zoo/clusters.hpp>

#include "trainer_args.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

// 11_nccl_trainer_kernels.cu
namespace ex11 {
cudaError_t linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int in, int out, bool act, cudaStream_t s);
cudaError_t softmax_xent(const float* logits, const int* labels, float* dlogits, double* loss, int B, int C, float scale, cudaStream_t s);
cudaError_t linear_backward_params(const float* dY, const float* X, float* dW, float* db, int B, int in, int out, cudaStream_t s);
cudaError_t linear_backward_input(const float* dY, const float* W, const float* A, float* dX, int B, int in, int out, cudaStream_t s);
cudaError_t sgd(float* w, const float* g, long n, float lr, cudaStream_t s);
}  // namespace ex11

namespace {

struct args {
  int steps = 300;
  float lr = 0.1f;
  long batch = 768;
  int ranks_per_node = 0;  // 0: every rank on one node
  bool fp16 = false;
  std::string strategy_file;
};

args parse(int argc, char** argv) {
  args a;
  const examples::arg_reader in{argc, argv};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps")) a.steps = static_cast<int>(in.number(i, 1, 1e7));
    else if (!std::strcmp(argv[i], "--lr")) a.lr = static_cast<float>(in.number(i, 1e-9, 1e3));
    else if (!std::strcmp(argv[i], "--batch")) a.batch = static_cast<long>(in.number(i, 1, 1e7));
    else if (!std::strcmp(argv[i], "--ranks-per-node")) a.ranks_per_node = static_cast<int>(in.number(i, 1, 1024));
    else if (!std::strcmp(argv[i], "--fp16")) a.fp16 = true;
    else if (!std::strcmp(argv[i], "--strategy")) a.strategy_file = in.value(i);
    else throw autosync::error(argv[i], "unknown option (valid: --steps --lr --batch --ranks-per-node --fp16 --strategy)");
  }
  return a;
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw autosync::error("cuda", std::string(what) + ": " + cudaGetErrorString(e));
}

// The MLP's model_spec: per layer a weight [out x in] and a bias [out], f32, forward order
// (trainer_support.hpp's mlp_model, without its Eigen dependency).
autosync::model_spec mlp_model(const std::vector<int>& widths, long batch_per_rank) {
  autosync::model_spec m;
  m.name = "mlp";
  m.batch_per_device = batch_per_rank;
  m.source = "examples/11_nccl_trainer: tanh MLP, softmax cross-entropy";
  const double B = static_cast<double>(batch_per_rank);
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const double in = widths[l], out = widths[l + 1];
    autosync::tensor w;
    w.name = "fc" + std::to_string(l) + ".weight";
    w.shape = {widths[l + 1], widths[l]};
    w.backward_flops = 2.0 * B * in * out * (l == 0 ? 1.0 : 2.0);
    autosync::tensor b;
    b.name = "fc" + std::to_string(l) + ".bias";
    b.shape = {widths[l + 1]};
    b.backward_flops = B * out;
    m.tensors.push_back(w);
    m.tensors.push_back(b);
    m.forward_flops += 2.0 * B * in * out;
  }
  m.validate();
  return m;
}

template <class T>
T* device_alloc(std::size_t n) {
  void* p = nullptr;
  cuda_ok(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  return static_cast<T*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autosync;
  using namespace autosync::exec;
  int rank = 0;
  try {
    mpi_session mpi(argc, argv);
    auto boot = mpi_backend::world();  // MPI starts NCCL, then carries the loss curve (host numbers)
    rank = boot.rank();
    const int p = boot.size();
    const args a = parse(argc, argv);
    if (a.batch % p != 0) throw error("--batch", std::to_string(a.batch) + " is not a multiple of the " + std::to_string(p) + " ranks");
    const int rpn = a.ranks_per_node > 0 ? a.ranks_per_node : p;
    if (p % rpn != 0) throw error("--ranks-per-node", std::to_string(rpn) + " does not divide the " + std::to_string(p) + " ranks");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) throw error("device", "no CUDA device on this node");
    const int device = (rank % rpn) % devices;
    cuda_ok(cudaSetDevice(device), "cudaSetDevice");

    const std::vector<int> widths{64, 128, 128, 10};
    const long B = a.batch / p;
    const model_spec model = mlp_model(widths, B);
    cluster_spec cluster = zoo::dgx_h100(p / rpn);
    for (auto& n : cluster.nodes) n.devices = rpn;

    // NCCL: the unique id travels over MPI; the executor's communicators are NCCL's
    auto world = nccl_backend::bootstrap(boot, device);
    world.set_job_abort([](std::string_view) { MPI_Abort(MPI_COMM_WORLD, 1); });
    cudaStream_t compute = nullptr;
    cuda_ok(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreate");
    world.set_compute_stream(compute);
    // rank 0 finds (or reads) the strategy; the session broadcasts it, checks it, builds the plan
    // and the executor on a duplicate of `world`, and averages (reduction::average)
    const strategy_source source(
        "the strategy",
        [&](const model_spec& m, int world_size, int ranks_per_node) {
          strategy_desc s;
          if (a.strategy_file.empty()) {
            s = search::optimize(m, cluster, search::options{}).strategy;  // deterministic (counted budgets)
            s.made_for = made_for_of(cluster, world_size, ranks_per_node);
          } else {
            s = io::load_strategy_file(a.strategy_file);
          }
          if (a.fp16)
            for (auto& g : s.groups) g.compression = comp::fp16::value;
          return s;
        },
        cluster);
    session_options so;
    so.ranks_per_node = rpn;
    session sync(world, model, source, so);
    const auto& strategy = sync.strategy();
    const auto predicted = cost::estimate(model, cluster, strategy);

    if (rank == 0) {
      std::printf("MLP 64-128-128-10 (%lld parameters), %d ranks (%d per node) on GPUs, global batch %ld, lr %g%s\n",
                  static_cast<long long>(model.total_elements()), p, rpn, a.batch, static_cast<double>(a.lr), a.fp16 ? ", fp16" : "");
      std::printf("strategy (%s, %zu groups, %zu buckets; predicted sync exposed %.1f us):\n%s\n", strategy.name.c_str(), strategy.groups.size(),
                  sync.buckets(), predicted.exposed * 1e6, io::to_json_text(strategy).c_str());
    }

    // parameters and gradients: one flat buffer each, in model order
    std::vector<std::size_t> offset;
    std::size_t total = 0;
    for (const auto& t : model.tensors) {
      offset.push_back(total);
      total += static_cast<std::size_t>(t.elements());
    }
    std::vector<float> init(total);
    std::mt19937 wrng(7);
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      std::normal_distribution<float> nd(0.0f, 1.0f / std::sqrt(static_cast<float>(widths[l])));
      const std::size_t wt = 2 * l;
      for (std::int64_t i = 0; i < model.tensors[wt].elements(); ++i) init[offset[wt] + static_cast<std::size_t>(i)] = nd(wrng);
    }
    float* params = device_alloc<float>(total);
    float* grads = device_alloc<float>(total);
    cuda_ok(cudaMemcpy(params, init.data(), total * sizeof(float), cudaMemcpyHostToDevice), "params");
    std::vector<gradient> gviews;
    for (std::size_t t = 0; t < model.tensors.size(); ++t) gviews.push_back({grads + offset[t], dtype::f32, model.tensors[t].elements()});

    // data: 4 global batches of Gaussian inputs, labels = argmax of a random linear teacher
    const long rows = 4 * a.batch;
    std::vector<float> X(static_cast<std::size_t>(rows) * 64);
    std::vector<int> Y(static_cast<std::size_t>(rows));
    std::mt19937 drng(42);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> teacher(64 * 10);
    for (auto& v : teacher) v = nd(drng);
    for (long r = 0; r < rows; ++r) {
      for (int k = 0; k < 64; ++k) X[static_cast<std::size_t>(r * 64 + k)] = nd(drng);
      int best = 0;
      float bv = -1e30f;
      for (int cl = 0; cl < 10; ++cl) {
        float s = 0.0f;
        for (int k = 0; k < 64; ++k) s += X[static_cast<std::size_t>(r * 64 + k)] * teacher[static_cast<std::size_t>(k * 10 + cl)];
        if (s > bv) bv = s, best = cl;
      }
      Y[static_cast<std::size_t>(r)] = best;
    }
    float* dX = device_alloc<float>(X.size());
    int* dY = device_alloc<int>(Y.size());
    cuda_ok(cudaMemcpy(dX, X.data(), X.size() * sizeof(float), cudaMemcpyHostToDevice), "data");
    cuda_ok(cudaMemcpy(dY, Y.data(), Y.size() * sizeof(int), cudaMemcpyHostToDevice), "labels");
    // activations a[l] (B x widths[l]) and their gradients
    const std::size_t L = widths.size() - 1;
    std::vector<float*> act(L + 1), dact(L + 1);
    for (std::size_t l = 1; l <= L; ++l) {
      act[l] = device_alloc<float>(static_cast<std::size_t>(B) * static_cast<std::size_t>(widths[l]));
      dact[l] = device_alloc<float>(static_cast<std::size_t>(B) * static_cast<std::size_t>(widths[l]));
    }
    double* loss = device_alloc<double>(1);

    const int every = std::max(1, a.steps / 15);
    double sync_s = 0.0, exposed = 0.0;
    for (int k = 0; k < a.steps; ++k) {
      const long first = ((static_cast<long>(k) * a.batch) % rows) + rank * B;  // my shard of this global batch
      act[0] = dX + first * 64;
      const int* labels = dY + first;
      cuda_ok(cudaMemsetAsync(loss, 0, sizeof(double), compute), "loss");
      for (std::size_t l = 0; l < L; ++l)
        cuda_ok(ex11::linear_forward(act[l], params + offset[2 * l], params + offset[2 * l + 1], act[l + 1], static_cast<int>(B), widths[l], widths[l + 1],
                                     l + 1 < L, compute),
                "forward");
      sync.begin(gviews);
      cuda_ok(ex11::softmax_xent(act[L], labels, dact[L], loss, static_cast<int>(B), widths[L], 1.0f / static_cast<float>(B), compute), "loss");
      for (std::size_t l = L; l-- > 0;) {
        cuda_ok(ex11::linear_backward_params(dact[l + 1], act[l], grads + offset[2 * l], grads + offset[2 * l + 1], static_cast<int>(B), widths[l],
                                             widths[l + 1], compute),
                "backward");
        sync.ready(2 * l);      // the gradient kernels of this layer are enqueued: its buckets may go
        sync.ready(2 * l + 1);
        if (l > 0)
          cuda_ok(ex11::linear_backward_input(dact[l + 1], params + offset[2 * l], act[l], dact[l], static_cast<int>(B), widths[l], widths[l + 1],
                                              compute),
                  "backward");
      }
      const auto t = sync.finish();  // averaged gradients, on the device
      sync_s += t.sync;
      exposed += t.exposed;
      cuda_ok(ex11::sgd(params, grads, static_cast<long>(total), a.lr, compute), "sgd");
      if (k % every == 0 || k + 1 == a.steps) {
        double l = 0.0;
        cuda_ok(cudaMemcpyAsync(&l, loss, sizeof l, cudaMemcpyDeviceToHost, compute), "loss");
        cuda_ok(cudaStreamSynchronize(compute), "loss");
        l /= static_cast<double>(B);  // the mean over my shard
        boot.all_reduce(&l, 1, dtype::f64);
        if (rank == 0) std::printf("step %5d  loss %.4f\n", k, l / p);
      }
    }
    cuda_ok(cudaStreamSynchronize(compute), "end");
    if (rank == 0)
      std::printf("rank 0: sync %.1f us, exposed %.1f us per step (mean over %d steps)\n", sync_s / a.steps * 1e6, exposed / a.steps * 1e6, a.steps);
    for (std::size_t l = 1; l <= L; ++l) {
      cudaFree(act[l]);
      cudaFree(dact[l]);
    }
    cudaFree(params);
    cudaFree(grads);
    cudaFree(dX);
    cudaFree(dY);
    cudaFree(loss);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "11_nccl_trainer (rank %d): %s\n", rank, e.what());
    return 1;
  }
}
