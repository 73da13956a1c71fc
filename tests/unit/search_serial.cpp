// search/serial.hpp (the iteration as the executors run it) and search/sampler.hpp (the one
// sampler of the space).
#include <autosync/cost/estimate.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/search/sampler.hpp>
#include <autosync/search/serial.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace autosync;

namespace {

strategy_desc baseline(const model_spec& m, const cluster_spec& c, const std::string& name) {
  for (auto& s : baselines::all(m, c))
    if (s.name == name) return s;
  FAIL("no baseline " << name);
  return {};
}

}  // namespace

TEST_CASE("serial replay: without parameter servers it is the estimate (fifo and priority)") {
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  auto s = baseline(m, c, "ddp");
  auto r = search::serial_replay(m, c, s);
  CHECK_FALSE(r.parameter_servers);
  CHECK(r.iteration == doctest::Approx(r.estimate).epsilon(1e-9));
  CHECK(r.estimate == cost::estimate(m, c, s).iteration);
  for (auto& g : s.groups) g.schedule = schedule_kind::priority;
  r = search::serial_replay(m, c, s);
  CHECK(r.iteration == doctest::Approx(r.estimate).epsilon(1e-9));
}

TEST_CASE("serial replay: parameter-server transfers run one after another") {
  // no backward compute: every bucket is ready when the forward ends, so one bucket at a time
  // ends at forward + the sum of every event's duration
  auto m = zoo::make_model("vgg16");
  for (auto& t : m.tensors) t.backward_flops = 0.0;
  m.layers.clear();  // FLOPs alone: no layer kernels either
  const auto c = zoo::make_cluster("autosync-b");
  const auto s = baseline(m, c, "autodist-ps-lb");
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = true});
  double busy = 0.0;
  int lanes = 0;
  for (const auto& e : p.events) {
    busy += e.end - e.start;
    lanes = std::max(lanes, e.lane);
  }
  REQUIRE(lanes >= 2);  // transfers to several servers: the model runs them side by side
  const auto r = search::serial_replay(m, c, s);
  CHECK(r.parameter_servers);
  CHECK(r.iteration == doctest::Approx(p.forward + busy).epsilon(1e-9));
  CHECK(r.iteration > r.estimate);
}

TEST_CASE("optimize scores parameter servers as the executor runs them") {
  const auto m = zoo::make_model("vgg16");
  const auto c = zoo::make_cluster("autosync-b");
  search::options o;
  o.max_evaluations = 1000;
  o.serial_executor = false;
  const auto model = search::optimize(m, c, o);
  CHECK(model.score == model.prediction.iteration);
  o.serial_executor = true;
  const auto serial = search::optimize(m, c, o);
  CHECK(serial.serial_iteration == doctest::Approx(search::serial_replay(m, c, serial.strategy).iteration).epsilon(1e-12));
  // the pick, scored by the replay, is within epsilon of the best replayed score
  CHECK(serial.score <= serial.best_score * (1.0 + serial.epsilon) * (1.0 + 1e-12));
  CHECK(std::max(serial.prediction.iteration, serial.serial_iteration) <= serial.reference * (1.0 + serial.epsilon) * (1.0 + 1e-12));
  CHECK(serial.serial_iteration <= search::serial_replay(m, c, model.strategy).iteration * (1.0 + serial.epsilon) * (1.0 + 1e-12));
}

TEST_CASE("sampler: valid, distinct, deterministic draws; named by prefix") {
  const auto m = zoo::make_model("ncf");
  const auto c = zoo::make_cluster("autosync-b-ps");
  const search::space sp(m, c);
  const auto a = search::sample(sp, 40, 5, 6, "x-");
  const auto b = search::sample(sp, 40, 5, 6, "x-");
  REQUIRE(a.size() == 40);
  CHECK(a == b);
  std::set<std::string> keys;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == "x-" + std::to_string(i));
    CHECK_NOTHROW(a[i].validate(m, c));
    CHECK(search::satisfies({m, c, {}}, a[i]));
    keys.insert(search::detail::sample_key(a[i]));
  }
  CHECK(keys.size() == a.size());
  CHECK(search::sample(sp, 40, 6, 6, "x-") != a);
  CHECK_THROWS_AS((void)search::sample(sp, 1, 1, 0), error);
}
