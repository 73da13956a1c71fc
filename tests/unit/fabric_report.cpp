// The cost model's links against the Boost.Graph cuts of the same cluster (io/fabric_report.hpp):
// on every built-in cluster they agree; on a heterogeneous one they differ where the model's
// "slowest node" summary and the real cut part ways, by the amount computed by hand below.
#include <autosync/io/fabric_report.hpp>
#include <autosync/io/report.hpp>
#include <autosync/zoo/clusters.hpp>

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace autosync;

namespace {

group_desc all_reduce_hier() {
  group_desc g;
  g.topology = {topology_kind::hierarchical, topology_kind::ring, topology_kind::ring};
  return g;
}
group_desc ps() {
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  return g;
}
strategy_desc two_groups() { return strategy_desc{"t", {all_reduce_hier(), ps()}, {}}; }

node_spec worker(int devices, double intra, int nics, double nic_bw) {
  node_spec n;
  n.devices = devices;
  n.intra = {intra, 1e-6};
  n.nic = {nic_bw, 4e-6};
  n.nics = nics;
  n.device_flops = 1e12;
  n.reduce_bandwidth = 1e11;
  return n;
}

}  // namespace

TEST_CASE("fabric report: the model's links equal the graph's cuts on every built-in cluster") {
  for (const auto& name : zoo::cluster_names()) {
    CAPTURE(name);
    const auto c = zoo::make_cluster(name);
    const auto checks = io::fabric_checks(c, two_groups());
    for (const auto& k : checks) {
      CAPTURE(k.what);
      CHECK(k.cut > 0.0);
      CHECK(k.model == doctest::Approx(k.cut).epsilon(0.01));
    }
    if (c.worker_nodes() > 1) {
      REQUIRE(!checks.empty());
      CHECK(checks.front().what.rfind("ring over worker nodes", 0) == 0);
    }
  }
}

TEST_CASE("fabric report: a heterogeneous cluster, by hand") {
  // n0: 4 devices, 2 NICs x 10 GB/s; n1: 4 devices, 1 NIC x 25 GB/s; n2: server, 1 NIC x 5 GB/s.
  cluster_spec c;
  c.name = "hetero";
  c.nodes = {worker(4, 100e9, 2, 10e9), worker(4, 100e9, 1, 25e9)};
  c.nodes[0].name = "a";
  c.nodes[1].name = "b";
  node_spec s = worker(0, 0, 1, 5e9);
  s.server_only = true;
  s.name = "srv";
  c.nodes.push_back(s);
  c.validate();
  const auto checks = io::fabric_checks(c, two_groups());
  REQUIRE(checks.size() == 4);
  // Ring a > b: the cut between a (2 x 10 = 20 GB/s) and b (25 GB/s) is 20 GB/s; the model takes
  // the slowest node's NICs together: 20 GB/s. They agree.
  CHECK(checks[0].what == "ring over worker nodes a > b");
  CHECK(checks[0].cut == doctest::Approx(20e9));
  CHECK(checks[0].model == doctest::Approx(20e9));
  // Workers -> srv: min(20 + 25, 5) = 5 GB/s, the server's one NIC, as the model's lane.
  CHECK(checks[1].what == "workers -> server srv (group 1)");
  CHECK(checks[1].cut == doctest::Approx(5e9));
  CHECK(checks[1].model == doctest::Approx(5e9));
  // Hierarchical flows on a: 4 devices over 2 NICs -> 2 flows each, 5 GB/s a flow. The model's
  // flow link is 1 / max(intra.beta, g x inter.beta) with g = 4 and inter the slowest node's
  // NICs together (20 GB/s): 5 GB/s. Agrees on a ...
  CHECK(checks[2].cut == doctest::Approx(5e9));
  CHECK(checks[2].model == doctest::Approx(5e9));
  CHECK(checks[2].agrees());
  // ... but on b, 4 flows share one 25 GB/s NIC: 6.25 GB/s a flow, and the model (slowest node
  // everywhere) says 5: "model is 1.25x slower than the cut".
  CHECK(checks[3].what == "hierarchical flow on b (4 flows on the busiest of 1 NIC)");
  CHECK(checks[3].cut == doctest::Approx(6.25e9));
  CHECK(checks[3].model == doctest::Approx(5e9));
  CHECK(!checks[3].agrees());
  std::ostringstream os;
  io::print_fabric(os, checks);
  CHECK(os.str().find("model is 1.25x slower than the cut") != std::string::npos);
}

TEST_CASE("fabric report: one node and no servers in use give no network rows") {
  const auto c = zoo::make_cluster("local-4");
  strategy_desc s{"t", {all_reduce_hier()}, {}};
  CHECK(io::fabric_checks(c, s).empty());
}

TEST_CASE("report: times in milliseconds, from 1000 s on in seconds") {
  CHECK(io::format_ms(0.01234) == "12.34 ms");
  CHECK(io::format_ms(999.0) == "999000.00 ms");
  CHECK(io::format_ms(1234.4) == "1234 s");
  CHECK(io::format_ms(6.2e301) == "6.2e+301 s");  // never a row of digits cut off by the buffer
}
