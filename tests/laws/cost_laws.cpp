// Laws of the cost model, checked over random sizes, rank counts and clusters (fixed seeds).
#include <autosync/cost/collectives.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/strategy/items.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::cost;

namespace {

std::mt19937_64 rng(20240611);
double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }

const topology_kind flat_kinds[] = {topology_kind::ring, topology_kind::tree, topology_kind::halving_doubling};

std::vector<topology_value> all_topologies() {
  std::vector<topology_value> v;
  for (auto k : flat_kinds) v.push_back(topology_value{k});
  for (auto i : flat_kinds)
    for (auto o : flat_kinds) v.push_back(topology_value{topology_kind::hierarchical, i, o});
  return v;
}

cluster_spec random_cluster(int nodes, int g, double intra_bw, double nic_bw, int servers = 0) {
  cluster_spec c;
  c.name = "random";
  for (int i = 0; i < nodes; ++i) {
    node_spec n;
    n.name = "w" + std::to_string(i);
    n.devices = g;
    n.intra = autosync::link{intra_bw, log_uniform(1e-7, 1e-5)};
    n.nic = autosync::link{nic_bw, log_uniform(1e-6, 5e-5)};
    n.nics = uniform_int(1, 4);
    n.device_flops = 1e13;
    n.reduce_bandwidth = log_uniform(1e10, 1e12);
    c.nodes.push_back(n);
  }
  for (int i = 0; i < servers; ++i) {
    node_spec n;
    n.name = "s" + std::to_string(i);
    n.devices = 0;
    n.server_only = true;
    n.nic = autosync::link{nic_bw, 1e-5};
    c.nodes.push_back(n);
  }
  return c;
}

model_spec random_model(int tensors, std::int64_t max_elements) {
  model_spec m;
  m.name = "random";
  m.forward_flops = 1e9;
  for (int i = 0; i < tensors; ++i) {
    tensor t;
    t.name = "t" + std::to_string(i);
    t.shape = {static_cast<std::int64_t>(log_uniform(1, static_cast<double>(max_elements)))};
    t.backward_flops = log_uniform(1e6, 1e9);
    m.tensors.push_back(t);
  }
  return m;
}

}  // namespace

TEST_CASE("law: every formula is monotone in bytes") {
  for (int trial = 0; trial < 2000; ++trial) {
    const int p = uniform_int(1, 64);
    const double a = log_uniform(1e-7, 1e-4), b = log_uniform(1e-12, 1e-8), g = log_uniform(1e-13, 1e-10);
    const double n1 = log_uniform(1, 1e10), n2 = n1 * uniform(1.0, 4.0);
    CAPTURE(p);
    CAPTURE(n1);
    for (auto k : flat_kinds) {
      CHECK(all_reduce(k, p, n1, {a, b}, g) <= all_reduce(k, p, n2, {a, b}, g));
      CHECK(reduce_scatter(k, p, n1, {a, b}, g) <= reduce_scatter(k, p, n2, {a, b}, g));
      CHECK(all_gather(k, p, n1, {a, b}) <= all_gather(k, p, n2, {a, b}));
    }
    CHECK(broadcast(p, n1, a, b) <= broadcast(p, n2, a, b));
    CHECK(reduce(p, n1, a, b, g) <= reduce(p, n2, a, b, g));
  }
  // and the whole estimate: a bigger tensor never makes the iteration shorter
  for (int trial = 0; trial < 200; ++trial) {
    const auto c = random_cluster(uniform_int(1, 4), uniform_int(1, 8), log_uniform(1e10, 3e11), log_uniform(1e9, 5e10), uniform_int(0, 2));
    auto m = random_model(uniform_int(1, 20), 1 << 22);
    group_desc gd;
    gd.architecture = uniform_int(0, 1) ? architecture_kind::all_reduce : architecture_kind::parameter_server;
    // packing that does not depend on sizes (with a finite cap, a bigger tensor may re-pack the
    // buckets into a better-overlapped set: bucketing itself is not monotone)
    gd.fusion = uniform_int(0, 1) ? fusion_value{unbounded_bytes, unbounded_bytes} : fusion_value{};
    const auto before = estimate(m, c, uniform_strategy(m, gd)).iteration;
    m.tensors[static_cast<std::size_t>(uniform_int(0, static_cast<int>(m.tensors.size()) - 1))].shape[0] *= 3;
    CHECK(before <= estimate(m, c, uniform_strategy(m, gd)).iteration);
  }
}

TEST_CASE("law: no all-reduce is below 2(p-1)/p S/B") {
  for (int trial = 0; trial < 5000; ++trial) {
    const int p = uniform_int(1, 128);
    const double a = log_uniform(1e-7, 1e-4), b = log_uniform(1e-12, 1e-8), g = log_uniform(1e-13, 1e-10);
    const double n = log_uniform(1, 1e10);
    const double lb = all_reduce_lower_bound(p, n, b);
    CAPTURE(p);
    CAPTURE(n);
    for (auto k : flat_kinds) {
      CHECK(all_reduce(k, p, n, {a, b}, g) >= lb);
      CHECK(reduce_scatter(k, p, n, {a, b}, g) + all_gather(k, p, n, {a, b}) >= lb);
    }
  }
  // on clusters, every topology including every hierarchical pair
  const auto topos = all_topologies();
  for (int trial = 0; trial < 1000; ++trial) {
    const auto c = random_cluster(uniform_int(1, 16), uniform_int(1, 8), log_uniform(1e9, 1e12), log_uniform(1e8, 1e11));
    const auto f = make_fabric(c);
    const double n = log_uniform(1, 1e10);
    const double lb = lower_bound(f, n);
    CAPTURE(f.p);
    CAPTURE(f.nodes);
    CAPTURE(n);
    CHECK(lb >= (f.g > 1 ? all_reduce_lower_bound(f.p, n, f.intra.beta) : all_reduce_lower_bound(f.p, n, f.inter.beta)) * (1 - 1e-12));
    for (const auto& t : topos) {
      CHECK(all_reduce(f, t, n) >= lb);
      CHECK(reduce_scatter(f, t, n) + all_gather(f, t, n) >= lb * (1 - 1e-12));
    }
    CHECK(sparse_all_gather(f, n) >= sparse_all_gather_lower_bound(f, n));
  }
}

TEST_CASE("law: iteration >= lower_bound >= forward + backward") {
  for (int trial = 0; trial < 300; ++trial) {
    const auto c = random_cluster(uniform_int(1, 4), uniform_int(1, 8), log_uniform(1e10, 3e11), log_uniform(1e9, 5e10), uniform_int(0, 3));
    const auto m = random_model(uniform_int(1, 40), 1 << 24);
    strategy_desc s;
    s.name = "random";
    const int ngroups = uniform_int(1, 4);
    for (int k = 0; k < ngroups; ++k) {
      group_desc g;
      g.architecture = static_cast<architecture_kind>(uniform_int(0, 2));
      if (g.architecture != architecture_kind::parameter_server) {
        g.topology = topology_value{flat_kinds[uniform_int(0, 2)]};
        if (uniform_int(0, 1)) g.topology = topology_value{topology_kind::hierarchical, topology_kind::ring, flat_kinds[uniform_int(0, 2)]};
        if (g.architecture == architecture_kind::sharded && g.topology.kind == topology_kind::tree) g.topology.kind = topology_kind::ring;
      } else {
        g.placement = placement_value{static_cast<placement_kind>(uniform_int(0, 1)), 0};
        g.replication = static_cast<replication_kind>(uniform_int(0, 1));
      }
      g.compression = static_cast<compression_id>(uniform_int(0, 2));
      g.fusion = fusion_value{static_cast<std::uint64_t>(uniform_int(0, 1 << 26)), 0};
      g.fusion.first_cap_bytes = g.fusion.cap_bytes / 4;
      g.schedule = static_cast<schedule_kind>(uniform_int(0, 1));
      s.groups.push_back(g);
    }
    for (const auto& t : m.tensors) s.assignments.push_back(assignment{t.name, uniform_int(0, ngroups - 1), 0, {}});
    s.validate(m, c);
    const auto p = estimate(m, c, s, options{true});
    CHECK(p.lower_bound <= p.iteration * (1 + 1e-12));
    CHECK(p.lower_bound >= p.forward + p.backward);
    CHECK(p.exposed >= 0.0);
    CHECK(p.iteration == doctest::Approx(p.forward + p.backward + p.exposed));
    // lanes never overlap themselves, and nothing starts before its bucket is ready (after the forward)
    std::vector<double> lane_end(8, 0.0);
    double busy = 0;
    for (const auto& e : p.events) {
      REQUIRE(e.lane < 8);
      CHECK(e.start >= lane_end[static_cast<std::size_t>(e.lane)] - 1e-15);
      CHECK(e.end >= e.start);
      CHECK(e.start >= p.forward);
      lane_end[static_cast<std::size_t>(e.lane)] = e.end;
      if (e.kind != event_compression) busy += e.end - e.start;
    }
    CHECK(busy == doctest::Approx(p.communication));
  }
}

TEST_CASE("law: hierarchical<K, K> <= flat K when intra >> inter") {
  // For ring the bandwidth terms need B_intra >= N x B_nic (see fabric.hpp); here 100-1000x.
  // (Across kinds there is no such law: a flat halving-doubling's 2 lg p latency beats a
  // hierarchical ring's 2(g-1) + 2(N-1) steps on small messages.)
  for (int trial = 0; trial < 2000; ++trial) {
    const double nic = log_uniform(1e9, 5e10);
    const auto c = random_cluster(uniform_int(2, 16), uniform_int(2, 8), 0, nic);
    auto cc = c;
    const double node_nic = cc.nodes[0].nic_bandwidth();
    for (auto& n : cc.nodes) {
      n.nics = c.nodes[0].nics;
      n.intra.bandwidth = node_nic * uniform(100, 1000);
      n.intra.latency = n.nic.latency * uniform(0.01, 0.1);
    }
    const auto f = make_fabric(cc);
    const double n = log_uniform(1, 1e10);
    CAPTURE(f.nodes);
    CAPTURE(f.g);
    CAPTURE(n);
    for (auto k : {topology_kind::ring, topology_kind::halving_doubling}) {
      CAPTURE(static_cast<int>(k));
      CHECK(all_reduce(f, topology_value{topology_kind::hierarchical, k, k}, n) <= all_reduce(f, topology_value{k}, n));
    }
  }
}

TEST_CASE("law: more parameter servers are never slower under load_balanced") {
  // In the bandwidth-bound regime (tensors of 1-16 MiB). With tiny tensors the law does not
  // hold, in the model as on real servers: load_balanced balances bytes, not messages, so
  // adding a server can move many tiny (latency-bound) tensors onto one server's queue.
  // Strict for a fused group (one bucket: the placement alone decides). With one bucket per
  // tensor the placement ignores when each tensor is ready, and list scheduling has Graham's
  // anomalies (a machine more, a schedule longer: up to 10 % seen here), so for those the law
  // checked is the weaker one: S servers never lose to a single server.
  for (int trial = 0; trial < 300; ++trial) {
    const int nodes = uniform_int(1, 4), g = uniform_int(1, 4);
    const double intra = log_uniform(1e10, 1e11), nic = log_uniform(1e9, 1e10);
    auto m = random_model(uniform_int(1, 30), 1 << 22);
    for (auto& t : m.tensors) t.shape[0] = static_cast<std::int64_t>(log_uniform(1 << 18, 1 << 22));
    group_desc gd;
    gd.architecture = architecture_kind::parameter_server;
    gd.placement = placement_value{placement_kind::load_balanced, 0};
    gd.fusion = uniform_int(0, 1) ? fusion_value{unbounded_bytes, unbounded_bytes} : fusion_value{};
    gd.replication = static_cast<replication_kind>(uniform_int(0, 1));
    const auto s = uniform_strategy(m, gd);
    const std::uint64_t seed = rng();
    double prev = 0.0, single = 0.0;
    for (int servers = 1; servers <= 6; ++servers) {
      rng.seed(seed);  // the same worker nodes every time
      const auto c = random_cluster(nodes, g, intra, nic, servers);
      const double t = estimate(m, c, s).iteration;
      CAPTURE(servers);
      CAPTURE(trial);
      CAPTURE(m.tensors.size());
      CAPTURE(gd.fusion.cap_bytes);
      CAPTURE(static_cast<int>(gd.replication));
      if (servers == 1) single = t;
      if (servers > 1 && gd.fusion.cap_bytes == unbounded_bytes) CHECK(t <= prev * (1 + 1e-12));
      CHECK(t <= single * (1 + 1e-12));
      prev = t;
    }
  }
}

TEST_CASE("law: fusion helps latency-bound tiny tensors") {
  for (int trial = 0; trial < 300; ++trial) {
    const auto c = random_cluster(uniform_int(1, 4), uniform_int(2, 8), log_uniform(1e10, 3e11), log_uniform(1e9, 5e10));
    model_spec m;
    m.name = "tiny";
    m.forward_flops = 1e6;
    const int nt = uniform_int(20, 200);
    for (int i = 0; i < nt; ++i) {
      tensor t;
      t.name = "b" + std::to_string(i);
      t.shape = {uniform_int(1, 256)};  // biases, norms: at most 1 KiB
      t.backward_flops = 1e3;
      m.tensors.push_back(t);
    }
    group_desc g;
    g.topology = topology_value{flat_kinds[uniform_int(0, 2)]};
    const double unfused = estimate(m, c, uniform_strategy(m, g)).iteration;
    g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
    const double fused = estimate(m, c, uniform_strategy(m, g)).iteration;
    g.fusion = fusion_value{1 << 16, 1 << 16};
    const double capped = estimate(m, c, uniform_strategy(m, g)).iteration;
    CHECK(fused < unfused);
    CHECK(capped < unfused);
  }
}

TEST_CASE("law: co-located parameter servers never beat the node-level cut") {
  // With a server on every worker node (no server_only nodes), node k's NICs carry its own
  // pushes and pulls of the other servers' bytes plus the pushes into and pulls out of its own
  // server. For one bucket of X bytes with B_k on node k's server and local replication that
  // is (X - B_k) + (N-1) B_k = X + (N-2) B_k each way; the busiest node has B_k >= X/N, hence
  // >= 2(N-1)/N X: what a ring all-reduce moves through every node (fabric's lower_bound).
  // Without local replication every term is c = g times larger. Uniform nodes, so beta_inter
  // is every node's. The spread: even<N, 0> shards, placed load_balanced (even), round_robin
  // or hashed (uneven: the law holds for every spread).
  for (int trial = 0; trial < 400; ++trial) {
    const int N = uniform_int(2, 8);
    auto c = random_cluster(N, uniform_int(1, 8), log_uniform(1e10, 3e11), log_uniform(1e9, 5e10));
    for (auto& n : c.nodes) {
      n.nics = c.nodes[0].nics;
      n.nic.latency = c.nodes[0].nic.latency;
    }
    REQUIRE(c.uniform());
    auto m = random_model(uniform_int(1, 20), 1 << 22);
    for (auto& t : m.tensors) t.shape[0] = std::max<std::int64_t>(t.shape[0], N);  // N shards each
    group_desc g;
    g.architecture = architecture_kind::parameter_server;
    g.partitioner = partitioner_value{partitioner_kind::even, N, 0, 0};
    const placement_kind placements[] = {placement_kind::load_balanced, placement_kind::round_robin, placement_kind::hashed};
    g.placement = placement_value{placements[uniform_int(0, 2)], 0};
    g.replication = uniform_int(0, 3) ? replication_kind::local : replication_kind::none;
    g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
    g.schedule = static_cast<schedule_kind>(uniform_int(0, 1));
    const auto s = uniform_strategy(m, g);
    s.validate(m, c);
    double X = 0.0;
    for (const auto& it : expand(m, c, s)) X += static_cast<double>(it.wire_bytes);
    const auto f = make_fabric(c);
    const auto p = estimate(m, c, s);
    const double ready = p.forward + p.backward;  // the one bucket is ready with the last gradient
    const double cut = all_reduce_lower_bound(N, X, f.inter.beta);
    CAPTURE(trial);
    CAPTURE(N);
    CAPTURE(f.g);
    CAPTURE(X);
    CAPTURE(static_cast<int>(g.placement.kind));
    CAPTURE(static_cast<int>(g.replication));
    CHECK(p.iteration - ready >= cut * (1 - 1e-12));
    CHECK(p.lower_bound - p.forward >= cut * (1 - 1e-12));  // the bound the search prunes on knows it too
    if (g.replication == replication_kind::none) CHECK(p.iteration - ready >= f.g * cut * (1 - 1e-12));
  }
}
