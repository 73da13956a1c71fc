// search/report.hpp: the bottleneck resource, the lower bound, and each group's next alternative.
#include <autosync/cost/estimate.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/search/report.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace autosync;
using search::resource_time;

namespace {

// The preset with its collectives on the alpha-beta-gamma forms (an MPI cluster): the lower
// bound is then the node-level cut of the NICs' line rate, which these cases compute by hand.
cluster_spec alpha_beta(const std::string& name) {
  auto c = zoo::make_cluster(name);
  c.backend = collective_backend::mpi;
  return c;
}

strategy_desc baseline(const model_spec& m, const cluster_spec& c, const std::string& name) {
  for (auto& s : baselines::all(m, c))
    if (s.name == name) return s;
  FAIL("no baseline " << name);
  return {};
}

}  // namespace

TEST_CASE("bottleneck: bert-large on 4 x p3.16xlarge is NIC-bound; the NIC time is the node-level cut") {
  const auto m = zoo::make_model("bert-large");
  const auto c = alpha_beta("p3.16xlarge-x4");
  const auto ddp = baseline(m, c, "ddp");
  const auto r = search::bottleneck(m, c, ddp);
  REQUIRE(!r.resources.empty());
  CHECK(r.bottleneck().resource == "NIC");
  // every gradient byte crosses each node's NICs 2(N-1)/N times in a ring all-reduce
  double bytes = 0.0;
  for (const auto& t : m.tensors) bytes += static_cast<double>(t.bytes());
  const double nic = 2.0 * 3.0 / 4.0 * bytes / c.nodes[0].nic_bandwidth();
  CHECK(r.bottleneck().busy == doctest::Approx(nic).epsilon(1e-9));
  const auto p = cost::estimate(m, c, ddp);
  CHECK(r.iteration == p.iteration);
  CHECK(r.lower_bound == p.lower_bound);
  CHECK(r.lower_bound == doctest::Approx(r.forward + nic).epsilon(1e-9));  // NIC-bound: forward + the NIC time
  CHECK(r.collective_lane >= r.bottleneck().busy);
  for (std::size_t i = 1; i < r.resources.size(); ++i) CHECK(r.resources[i].busy <= r.resources[i - 1].busy);
  bool compute = false;
  for (const auto& x : r.resources)
    if (x.resource == "compute") compute = x.busy == r.backward;
  CHECK(compute);
  char want[64];
  std::snprintf(want, sizeof want, "NIC-bound: %.1f of %.1f ms", nic * 1e3, p.iteration * 1e3);
  CHECK(search::summary(r) == want);
}

TEST_CASE("bottleneck: on an NCCL cluster the NIC time is the lower bound's node cut, at the transport's rate") {
  // the NIC time and the lower bound use one rate: the NICs' line rate x the transport's
  // efficiency (cost/transport.hpp), so a NIC-bound strategy's lower bound is forward + NIC time
  const auto m = zoo::make_model("bert-large");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  REQUIRE(c.backend == collective_backend::nccl);
  const auto ddp = baseline(m, c, "ddp");
  const auto r = search::bottleneck(m, c, ddp);
  double bytes = 0.0;
  for (const auto& t : m.tensors) bytes += static_cast<double>(t.bytes());
  const double rate = c.nodes[0].nic_bandwidth() * cost::resolve(c.transport).efficiency;
  const double nic = 2.0 * 3.0 / 4.0 * bytes / rate;
  const resource_time* found = nullptr;
  for (const auto& x : r.resources)
    if (x.resource == "NIC") found = &x;
  REQUIRE(found != nullptr);
  CHECK(found->busy == doctest::Approx(nic).epsilon(1e-9));
  CHECK(found->busy <= r.lower_bound - r.forward + 1e-12);
  if (r.bottleneck().resource == "NIC") CHECK(r.lower_bound == doctest::Approx(r.forward + nic).epsilon(1e-9));
  const auto f = cost::make_fabric(c);
  for (double n = 1e3; n < 1e10; n *= 10) CHECK(cost::nic_occupancy(f, n) <= cost::lower_bound(f, n));
}

TEST_CASE("bottleneck: parameter servers are resources of their own") {
  const auto m = zoo::make_model("vgg16");
  const auto c = zoo::make_cluster("autosync-b");
  const auto ps = baseline(m, c, "autodist-ps-lb");
  const auto r = search::bottleneck(m, c, ps);
  const auto p = cost::estimate(m, c, ps, cost::options{.timeline = true});
  double servers = 0.0, events = 0.0;
  for (const auto& x : r.resources)
    if (x.resource.starts_with("server ")) servers += x.busy;
  for (const auto& e : p.events)
    if (e.lane > 0) events += e.end - e.start;
  CHECK(servers > 0.0);
  CHECK(servers == doctest::Approx(events).epsilon(1e-12));
}

TEST_CASE("alternatives: per group, the fastest one-aspect change and what the choice saves") {
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  search::options o;
  o.epsilon = 0.0;
  o.max_evaluations = 1500;
  const auto r = search::optimize(m, c, o);
  // iterations as the executor runs them (the measure optimize picks by), or the estimate's
  auto as_run = [&](const strategy_desc& x) {
    const auto sr = search::serial_replay(m, c, x);
    return std::max(sr.iteration, sr.estimate);
  };
  for (const bool executor : {true, false}) {
    CAPTURE(executor);
    const auto alts = search::alternatives(m, c, r.strategy, {}, executor);
    REQUIRE(alts.size() == r.strategy.groups.size());
    for (const auto& a : alts) {
      CAPTURE(a.group);
      REQUIRE(a.found);
      CHECK_FALSE(a.alternative == r.strategy.groups[a.group]);
      auto x = r.strategy;
      x.groups[a.group] = a.alternative;
      CHECK_NOTHROW(x.validate(m, c));
      CHECK(search::satisfies({m, c, {}}, x));
      const double own = executor ? as_run(r.strategy) : cost::estimate(m, c, r.strategy).iteration;
      CHECK(a.iteration == doctest::Approx(executor ? as_run(x) : cost::estimate(m, c, x).iteration).epsilon(1e-12));
      CHECK(a.saving == doctest::Approx(a.iteration - own).epsilon(1e-12));
    }
  }
  // bert-large on the same cluster: by the estimate (server lanes side by side) a parameter-server
  // group would be 22.5 ms faster than the search's hierarchical all-reduce; as the executor runs
  // it (one bucket at a time) it is not the next alternative at all, and the next one is within
  // the search's epsilon (the pick is the simplest strategy within it, not the fastest)
  {
    const auto bl = zoo::make_model("bert-large");
    const auto res = search::optimize(bl, c);
    const auto& pick = res.strategy;
    const auto by_estimate = search::alternatives(bl, c, pick, {}, false);
    const auto by_executor = search::alternatives(bl, c, pick);
    REQUIRE(by_estimate.size() == 1);
    REQUIRE(by_executor.size() == 1);
    CHECK(by_estimate[0].alternative.architecture == architecture_kind::parameter_server);
    CHECK(by_estimate[0].saving < 0.0);
    CHECK(by_executor[0].alternative.architecture != architecture_kind::parameter_server);
    const auto sr = search::serial_replay(bl, c, pick);
    CHECK(by_executor[0].saving >= -res.epsilon * std::max(sr.iteration, sr.estimate));
  }
  // a ring DDP strategy on 4 nodes: its next alternative is faster (a negative saving)
  const auto ddp = baseline(m, c, "ddp");
  const auto d = search::alternatives(m, c, ddp);
  REQUIRE(d.size() == 1);
  CHECK(d[0].saving < 0.0);
}
