// The Boost.Graph view of a cluster: structure, max-flow cuts, ring order, NIC contention, DOT.
// Every expected number is computed by hand in the comment next to it.
#include <autosync/graph.hpp>
#include <autosync/zoo/clusters.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace autosync;
namespace ag = autosync::graph;

namespace {

constexpr double GB = 1e9;

node_spec worker(std::string name, int devices, double intra, int nics, double nic_bw) {
  node_spec n;
  n.name = std::move(name);
  n.devices = devices;
  n.intra = {intra, 1e-6};
  n.nic = {nic_bw, 4e-6};
  n.nics = nics;
  n.device_flops = 1e12;
  n.reduce_bandwidth = 1e11;
  return n;
}

// node 0: 2 devices, intra 100 GB/s, 2 NICs x 10 GB/s      ranks 0-1
// node 1: 4 devices, intra  50 GB/s, 1 NIC  x 25 GB/s      ranks 2-5
// node 2: 1 device,                  1 NIC  x  5 GB/s      rank  6
// node 3: server, 2 NICs x 12.5 GB/s
cluster_spec hetero() {
  cluster_spec c;
  c.name = "hetero";
  c.device = "test";
  c.nodes = {worker("a", 2, 100 * GB, 2, 10 * GB), worker("b", 4, 50 * GB, 1, 25 * GB), worker("c", 1, 0.0, 1, 5 * GB)};
  node_spec s;
  s.name = "ps";
  s.devices = 0;
  s.server_only = true;
  s.nics = 2;
  s.nic = {12.5 * GB, 4e-6};
  c.nodes.push_back(s);
  c.validate();
  return c;
}

// n single-device nodes with one 1 GB/s NIC each.
cluster_spec singles(int n) {
  cluster_spec c;
  c.name = "singles";
  for (int i = 0; i < n; ++i) c.nodes.push_back(worker("s" + std::to_string(i), 1, 0.0, 1, 1 * GB));
  return c;
}

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t k = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++k;
  return k;
}

}  // namespace

TEST_CASE("graph: vertices and edges of a heterogeneous cluster") {
  const auto cg = ag::make_graph(hetero());
  // fabric 1 + node a (2 dev, sw, 2 nic) 5 + node b (4 dev, sw, 1 nic) 6 + node c (1 dev, 1 nic) 2 + server 2 nics
  CHECK(boost::num_vertices(cg.g) == 16);
  // a: 2 intra + 2 dev-nic + 2 nic-fabric; b: 4 + 4 + 1; c: 0 + 1 + 1; server: 0 + 0 + 2
  CHECK(boost::num_edges(cg.g) == 19);
  CHECK(cg.devices[3].empty());
  CHECK(cg.nics[3].size() == 2);
  CHECK(cg.hub[2] == ag::cluster_graph::none());  // one device: no switch
  CHECK(cg.anchor(2) == cg.devices[2][0]);
  CHECK(cg.anchor(3) == cg.nics[3][0]);
  CHECK(cg.g[cg.devices[1][3]].rank == 5);
  CHECK(cg.g[cg.devices[2][0]].rank == 6);
  CHECK(cg.g[cg.nics[1][0]].name == "b.nic0");
  // every device of node b hangs off its only NIC; node a pairs device j with NIC j
  CHECK(boost::degree(cg.nics[1][0], cg.g) == 5);  // 4 devices + fabric
  CHECK(boost::edge(cg.devices[0][1], cg.nics[0][1], cg.g).second);
  CHECK_FALSE(boost::edge(cg.devices[0][1], cg.nics[0][0], cg.g).second);
  const auto e = boost::edge(cg.nics[1][0], cg.fabric, cg.g);
  REQUIRE(e.second);
  CHECK(cg.g[e.first].bandwidth == 25 * GB);
  CHECK(cg.g[e.first].latency == doctest::Approx(2e-6));  // half of nic.latency per side
}

TEST_CASE("graph: more NICs than devices") {
  cluster_spec c = singles(1);
  c.nodes[0].nics = 3;
  const auto cg = ag::make_graph(c);
  CHECK(boost::degree(cg.devices[0][0], cg.g) == 3);  // the device reaches all three NICs
  CHECK(boost::num_edges(cg.g) == 6);                  // 3 dev-nic + 3 nic-fabric
}

TEST_CASE("graph: bottleneck bandwidth between node sets (max-flow)") {
  const auto c = hetero();
  CHECK(ag::bottleneck_bandwidth(c, {0}, {1}) == 20 * GB);       // min(2 x 10, 25)
  CHECK(ag::bottleneck_bandwidth(c, {1}, {0}) == 20 * GB);       // full duplex, symmetric
  CHECK(ag::bottleneck_bandwidth(c, {0, 2}, {1}) == 25 * GB);    // min(20 + 5, 25)
  CHECK(ag::bottleneck_bandwidth(c, {1}, {0, 2}) == 25 * GB);
  CHECK(ag::bottleneck_bandwidth(c, {0}, {2}) == 5 * GB);        // the 5 GB/s NIC
  CHECK(ag::bottleneck_bandwidth(c, {0}, {1, 3}) == 20 * GB);    // a's NICs bound it
  CHECK(ag::bottleneck_bandwidth(c, {0, 1, 2}, {3}) == 25 * GB); // server: 2 x 12.5
  CHECK(ag::bottleneck_bandwidth(c, {2}, {3}) == 5 * GB);
  CHECK(ag::bottleneck_bandwidth(c, {1}, {2, 3}) == 25 * GB);    // min(25, 5 + 25)
  CHECK(ag::bottleneck_bandwidth(c, {0, 0}, {2}) == 5 * GB);     // duplicates are one node
  CHECK(ag::pair_bandwidth(c, 0, 1) == 20 * GB);
  const auto cg = ag::make_graph(c);  // one view, many cuts
  CHECK(ag::bottleneck_bandwidth(cg, {0}, {1}) == 20 * GB);
  CHECK(ag::bottleneck_bandwidth(cg, {0, 1}, {2, 3}) == 30 * GB);  // min(a 20 + b 25, c 5 + server 2 x 12.5)
  CHECK_THROWS_WITH_AS((void)ag::bottleneck_bandwidth(cg, {5}, {1}), "'a[0]': node index 5 is out of range [0, 4)", autosync::error);
  // A direct link a<->c of 7 GB/s adds to the fabric path: 5 + 7 = 12.
  const ag::node_links links{{0, 2, {7 * GB, 1e-6}}};
  CHECK(ag::bottleneck_bandwidth(c, {0}, {2}, links) == 12 * GB);
  // Other nodes do not forward: a -> b does not gain from the a<->c cable.
  CHECK(ag::bottleneck_bandwidth(c, {0}, {1}, links) == 20 * GB);
}

TEST_CASE("graph: device-level cuts see intra links and the fabric hairpin") {
  const auto c = hetero();
  // ranks 2,3 -> 4,5 inside node b: through the switch 2 x 50 = 100, plus out of the NIC and
  // back through the fabric (NIC tx 25, rx 25): 125 GB/s.
  CHECK(ag::bottleneck_bandwidth_ranks(c, {2, 3}, {4, 5}) == 125 * GB);
  // rank 0 -> rank 1 (node a): one intra link 100 + hairpin d0 -> nic0 -> fabric -> nic1 -> d1 10.
  CHECK(ag::bottleneck_bandwidth_ranks(c, {0}, {1}) == 110 * GB);
  // rank 0 -> rank 2: node a's NICs are 2 x 10 (d0 -> sw -> d1 -> nic1 counts), b's NIC 25.
  CHECK(ag::bottleneck_bandwidth_ranks(c, {0}, {2}) == 20 * GB);
  // rank 2 -> ranks 0, 6: b's NIC 25 GB/s bounds it (a 20 + c 5 = 25 as well).
  CHECK(ag::bottleneck_bandwidth_ranks(c, {2}, {0, 6}) == 25 * GB);
}

TEST_CASE("graph: bottleneck on presets") {
  using namespace autosync::zoo;
  // p3.16xlarge: one 25 Gb/s NIC per node.
  CHECK(ag::bottleneck_bandwidth(p3_16xlarge_x4(), {0, 1}, {2, 3}) == doctest::Approx(2 * hw::gbe25));
  // DGX H100: 8 x 47 GB/s per node.
  CHECK(ag::bottleneck_bandwidth(dgx_h100(2), {0}, {1}) == doctest::Approx(8 * 47 * GB));
  // autosync-b-ps: four workers push to two 50 Gb/s servers: the servers' 2 x 6.25 GB/s.
  CHECK(ag::bottleneck_bandwidth(autosync_b_ps(), {0, 1, 2, 3}, {4, 5}) == doctest::Approx(2 * hw::gbe50));
  // Inside one DGX A100, 4 GPUs -> 4 GPUs: 4 NVSwitch links plus 4 NIC hairpins.
  CHECK(ag::bottleneck_bandwidth_ranks(dgx_a100(1), {0, 1, 2, 3}, {4, 5, 6, 7}) ==
        doctest::Approx(4 * hw::a100_nvswitch + 4 * hw::ib_hdr200));
}

TEST_CASE("graph: bad cut arguments name the field") {
  const auto c = hetero();
  CHECK_THROWS_WITH_AS((void)ag::bottleneck_bandwidth(c, {}, {1}), "'a': needs at least one node", autosync::error);
  CHECK_THROWS_WITH_AS((void)ag::bottleneck_bandwidth(c, {0}, {4}), "'b[0]': node index 4 is out of range [0, 4)", autosync::error);
  CHECK_THROWS_WITH_AS((void)ag::bottleneck_bandwidth(c, {0, 1}, {1}), "'b': node 1 is on both sides of the cut", autosync::error);
  CHECK_THROWS_WITH_AS((void)ag::bottleneck_bandwidth_ranks(c, {0}, {7}), "'b[0]': rank 7 is out of range [0, 7)", autosync::error);
  CHECK_THROWS_WITH_AS((void)ag::bottleneck_bandwidth_ranks(c, {0, 1}, {1}), "'b[0]': rank 1 is on both sides of the cut",
                       autosync::error);
  try {
    (void)ag::bottleneck_bandwidth(c, {0}, {1}, {{0, 0, {GB, 0}}});
    FAIL("expected an error");
  } catch (const autosync::error& e) {
    CHECK(e.field() == "links[0].b");
  }
  try {
    (void)ag::bottleneck_bandwidth(c, {0}, {1}, {{0, 1, {GB, 0}}, {0, 2, {-1, 0}}});
    FAIL("expected an error");
  } catch (const autosync::error& e) {
    CHECK(e.field() == "links[1].bandwidth");
  }
  cluster_spec broken = c;
  broken.nodes[1].nic.bandwidth = 0;
  try {
    (void)ag::bottleneck_bandwidth(broken, {0}, {1});
    FAIL("expected an error");
  } catch (const autosync::error& e) {
    CHECK(e.field() == "nodes[1].nic.bandwidth");
  }
}

TEST_CASE("graph: ring order beats the natural order when direct links exist") {
  // Four nodes, 1 GB/s NICs; 10 GB/s cables 0-2, 2-1, 1-3, 3-0.
  const auto c = singles(4);
  const ag::node_links links{{0, 2, {10 * GB, 1e-6}}, {2, 1, {10 * GB, 1e-6}}, {1, 3, {10 * GB, 1e-6}}, {3, 0, {10 * GB, 1e-6}}};
  // natural 0-1-2-3-0: hops 0-1 = 1, 1-2 = 11, 2-3 = 1, 3-0 = 11 -> 1 GB/s
  CHECK(ag::ring_bottleneck(c, {0, 1, 2, 3}, links) == 1 * GB);
  const auto order = ag::ring_order(c, links);
  // the cable cycle, every hop 1 + 10 = 11 GB/s; walked back from the smallest closing end
  CHECK(order == std::vector<int>{0, 3, 1, 2});
  CHECK(ag::ring_bottleneck(c, order, links) == 11 * GB);
  // without cables every order ties and the natural one is kept
  CHECK(ag::ring_order(c) == std::vector<int>{0, 1, 2, 3});
  CHECK(ag::ring_bottleneck(c, {0, 2, 1, 3}) == 1 * GB);
}

TEST_CASE("graph: ring order over heterogeneous NICs and server nodes") {
  // Star fabric: each hop is min of the two nodes' NIC totals, so the slowest node bounds
  // every ring: min(20, 25, 5) -> 5 GB/s whatever the order; servers are not in the ring.
  const auto c = hetero();
  CHECK(ag::ring_order(c) == std::vector<int>{0, 1, 2});
  CHECK(ag::ring_bottleneck(c, {2, 0, 1}) == 5 * GB);
  // Five nodes: NICs 40, 40, 10, 40, 40 GB/s plus a 30 GB/s cable 2-4. Natural order has
  // hops 1-2 and 2-3 at 10; the best ring passes node 2 via its cable: 4-2 = 10 + 30 = 40,
  // and its other neighbour is at 10 whatever we do -> 10 is optimal, natural kept.
  cluster_spec d = singles(5);
  for (int i : {0, 1, 3, 4}) d.nodes[static_cast<std::size_t>(i)].nic.bandwidth = 40 * GB;
  d.nodes[2].nic.bandwidth = 10 * GB;
  CHECK(ag::ring_order(d, {{2, 4, {30 * GB, 0}}}) == std::vector<int>{0, 1, 2, 3, 4});
  // Two cables 2-4 and 2-0 (30 each): 0-2-4 both at 40 -> ring 0,1,3,4,2 has every hop 40.
  const ag::node_links two{{2, 4, {30 * GB, 0}}, {2, 0, {30 * GB, 0}}};
  const auto order = ag::ring_order(d, two);
  CHECK(ag::ring_bottleneck(d, order, two) == 40 * GB);
  CHECK(ag::ring_bottleneck(d, {0, 1, 2, 3, 4}, two) == 10 * GB);
  CHECK(order.front() == 0);
}

TEST_CASE("graph: ring order above 16 nodes (heuristic search)") {
  // 18 single-device nodes; 10 GB/s cables along the cycle 0, 5, 10, 15, 2, 7, ... (step 5
  // mod 18 visits all of them). Only that cycle has every hop at 11 GB/s.
  const int n = 18;
  const auto c = singles(n);
  ag::node_links links;
  for (int i = 0; i < n; ++i) links.push_back({(5 * i) % n, (5 * (i + 1)) % n, {10 * GB, 0}});
  CHECK(ag::ring_bottleneck(c, [] {
          std::vector<int> v(18);
          for (int i = 0; i < 18; ++i) v[static_cast<std::size_t>(i)] = i;
          return v;
        }(), links) == 1 * GB);
  const auto order = ag::ring_order(c, links);
  CHECK(ag::ring_bottleneck(c, order, links) == 11 * GB);
  CHECK(order.front() == 0);
}

TEST_CASE("graph: ring bottleneck checks the order") {
  const auto c = hetero();
  CHECK_THROWS_WITH_AS((void)ag::ring_bottleneck(c, {0, 1}),
                       "'order': a ring visits every worker node once: expected 3 nodes, got 2", autosync::error);
  CHECK_THROWS_WITH_AS((void)ag::ring_bottleneck(c, {0, 1, 3}), "'order': must be a permutation of the worker node indices",
                       autosync::error);
  CHECK(ag::ring_bottleneck(zoo::local(4), {0}) == std::numeric_limits<double>::infinity());
}

TEST_CASE("graph: NIC contention") {
  using namespace autosync::zoo;
  // p3.16xlarge: 8 devices x 2 flows on one 25 Gb/s NIC.
  const auto p3 = ag::nic_contention(p3_16xlarge_x4(), 0, 2);
  CHECK(p3.flows == std::vector<int>{16});
  CHECK(p3.max_flows == 16);
  CHECK(p3.min_per_flow_bandwidth == doctest::Approx(3.125e9 / 16));
  // DGX H100: one NIC per GPU.
  const auto h = ag::nic_contention(dgx_h100(2), 1, 1);
  CHECK(h.flows == std::vector<int>(8, 1));
  CHECK(h.min_per_flow_bandwidth == doctest::Approx(47e9));
  // 4 devices on 3 NICs: d0,d3 -> nic0, d1 -> nic1, d2 -> nic2.
  cluster_spec c = singles(1);
  c.nodes[0] = worker("q", 4, 10 * GB, 3, 6 * GB);
  const auto q = ag::nic_contention(c, 0, 1);
  CHECK(q.flows == std::vector<int>{2, 1, 1});
  CHECK(q.per_flow_bandwidth == std::vector<double>{3 * GB, 6 * GB, 6 * GB});
  CHECK(q.min_per_flow_bandwidth == 3 * GB);
  // 1 device on 2 NICs, 3 flows round-robin: nic0 gets 2, nic1 gets 1.
  c.nodes[0] = worker("r", 1, 0, 2, 8 * GB);
  const auto r = ag::nic_contention(c, 0, 3);
  CHECK(r.flows == std::vector<int>{2, 1});
  CHECK(r.min_per_flow_bandwidth == 4 * GB);
  // 1 device on 2 NICs with 1 flow: nic1 idle, a new flow there would get all of it.
  const auto idle = ag::nic_contention(c, 0, 1);
  CHECK(idle.flows == std::vector<int>{1, 0});
  CHECK(idle.per_flow_bandwidth == std::vector<double>{8 * GB, 8 * GB});
  CHECK_THROWS_WITH_AS((void)ag::nic_contention(hetero(), 3, 1), "'node': node 3 is server_only: it has no device flows",
                       autosync::error);
  CHECK_THROWS_WITH_AS((void)ag::nic_contention(hetero(), 0, 0), "'flows_per_device': must be at least 1, got 0", autosync::error);
  CHECK_THROWS_WITH_AS((void)ag::nic_contention(hetero(), 9, 1), "'node': node index 9 is out of range [0, 4)", autosync::error);
}

TEST_CASE("graph: Graphviz text") {
  const auto dot = ag::to_dot(hetero(), {{0, 2, {7 * GB, 1e-6}}});
  CHECK(dot.rfind("graph \"hetero\" {\n", 0) == 0);
  CHECK(dot.back() == '\n');
  CHECK(count(dot, " -- ") == 20);  // 19 edges + the direct link
  CHECK(count(dot, "subgraph cluster_") == 4);
  CHECK(count(dot, "style=bold") == 1);
  CHECK(count(dot, "shape=box") == 7);  // 7 devices
  CHECK(count(dot, "shape=ellipse") == 6);
  CHECK(count(dot, "shape=hexagon") == 2);
  CHECK(count(dot, "shape=diamond") == 1);
  CHECK(dot.find("label=\"a.d1\\nrank 1\"") != std::string::npos);
  CHECK(dot.find("label=\"ps (server)\"") != std::string::npos);
  CHECK(dot.find("label=\"b (4 x test)\"") != std::string::npos);
  CHECK(dot.find("[label=\"25 GB/s, 2 us\"]") != std::string::npos);  // b.nic0 -- fabric
  CHECK(dot.find("// 7 ranks on 3 worker nodes + 1 server nodes") != std::string::npos);
  // names are escaped
  cluster_spec q = singles(1);
  q.name = "we\"ird";
  CHECK(ag::to_dot(q).rfind("graph \"we\\\"ird\" {", 0) == 0);
}

TEST_CASE("graph: ring order is optimal against brute force on random clusters") {
  // Deterministic LCG; 7 single-device nodes with NICs of 1..4 GB/s and 6 random cables of
  // 1..8 GB/s. Every ring through node 0 is enumerated (6! orders).
  std::uint64_t state = 12345;
  auto next = [&](int mod) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % static_cast<std::uint64_t>(mod));
  };
  int improved = 0;  // trials where the natural order is not optimal
  for (int trial = 0; trial < 20; ++trial) {
    CAPTURE(trial);
    auto c = singles(7);
    for (auto& nd : c.nodes) nd.nic.bandwidth = (1 + next(4)) * GB;
    ag::node_links links;
    for (int k = 0; k < 6; ++k) {
      const int a = next(7), b = next(7);
      if (a != b) links.push_back({a, b, {(1 + next(8)) * GB, 0}});
    }
    std::vector<int> perm{1, 2, 3, 4, 5, 6};
    double best = 0;
    do {
      std::vector<int> order{0};
      order.insert(order.end(), perm.begin(), perm.end());
      best = std::max(best, ag::ring_bottleneck(c, order, links));
    } while (std::next_permutation(perm.begin(), perm.end()));
    const auto order = ag::ring_order(c, links);
    CHECK(ag::ring_bottleneck(c, order, links) == best);
    CHECK(order.front() == 0);
    if (ag::ring_bottleneck(c, {0, 1, 2, 3, 4, 5, 6}, links) < best) ++improved;
  }
  MESSAGE("random rings improved over the natural order: ", improved, " of 20");
  CHECK(improved >= 3);
}

TEST_CASE("graph: node shapes, and rings of many nodes from a few cuts") {
  // Nodes built alike share a shape (devices, NICs and their bandwidths; names and latencies
  // aside); without direct links a node-to-node cut depends on the two shapes alone.
  auto c = singles(6);
  c.nodes[2].nic.bandwidth = 3 * GB;        // another shape
  c.nodes[4].nic.latency = 1e-3;            // latency carries no flow: the same shape as node 0
  c.nodes[5].devices = 2;                   // two devices: another shape
  c.nodes[5].intra = {50 * GB, 1e-6};
  const auto cg = ag::make_graph(c);
  CHECK(cg.shape == std::vector<std::size_t>{0, 0, 2, 0, 0, 5});
  CHECK_FALSE(cg.direct_links);
  CHECK(ag::make_graph(c, {{0, 1, {1 * GB, 0}}}).direct_links);
  // every hop of a ring, each computed as its own max-flow, against the ring's bottleneck
  for (const auto& order : {std::vector<int>{0, 1, 2, 3, 4, 5}, std::vector<int>{5, 2, 0, 4, 1, 3}}) {
    double m = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < order.size(); ++i) m = std::min(m, ag::pair_bandwidth(c, order[i], order[(i + 1) % order.size()]));
    CHECK(ag::ring_bottleneck(c, order) == m);
  }
  // 3000 alike nodes: every ring the same (the natural order), its hop one node's NIC
  const auto big = singles(3000);
  const auto order = ag::ring_order(big);
  REQUIRE(order.size() == 3000);
  CHECK(std::is_sorted(order.begin(), order.end()));
  CHECK(ag::ring_bottleneck(big, order) == 1 * GB);
  // 100 nodes of two shapes, above ring_search_limit: the natural order and its slowest hop
  auto mixed = singles(100);
  for (std::size_t i = 50; i < 100; ++i) mixed.nodes[i].nic.bandwidth = 4 * GB;
  static_assert(ag::ring_search_limit < 100);
  const auto kept = ag::ring_order(mixed);
  CHECK(std::is_sorted(kept.begin(), kept.end()));
  CHECK(ag::ring_bottleneck(mixed, kept) == 1 * GB);
  // below the limit, 20 nodes of the two shapes interleaved: every ring has a 1 GB/s node
  auto twenty = singles(20);
  for (std::size_t i = 1; i < 20; i += 2) twenty.nodes[i].nic.bandwidth = 4 * GB;
  CHECK(ag::ring_bottleneck(twenty, ag::ring_order(twenty)) == 1 * GB);
}
