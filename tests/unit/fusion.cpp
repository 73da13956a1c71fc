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

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace autosync;

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
