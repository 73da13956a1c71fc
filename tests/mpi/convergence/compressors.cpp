// tests/mpi/convergence/compressors.cpp — training with every registered lossy compressor
// (include/autosync/compressors/) against lossless training: the tanh MLP 64-128-128-10 of
// examples/trainer_support.hpp on 384 teacher-labelled inputs, global batch 96, SGD lr 0.1, 200
// steps, DDP-style all-reduce buckets (baselines::ddp) with the compressor on every group
// (mpi.convergence_compressors.np2 and .np4; tests/mpi/trainer.cpp has the lossless and fp16
// runs). For each compressor, at the same step count:
//   - every rank holds the same weights, bit for bit (the exchanges give every rank the same sum);
//   - the final loss is within 2 % of the lossless final loss, or, for the compressors that lag
//     at 200 steps (random-k, PowerSGD at rank 1 or 2, and Accordion over them), within the bound
//     the table gives with the reason;
//   - the weights differ from the lossless run's (the compressor ran).
// Printed on rank 0: final loss per compressor, its ratio to the lossless one, and the steps it
// takes to reach the loss lossless training has after half the steps (lossless: at most 100).
#include "../harness.hpp"
#include "../same_bits.hpp"
#include "../mlp_task.hpp"  // with examples/trainer_support.hpp

#include <autosync/compressors/all.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;
using namespace autosync::exec::train;

namespace {

using mcomms = comms<mpi_backend>;
using namespace autosync::exec::train::task;  // widths, data(), options(), steps, seeds (../mlp_task.hpp)

struct run_result {
  double final_loss = 0.0;
  std::vector<double> losses;  // per step, the mean over ranks
  std::vector<float> params;
};

// The first step whose loss is at most `target` (steps + 1: never).
std::size_t steps_to(const run_result& r, double target) {
  for (std::size_t k = 0; k < r.losses.size(); ++k)
    if (r.losses[k] <= target) return k + 1;
  return r.losses.size() + 1;
}

run_result train_with(mcomms& c, const strategy_desc& s) {
  const int p = c.world.size(), r = c.world.rank();
  const auto m = mlp_model(widths, 96 / p);
  run_result out;
  mlp net(widths, init_seed);
  std::vector<double> losses;
  {
    executor_options eo;
    eo.average = true;
    executor<mpi_backend> ex(c, m, compile_plan(m, zoo::local(p), s, layout{p, p}), eo);
    ex.setup();
    const auto o = options();
    for (int k = 0; k < steps; ++k) losses.push_back(train_step(ex, net, data(), o, k, r, p));
  }
  c.world.all_reduce(losses.data(), losses.size(), dtype::f64);
  for (auto& l : losses) l /= p;
  out.final_loss = losses.back();
  out.losses = losses;
  out.params = net.parameters();
  return out;
}

strategy_desc with_compressor(int p, compression_value cv) {
  auto s = baselines::ddp(mlp_model(widths, 96 / p));
  for (auto& g : s.groups) g.compression = cv;
  s.name = "ddp+" + compression_name(cv);
  return s;
}


struct expectation {
  const char* json;       // the compressor as a strategy names it
  param_list params;
  double max_ratio;       // final loss / lossless final loss at most this
  const char* why;        // where max_ratio is above 1.02: why it lags
};

}  // namespace

TEST_CASE("every registered compressor trains the MLP; final loss against lossless at the same step count") {
  auto w = mpi_backend::world();
  const int p = w.size();
  auto c = mcomms::make(std::move(w), p);
  const auto base = train_with(c, with_compressor(p, compression_value{}));
  REQUIRE(base.final_loss < 0.3);  // lossless trains (from ~2.5)
  // Measured at 2 and 4 ranks (final loss / lossless, printed below): int8 1.000/1.000, qsgd
  // 0.995/0.991, nuqsgd 1.000/1.004, alq 1.002 and amq 1.000 (2 ranks, refit every 20 steps at
  // first), topk 10 % 1.006/1.006, powersgd rank 4 1.012/1.012,
  // accordion_topk 1.000/1.000, accordion_int8 1.000/1.000: within 2 %. The others lag at 200
  // steps (error feedback delivers what they hold back later, so they still converge):
  // randomk 10 % 1.053/1.053, topk 1 % 1.151/1.167 (117 steps to lossless's half-way loss, 97),
  // powersgd rank 1 1.087/1.077 (P = M Q summed in double), accordion_powersgd rank 4/2
  // 1.037/1.039 and 2/1 1.098/1.097. Their bounds sit about 2 % above what they measured.
  const expectation cases[] = {
      {"int8", {1024, 0, 0}, 1.02, ""},
      {"qsgd", {7, 8192, 0}, 1.02, ""},
      {"nuqsgd", {7, 8192, 0}, 1.02, ""},
      {"alq", {7, 8192, 20}, 1.02, ""},
      {"amq", {7, 8192, 20}, 1.02, ""},
      {"topk", {0.1, 0, 0}, 1.02, ""},
      {"powersgd", {4, 10, 2}, 1.02, ""},
      {"accordion_topk", {0.99, 0.1, 10}, 1.02, ""},
      {"accordion_int8", {10, 0, 0}, 1.02, ""},
      {"randomk", {0.1, 0, 0}, 1.08, "a random 10 % per step: an element waits ~10 steps on average, SGD sees stale gradient"},
      {"topk", {0.01, 0, 0}, 1.19, "1 % per step: most elements wait in the residual for many steps"},
      {"powersgd", {1, 10, 2}, 1.12, "rank 1 sends one direction per layer; the hidden 128 x 128 gradients are far from rank 1"},
      {"accordion_powersgd", {4, 2, 10}, 1.06, "most intervals are steady, at rank 2, which lags as rank 1 does"},
      {"accordion_powersgd", {2, 1, 10}, 1.12, "most intervals at rank 1"},
  };
  for (const auto& e : cases) {
    const auto* entry = registry::find_compression(e.json);
    REQUIRE(entry != nullptr);
    const auto run = train_with(c, with_compressor(p, compression_value{stable_id(e.json), e.params}));
    CONTEXT(e.json << ": final loss " << run.final_loss << ", lossless " << base.final_loss);
    CHECK(mpitest::same_on_every_rank(c.world, std::span<const float>(run.params)));
    const double ratio = run.final_loss / base.final_loss;
    const double target = base.losses[base.losses.size() / 2 - 1];  // lossless after half the steps
    if (c.world.rank() == 0)
      std::printf("[%d ranks] %-20s final loss %.4f  lossless %.4f  ratio %.4f  (bound %.2f)  steps to %.4f: lossless %zu, this %zu\n", p,
                  e.json, run.final_loss, base.final_loss, ratio, e.max_ratio, target, steps_to(base, target), steps_to(run, target));
    CHECK(ratio <= e.max_ratio);
    CHECK(run.params != base.params);  // the compression ran
  }
}
