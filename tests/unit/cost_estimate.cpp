// The timeline of cost::estimate on tiny hand-made models and clusters, with exact times
// (the standard tiny model and node: tests/common/tiny_specs.hpp).
#include <autosync/cost/estimate.hpp>
#include <autosync/search/sampler.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include "../common/tiny_specs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace autosync;
using doctest::Approx;
using autosync::testing::one_node;
using autosync::testing::tiny_model;
using autosync::testing::worker;

namespace {

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
  // t0 12000 B, t1..t3 4000 B; 2 workers x 1 device, 2 servers (NICs 1 MB/s, gamma 1e-7 s/B).
  // A transfer is the executor's exchange: 2 pushes one after the other, each added on arrival,
  // then 2 pulls: 2 x 2 x B e-6 + 2 x B e-7 = 4.2 B e-6 (16.8 ms for 4000 B, 50.4 ms for 12000 B);
  // worker NIC time B / 1 MB/s. Ready: t3 2 ms, t2 3, t1 4, t0 5.
  const auto m = tiny_model({3000, 1000, 1000, 1000});
  const auto c = ps_cluster(2, 1, 2);
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  // A transfer starts when its server is free; the worker NICs carry B x 1e-6 s of it after
  // their earlier work; it ends at max(start + 4.2 B e-6, NIC done).
  // round robin: t0,t2 -> s0; t1,t3 -> s1.
  //   t3/s1 [2,18.8] (NIC 2-6); t2/s0 [3,19.8] (NIC 6-10); t1/s1 [18.8,35.6] (NIC 18.8-22.8);
  //   t0/s0 [19.8,70.2] (NIC 22.8-34.8)
  const auto rr = run(m, c, uniform_strategy(m, g));
  CHECK(rr.iteration == Approx(0.0702));
  REQUIRE(rr.events.size() == 4);
  CHECK(rr.events[0].lane == 2);
  CHECK(rr.events[0].kind == cost::event_ps_transfer);
  CHECK(rr.events[1].lane == 1);
  CHECK(rr.events[1].start == Approx(0.003));
  CHECK(rr.events[1].end == Approx(0.0198));
  CHECK(rr.events[3].start == Approx(0.0198));
  CHECK(rr.communication == Approx(0.0168 * 3 + 0.0504));
  // load balanced: t0 -> s0; t1, t2, t3 -> s1: t3/s1 [2,18.8] (NIC 2-6); t0/s0 [5,55.4] (NIC 6-18);
  // t2/s1 [18.8,35.6]; t1/s1 [35.6,52.4]
  g.placement = placement_value{placement_kind::load_balanced, 0};
  const auto lb = run(m, c, uniform_strategy(m, g));
  CHECK(lb.iteration == Approx(0.0554));
  REQUIRE(lb.events.size() == 4);
  CHECK(lb.events[1].lane == 1);
  CHECK(lb.events[1].start == Approx(0.005));
  CHECK(lb.events[1].end == Approx(0.0554));
  CHECK(lb.events[2].end == Approx(0.0356));
  CHECK(lb.events[3].start == Approx(0.0356));
  // pinned to server 0: [2,18.8] [18.8,35.6] [35.6,52.4] [52.4,102.8]
  g.placement = placement_value{placement_kind::pinned, 0};
  const auto pin = run(m, c, uniform_strategy(m, g));
  CHECK(pin.iteration == Approx(0.1028));
  for (const auto& e : pin.events) CHECK(e.lane == 1);
  // server-bandwidth bound: 2 x 24000 B / 1 MB/s after the forward
  CHECK(pin.lower_bound == Approx(0.001 + 0.048));
}

TEST_CASE("load-balanced placement: largest first to the least-loaded server, below and above 1e12 bytes") {
  // 3 servers of one bandwidth; items of equal size tie by item order, loads tie to the first
  // server. Below 1e12 bytes in all expand finds the least load in integers; above, through the
  // rounding-guarded quotients. Scaling every size by 2^30 (exact in doubles) must not move a shard.
  const std::vector<std::int64_t> elements{7000, 5000, 5000, 3000, 3000, 3000, 1000, 500, 500};
  const auto c = ps_cluster(2, 1, 3);
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  g.placement = placement_value{placement_kind::load_balanced, 0};
  auto servers_of = [&](std::int64_t scale) {
    std::vector<std::int64_t> e;
    for (auto x : elements) e.push_back(x * scale);
    const auto m = tiny_model(e);
    std::vector<std::int32_t> sv;
    for (const auto& it : expand(m, c, uniform_strategy(m, g))) sv.push_back(it.server);
    return sv;
  };
  // by hand: 28000 -> s0; 20000 -> s1; 20000 -> s2; 12000 -> s1 (32000); 12000 -> s2 (32000);
  // 12000 -> s0 (40000); 4000 -> s1 (36000); 2000 -> s2 (34000); 2000 -> s2 (36000)
  const std::vector<std::int32_t> want{0, 1, 2, 1, 2, 0, 1, 2, 2};
  CHECK(servers_of(1) == want);
  CHECK(servers_of(std::int64_t{1} << 30) == want);  // 28000 x 2^30 bytes alone is above 1e12
}

TEST_CASE("load-balanced placement: the greedy by hand, for 1 to 70 servers") {
  // 60 tensors of pseudo-random sizes with repeats; the reference is the rule itself: shards
  // largest first (ties in item order), each to the first server of least load.
  std::vector<std::int64_t> elements;
  std::uint64_t x = 12345;
  for (int i = 0; i < 60; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    elements.push_back(static_cast<std::int64_t>(1 + (x >> 33) % 7) * 1000);
  }
  const auto m = tiny_model(elements);
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  g.placement = placement_value{placement_kind::load_balanced, 0};
  for (int servers : {1, 2, 3, 4, 5, 7, 8, 9, 12, 64, 70}) {
    CAPTURE(servers);
    const auto c = ps_cluster(2, 1, servers);
    const auto items = expand(m, c, uniform_strategy(m, g));
    std::vector<std::size_t> order(items.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return items[a].wire_bytes > items[b].wire_bytes; });
    std::vector<std::int64_t> load(static_cast<std::size_t>(servers), 0);
    for (const auto i : order) {
      const auto best = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      CHECK(items[i].server == static_cast<std::int32_t>(best));
      load[best] += items[i].wire_bytes;
    }
  }
}

TEST_CASE("parameter server: local replication") {
  // 2 workers x 2 devices, 1 server; one tensor of 4000 B, no compute
  auto m = tiny_model({1000});
  m.forward_flops = 0;
  m.tensors[0].backward_flops = 0;
  const auto c = ps_cluster(2, 2, 1);
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  // none: 4 ranks push one after the other (4 ms each), each added (0.4 ms), then 4 pulls:
  // 2 x 16 + 1.6 = 33.6 ms
  const auto none = run(m, c, uniform_strategy(m, g));
  CHECK(none.iteration == Approx(0.0336));
  // local: 2 node leaders: 2 x 8 + 0.8 = 16.8 ms; + intra reduce (Rabenseifner, g = 2: 0.4 + 0.2
  // ms) + broadcast 0.4 ms
  g.replication = replication_kind::local;
  const auto local = run(m, c, uniform_strategy(m, g));
  CHECK(local.iteration == Approx(0.0006 + 0.0168 + 0.0004));
}

TEST_CASE("compression halves the bytes and adds its compute") {
  const auto m = tiny_model({1000});
  auto c = one_node();
  c.nodes[0].codec_flops = 1e9;  // a calibrated codec rate
  auto g = all_reduce(0);
  g.compression = comp::fp16::value;
  const auto p = run(m, c, uniform_strategy(m, g));
  REQUIRE(p.events.size() == 2);
  CHECK(p.events[0].kind == cost::event_compression);
  CHECK(p.events[0].start == Approx(0.002));
  CHECK(p.events[0].end == Approx(0.002 + 2e-6));  // 2 units x 1000 elements / 1e9 units/s
  CHECK(p.events[1].kind == cost::event_collective);
  CHECK(p.events[1].bytes == 2000);
  CHECK(p.events[1].end - p.events[1].start == Approx(0.002 + 1.25e-6 * 2000));
  CHECK(p.compression == Approx(2e-6));
  CHECK(p.iteration == Approx(0.002 + 2e-6 + 0.0045));
  const auto plain = run(m, c, uniform_strategy(m, all_reduce(0)));
  CHECK(plain.iteration == Approx(0.002 + 0.007));
}

TEST_CASE("compression: the codec rate is the executor's (a CPU core on MPI, device memory on NCCL), or the calibrated one") {
  const auto m = tiny_model({1000});
  auto g = all_reduce(0);
  g.compression = comp::fp16::value;
  const auto s = uniform_strategy(m, g);
  auto busy = [&](const cluster_spec& c) { return run(m, c, s).compression; };
  // MPI: the executor's fp16 codec on one core, 12.5 ns per element (whatever the device's FLOP/s)
  auto c = one_node();
  CHECK(cost::make_fabric(c).codec_flops == cost::host_codec_flops);
  CHECK(busy(c) == Approx(1000 * 12.5e-9));
  c.nodes[0].device_flops *= 1000;
  CHECK(busy(c) == Approx(1000 * 12.5e-9));
  // NCCL on a described device: 12 bytes per element through its memory stream
  c.backend = collective_backend::nccl;
  CHECK(busy(c) == Approx(2.0 * 1000 / c.nodes[0].device_flops));  // undescribed: its FLOP/s, as before
  c.nodes[0].compute = zoo::hw::h100_sxm;
  CHECK(busy(c) == Approx(1000 * 12.0 / (zoo::hw::h100_sxm.memory_bandwidth * zoo::hw::h100_sxm.memory_efficiency)));
  // a calibrated rate wins on either backend; a heterogeneous cluster runs at its slowest codec
  c.nodes[0].codec_flops = 4e8;
  CHECK(busy(c) == Approx(2000 / 4e8));
  c.nodes.push_back(c.nodes[0]);
  c.nodes[1].name = "n1";
  c.nodes[1].codec_flops = 1e8;
  CHECK(cost::make_fabric(c).codec_flops == 1e8);
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
  // 10 touched rows x (40 B + 8 B index) = 480 B; the executor's three collectives (row counts,
  // indices, rows: ceil(lg 2) + 2 x 1 start-ups of 1 ms), 480 B in, then sum 480 B
  CHECK(p.events[0].bytes == 480);
  CHECK(p.iteration == Approx(0.003 + 480e-6 + 480 * 5e-7));
}

TEST_CASE("sparse tables: one sparse all-gather per table of a bucket, dense bytes where the executor moves them") {
  // three embedding tables (300, 200 and 100 rows of 10 floats, 10 % touched) and one dense tensor
  model_spec m;
  m.name = "tables";
  for (const std::int64_t rows : {300, 200, 100}) {
    tensor t;
    t.name = "emb" + std::to_string(rows);
    t.shape = {rows, 10};
    t.sparse = true;
    t.sparse_density = 0.1;
    m.tensors.push_back(t);
  }
  tensor d;
  d.name = "dense";
  d.shape = {1000};
  m.tensors.push_back(d);
  const std::int64_t touched[] = {30 * 48, 20 * 48, 10 * 48};  // rows x (40 B + 8 B index)
  const std::int64_t dense[] = {12000, 8000, 4000};
  strategy_desc s = uniform_strategy(m, all_reduce(0));
  group_desc ag;
  ag.architecture = architecture_kind::all_gather;
  ag.fusion = fusion_value{1u << 20, 1u << 20};  // the three tables in one bucket
  s.groups.push_back(ag);
  for (int i = 0; i < 3; ++i) s.assignments[static_cast<std::size_t>(i)].group = 1;
  // MPI, 4 nodes of 1 device: the bucket is one job of the tables' bytes, as long as three
  // sparse all-gathers, one per table (the executor's: exec/collective.hpp)
  auto mpi = autosync::testing::replicated("4x1", 4, autosync::testing::node(1, {100e9, 1e-6}, {10e9, 5e-6}, 1e14, 500e9));
  const auto f = cost::make_fabric(mpi);
  const auto pm = run(m, mpi, s);
  int jobs = 0;
  for (const auto& e : pm.events)
    if (e.kind != cost::event_compression && e.bytes == touched[0] + touched[1] + touched[2]) {
      ++jobs;
      double sum = 0.0;
      for (const auto w : touched) sum += cost::sparse_all_gather(f, static_cast<double>(w));
      CHECK(e.end - e.start == Approx(sum).epsilon(1e-12));
      CHECK(e.end - e.start > cost::sparse_all_gather(f, static_cast<double>(touched[0] + touched[1] + touched[2])));
    }
  CHECK(jobs == 1);
  // On a parameter server the tables are pushed and pulled dense (exec/collective.hpp: ps_push_pull)
  auto ps = ps_cluster(2, 1, 1);
  strategy_desc sp = s;
  sp.groups[1].architecture = architecture_kind::parameter_server;
  sp.groups[1].fusion = fusion_value{};
  sp.validate(m, ps);
  const auto items = expand(m, ps, sp);
  REQUIRE(items.size() == 4);
  for (int i = 0; i < 3; ++i) CHECK(items[static_cast<std::size_t>(i)].wire_bytes == dense[i]);
  // and on the NCCL backend, whose all_gather all-reduces the bucket: dense bytes, all_reduce's time
  auto nccl = mpi;
  nccl.backend = collective_backend::nccl;
  const auto itn = expand(m, nccl, s);
  for (int i = 0; i < 3; ++i) CHECK(itn[static_cast<std::size_t>(i)].wire_bytes == dense[i]);
  const auto fn = cost::make_fabric(nccl);
  const auto pn = run(m, nccl, s);
  int njobs = 0;
  for (const auto& e : pn.events)
    if (e.kind != cost::event_compression && e.bytes == 24000) {
      ++njobs;
      CHECK(e.end - e.start == Approx(cost::all_reduce(fn, topology_value{}, 24000.0)).epsilon(1e-12));
    }
  CHECK(njobs == 1);
}

TEST_CASE("groups share lane 0; PS lanes run beside it") {
  const auto m = tiny_model({1000, 1000, 1000, 1000, 1000, 1000, 1000});
  const auto c = ps_cluster(2, 1, 1);
  strategy_desc s = uniform_strategy(m, all_reduce(0));
  group_desc ps;
  ps.architecture = architecture_kind::parameter_server;
  s.groups.push_back(ps);
  s.assignments[0].group = 1;  // t0 to the server
  const auto p = run(m, c, s);
  int lane0 = 0, lane1 = 0;
  for (const auto& e : p.events) (e.lane == 0 ? lane0 : lane1)++;
  CHECK(lane0 == 6);
  CHECK(lane1 == 1);
  // lane 0: 2 nodes of 1 device, flat ring on the NICs (alpha 0, beta 1e-6, gamma 1e-7):
  // 4000e-6 + 2000e-7 = 4.2 ms each, from 2 ms: [2,6.2] ... [23,27.2];
  // t0 on the server: ready 8 ms, 2 pushes + 2 pulls of 4 ms + 2 additions of 0.4 ms -> [8,24.8].
  // The lanes share each worker's NIC (1 MB/s): six all-reduces of 2(N-1)/N x 4000 B = 4 ms
  // each plus the push of 4000 B = 4 ms: 28 ms of NIC work, none before 2 ms -> 30 ms.
  CHECK(p.iteration == Approx(0.030));
  bool seen = false;
  for (const auto& e : p.events)
    if (e.lane == 1) {
      CHECK(e.start == Approx(0.008));
      CHECK(e.end == Approx(0.0248));
      seen = true;
    }
  CHECK(seen);
}

TEST_CASE("parameter server: co-located servers share their node's NICs") {
  // 4 worker nodes x 2 devices, no server_only node: every node hosts one server. One tensor of
  // 4000 f32 (X = 16000 B) ready at 2 ms, even<4, 0> -> 4 shards of B = 4000 B, load_balanced
  // on 4 equal servers -> shard k on server k (node k); local replication; one bucket.
  const auto m = tiny_model({4000});
  const auto c = ps_cluster(4, 2, 0);
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  g.partitioner = partitioner_value{partitioner_kind::even, 4, 0, 0};
  g.placement = placement_value{placement_kind::load_balanced, 0};
  g.replication = replication_kind::local;
  g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  const auto f = cost::make_fabric(c);
  REQUIRE(f.servers.size() == 4);
  for (int k = 0; k < 4; ++k) CHECK(f.servers[static_cast<std::size_t>(k)].worker == k);
  // NIC seconds per byte on server 1: its host node 1 takes 3 copies in and 3 out, node 0 one
  // of each; without local replication 6 and 2 (2 ranks per node)
  CHECK(cost::ps_nic_unit(f, 1, true, 1) == Approx(3e-6));
  CHECK(cost::ps_nic_unit(f, 1, true, 0) == Approx(1e-6));
  CHECK(cost::ps_nic_unit(f, 1, false, 1) == Approx(6e-6));
  CHECK(cost::ps_nic_unit(f, 1, false, 0) == Approx(2e-6));
  // Each transfer: local reduce on 2 ranks (Rabenseifner: 4000 x 1e-7 + 2000 x 1e-7) = 0.6 ms,
  // local broadcast 4000 x 1e-7 = 0.4 ms; copies 4, own 1, remote 3: the exchange, 3 pushes
  // of 4 ms one after the other, each added (0.4 ms), then 3 pulls: 25.2 ms. NIC occupancy: the
  // host node 12 ms (3 pushes in, 3 pulls out), the other three 4 ms each. All four start at
  // 2 ms and push at 2.6 ms:
  //   s0: NICs [14.6, 6.6, 6.6, 6.6]    ends max(2.6 + 25.2, 14.6) + 0.4 = 28.2 ms
  //   s1: NICs [18.6, 18.6, 10.6, 10.6] ends 28.2 ms
  //   s2: NICs [22.6, 22.6, 22.6, 14.6] ends 28.2 ms
  //   s3: NICs [26.6, 26.6, 26.6, 26.6] ends 28.2 ms
  // Every node's NICs: 12 + 3 x 4 = 24 ms = 2(N-1)/N X beta, the ring all-reduce's node cut,
  // below the serialized exchange.
  const auto p = run(m, c, uniform_strategy(m, g));
  REQUIRE(p.events.size() == 4);
  const double ends[] = {0.0282, 0.0282, 0.0282, 0.0282};
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(p.events[k].lane == static_cast<int>(k) + 1);
    CHECK(p.events[k].bytes == 4000);
    CHECK(p.events[k].start == Approx(0.002));
    CHECK(p.events[k].end == Approx(ends[k]));
  }
  CHECK(p.iteration == Approx(0.0282));
  CHECK(p.iteration - 0.002 >= cost::nic_occupancy(f, 16000) - 1e-15);  // 24 ms after the bucket is ready
  // lower bound: forward 1 ms + the busiest node's NIC time 24 ms
  CHECK(p.lower_bound == Approx(0.025));

  // without local replication: copies = 8 ranks, own 2, remote 6: 6 remote copies through the
  // server's NIC (6 x 4 ms = 24 ms, above each sender node's 2 x 4 ms and the host's other rank
  // over its device link, 4000 x 1e-7 = 0.4 ms), 7 additions of 0.4 ms: 2 x 24 + 2.8 = 50.8 ms.
  // NICs: host 24 ms, others 8 ms (every node 24 + 3 x 8 = 48 ms, done at 50 ms); no local
  // reduce/broadcast: every server [2, 52.8].
  g.replication = replication_kind::none;
  const auto q = run(m, c, uniform_strategy(m, g));
  REQUIRE(q.events.size() == 4);
  CHECK(q.events[0].end == Approx(0.0528));
  CHECK(q.events[1].end == Approx(0.0528));
  CHECK(q.events[2].end == Approx(0.0528));
  CHECK(q.iteration == Approx(0.0528));
}

TEST_CASE("parameter server: a co-located server on one node moves nothing through the NIC") {
  // one node of 2 devices (intra alpha 1 ms, beta 1e-6, gamma 5e-7), its own server; 4000 B ready at 2 ms.
  const auto m = tiny_model({1000});
  const auto c = one_node();
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  // none: both ranks push and pull over their device links: 2 x 2 x 1 ms + 2 x 4000 x 1e-6 = 12 ms
  const auto none = run(m, c, uniform_strategy(m, g));
  CHECK(none.iteration == Approx(0.002 + 0.012));
  // local: the reduced copy is already there: reduce(2) = min(binomial 1 + 4000 x 1.5e-6,
  // Rabenseifner 2 + 4 + 1) = 7 ms, broadcast(2) = min(1 + 4, 2 + 4) = 5 ms
  g.replication = replication_kind::local;
  const auto local = run(m, c, uniform_strategy(m, g));
  CHECK(local.iteration == Approx(0.002 + 0.007 + 0.005));
}

TEST_CASE("parameter server: dedicated CPU servers, as the executor runs them (autosync-b-ps)") {
  // BytePS's point, by hand, and why the executor does not reach it. autosync-b-ps: 4 nodes x 4 T4 (PCIe 10 GB/s, alpha 10/14/0.47 us;
  // reduce 320/3 GB/s), 50 Gb/s NICs (beta 1.6e-10 s/B, alpha 35 us) + 2 CPU servers at 50 Gb/s.
  // No compute: both tensors ready at 0. Tensor a, Y = 1e8 B, all-reduced (flat ring, p = 16);
  // tensor b, Z = 6e7 B, on the servers: even<2> -> B = 3e7 B per server, local replication.
  //   lane 0:  ring, alpha = max(1.52 us, 35 us), beta = max(1e-10, 1.6e-10):
  //            30 x 35 us + 2 x 15/16 x 1e8 x 1.6e-10 + 15/16 x 1e8 x 3/320e9 = 31.929 ms;
  //            NIC occupancy 2 x 3/4 x 1e8 x 1.6e-10 = 24 ms on every node
  //   PS:      t1 = Rabenseifner reduce on 4: 4 alpha_i + 1.5 x 3e7 x 1e-10 + 0.75 x 3e7 x gamma
  //            t2 = the executor's exchange: 4 leaders' pushes side by side through the
  //                 server's NIC, each added, then 4 pulls: 2 x (35 us + 4 x 3e7 x 1.6e-10)
  //                 + 4 x 3e7 x gamma = 39.6 ms (BytePS's servers also overlap push and pull
  //                 and hide the sums: 8 x 35 us + 4 x 3e7 x 1.6e-10 = 19.48 ms)
  //            t3 = scatter-allgather broadcast on 4: 5 alpha_i + 1.5 x 3e7 x 1e-10
  //            each worker node's NICs: 3e7 x 1.6e-10 = 4.8 ms per server, 9.6 ms in all
  //   shared NICs (8): 24 + 9.6 = 33.6 ms, below the PS lanes: iteration t1 + t2 + t3 = 48.8 ms,
  //   above the node cut of all X = 1.6e8 B: 2 x 3/4 x 1.6e8 x 1.6e-10 = 38.4 ms (BytePS's
  //   exchange would be 33.6 ms, below it).
  model_spec m;
  m.name = "two";
  for (const auto& [name, elements] : {std::pair<const char*, std::int64_t>{"a", 25'000'000}, {"b", 15'000'000}}) {
    tensor t;
    t.name = name;
    t.shape = {elements};
    m.tensors.push_back(t);
  }
  strategy_desc s = uniform_strategy(m, all_reduce(unbounded_bytes, unbounded_bytes));
  group_desc ps;
  ps.architecture = architecture_kind::parameter_server;
  ps.partitioner = partitioner_value{partitioner_kind::even, 2, 0, 0};
  ps.placement = placement_value{placement_kind::load_balanced, 0};
  ps.replication = replication_kind::local;
  ps.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  s.groups.push_back(ps);
  s.assignments[1].group = 1;

  const double beta = 1.0 / 6.25e9, alpha = 35e-6, ai = 10e-6 / 14.0 / 0.47, bi = 1e-10, gamma = 3.0 / 320e9;
  // the alpha-beta-gamma collectives of the MPI backend (the hand computation above)
  auto bps = zoo::make_cluster("autosync-b-ps");
  bps.backend = collective_backend::mpi;
  const auto p = run(m, bps, s);
  REQUIRE(p.events.size() == 3);
  const double lane0 = 30 * alpha + 2.0 * 15 / 16 * 1e8 * beta + 15.0 / 16 * 1e8 * gamma;
  const double t1 = 4 * ai + 1.5 * 3e7 * bi + 0.75 * 3e7 * gamma, t2 = 2 * (alpha + 4 * 3e7 * beta) + 4 * 3e7 * gamma,
               t3 = 5 * ai + 1.5 * 3e7 * bi;
  CHECK(lane0 == Approx(0.031929).epsilon(1e-4));
  for (const auto& e : p.events) {
    CHECK(e.start == 0.0);
    CHECK(e.end == Approx(e.lane == 0 ? lane0 : t1 + t2 + t3));
  }
  const double cut = 2.0 * 3 / 4 * 1.6e8 * beta;  // 38.4 ms
  CHECK(p.iteration == Approx(t1 + t2 + t3));
  CHECK(p.iteration > cut);

  // The same strategy with the servers co-located (autosync-b: no server nodes; the shards go
  // to servers 0 and 1 on nodes 0 and 1): node 0's NICs carry lane 0's 24 ms, 3 copies of its
  // server's shard, 3 x 4.8 ms, and its push to server 1, 4.8 ms: 43.2 ms >= the cut.
  auto b = zoo::make_cluster("autosync-b");
  b.backend = collective_backend::mpi;
  const auto q = run(m, b, s);
  CHECK(q.iteration == Approx(0.024 + 4 * 0.0048));
  CHECK(q.iteration >= cut);
}

TEST_CASE("one bucket per item: the unfused pass prices as the fusing pass, bit for bit") {
  // Fusion cap 0 takes the timeline's unfused pass (cost/timeline_steps.hpp, fuse_unfused) when
  // no tensor is split across groups; a cap of 1 byte takes the general pass with the same
  // buckets (every item holds at least 2 bytes, over the cap). Sampled strategies of every
  // architecture, on presets with and without servers and a cluster of 2 dedicated servers; one
  // evaluator per pair, reused from strategy to strategy (its buffers keep earlier jobs).
  std::vector<cluster_spec> clusters{zoo::make_cluster("autosync-b-ps"), zoo::make_cluster("p3.16xlarge-x4"),
                                     zoo::make_cluster("dgx-h100-x2"), ps_cluster(3, 2, 2)};
  int fast = 0, compared = 0;
  for (const char* name : {"resnet50", "bert-base", "ncf"}) {
    const auto m = zoo::make_model(name);
    for (const auto& c : clusters) {
      const search::space sp(m, c);
      cost::evaluator ev(m, c);
      for (const auto& s : search::sample(sp, 40, 11)) {
        auto unfused = s, general = s;
        for (auto& g : unfused.groups) g.fusion = fusion_value{0, 0};
        for (auto& g : general.groups) g.fusion = fusion_value{1, 1};
        fast += cost::detail::unfused(unfused) ? 1 : 0;
        const auto a = ev(unfused, cost::options{true});
        const auto b = ev(general, cost::options{true});
        CAPTURE(name);
        CAPTURE(c.name);
        CHECK(a.iteration == b.iteration);
        CHECK(a.communication == b.communication);
        CHECK(a.compression == b.compression);
        CHECK(a.lower_bound == b.lower_bound);
        REQUIRE(a.events.size() == b.events.size());
        bool same = true;
        for (std::size_t k = 0; k < a.events.size(); ++k) {
          const auto &x = a.events[k], &y = b.events[k];
          same = same && x.lane == y.lane && x.group == y.group && x.bucket == y.bucket && x.start == y.start && x.end == y.end &&
                 x.bytes == y.bytes && x.kind == y.kind;
        }
        CHECK(same);
        ++compared;
      }
    }
  }
  CHECK(compared >= 400);
  CHECK(fast >= compared / 2);  // most draws split no tensor
}

TEST_CASE("uniform NICs: one free time for all worker nodes prices as one per node, bit for bit") {
  // context::uniform_nics (dedicated servers, alike worker nodes) keeps one NIC free time and sum
  // for every worker node in run_servers and one suffix in shared_nic_bound. The same context
  // with the flag cleared walks every node: the same prediction, events and lower bound, for
  // sampled strategies of every architecture (PS lanes alone, and beside lane 0).
  std::vector<cluster_spec> clusters{zoo::make_cluster("autosync-b-ps"), ps_cluster(3, 2, 2), ps_cluster(4, 1, 3)};
  int uniform = 0, with_servers = 0;
  for (const char* name : {"resnet50", "bert-base", "ncf"}) {
    const auto m = zoo::make_model(name);
    for (const auto& c : clusters) {
      const auto fast = cost::make_context(m, c);
      auto slow = fast;
      slow.uniform_nics = false;
      uniform += fast.uniform_nics ? 1 : 0;
      const search::space sp(m, c);
      for (const auto& s : search::sample(sp, 40, 5)) {
        cost::workspace wa, wb;
        const cost::options opt{true};
        expand_into(wa.items, m, c, s, fast.position);
        expand_into(wb.items, m, c, s, slow.position);
        const auto a = cost::detail::run(m, fast, s, opt, wa, nullptr);
        const auto b = cost::detail::run(m, slow, s, opt, wb, nullptr);
        with_servers += std::any_of(a.events.begin(), a.events.end(), [](const cost::event& e) { return e.lane > 0; }) ? 1 : 0;
        CAPTURE(name);
        CAPTURE(c.name);
        CHECK(a.iteration == b.iteration);
        CHECK(a.communication == b.communication);
        CHECK(a.lower_bound == b.lower_bound);
        REQUIRE(a.events.size() == b.events.size());
        bool same = true;
        for (std::size_t k = 0; k < a.events.size(); ++k)
          same = same && a.events[k].start == b.events[k].start && a.events[k].end == b.events[k].end;
        CHECK(same);
      }
    }
  }
  CHECK(uniform == 9);  // every (model, cluster) pair above is uniform
  CHECK(with_servers >= 100);
}
