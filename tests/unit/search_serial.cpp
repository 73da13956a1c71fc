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

#include <algorithm>
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

TEST_CASE("serial replay: without parameter servers it is the estimate (fifo), plus readiness rounds (priority)") {
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  auto s = baseline(m, c, "ddp");
  auto r = search::serial_replay(m, c, s);
  CHECK_FALSE(r.parameter_servers);
  CHECK(r.iteration == doctest::Approx(r.estimate).epsilon(1e-9));
  CHECK(r.estimate == cost::estimate(m, c, s).iteration);
  // a priority plan agrees on readiness before every launch: an all-reduce of one int32 per
  // bucket (halving-doubling); the launches keep the estimate's order, each at most one round later
  for (auto& g : s.groups) g.schedule = schedule_kind::priority;
  r = search::serial_replay(m, c, s);
  const auto nb = static_cast<double>(cost::buckets(m, c, s).size());
  const double round = cost::all_reduce(cost::make_fabric(c), topology_value{topology_kind::halving_doubling}, 4.0 * nb);
  REQUIRE(round > 0.0);
  CHECK(r.iteration > r.estimate);
  CHECK(r.iteration <= r.estimate + nb * round * (1.0 + 1e-9));
}

TEST_CASE("serial replay: a batch of pieces on distinct servers takes the senders' NICs twice over") {
  // 4 nodes x 1 device; nodes 0-2 at 1 GB/s, node 3 at 1 MB/s, no latency. One tensor of 3000 f32
  // in 3 even shards (B = 4000 B) on servers 0, 1, 2 (round robin), one bucket, no local
  // replication: the executor runs the three pieces as one batch. Each server's own exchange:
  // 2 x max(3 B x 1e-9, node 3's B x 1e-6) + 3 B gamma = 8 ms + a little. But node 3 sends a
  // piece to every server in the push phase and receives one from each in the pull phase:
  // 2 x 3 B x 1e-6 = 24 ms.
  model_spec m;
  m.name = "one";
  m.tensors.push_back(tensor{.name = "w", .shape = {3000}});
  cluster_spec c;
  c.name = "slow-sender";
  for (int k = 0; k < 4; ++k) {
    node_spec n;
    n.name = "n" + std::to_string(k);
    n.devices = 1;
    n.nic = autosync::link{k == 3 ? 1e6 : 1e9, 0.0};
    n.device_flops = 1e12;
    c.nodes.push_back(n);
  }
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  g.partitioner = partitioner_value{partitioner_kind::even, 3, 0, 0};
  g.placement = placement_value{placement_kind::round_robin, 0};
  g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  const auto s = uniform_strategy(m, g, "batch");
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = true});
  double longest = 0.0;
  int transfers = 0;
  const auto f = cost::make_fabric(c);
  for (const auto& e : p.events) {
    if (e.kind != cost::event_ps_transfer) continue;
    ++transfers;
    cost::workspace::job j;
    double bw = 0.0;
    cost::detail::ps_transfer(f, static_cast<std::size_t>(e.lane - 1), static_cast<double>(e.bytes), false, j, bw);
    longest = std::max(longest, j.t1 + j.t2 + j.t3);
  }
  REQUIRE(transfers == 3);
  CHECK(longest == doctest::Approx(0.008).epsilon(0.01));
  const auto r = search::serial_replay(m, c, s);
  CHECK(r.iteration == doctest::Approx(p.forward + p.backward + 0.024).epsilon(1e-9));
}

TEST_CASE("serial replay: parameter-server transfers run one after another") {
  // no backward compute: every bucket is ready when the forward ends, so one bucket at a time
  // ends at forward + the sum of every event's own duration (a transfer's: local reduce +
  // exchange + local broadcast, without the NIC waits the estimate's side-by-side lanes add)
  auto m = zoo::make_model("vgg16");
  for (auto& t : m.tensors) t.backward_flops = 0.0;
  m.layers.clear();  // FLOPs alone: no layer kernels either
  const auto c = zoo::make_cluster("autosync-b");
  const auto s = baseline(m, c, "autodist-ps-lb");
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = true});
  const auto f = cost::make_fabric(c);
  double busy = 0.0, spans = 0.0;
  int lanes = 0;
  for (const auto& e : p.events) {
    spans += e.end - e.start;
    double d = e.end - e.start;
    if (e.kind == cost::event_ps_transfer) {
      cost::workspace::job j;
      double bw = 0.0;
      cost::detail::ps_transfer(f, static_cast<std::size_t>(e.lane - 1), static_cast<double>(e.bytes), false, j, bw);
      d = j.t1 + j.t2 + j.t3;
      CHECK(d <= e.end - e.start + 1e-15);  // the span holds the transfer and its NIC waits
    }
    busy += d;
    lanes = std::max(lanes, e.lane);
  }
  REQUIRE(lanes >= 2);  // transfers to several servers: the model runs them side by side
  const auto r = search::serial_replay(m, c, s);
  CHECK(r.parameter_servers);
  CHECK(r.iteration == doctest::Approx(p.forward + busy).epsilon(1e-9));
  CHECK(r.iteration > r.estimate);
  CHECK(busy < spans);  // side by side in the estimate, the transfers waited for each other's NICs
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
