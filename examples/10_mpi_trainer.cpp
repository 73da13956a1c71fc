// 10 — a real data-parallel trainer on MPI: an Eigen MLP whose gradients autosync::session averages
// with the strategy autosync found for it, overlapped with backward.
//
//   mpirun -np 4 ./example_10_mpi_trainer [--steps 300] [--lr 0.1] [--batch 96] [--fp16]
//                                         [--no-error-feedback] [--strategy s.json]
//
// Every rank builds the same model (trainer_support.hpp: tanh MLP 64-128-128-10, softmax
// cross-entropy), the same synthetic data (Gaussian inputs labelled by a fixed random teacher
// network) and the same initial weights. Each step every rank takes its 1/p of the global batch,
// runs forward and backward, and backward calls session.ready(tensor) as each layer's gradient is
// final, so the buckets of the last layers are on the wire while the first layers compute. The
// session (autosync/session.hpp) averages the gradients with the strategy rank 0 finds for this
// model on "local-<p>" (the search) or reads from --strategy, broadcast to every rank; then every
// rank takes the same SGD step. --fp16 compresses every group to fp16 on the wire (with error
// feedback unless --no-error-feedback). Rank 0 prints the strategy, the loss curve and the sync
// timings.
#include <autosync/cost/estimate.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/io/json.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/session_impl.hpp>
#include <autosync/zoo/clusters.hpp>

#include "trainer_args.hpp"
#include "trainer_support.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

struct args {
  int steps = 300;
  float lr = 0.1f;
  long batch = 96;
  bool fp16 = false, error_feedback = true;
  std::string strategy_file;
};

args parse(int argc, char** argv) {
  args a;
  const examples::arg_reader in{argc, argv};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps")) a.steps = static_cast<int>(in.number(i, 1, 1e7));
    else if (!std::strcmp(argv[i], "--lr")) a.lr = static_cast<float>(in.number(i, 1e-9, 1e3));
    else if (!std::strcmp(argv[i], "--batch")) a.batch = static_cast<long>(in.number(i, 1, 1e6));
    else if (!std::strcmp(argv[i], "--fp16")) a.fp16 = true;
    else if (!std::strcmp(argv[i], "--no-error-feedback")) a.error_feedback = false;
    else if (!std::strcmp(argv[i], "--strategy")) a.strategy_file = in.value(i);
    else throw autosync::error(argv[i], "unknown option (valid: --steps --lr --batch --fp16 --no-error-feedback --strategy)");
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autosync;
  using namespace autosync::exec;
  int rank = 0;
  try {
    mpi_session mpi(argc, argv);
    auto world = mpi_backend::world();  // the session duplicates it: the loss curve uses it too
    rank = world.rank();
    const int p = world.size();
    const args a = parse(argc, argv);
    if (a.batch % p != 0) throw error("--batch", std::to_string(a.batch) + " is not a multiple of the " + std::to_string(p) + " ranks");

    const std::vector<int> widths{64, 128, 128, 10};
    const train::dataset data = train::teacher_data({64, 32, 10}, 4 * a.batch, 42);
    const model_spec model = train::mlp_model(widths, a.batch / p);
    const cluster_spec cluster = zoo::local(p);  // one node of p ranks

    // rank 0 finds (or reads) the strategy, with fp16 on the wire when asked; the session
    // broadcasts it, checks it and builds the plan and the executor
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
    so.error_feedback = a.error_feedback;
    session sync(world, model, source, so);  // averages (reduction::average) by default
    const auto& strategy = sync.strategy();
    const auto predicted = cost::estimate(model, cluster, strategy);

    if (rank == 0) {
      std::printf("MLP 64-128-128-10 (%lld parameters), %d ranks, global batch %ld, lr %g%s\n",
                  static_cast<long long>(model.total_elements()), p, a.batch, static_cast<double>(a.lr),
                  a.fp16 ? (a.error_feedback ? ", fp16 + error feedback" : ", fp16 without error feedback") : "");
      std::printf("strategy (%s, %zu groups, %zu buckets; predicted sync exposed %.1f us):\n%s\n", strategy.name.c_str(),
                  strategy.groups.size(), sync.buckets(), predicted.exposed * 1e6, io::to_json_text(strategy).c_str());
    }

    train::mlp net(widths, 7);
    train::sgd_options o;
    o.global_batch = a.batch;
    o.lr = a.lr;
    const int every = std::max(1, a.steps / 15);
    double sync_s = 0.0, exposed = 0.0;
    for (int k = 0; k < a.steps; ++k) {
      iteration_timing t;
      double loss = train::train_step(sync, net, data, o, k, rank, p, &t);
      sync_s += t.sync;
      exposed += t.exposed;
      if (k % every == 0 || k + 1 == a.steps) {
        // the mean over ranks of the shard losses = the global batch loss (equal shards)
        world.all_reduce(&loss, 1, dtype::f64);
        if (rank == 0) std::printf("step %5d  loss %.4f\n", k, loss / p);
      }
    }
    if (rank == 0)
      std::printf("rank 0: sync %.1f us, exposed %.1f us per step (mean over %d steps)\n", sync_s / a.steps * 1e6,
                  exposed / a.steps * 1e6, a.steps);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "10_mpi_trainer (rank %d): %s\n", rank, e.what());
    return 1;
  }
}
