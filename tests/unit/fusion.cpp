// strategy/fusion.hpp: the fusion rule by hand, and fuse_buckets() against the cost model's buckets
// (cost::buckets) and the plan compiler's fusion buckets on random and zoo strategies.
#include <autosync/cost/estimate.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/learn/proposals.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/strategy/fusion.hpp>
#include <autosync/strategy/items.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include "../common/random_strategies.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace autosync;
using doctest::Approx;

namespace {

// fuse_buckets()'s buckets in the shape of cost::buckets (items, group), for comparison
void require_same(const std::vector<fusion_bucket>& f, const std::vector<cost::bucket>& c, const std::vector<sync_item>& items) {
  REQUIRE(f.size() == c.size());
  for (std::size_t b = 0; b < f.size(); ++b) {
    CAPTURE(b);
    REQUIRE(f[b].group == c[b].group);
    REQUIRE(f[b].items == c[b].items);
    REQUIRE(f[b].ready == items[f[b].items.back()].ready);
  }
}

// every tensor of m in one group with these fusion caps
strategy_desc one_group(const model_spec& m, std::uint64_t cap, std::uint64_t first_cap) {
  strategy_desc s;
  s.name = "fuse";
  group_desc g;
  g.fusion = {cap, first_cap};
  s.groups = {g};
  for (const auto& t : m.tensors) s.assignments.push_back(assignment{t.name, 0, 0, {}});
  return s;
}

std::vector<std::vector<std::uint32_t>> tensors_of(const std::vector<fusion_bucket>& bs, const std::vector<sync_item>& items) {
  std::vector<std::vector<std::uint32_t>> r;
  for (const auto& b : bs) {
    r.emplace_back();
    for (auto i : b.items) r.back().push_back(items[i].tensor);
  }
  return r;
}

}  // namespace

TEST_CASE("fusion: the rule for one item") {
  const fusion_value f{10000, 4000};
  CHECK_FALSE(fusion_closes(f, true, 0, 0, 50000));     // an empty bucket never closes
  CHECK_FALSE(fusion_closes(f, true, 1, 2000, 2000));   // 4000 fits the first cap exactly
  CHECK(fusion_closes(f, true, 1, 2000, 2001));         // 4001 does not
  CHECK_FALSE(fusion_closes(f, false, 2, 6000, 4000));  // later buckets: cap 10000
  CHECK(fusion_closes(f, false, 2, 6000, 4001));
  CHECK(fusion_closes(f, false, 1, 1, 10001));          // larger than the cap: travels alone
  CHECK(fusion_closes(fusion_value{0, 0}, false, 1, 1, 1));  // cap 0: one item per bucket
  CHECK_FALSE(fusion_closes(fusion_value{unbounded_bytes, unbounded_bytes}, false, 100, 1u << 30, 1u << 30));
}

TEST_CASE("fusion: buckets of the tiny model by hand") {
  // t0..t3: 1000 f32 elements (4000 bytes) each, ready t3, t2, t1, t0 (backward order)
  model_spec m;
  m.name = "tiny";
  for (int i = 0; i < 4; ++i) {
    tensor t;
    t.name = "t" + std::to_string(i);
    t.shape = {1000};
    m.tensors.push_back(t);
  }
  const auto c = testing::make_cluster(1, 2);
  using T = std::vector<std::vector<std::uint32_t>>;
  auto run = [&](std::uint64_t cap, std::uint64_t first) {
    const auto s = one_group(m, cap, first);
    const auto items = expand(m, c, s);
    const auto f = fuse_buckets(s, items);
    require_same(f, cost::buckets(m, c, s), items);
    return tensors_of(f, items);
  };
  CHECK(run(8000, 8000) == T{{3, 2}, {1, 0}});
  CHECK(run(8000, 4000) == T{{3}, {2, 1}, {0}});   // the first bucket has its own cap
  CHECK(run(12000, 4000) == T{{3}, {2, 1, 0}});
  CHECK(run(7999, 7999) == T{{3}, {2}, {1}, {0}});
  CHECK(run(0, 0) == T{{3}, {2}, {1}, {0}});
  CHECK(run(unbounded_bytes, unbounded_bytes) == T{{3, 2, 1, 0}});
  CHECK(run(1000, 1000) == T{{3}, {2}, {1}, {0}});  // every item larger than the cap: alone

  // two groups: a bucket still open at the end closes in group order; ready order first
  auto s = one_group(m, unbounded_bytes, unbounded_bytes);
  s.groups.push_back(s.groups[0]);
  s.groups[1].fusion = {4000, 4000};
  for (auto& a : s.assignments) a.group = a.tensor == "t0" || a.tensor == "t2" ? 1 : 0;
  const auto items = expand(m, c, s);
  const auto f = fuse_buckets(s, items);
  require_same(f, cost::buckets(m, c, s), items);
  CHECK(tensors_of(f, items) == T{{2}, {3, 1}, {0}});  // t0 closes {t2}; group 0 {t3, t1} is ready at t1
  CHECK(f[1].group == 0);
}

TEST_CASE("fusion: fuse, cost::buckets and the plan's fusion buckets agree on random strategies") {
  std::mt19937 rng(99);
  int buckets = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int nodes = 1 + static_cast<int>(rng() % 3), rpn = 1 + static_cast<int>(rng() % 2);
    const auto c = testing::make_cluster(nodes, rpn, rng() % 3 == 0 ? 2 : 0);
    const auto rc = testing::random_strategy(rng, c.server_count());
    CAPTURE(trial);
    const auto items = expand(rc.model, c, rc.strategy);
    const auto f = fuse_buckets(rc.strategy, items);
    require_same(f, cost::buckets(rc.model, c, rc.strategy), items);
    buckets += static_cast<int>(f.size());
    // every plan bucket comes from the fusion bucket with its items
    const auto p = exec::compile_plan(rc.model, c, rc.strategy, exec::layout{nodes * rpn, rpn});
    std::vector<std::uint32_t> sources;
    for (const auto& b : p.buckets) {
      REQUIRE(b.source < f.size());
      REQUIRE(b.group == f[b.source].group);
      if (sources.empty() || sources.back() != b.source) sources.push_back(b.source);
    }
    for (std::size_t k = 0; k < sources.size(); ++k) REQUIRE(sources[k] == k);  // in fuse_buckets' order, none left out
    REQUIRE(sources.size() == f.size());
  }
  CHECK(buckets > 600);
}

namespace {
// f16 weights and f32 biases, ready in the order b.bias, b.weight, a.bias, a.weight
model_spec two_dtypes(dtype bias_type) {
  model_spec m;
  m.name = "two-dtypes";
  auto add = [&](const char* name, std::vector<std::int64_t> shape, dtype type) {
    tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.type = type;
    t.backward_flops = 1e9;
    m.tensors.push_back(std::move(t));
  };
  add("a.weight", {1024, 1024}, dtype::f16);
  add("a.bias", {1024}, bias_type);
  add("b.weight", {1024, 1024}, dtype::f16);
  add("b.bias", {1024}, bias_type);
  m.forward_flops = 2e9;
  return m;
}
// the plan's pieces of fusion bucket `source`: their bytes (uncompressed: elements x dtype size)
std::vector<double> piece_bytes(const exec::plan& p, std::uint32_t source) {
  std::vector<double> v;
  for (const auto& b : p.buckets)
    if (b.source == source) {
      std::int64_t n = 0;
      for (const auto& sg : b.segments) n += sg.elements();
      v.push_back(static_cast<double>(n * static_cast<std::int64_t>(size_of(b.type))));
    }
  return v;
}
}  // namespace

// The plan compiler cuts a fusion bucket into one piece per dtype (and server), each its own
// collective or transfer, run one after another: the cost model prices the pieces, not one
// collective of the bucket's bytes.
TEST_CASE("fusion: a bucket of several dtypes costs one collective or transfer per plan piece") {
  const auto c = zoo::make_cluster("commodity-10gbe-x8");
  const auto fab = cost::make_fabric(c);
  const exec::layout lay{c.world_size(), c.nodes.front().devices};
  cost::options timeline;
  timeline.timeline = true;
  group_desc g;
  g.fusion = fusion_value{64u << 20, 64u << 20};  // one bucket of all four
  SUBCASE("all-reduce and sharded: the pieces' collectives, summed") {
    const auto m = two_dtypes(dtype::f32);
    for (auto arch : {architecture_kind::all_reduce, architecture_kind::sharded}) {
      g.architecture = arch;
      const auto s = uniform_strategy(m, g, "one-bucket");
      const auto p = exec::compile_plan(m, c, s, lay);
      REQUIRE(p.buckets.size() == 2);  // f32 biases, f16 weights
      const auto pieces = piece_bytes(p, 0);
      double want = 0.0;
      for (double b : pieces)
        want += arch == architecture_kind::sharded ? cost::reduce_scatter(fab, g.topology, b) + cost::all_gather(fab, g.topology, b)
                                                   : cost::all_reduce(fab, g.topology, b);
      const auto e = cost::evaluate(m, c, s, timeline, true);
      REQUIRE(e.buckets.size() == 1);
      CHECK(e.buckets[0].wire_bytes == static_cast<std::int64_t>(pieces[0] + pieces[1]));
      CHECK(e.p.communication == Approx(want).epsilon(1e-12));
      // one collective of all the bytes, as before, is a latency short
      const double one = arch == architecture_kind::sharded
                             ? cost::reduce_scatter(fab, g.topology, pieces[0] + pieces[1]) + cost::all_gather(fab, g.topology, pieces[0] + pieces[1])
                             : cost::all_reduce(fab, g.topology, pieces[0] + pieces[1]);
      CHECK(e.p.communication > one * 1.01);
    }
  }
  SUBCASE("one dtype: one collective of the bucket") {
    const auto m = two_dtypes(dtype::f16);
    const auto s = uniform_strategy(m, g, "one-bucket");
    REQUIRE(exec::compile_plan(m, c, s, lay).buckets.size() == 1);
    const auto e = cost::evaluate(m, c, s);
    CHECK(e.p.communication == Approx(cost::all_reduce(fab, g.topology, 2.0 * (2 * 1024 * 1024 + 2 * 1024))).epsilon(1e-12));
  }
  SUBCASE("a parameter server: one transfer per server and dtype") {
    const auto m = two_dtypes(dtype::f32);
    g.architecture = architecture_kind::parameter_server;
    g.placement = placement_value{placement_kind::pinned, 0};
    g.fusion = fusion_value{64u << 20, 0};  // {b.bias}, then {b.weight, a.bias, a.weight}
    const auto s = uniform_strategy(m, g, "pinned");
    const auto p = exec::compile_plan(m, c, s, lay);
    REQUIRE(p.buckets.size() == 3);
    const auto e = cost::evaluate(m, c, s, timeline);
    std::vector<int> transfers(2, 0);
    for (const auto& ev : e.p.events)
      if (ev.kind == cost::event_ps_transfer) {
        REQUIRE(ev.bucket < 2);
        ++transfers[ev.bucket];
        CHECK(ev.lane == 1);  // server 0
      }
    CHECK(transfers == std::vector<int>{1, 2});
  }
}

// On random strategies (random dtypes, servers, groups): every parameter-server bucket has as many
// transfers as the plan has pieces of it; an uncompressed dense all-reduce bucket takes the
// time of its pieces' collectives.
TEST_CASE("fusion: the cost model's pieces are the plan's on random strategies") {
  std::mt19937 rng(2024);
  int mixed = 0, checked = 0;
  cost::options timeline;
  timeline.timeline = true;
  for (int trial = 0; trial < 200; ++trial) {
    const int nodes = 1 + static_cast<int>(rng() % 3), rpn = 1 + static_cast<int>(rng() % 2);
    const auto c = testing::make_cluster(nodes, rpn, rng() % 3 == 0 ? 2 : 0);
    const auto rc = testing::random_strategy(rng, c.server_count());
    CAPTURE(trial);
    const auto p = exec::compile_plan(rc.model, c, rc.strategy, exec::layout{nodes * rpn, rpn});
    const auto e = cost::evaluate(rc.model, c, rc.strategy, timeline, true);
    const auto fab = cost::make_fabric(c);
    for (std::uint32_t b = 0; b < e.buckets.size(); ++b) {
      CAPTURE(b);
      const auto& gd = rc.strategy.groups[e.buckets[b].group];
      const auto pieces = piece_bytes(p, b);
      mixed += pieces.size() > 1 && gd.architecture != architecture_kind::parameter_server ? 1 : 0;
      if (gd.architecture == architecture_kind::parameter_server) {
        const auto n = std::count_if(e.p.events.begin(), e.p.events.end(),
                                     [&](const cost::event& ev) { return ev.kind == cost::event_ps_transfer && ev.bucket == b; });
        CHECK(static_cast<std::size_t>(n) == pieces.size());
        ++checked;
        continue;
      }
      bool dense = gd.architecture == architecture_kind::all_reduce && gd.compression == comp::none::value && gd.ext.empty();
      for (auto i : e.buckets[b].items) dense = dense && !e.ws.items[i].sparse;
      if (!dense) continue;
      double want = 0.0, got = 0.0;
      for (double x : pieces) want += cost::all_reduce(fab, gd.topology, x);
      for (const auto& ev : e.p.events)
        if (ev.kind == cost::event_collective && ev.bucket == b) got += ev.end - ev.start;
      CHECK(got == Approx(want).epsilon(1e-9));
      ++checked;
    }
  }
  CHECK(mixed > 20);
  CHECK(checked > 300);
}

// expand_into writes a whole tensor of a plain group (no partitioner, no registered codec) as its
// one item itself, on the cost model's hot path: the same item, field for field, as add_items.
TEST_CASE("items: a plain group's whole tensor is add_items' one item, on random strategies") {
  std::mt19937 rng(7);
  int plain = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int nodes = 1 + static_cast<int>(rng() % 3), rpn = 1 + static_cast<int>(rng() % 2);
    const auto c = testing::make_cluster(nodes, rpn, rng() % 3 == 0 ? 2 : 0);
    const auto rc = testing::random_strategy(rng, c.server_count(), trial % 4 == 0);
    CAPTURE(trial);
    const auto items = expand(rc.model, c, rc.strategy);
    for (const auto& it : items) {
      const auto& a = rc.strategy.assignments[it.tensor];
      const auto& g = rc.strategy.groups[it.group];
      if (a.split() || g.partitioner.kind != partitioner_kind::none) continue;
      const auto& t = rc.model.tensors[it.tensor];
      std::vector<sync_item> one;
      autosync::detail::add_items(one, rc.model, it.tensor, it.ready, g, it.group, 0, 0, t.shape[0], c.world_size());
      REQUIRE(one.size() == 1);
      CHECK(one[0].axis == it.axis);
      CHECK(one[0].begin == it.begin);
      CHECK(one[0].end == it.end);
      CHECK(one[0].elements == it.elements);
      CHECK(one[0].bytes == it.bytes);
      CHECK(one[0].wire_bytes == it.wire_bytes);
      CHECK(one[0].sparse == it.sparse);
      CHECK(one[0].codec_flops == it.codec_flops);
      ++plain;
    }
  }
  CHECK(plain > 300);
}

TEST_CASE("fusion: fuse and cost::buckets agree on zoo models with baselines and random draws") {
  int strategies = 0;
  for (const char* mn : {"resnet50", "bert-base", "vgg16", "ncf"}) {
    const auto m = zoo::make_model(mn);
    for (const char* cn : {"p3.16xlarge-x4", "local-4"}) {
      const auto c = zoo::make_cluster(cn);
      auto ss = baselines::all(m, c);
      const search::space sp(m, c);
      for (auto& s : learn::random_strategies(sp, 8, 5, 6)) ss.push_back(std::move(s));
      for (const auto& s : ss) {
        CAPTURE(mn);
        CAPTURE(cn);
        CAPTURE(s.name);
        const auto items = expand(m, c, s);
        require_same(fuse_buckets(s, items), cost::buckets(m, c, s), items);
        ++strategies;
      }
    }
  }
  CHECK(strategies > 80);
}
