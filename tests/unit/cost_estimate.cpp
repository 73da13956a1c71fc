// The timeline of cost::estimate on tiny hand-made models and clusters, with exact times.
//
// The standard tiny model: 4 f32 tensors t0..t3 of 1000 elements (4000 bytes), forward 1 ms,
// backward 1 ms per tensor on a 1 GFLOP/s device; backward makes t3 ready at 2 ms, t2 at 3 ms,
// t1 at 4 ms, t0 at 5 ms.
// The standard tiny node: 2 devices, intra link 1 MB/s (beta 1e-6 s/B) with alpha 1 ms,
// reduce 2 MB/s (gamma 5e-7 s/B): a 2-rank ring all-reduce of S bytes costs
// 2 alpha + S beta + S/2 gamma = 0.002 + 1.25e-6 S, i.e. 7 ms for one tensor.
#include <autosync/cost/estimate.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace autosync;
using doctest::Approx;

namespace {

model_spec tiny_model(std::vector<std::int64_t> elements = {1000, 1000, 1000, 1000}) {
  model_spec m;
  m.name = "tiny";
  m.forward_flops = 1e6;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    tensor t;
    t.name = "t" + std::to_string(i);
    t.shape = {elements[i]};
    t.backward_flops = 1e6;
    m.tensors.push_back(t);
  }
  return m;
}

node_spec worker(int devices) {
  node_spec n;
  n.devices = devices;
  n.intra = autosync::link{1e6, 1e-3};
  n.nic = autosync::link{1e6, 0.0};
  n.device_flops = 1e9;
  n.reduce_bandwidth = 2e6;
  return n;
}

cluster_spec one_node() {
  cluster_spec c;
  c.name = "1x2";
  c.nodes.push_back(worker(2));
  c.nodes[0].name = "n0";
  return c;
}

// w worker nodes of d devices and s dedicated server nodes; NICs 1 MB/s, no latency.
cluster_spec ps_cluster(int w, int d, int s) {
  cluster_spec c;
  c.name = "ps";
  for (int i = 0; i < w; ++i) {
    auto n = worker(d);
    n.name = "w" + std::to_string(i);
    n.intra = autosync::link{1e7, 0.0};
    n.reduce_bandwidth = 1e7;
    c.nodes.push_back(n);
  }
  for (int i = 0; i < s; ++i) {
    node_spec n;
    n.name = "s" + std::to_string(i);
    n.devices = 0;
    n.server_only = true;
    n.nic = autosync::link{1e6, 0.0};
    c.nodes.push_back(n);
  }
  return c;
}

group_desc all_reduce(std::uint64_t cap = 0, std::uint64_t first = 0) {
  group_desc g;
  g.fusion = fusion_value{cap, first};
  return g;
}

std::vector<std::uint32_t> lane_order(const cost::prediction& p, int lane) {
  std::vector<std::uint32_t> v;
  for (const auto& e : p.events)
    if (e.lane == lane && e.kind != cost::event_compression) v.push_back(e.bucket);
  return v;
}

cost::prediction run(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  s.validate(m, c);
  const auto p = cost::estimate(m, c, s, cost::options{true});
  // the evaluator agrees with the free function, also when reused
  cost::evaluator ev(m, c);
  const auto q = ev(s);
  const auto q2 = ev(s, cost::options{true});
  CHECK(q.iteration == p.iteration);
  CHECK(q2.events.size() == p.events.size());
  CHECK(q.events.empty());
  CHECK(p.lower_bound <= p.iteration + 1e-15);
  return p;
}

}  // namespace

TEST_CASE("compute: forward, backward and readiness") {
  const auto m = tiny_model();
  const auto x = cost::make_context(m, one_node());
  CHECK(x.forward == Approx(1e-3));
  CHECK(x.backward == Approx(4e-3));
  REQUIRE(x.order.size() == 4);
  CHECK(x.order[0] == 3);
  CHECK(x.order[3] == 0);
  CHECK(x.ready_at[0] == Approx(2e-3));
  CHECK(x.ready_at[3] == Approx(5e-3));
}

TEST_CASE("all_reduce: one bucket per tensor vs one bucket for all") {
  const auto m = tiny_model();
  const auto c = one_node();
  // no fusion: [2,9] [9,16] [16,23] [23,30] ms
  const auto p = run(m, c, uniform_strategy(m, all_reduce(0)));
  CHECK(p.forward == Approx(0.001));
  CHECK(p.backward == Approx(0.004));
  CHECK(p.iteration == Approx(0.030));
  CHECK(p.exposed == Approx(0.025));
  CHECK(p.communication == Approx(0.028));
  REQUIRE(p.events.size() == 4);
  CHECK(p.events[0].start == Approx(0.002));
  CHECK(p.events[0].end == Approx(0.009));
  CHECK(p.events[1].start == Approx(0.009));
  CHECK(p.events[3].end == Approx(0.030));
  CHECK(p.events[0].bytes == 4000);
  CHECK(p.events[0].lane == 0);
  CHECK(p.events[0].kind == cost::event_collective);
  // lower bound: 4 x 2*(1/2)*4000*1e-6 = 16 ms of bandwidth after the 1 ms forward
  CHECK(p.lower_bound == Approx(0.017));

  // unbounded: one bucket of 16000 B ready at 5 ms: 2 + 20 ms
  const auto u = run(m, c, uniform_strategy(m, all_reduce(unbounded_bytes, unbounded_bytes)));
  REQUIRE(u.events.size() == 1);
  CHECK(u.events[0].start == Approx(0.005));
  CHECK(u.iteration == Approx(0.027));
  CHECK(u.events[0].bytes == 16000);
}

TEST_CASE("fusion caps, including the first bucket's") {
  const auto m = tiny_model();
  const auto c = one_node();
  // cap 8000, first 4000: [t3] [t2 t1] [t0]; b1 costs 2 + 10 ms
  const auto s = uniform_strategy(m, all_reduce(8000, 4000));
  const auto p = run(m, c, s);
  REQUIRE(p.events.size() == 3);
  CHECK(p.events[0].end == Approx(0.009));
  CHECK(p.events[1].bytes == 8000);
  CHECK(p.events[1].start == Approx(0.009));
  CHECK(p.events[1].end == Approx(0.021));
  CHECK(p.events[2].end == Approx(0.028));
  CHECK(p.iteration == Approx(0.028));
  // a cap of 8000 for the first bucket too: [t3 t2] [t1 t0]
  const auto q = run(m, c, uniform_strategy(m, all_reduce(8000, 8000)));
  REQUIRE(q.events.size() == 2);
  CHECK(q.events[0].start == Approx(0.003));
  CHECK(q.events[0].end == Approx(0.015));
  CHECK(q.events[1].end == Approx(0.027));
  // an item bigger than the cap travels alone: t1 has 3000 elements (12000 B) > 8000
  const auto big = tiny_model({1000, 3000, 1000, 1000});
  const auto r = run(big, c, uniform_strategy(big, all_reduce(8000, 8000)));
  REQUIRE(r.events.size() == 3);  // [t3 t2] [t1] [t0]
  CHECK(r.events[1].bytes == 12000);
}

TEST_CASE("buckets as packed") {
  const auto m = tiny_model();
  const auto c = one_node();
  const auto s = uniform_strategy(m, all_reduce(8000, 4000));
  const auto bs = cost::buckets(m, c, s);
  REQUIRE(bs.size() == 3);
  const auto items = expand(m, c, s);
  REQUIRE(bs[1].items.size() == 2);
  CHECK(items[bs[1].items[0]].tensor == 2);
  CHECK(items[bs[1].items[1]].tensor == 1);
  CHECK(bs[1].wire_bytes == 8000);
  CHECK(bs[1].ready == Approx(0.004));
  CHECK(bs[2].items.size() == 1);
  CHECK(items[bs[2].items[0]].tensor == 0);
}

TEST_CASE("schedule: fifo vs priority") {
  const auto m = tiny_model();
  const auto c = one_node();
  auto g = all_reduce(0);
  const auto fifo = run(m, c, uniform_strategy(m, g));
  CHECK(lane_order(fifo, 0) == std::vector<std::uint32_t>{0, 1, 2, 3});  // t3 t2 t1 t0
  g.schedule = schedule_kind::priority;
  const auto prio = run(m, c, uniform_strategy(m, g));
  // at 9 ms t2, t1, t0 are all ready: t0 (front layer, bucket 3) goes first
  CHECK(lane_order(prio, 0) == std::vector<std::uint32_t>{0, 3, 2, 1});
  CHECK(prio.events[1].start == Approx(0.009));
  CHECK(prio.events[1].bucket == 3);
  CHECK(prio.iteration == Approx(0.030));
}

TEST_CASE("parameter server: round robin vs load balanced vs pinned") {
  // t0 12000 B, t1..t3 4000 B; 2 workers x 1 device, 2 servers: server time 2 copies x B / 1 MB/s,
  // worker NIC time B / 1 MB/s. Ready: t3 2 ms, t2 3, t1 4, t0 5.
  const auto m = tiny_model({3000, 1000, 1000, 1000});
  const auto c = ps_cluster(2, 1, 2);
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  // A transfer starts when its server is free; the worker NICs carry B x 1e-6 s of it after
  // their earlier work; it ends at max(start + 2 B e-6, NIC done).
  // round robin: t0,t2 -> s0; t1,t3 -> s1.
  //   t3/s1 [2,10] (NIC 2-6); t2/s0 [3,11] (NIC 6-10); t1/s1 [10,18] (NIC 10-14);
  //   t0/s0 [11,35] (NIC 14-26)
  const auto rr = run(m, c, uniform_strategy(m, g));
  CHECK(rr.iteration == Approx(0.035));
  REQUIRE(rr.events.size() == 4);
  CHECK(rr.events[0].lane == 2);
  CHECK(rr.events[0].kind == cost::event_ps_transfer);
  CHECK(rr.events[1].lane == 1);
  CHECK(rr.events[1].start == Approx(0.003));
  CHECK(rr.events[1].end == Approx(0.011));
  CHECK(rr.events[3].start == Approx(0.011));
  CHECK(rr.communication == Approx(0.008 * 3 + 0.024));
  // load balanced: t0 -> s0; t1, t2, t3 -> s1: t3/s1 [2,10] (NIC 2-6); t0/s0 [5,29] (NIC 6-18);
  // t2/s1 [10,22] (NIC 18-22: waits for the NICs); t1/s1 [22,30]
  g.placement = placement_value{placement_kind::load_balanced, 0};
  const auto lb = run(m, c, uniform_strategy(m, g));
  CHECK(lb.iteration == Approx(0.030));
  REQUIRE(lb.events.size() == 4);
  CHECK(lb.events[1].lane == 1);
  CHECK(lb.events[1].start == Approx(0.005));
  CHECK(lb.events[1].end == Approx(0.029));
  CHECK(lb.events[2].end == Approx(0.022));
  CHECK(lb.events[3].start == Approx(0.022));
  // pinned to server 0: [2,10] [10,18] [18,26] [26,50]
  g.placement = placement_value{placement_kind::pinned, 0};
  const auto pin = run(m, c, uniform_strategy(m, g));
  CHECK(pin.iteration == Approx(0.050));
  for (const auto& e : pin.events) CHECK(e.lane == 1);
  // server-bandwidth bound: 2 x 24000 B / 1 MB/s after the forward
  CHECK(pin.lower_bound == Approx(0.001 + 0.048));
}

TEST_CASE("parameter server: local replication") {
  // 2 workers x 2 devices, 1 server; one tensor of 4000 B, no compute
  auto m = tiny_model({1000});
  m.forward_flops = 0;
  m.tensors[0].backward_flops = 0;
  const auto c = ps_cluster(2, 2, 1);
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  // none: 4 copies into the server: 16 ms; each worker NIC carries 2 copies: 8 ms
  const auto none = run(m, c, uniform_strategy(m, g));
  CHECK(none.iteration == Approx(0.016));
  // local: 2 copies: 8 ms; + intra reduce (Rabenseifner, g = 2: 0.4 + 0.2 ms) + broadcast 0.4 ms
  g.replication = replication_kind::local;
  const auto local = run(m, c, uniform_strategy(m, g));
  CHECK(local.iteration == Approx(0.0006 + 0.008 + 0.0004));
}

TEST_CASE("compression halves the bytes and adds its compute") {
  const auto m = tiny_model({1000});
  const auto c = one_node();
  auto g = all_reduce(0);
  g.compression = comp::fp16::value;
  const auto p = run(m, c, uniform_strategy(m, g));
  REQUIRE(p.events.size() == 2);
  CHECK(p.events[0].kind == cost::event_compression);
  CHECK(p.events[0].start == Approx(0.002));
  CHECK(p.events[0].end == Approx(0.002 + 2e-6));  // 2 flops x 1000 elements / 1 GFLOP/s
  CHECK(p.events[1].kind == cost::event_collective);
  CHECK(p.events[1].bytes == 2000);
  CHECK(p.events[1].end - p.events[1].start == Approx(0.002 + 1.25e-6 * 2000));
  CHECK(p.compression == Approx(2e-6));
  CHECK(p.iteration == Approx(0.002 + 2e-6 + 0.0045));
  const auto plain = run(m, c, uniform_strategy(m, all_reduce(0)));
  CHECK(plain.iteration == Approx(0.002 + 0.007));
}

TEST_CASE("sharded: reduce-scatter then all-gather on the critical path") {
  const auto m = tiny_model({1000});
  auto c = one_node();
  c.nodes[0].devices = 4;
  group_desc g;
  g.architecture = architecture_kind::sharded;
  const auto p = run(m, c, uniform_strategy(m, g));
  REQUIRE(p.events.size() == 2);
  const auto f = cost::make_fabric(c);
  // ring p = 4, alpha 1 ms, beta 1e-6, gamma 5e-7: RS = 3 ms + 3000*1.5e-6; AG = 3 ms + 3000e-6
  CHECK(p.events[0].end - p.events[0].start == Approx(0.003 + 0.0045));
  CHECK(p.events[1].end - p.events[1].start == Approx(0.003 + 0.003));
  CHECK(p.events[1].start == Approx(p.events[0].end));
  CHECK(p.iteration == Approx(0.002 + cost::all_reduce(f, topology_value{}, 4000)));
}

TEST_CASE("all_gather for sparse gradients") {
  model_spec m;
  m.name = "emb";
  tensor t;
  t.name = "emb";
  t.shape = {100, 10};
  t.sparse = true;
  t.sparse_density = 0.1;
  m.tensors.push_back(t);
  const auto c = one_node();
  group_desc g;
  g.architecture = architecture_kind::all_gather;
  const auto p = run(m, c, uniform_strategy(m, g));
  REQUIRE(p.events.size() == 1);
  // 10 touched rows x (40 B + 8 B index) = 480 B; ring all-gather of 2 x 480 B, then sum 480 B
  CHECK(p.events[0].bytes == 480);
  CHECK(p.iteration == Approx(0.001 + 480e-6 + 480 * 5e-7));
}

TEST_CASE("groups share lane 0; PS lanes run beside it") {
  const auto m = tiny_model();
  const auto c = ps_cluster(2, 1, 1);
  strategy_desc s = uniform_strategy(m, all_reduce(0));
  group_desc ps;
  ps.architecture = architecture_kind::parameter_server;
  s.groups.push_back(ps);
  s.assignments[0].group = 1;  // t0 to the server
  const auto p = run(m, c, s);
  int lane0 = 0, lane1 = 0;
  for (const auto& e : p.events) (e.lane == 0 ? lane0 : lane1)++;
  CHECK(lane0 == 3);
  CHECK(lane1 == 1);
  // lane 0: 2 nodes of 1 device, flat ring on the NICs (alpha 0, beta 1e-6, gamma 1e-7):
  // 4000e-6 + 2000e-7 = 4.2 ms each: [2,6.2] [6.2,10.4] [10.4,14.6];
  // t0 on the server: ready 5 ms, 2 copies x 4 ms = 8 ms -> [5,13].
  // The lanes share each worker's NIC (1 MB/s): three all-reduces of 2(N-1)/N x 4000 B = 4 ms
  // each plus the push of 4000 B = 4 ms: 16 ms of NIC work, none before 2 ms -> 18 ms.
  CHECK(p.iteration == Approx(0.018));
  bool seen = false;
  for (const auto& e : p.events)
    if (e.lane == 1) {
      CHECK(e.start == Approx(0.005));
      CHECK(e.end == Approx(0.013));
      seen = true;
    }
  CHECK(seen);
}
