// exec/plan.hpp: a hand-computed plan (strided axis-1 shards, dtype splits, PS server ranks,
// keys, feeds), the properties every plan has over random models x strategies (every element
// of every tensor covered exactly once, one dtype and one server per bucket, fused offsets
// dense, a pure function), fingerprints, and the errors of bad layouts.
#include <autosync/exec/executor_options.hpp>
#include <autosync/exec/plan.hpp>

#include "../common/random_strategies.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <map>
#include <random>

using namespace autosync;
using namespace autosync::exec;

namespace {

using namespace autosync::testing;

tensor make_tensor(std::string name, std::vector<std::int64_t> shape, dtype t = dtype::f32, bool sparse = false) {
  tensor x;
  x.name = std::move(name);
  x.shape = std::move(shape);
  x.type = t;
  x.sparse = sparse;
  if (sparse) x.sparse_density = 0.5;
  x.backward_flops = 1e6;
  return x;
}


// Every element of every tensor exactly once; one dtype / server per bucket; dense fused offsets.
void check_properties(const model_spec& m, const plan& p) {
  std::vector<std::vector<int>> seen(m.tensors.size());
  for (std::size_t t = 0; t < m.tensors.size(); ++t) seen[t].assign(static_cast<std::size_t>(m.tensors[t].elements()), 0);
  for (std::uint32_t bi = 0; bi < p.buckets.size(); ++bi) {
    const auto& b = p.buckets[bi];
    CAPTURE(bi);
    std::int64_t fused = 0;
    std::vector<std::uint32_t> distinct;
    for (const auto& sg : b.segments) {
      REQUIRE(m.tensors[sg.tensor].type == b.type);
      REQUIRE(sg.fused == fused);
      REQUIRE(sg.block > 0);
      REQUIRE(sg.blocks >= 1);
      fused += sg.elements();
      for (std::int64_t k = 0; k < sg.blocks; ++k)
        for (std::int64_t e = 0; e < sg.block; ++e) ++seen[sg.tensor][static_cast<std::size_t>(sg.offset + k * sg.stride + e)];
      if (std::find(distinct.begin(), distinct.end(), sg.tensor) == distinct.end()) distinct.push_back(sg.tensor);
      REQUIRE(std::find(p.feeds[sg.tensor].begin(), p.feeds[sg.tensor].end(), bi) != p.feeds[sg.tensor].end());
    }
    REQUIRE(fused == b.elements);
    REQUIRE(b.tensors == distinct.size());
    REQUIRE((b.kind == step_kind::parameter_server) == (b.server >= 0));
    if (b.kind == step_kind::parameter_server) REQUIRE((b.server_rank >= 0 && b.server_rank < p.ranks.world_size));
    REQUIRE(b.compressed == wire_dtype(b.compression, b.type).has_value());
  }
  for (std::size_t t = 0; t < m.tensors.size(); ++t)
    for (std::size_t e = 0; e < seen[t].size(); ++e) {
      CAPTURE(t);
      CAPTURE(e);
      REQUIRE(seen[t][e] == 1);
    }
  for (std::size_t t = 0; t < m.tensors.size(); ++t) REQUIRE(std::is_sorted(p.feeds[t].begin(), p.feeds[t].end()));
}

}  // namespace

TEST_CASE("plan: a hand-computed plan") {
  // forward order a, b, c, d; backward (ready) order d, c, b, a
  model_spec m;
  m.name = "hand";
  m.tensors = {make_tensor("a", {4, 6}), make_tensor("b", {5}, dtype::f16), make_tensor("c", {3, 5}), make_tensor("d", {10, 3})};
  strategy_desc s;
  s.name = "hand";
  group_desc g0;  // unbounded fusion, all_reduce, fp16
  g0.fusion = {unbounded_bytes, unbounded_bytes};
  g0.compression = comp::fp16::value;
  group_desc g1;  // PS, round robin, local replication, priority, no fusion
  g1.architecture = architecture_kind::parameter_server;
  g1.replication = replication_kind::local;
  g1.schedule = schedule_kind::priority;
  group_desc g2;  // by_bytes shards of 40 bytes (10 f32 = 3 rows of d), fused back together
  g2.partitioner = {partitioner_kind::by_bytes, 1, 0, 40};
  g2.fusion = {unbounded_bytes, unbounded_bytes};
  s.groups = {g0, g1, g2};
  // a: split along axis 1 into 2 shards -> group 1 (PS); b, c -> group 0; d -> group 2
  s.assignments = {{"a", 0, 1, {1, 1}}, {"b", 0, 0, {}}, {"c", 0, 0, {}}, {"d", 2, 0, {}}};

  const auto c = make_cluster(2, 2);
  const auto p = compile_plan(m, c, s, {4, 2});
  check_properties(m, p);
  // fusion buckets in ready order: g2 {d} (ready 0), g0 {c, b} (ready 2), g1 {a s0}, g1 {a s1} (ready 3)
  // g0's bucket mixes f32 (c) and f16 (b): split in two, f32 first (c is ready first)
  REQUIRE(p.buckets.size() == 5);
  const auto& bd = p.buckets[0];
  CHECK(bd.group == 2);
  CHECK(bd.kind == step_kind::all_reduce);
  REQUIRE(bd.segments.size() == 1);  // by_bytes shards 4+3+3 rows merged back: contiguous
  CHECK(bd.segments[0] == segment{3, 0, 30, 30, 1, 0, 0});
  CHECK(bd.in_place());
  CHECK(bd.tensors == 1);
  CHECK(bd.ready_position == 0);

  const auto& bc = p.buckets[1];
  CHECK(bc.group == 0);
  CHECK(bc.source == p.buckets[2].source);
  CHECK(bc.type == dtype::f32);
  CHECK(bc.compressed);
  CHECK(bc.wire == dtype::f16);
  CHECK_FALSE(bc.in_place());
  CHECK(bc.elements == 15);
  const auto& bb = p.buckets[2];
  CHECK(bb.type == dtype::f16);
  CHECK_FALSE(bb.compressed);  // already f16
  CHECK(bb.wire == dtype::f16);
  CHECK(bb.in_place());
  CHECK(bb.segments[0] == segment{1, 0, 5, 5, 1, 0, 0});

  // a [4 x 6] along axis 1: columns [0, 3) and [3, 6): 4 blocks of 3, 6 apart
  const auto& a0 = p.buckets[3];
  const auto& a1 = p.buckets[4];
  CHECK(a0.segments[0] == segment{0, 0, 3, 6, 4, 0, 0});
  CHECK(a1.segments[0] == segment{0, 3, 3, 6, 4, 0, 0});
  CHECK(a0.kind == step_kind::parameter_server);
  CHECK(a0.local);
  // round robin over the 2 co-located servers: shard 0 -> server 0 (rank 0), shard 1 -> server 1 (rank 2)
  CHECK(a0.server == 0);
  CHECK(a0.server_rank == 0);
  CHECK(a1.server == 1);
  CHECK(a1.server_rank == 2);
  CHECK_FALSE(a0.in_place());  // strided
  CHECK(a0.ready_position == 3);

  // keys: priority buckets (tensor a = 0) before every fifo bucket, fifo by number
  CHECK(a0.key == ((std::uint64_t{0} << 32) | 3));
  CHECK(a1.key == ((std::uint64_t{0} << 32) | 4));
  CHECK(bd.key == ((std::uint64_t{1} << 63) | 0));
  CHECK(a1.key < bd.key);
  CHECK(p.any_priority);
  // feeds
  CHECK(p.feeds[0] == std::vector<std::uint32_t>{3, 4});
  CHECK(p.feeds[1] == std::vector<std::uint32_t>{2});
  CHECK(p.feeds[2] == std::vector<std::uint32_t>{1});
  CHECK(p.feeds[3] == std::vector<std::uint32_t>{0});
  CHECK(p.tensor_elements == std::vector<std::int64_t>{24, 5, 15, 30});
}

TEST_CASE("plan: server ranks for co-located and dedicated servers") {
  model_spec m;
  m.name = "ps";
  for (int i = 0; i < 6; ++i) m.tensors.push_back(make_tensor("t" + std::to_string(i), {3}));
  group_desc g;
  g.architecture = architecture_kind::parameter_server;  // round robin over the servers, in item order
  const auto s = uniform_strategy(m, g, "ps");
  auto ranks = [&](const cluster_spec& c, layout lay) {
    const auto p = compile_plan(m, c, s, lay);
    std::map<int, int> by_server;
    for (const auto& b : p.buckets) by_server[b.server] = b.server_rank;
    std::vector<int> r;
    for (auto [sv, rk] : by_server) r.push_back(rk);
    return r;
  };
  CHECK(ranks(make_cluster(3, 2), {6, 2}) == std::vector<int>{0, 2, 4});   // first rank of each node
  CHECK(ranks(make_cluster(4, 1), {2, 1}) == std::vector<int>{0, 1, 0, 1}); // 4 servers folded on 2 nodes
  CHECK(ranks(make_cluster(2, 4, 3), {8, 4}) == std::vector<int>{0, 2, 5}); // floor(s * 8 / 3)
  CHECK(ranks(make_cluster(1, 2, 2), {2, 1}) == std::vector<int>{0, 1});
}

TEST_CASE("plan: random models and strategies: coverage, dtypes, servers, purity, fingerprints") {
  std::mt19937 rng(1234);
  int compiled = 0, strided = 0, split_dtypes = 0, ps = 0, sparse = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int nodes = 1 + static_cast<int>(rng() % 3), rpn = 1 + static_cast<int>(rng() % 2);
    const int dedicated = rng() % 3 == 0 ? 2 : 0;
    const auto c = make_cluster(nodes, rpn, dedicated);
    auto rc = random_strategy(rng, c.server_count());
    CAPTURE(trial);
    REQUIRE_NOTHROW(rc.strategy.validate(rc.model, c));
    const layout lay{nodes * rpn, rpn};
    const auto p = compile_plan(rc.model, c, rc.strategy, lay);
    check_properties(rc.model, p);
    ++compiled;
    std::map<std::uint32_t, int> pieces;
    for (const auto& b : p.buckets) {
      ++pieces[b.source];
      for (const auto& sg : b.segments) strided += !sg.contiguous();
      ps += b.kind == step_kind::parameter_server;
      sparse += b.kind == step_kind::sparse_all_gather;
    }
    for (auto [src, n] : pieces) split_dtypes += n > 1;
    // a pure function: the same inputs give the same plan and the same fingerprint
    const auto again = compile_plan(rc.model, c, rc.strategy, lay);
    REQUIRE(again == p);
    REQUIRE(plan_hash(again) == plan_hash(p));
    // the fingerprints see a changed group
    auto other = rc.strategy;
    other.groups[0].schedule = other.groups[0].schedule == schedule_kind::fifo ? schedule_kind::priority : schedule_kind::fifo;
    const auto gh = group_hashes(other);
    REQUIRE(gh[0] != p.group_fingerprints[0]);
    for (std::size_t gi = 1; gi < gh.size(); ++gi) REQUIRE(gh[gi] == p.group_fingerprints[gi]);
    REQUIRE(strategy_hash(other) != p.strategy_fingerprint);
    const auto op = compile_plan(rc.model, c, other, lay);
    REQUIRE(plan_hash(op) != plan_hash(p));
  }
  CHECK(compiled == 400);
  // the draws exercised what they are meant to
  CHECK(strided > 20);
  CHECK(split_dtypes > 20);
  CHECK(ps > 20);
  CHECK(sparse > 5);
}

TEST_CASE("plan: fingerprints") {
  model_spec m;
  m.name = "fp";
  m.tensors = {make_tensor("x", {4, 4}), make_tensor("y", {8})};
  group_desc g;
  strategy_desc s{"one", {g, g}, {{"x", 0, 0, {}}, {"y", 1, 0, {}}}};
  const auto h = group_hashes(s);
  REQUIRE(h.size() == 2);
  CHECK(h[0] != h[1]);  // equal descs, different members and indices
  // moving y to group 0 changes both groups' fingerprints
  auto moved = s;
  moved.assignments[1].group = 0;
  const auto hm = group_hashes(moved);
  CHECK(hm[0] != h[0]);
  CHECK(hm[1] != h[1]);
  // the name is not part of the strategy fingerprint; the model's shapes are part of its own
  auto renamed = s;
  renamed.name = "other";
  CHECK(strategy_hash(renamed) == strategy_hash(s));
  auto m2 = m;
  m2.tensors[1].shape = {9};
  CHECK(model_hash(m2) != model_hash(m));
  m2.tensors[1].shape = {8};
  m2.tensors[1].backward_flops = 123.0;  // compute estimates do not matter to the executor
  CHECK(model_hash(m2) == model_hash(m));
  static_assert(hasher{}.str("ab").str("c").value() != hasher{}.str("a").str("bc").value());
}

TEST_CASE("plan: bad layouts and strategies are errors naming the field") {
  model_spec m;
  m.name = "e";
  m.tensors = {make_tensor("x", {4})};
  const auto s = uniform_strategy(m, group_desc{}, "u");
  const auto c = make_cluster(2, 2);
  auto field = [&](const strategy_desc& st, layout lay) -> std::string {
    try {
      (void)compile_plan(m, c, st, lay);
    } catch (const autosync::error& e) {
      return e.field();
    }
    return "no error";
  };
  CHECK(field(s, {0, 1}) == "layout.world_size");
  CHECK(field(s, {4, 3}) == "layout.ranks_per_node");
  CHECK(field(s, {4, 0}) == "layout.ranks_per_node");
  auto bad = s;
  bad.assignments[0].group = 5;
  CHECK(field(bad, {4, 2}) == "assignments[0].group");
  CHECK(field(s, {3, 1}) == "no error");  // the layout need not match the cluster
}

TEST_CASE("packing threshold: per-message latency x copy rate, never below 32 KiB") {
  CHECK(direct_run_bytes_for(0.0, 0.0) == direct_run_bytes);
  CHECK(direct_run_bytes_for(0.5e-6, 8e9) == direct_run_bytes);  // shared memory: 4 KB, the floor
  CHECK(direct_run_bytes_for(24e-6, 4e9) == 96000u);              // the testbed's NIC: 96 KB
  CHECK(direct_run_bytes_for(std::numeric_limits<double>::quiet_NaN(), 4e9) == direct_run_bytes);
  CHECK(direct_run_bytes_for(-1.0, 4e9) == direct_run_bytes);
  CHECK(direct_run_bytes_for(10.0, 1e12) == std::size_t{1} << 30);
  // on a cluster: the NICs' latency when the ranks span nodes, the device links' on one node
  cluster_spec c;
  node_spec n;
  n.devices = 2;
  n.intra = link{8e9, 0.5e-6};
  n.nic = link{62.5e6, 24e-6};
  n.reduce_bandwidth = 4e9;
  c.nodes.assign(2, n);
  c.nodes[1].reduce_bandwidth = 5e9;  // the slower copy rate counts
  CHECK(direct_run_bytes_for(c, 4, 2) == 96000u);
  CHECK(direct_run_bytes_for(c, 2, 2) == direct_run_bytes);  // one node
  CHECK(direct_run_bytes_for(c, 4, 0) == direct_run_bytes);
}
