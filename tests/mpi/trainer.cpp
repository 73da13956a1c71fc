// Data-parallel training through the executor (run with mpirun -np N, N in 2 3 4 8): the tanh MLP
// 64-128-128-10 of examples/trainer_support.hpp on 384 teacher-labelled Gaussian inputs, global batch
// 96 (a multiple of every N), SGD lr 0.1, 200 steps, the strategy search::optimize finds for it
// on "local-N" (a mix of parameter-server, all-reduce and sharded groups, depending on N).
//
//   (a) lossless: the loss curve and the final weights equal single-process training on the same
//       global batches (rank 0 trains the reference) within float rounding, and every rank holds
//       bitwise the same weights. Tolerance: the distributed gradient is the average of N shard
//       means, the reference the mean of the whole batch, summed in another order, so each step's
//       gradient differs by a few float ulps; over 200 steps that stays at float rounding
//       (measured at N = 2, 3, 4, 8: losses within 1e-7, weights of magnitude up to ~1.5 within
//       1.5e-7, i.e. about one ulp). The test allows 1e-5 absolute on every loss and weight: ~70x
//       the measured drift, far below what a wrong gradient (a missed, doubled or stale bucket, a
//       wrong average) does within a step (>= 1e-3). Also for the DDP and single-parameter-server
//       baselines. A power-of-two loss scale (2^-40) changes nothing, bit for bit.
//   (b) fp16 compression with error feedback on every group: converges (final loss < 0.3, the
//       lossless run reaches 0.165) within 0.01 of the lossless final loss (measured: within
//       1e-6; the weights differ by ~3e-5), and the weights do differ from the lossless ones (the
//       compression ran).
//   (c) fp16 without error feedback. Observed: at the normal scale it trains exactly as well as
//       with feedback (final loss 0.165 either way: the gradients are far inside fp16's range,
//       so its rounding, 2^-11 relative, is noise next to SGD's own); asserted: it converges.
//       With the loss scaled down so that every per-rank gradient element is below half of
//       fp16's smallest subnormal on the wire, the gradients vanish: without feedback the
//       weights never move (bitwise equal to the initial ones, the loss of a batch never
//       changes); with feedback they accumulate in the residual until they are sent, and the
//       model trains (measured: loss 2.54 -> 0.82, 0.66, 0.50, 0.33 at N = 2, 3, 4, 8 in 200
//       steps, against 2.44 without; asserted: at least 0.5 below). This is the loss-scaling
//       problem of mixed precision, and why the executor keeps a residual.
#include "harness.hpp"
#include "mlp_task.hpp"  // with examples/trainer_support.hpp (tests/mpi/CMakeLists.txt adds examples/ to the include path)

#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;
using namespace autosync::exec::train;

namespace {

using mcomms = comms<mpi_backend>;

using namespace autosync::exec::train::task;  // widths, data(), options(), steps, seeds (mlp_task.hpp)

struct run_result {
  std::vector<double> losses;  // mean over the global batch, per step (before the update)
  std::vector<float> params;   // this rank's weights after the last step
};

// local-N is one node of N ranks
mcomms make_comms() {
  auto w = mpi_backend::world();
  const int p = w.size();
  return mcomms::make(std::move(w), p);
}

model_spec model_for(int p) { return mlp_model(widths, 96 / p); }

const strategy_desc& found_strategy(int p) {
  static std::optional<strategy_desc> s;
  if (!s) {
    const search::options o;  // deterministic (counted budgets): the same answer on every rank
    s = search::optimize(model_for(p), zoo::local(p), o).strategy;
  }
  return *s;
}

strategy_desc compressed(strategy_desc s) {
  for (auto& g : s.groups) g.compression = comp::fp16::value;
  s.name += "+fp16";
  return s;
}

run_result train_distributed(mcomms& c, const strategy_desc& s, bool error_feedback, float loss_scale = 1.0f) {
  const int p = c.world.size(), r = c.world.rank();
  const auto m = model_for(p);
  run_result out;
  mlp net(widths, init_seed);
  {
    executor_options eo;
    eo.average = true;
    eo.error_feedback = error_feedback;
    executor<mpi_backend> ex(c, m, compile_plan(m, zoo::local(p), s, layout{p, p}), eo);
    ex.setup();
    const auto o = options(loss_scale);
    for (int k = 0; k < steps; ++k) out.losses.push_back(train_step(ex, net, data(), o, k, r, p));
  }
  // the executor is gone: the world communicator is free for the loss curve
  c.world.all_reduce(out.losses.data(), out.losses.size(), dtype::f64);
  for (auto& l : out.losses) l /= p;
  out.params = net.parameters();
  return out;
}

run_result train_reference(float loss_scale = 1.0f) {
  run_result out;
  mlp net(widths, init_seed);
  const auto o = options(loss_scale);
  for (int k = 0; k < steps; ++k) out.losses.push_back(train_step_single(net, data(), o, k));
  out.params = net.parameters();
  return out;
}

const run_result& reference() {
  static const run_result ref = train_reference();
  return ref;
}

const run_result& lossless(mcomms& c) {
  static std::optional<run_result> r;
  if (!r) r = train_distributed(c, found_strategy(c.world.size()), true);
  return *r;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Every rank holds rank 0's weights, bit for bit.
void check_replicas_equal(mcomms& c, const std::vector<float>& params) {
  auto root = params;
  c.world.broadcast(root.data(), root.size(), dtype::f32, 0);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < params.size(); ++i) differ += params[i] != root[i];
  CONTEXT("rank " << c.world.rank());
  CHECK_EQ(differ, std::size_t{0});
}

void check_equals_reference(const run_result& run, const char* what) {
  constexpr double tol = 1e-5;
  const auto& ref = reference();
  CONTEXT(what);
  REQUIRE(run.losses.size() == ref.losses.size());
  double worst = 0.0;
  int at = -1;
  for (std::size_t k = 0; k < ref.losses.size(); ++k)
    if (std::abs(run.losses[k] - ref.losses[k]) > worst) {
      worst = std::abs(run.losses[k] - ref.losses[k]);
      at = static_cast<int>(k);
    }
  CONTEXT("worst loss difference " << worst << " at step " << at);
  CHECK(worst <= tol);
  CHECK(static_cast<double>(max_abs_diff(run.params, ref.params)) <= tol);
  CHECK(run.losses.back() < 0.3);  // it trained (from ~2.5)
}

}  // namespace

TEST_CASE("trainer: lossless data-parallel training equals single-process training") {
  auto c = make_comms();
  const int p = c.world.size();
  const auto& s = found_strategy(p);
  for (const auto& g : s.groups) REQUIRE(g.compression == comp::none::value);  // lossy is opt-in in the search
  const auto& run = lossless(c);
  check_replicas_equal(c, run.params);
  if (c.world.rank() == 0) {
    check_equals_reference(run, "found strategy");
    CHECK(reference().losses.front() > 2.0);
    CHECK(reference().losses.back() < 0.3);
  }
  // two baselines that move the bytes differently: ring all-reduce buckets, one parameter server
  const auto m = model_for(p);
  for (const auto& b : {baselines::ddp(m), baselines::ps(m)}) {
    const auto r = train_distributed(c, b, true);
    check_replicas_equal(c, r.params);
    if (c.world.rank() == 0) check_equals_reference(r, b.name.c_str());
  }
}

TEST_CASE("trainer: a power-of-two loss scale changes nothing, bit for bit") {
  auto c = make_comms();
  const auto scaled = train_distributed(c, found_strategy(c.world.size()), true, 0x1.0p-40f);
  const auto& plain = lossless(c);
  CHECK(scaled.params == plain.params);
  CHECK(scaled.losses == plain.losses);
}

TEST_CASE("trainer: fp16 compression with error feedback converges close to lossless") {
  auto c = make_comms();
  const auto& base = lossless(c);
  const auto run = train_distributed(c, compressed(found_strategy(c.world.size())), true);
  check_replicas_equal(c, run.params);
  CONTEXT("final loss: fp16 + feedback " << run.losses.back() << ", lossless " << base.losses.back());
  CHECK(run.losses.back() < 0.3);
  CHECK(std::abs(run.losses.back() - base.losses.back()) < 0.01);
  CHECK(max_abs_diff(run.params, base.params) > 0.0f);  // the compression did run
}

TEST_CASE("trainer: fp16 without error feedback: fine at normal scale, gradients below fp16 vanish") {
  auto c = make_comms();
  const auto s = compressed(found_strategy(c.world.size()));
  {
    const auto run = train_distributed(c, s, false);
    CONTEXT("final loss without feedback " << run.losses.back());
    CHECK(run.losses.back() < 0.3);
  }
  // The largest gradient element any rank can produce at the initial weights: a shard mean is at
  // most the largest single-row gradient. Scale the loss so that this element times the
  // executor's fp16 pre-scale s = wire_scale(f16, p) is at most 2^-26: fp16 rounds everything
  // below 2^-25 to zero. (Dividing by s keeps the threshold, in gradient units, the same for
  // every rank count, so the run with feedback learns at about the same pace for every N.)
  float largest = 0.0f;
  {
    mlp net(widths, init_seed);
    const auto& d = data();
    for (Eigen::Index row = 0; row < d.x.rows(); ++row) {
      (void)net.forward(d.x, d.y, row, 1);
      net.backward([](std::size_t) {});
      for (const auto& g : net.gradients()) {
        const auto* v = static_cast<const float*>(g.data);
        for (std::int64_t i = 0; i < g.count; ++i) largest = std::max(largest, std::abs(v[i]));
      }
    }
  }
  REQUIRE(largest > 0.0f);
  const float scale = static_cast<float>(std::ldexp(1.0, -26 - static_cast<int>(std::ceil(std::log2(largest)))) /
                                         wire_scale(dtype::f16, c.world.size()));
  const auto init = mlp(widths, init_seed).parameters();
  const auto dropped = train_distributed(c, s, false, scale);
  const auto kept = train_distributed(c, s, true, scale);
  check_replicas_equal(c, kept.params);
  CONTEXT("scale " << scale << ", final loss: without feedback " << dropped.losses.back() << ", with " << kept.losses.back());
  CHECK(dropped.params == init);                             // nothing ever reached the weights
  CHECK(dropped.losses[steps - 4] == dropped.losses[0]);     // the same batch, the same weights: the same loss
  CHECK(max_abs_diff(kept.params, init) > 0.0f);
  CHECK(kept.losses.back() < dropped.losses.back() - 0.5);   // with feedback it trains
}
