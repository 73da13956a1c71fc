// Baseline strategies: every one validates, and each carries its peer system's numbers.
#include <autosync/strategy/baselines.hpp>
#include <autosync/strategy/items.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace autosync;

namespace {

tensor dense_t(std::string name, std::vector<std::int64_t> shape, dtype t = dtype::f32) {
  tensor x;
  x.name = std::move(name);
  x.shape = std::move(shape);
  x.type = t;
  return x;
}

// 4 MB, 4 KB, 512 KB, 1 KB, 1.2 MB, 9 rows, 7 rows (prime).
model_spec dense_model(dtype t = dtype::f32) {
  model_spec m;
  m.name = "dense";
  m.tensors = {dense_t("w0", {1000, 1000}, t), dense_t("b0", {1000}, t), dense_t("w1", {512, 256}, t), dense_t("b1", {256}, t),
               dense_t("w2", {3000, 100}, t),  dense_t("w3", {9, 10000}, t), dense_t("w4", {7, 20000}, t)};
  return m;
}

model_spec sparse_model() {
  model_spec m = dense_model();
  m.name = "sparse";
  tensor e = dense_t("emb", {10007, 16});
  e.sparse = true;
  e.sparse_density = 0.01;
  m.tensors.insert(m.tensors.begin(), e);
  return m;
}

node_spec worker(int devices) {
  node_spec n;
  n.devices = devices;
  n.intra = link{100e9, 1e-6};
  n.nic = link{12.5e9, 5e-6};
  n.device_flops = 100e12;
  n.reduce_bandwidth = 300e9;
  return n;
}

cluster_spec cluster(int nodes, int devices, int dedicated_servers = 0) {
  cluster_spec c;
  c.name = std::to_string(nodes) + "x" + std::to_string(devices);
  for (int i = 0; i < nodes; ++i) c.nodes.push_back(worker(devices));
  for (int i = 0; i < dedicated_servers; ++i) {
    node_spec s;
    s.devices = 0;
    s.server_only = true;
    s.nic = link{6.25e9, 20e-6};
    c.nodes.push_back(s);
  }
  for (std::size_t i = 0; i < c.nodes.size(); ++i) c.nodes[i].name = "n" + std::to_string(i);
  return c;
}

std::int32_t group_of(const model_spec& m, const strategy_desc& s, std::string_view name) {
  const auto i = m.find(name);
  REQUIRE(i.has_value());
  return s.assignments[*i].group;
}

}  // namespace

TEST_CASE("every baseline validates on dense and sparse models and on several clusters") {
  for (const auto& m : {dense_model(), sparse_model(), dense_model(dtype::f16)}) {
    for (const auto& c : {cluster(2, 4), cluster(1, 1), cluster(4, 1), cluster(2, 2, 3)}) {
      CAPTURE(m.name);
      CAPTURE(c.name);
      const auto all = baselines::all(m, c);
      for (const auto& s : all) {
        CAPTURE(s.name);
        CHECK_NOTHROW(s.validate(m, c));
        CHECK(s.assignments.size() == m.tensors.size());
      }
      // each named once
      std::set<std::string> names;
      for (const auto& s : all) names.insert(s.name);
      CHECK(names.size() == all.size());
      // the single baselines too
      CHECK_NOTHROW(baselines::horovod_hierarchical(m).validate(m, c));
      CHECK_NOTHROW(baselines::byteps(m).validate(m, c));
    }
  }
}

TEST_CASE("all(): the names, horovod-hier only where hierarchy exists") {
  const auto m = dense_model();
  std::vector<std::string> names;
  for (const auto& s : baselines::all(m, cluster(2, 4))) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"ddp", "horovod-64mb", "horovod-128mb", "horovod-hier", "autodist-ps", "autodist-ps-lb",
                                          "autodist-partitioned-ps", "autodist-ar-chunk128", "parallax", "byteps", "zero2"});
  for (const auto& c : {cluster(1, 8), cluster(4, 1)}) {
    const auto all = baselines::all(m, c);
    CHECK(all.size() == 10);
    CHECK(std::none_of(all.begin(), all.end(), [](const strategy_desc& s) { return s.name == "horovod-hier"; }));
  }
  // BytePS sums inside a node only where a node has several devices.
  auto byteps_of = [&](const cluster_spec& c) {
    for (const auto& s : baselines::all(m, c))
      if (s.name == "byteps") return s.groups[0].replication;
    FAIL("no byteps");
    return replication_kind::none;
  };
  CHECK(byteps_of(cluster(2, 4)) == replication_kind::local);
  CHECK(byteps_of(cluster(4, 1)) == replication_kind::none);
}

TEST_CASE("ddp: 25 MiB buckets, 1 MiB first bucket, ring all-reduce; sparse to a parameter server") {
  const auto m = dense_model();
  const auto s = baselines::ddp(m);
  REQUIRE(s.groups.size() == 1);
  CHECK(s.name == "ddp");
  CHECK(s.groups[0].architecture == architecture_kind::all_reduce);
  CHECK(s.groups[0].topology == topology_value{topology_kind::ring});
  CHECK(s.groups[0].fusion.cap_bytes == 26214400);
  CHECK(s.groups[0].fusion.first_cap_bytes == 1048576);
  CHECK(s.groups[0].schedule == schedule_kind::fifo);
  for (const auto& a : s.assignments) CHECK(a.group == 0);

  const auto ms = sparse_model();
  const auto ss = baselines::ddp(ms);
  REQUIRE(ss.groups.size() == 2);
  CHECK(ss.groups[1].architecture == architecture_kind::parameter_server);
  CHECK(group_of(ms, ss, "emb") == 1);
  CHECK(group_of(ms, ss, "w0") == 0);
}

TEST_CASE("horovod: fusion buffer 64 / 128 MiB for every bucket; hierarchical ring/ring; sparse all-gathered") {
  const auto m = sparse_model();
  const auto h64 = baselines::horovod(m, baselines::horovod_fusion_64mb);
  const auto h128 = baselines::horovod(m);
  CHECK(h64.name == "horovod-64mb");
  CHECK(h128.name == "horovod-128mb");
  CHECK(h64.groups[0].fusion == fusion_value{67108864, 67108864});
  CHECK(h128.groups[0].fusion == fusion_value{134217728, 134217728});
  REQUIRE(h128.groups.size() == 2);
  CHECK(h128.groups[1].architecture == architecture_kind::all_gather);
  CHECK(group_of(m, h128, "emb") == 1);
  const auto hh = baselines::horovod_hierarchical(m);
  CHECK(hh.groups[0].topology == topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::ring});
  CHECK(hh.groups[0].fusion.cap_bytes == 134217728);
}

TEST_CASE("autodist ps builders: pinned to server 0, load-balanced") {
  const auto m = sparse_model();
  const auto c = cluster(3, 2);
  const auto p = baselines::ps(m);
  REQUIRE(p.groups.size() == 1);
  CHECK(p.groups[0].architecture == architecture_kind::parameter_server);
  CHECK(p.groups[0].placement == placement_value{placement_kind::pinned, 0});
  for (const auto& it : expand(m, c, p)) CHECK(it.server == 0);
  const auto lb = baselines::ps_load_balanced(m);
  CHECK(lb.groups[0].placement.kind == placement_kind::load_balanced);
  std::set<int> used;
  for (const auto& it : expand(m, c, lb)) used.insert(it.server);
  CHECK(used.size() == 3);  // 8 tensors over 3 servers, greedy least-loaded uses them all
}

TEST_CASE("autodist partitioned ps: smallest divisor >= 2 of dim 0, capped by the servers; tiny tensors whole") {
  CHECK(baselines::smallest_divisor(1000) == 2);
  CHECK(baselines::smallest_divisor(9) == 3);
  CHECK(baselines::smallest_divisor(7) == 7);
  CHECK(baselines::smallest_divisor(1) == 1);
  CHECK(baselines::smallest_divisor(49) == 7);

  const auto m = dense_model();
  auto shards_of = [&](const strategy_desc& s, std::string_view name) {
    const auto& g = s.groups[static_cast<std::size_t>(group_of(m, s, name))];
    CHECK(g.architecture == architecture_kind::parameter_server);
    CHECK(g.placement.kind == placement_kind::load_balanced);
    return g.partitioner.kind == partitioner_kind::even ? g.partitioner.shards : 1;
  };
  // 4 dedicated servers: w0 (1000 rows) -> 2, w3 (9 rows) -> 3, w4 (7 rows, prime) -> 7 capped to 4.
  const auto c4 = cluster(2, 2, 4);
  const auto s4 = baselines::partitioned_ps(m, c4);
  CHECK(s4.name == "autodist-partitioned-ps");
  CHECK(shards_of(s4, "w0") == 2);
  CHECK(shards_of(s4, "w3") == 3);
  CHECK(shards_of(s4, "w4") == 4);
  CHECK(shards_of(s4, "w1") == 2);  // 512 KB, 512 rows
  CHECK(shards_of(s4, "b0") == 1);  // 4 KB: tiny, whole
  CHECK(shards_of(s4, "b1") == 1);
  CHECK(s4.groups.size() == 4);     // K = 2, 1, 3, 4
  // expand: w4's 7 rows in 4 shards of 2, 2, 2, 1 rows
  std::vector<std::int64_t> rows;
  for (const auto& it : expand(m, c4, s4))
    if (it.tensor == 6) rows.push_back(it.end - it.begin);
  CHECK(rows == std::vector<std::int64_t>{2, 2, 2, 1});
  // 2 co-located servers: everything capped at 2; one server: nothing partitioned.
  const auto s2 = baselines::partitioned_ps(m, cluster(2, 4));
  CHECK(shards_of(s2, "w3") == 2);
  CHECK(shards_of(s2, "w4") == 2);
  const auto s1 = baselines::partitioned_ps(m, cluster(1, 8));
  CHECK(s1.groups.size() == 1);
  CHECK(s1.groups[0].partitioner.kind == partitioner_kind::none);
}

TEST_CASE("autodist all-reduce chunk 128: ceil(n/128) groups of consecutive tensors, one bucket each") {
  model_spec m;
  m.name = "many";
  for (int i = 0; i < 300; ++i) m.tensors.push_back(dense_t("t" + std::to_string(i), {64, 3}));
  const auto s = baselines::all_reduce_chunk(m);
  CHECK(s.name == "autodist-ar-chunk128");
  REQUIRE(s.groups.size() == 3);  // ceil(300 / 128)
  for (const auto& g : s.groups) {
    CHECK(g.architecture == architecture_kind::all_reduce);
    CHECK(g.fusion.cap_bytes == unbounded_bytes);
  }
  CHECK(s.assignments[0].group == 0);
  CHECK(s.assignments[127].group == 0);
  CHECK(s.assignments[128].group == 1);
  CHECK(s.assignments[255].group == 1);
  CHECK(s.assignments[256].group == 2);
  CHECK(s.assignments[299].group == 2);
  CHECK(baselines::all_reduce_chunk(m, 100).groups.size() == 3);
  CHECK(baselines::all_reduce_chunk(m, 1).groups.size() == 300);
  CHECK_THROWS_AS((void)baselines::all_reduce_chunk(m, 0), error);

  // sparse: all-gathered here, parameter servers in parallax
  const auto ms = sparse_model();
  const auto ar = baselines::all_reduce_chunk(ms);
  REQUIRE(ar.groups.size() == 2);
  CHECK(ar.groups[static_cast<std::size_t>(group_of(ms, ar, "emb"))].architecture == architecture_kind::all_gather);
  const auto px = baselines::parallax(ms);
  CHECK(px.name == "parallax");
  REQUIRE(px.groups.size() == 2);
  CHECK(px.groups[static_cast<std::size_t>(group_of(ms, px, "emb"))].architecture == architecture_kind::parameter_server);
  CHECK(px.groups[static_cast<std::size_t>(group_of(ms, px, "emb"))].placement.kind == placement_kind::load_balanced);
  CHECK(px.groups[static_cast<std::size_t>(group_of(ms, px, "w0"))].architecture == architecture_kind::all_reduce);
}

TEST_CASE("byteps: partitions of at most 4,096,000 bytes, hashed placement, priority") {
  model_spec m;
  m.name = "byteps";
  m.tensors = {dense_t("big", {50000, 100}), dense_t("odd", {4097, 250}), dense_t("bias", {100})};
  const auto s = baselines::byteps(m);
  REQUIRE(s.groups.size() == 1);
  const auto& g = s.groups[0];
  CHECK(g.architecture == architecture_kind::parameter_server);
  CHECK(g.partitioner == partitioner_value{partitioner_kind::by_bytes, 1, 0, 4096000});
  CHECK(g.placement.kind == placement_kind::hashed);
  CHECK(g.schedule == schedule_kind::priority);
  const auto c = cluster(2, 2, 5);
  const auto items = expand(m, c, s);
  std::vector<int> per_tensor(3, 0);
  for (const auto& it : items) {
    CHECK(it.bytes <= 4096000);
    ++per_tensor[it.tensor];
  }
  // big: 20,000,000 bytes -> ceil(20e6 / 4096000) = 5 shards of 4,000,000; odd: 4,097,000 -> 2; bias whole
  CHECK(per_tensor == std::vector<int>{5, 2, 1});
  CHECK(items[0].bytes == 4000000);
  // hashed placement: FNV-1a(name, shard) mod servers, the same every time
  const auto again = expand(m, c, s);
  REQUIRE(again.size() == items.size());
  std::uint64_t shard = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    shard = (i > 0 && items[i - 1].tensor == items[i].tensor) ? shard + 1 : 0;
    CHECK(items[i].server == again[i].server);
    CHECK(items[i].server == static_cast<int>(placement_hash(m.tensors[items[i].tensor].name, shard) % 5));
  }
  // the evaluator's way: each name hashed once (tensor_name_hashes), the shard added per item
  CHECK(placement_name_hash("") == 14695981039346656037ull);  // FNV-1a 64's offset basis
  CHECK(placement_name_hash("a") == 0xaf63dc4c8601ec8cull);   // FNV-1a 64 of "a"
  const auto order = m.backward_order();
  std::vector<std::uint32_t> ready(m.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) ready[order[i]] = static_cast<std::uint32_t>(i);
  std::vector<sync_item> hashed;
  expand_into(hashed, m, c, s, ready, tensor_name_hashes(m));
  REQUIRE(hashed.size() == items.size());
  for (std::size_t i = 0; i < items.size(); ++i) CHECK(hashed[i].server == items[i].server);
}

TEST_CASE("zero2: sharded ring, buckets of 5e8 elements") {
  const auto s = baselines::zero2(dense_model());
  REQUIRE(s.groups.size() == 1);
  CHECK(s.groups[0].architecture == architecture_kind::sharded);
  CHECK(s.groups[0].topology == topology_value{topology_kind::ring});
  CHECK(s.groups[0].fusion == fusion_value{2000000000, 2000000000});
  CHECK(baselines::zero2(dense_model(dtype::f16)).groups[0].fusion.cap_bytes == 1000000000);
  const auto ms = sparse_model();
  const auto ss = baselines::zero2(ms);
  CHECK(ss.groups[static_cast<std::size_t>(group_of(ms, ss, "emb"))].architecture == architecture_kind::all_gather);
}

TEST_CASE("route_sparse and drop_unused_groups") {
  model_spec m;
  m.name = "only-sparse";
  tensor e = dense_t("emb", {100, 8});
  e.sparse = true;
  m.tensors = {e};
  // every tensor sparse: the dense group disappears
  const auto s = baselines::ddp(m);
  REQUIRE(s.groups.size() == 1);
  CHECK(s.groups[0].architecture == architecture_kind::parameter_server);
  CHECK(s.assignments[0].group == 0);
  CHECK_NOTHROW(s.validate(m, cluster(2, 2)));
  // unused groups are dropped and the rest renumbered
  strategy_desc x{"x", {group_desc{}, group_desc{}, describe<strategy<arch::parameter_server>>()}, {assignment{"emb", 2, 0, {}}}};
  const auto y = baselines::drop_unused_groups(x);
  REQUIRE(y.groups.size() == 1);
  CHECK(y.assignments[0].group == 0);
  CHECK(y.groups[0].architecture == architecture_kind::parameter_server);
}
