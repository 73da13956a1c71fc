// The search's answer: the simplest strategy within epsilon, the archive behind it, counted
// budgets, the best of each family, and the re-rank by a learned correction.
#include <autosync/cost/corrected.hpp>
#include <autosync/cost/default_correction.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/cost/features.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/search/selection.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

using namespace autosync;

namespace {

// The preset with its collectives on the alpha-beta-gamma forms (an MPI cluster): the lower
// bound is then the node-level cut of the NICs' line rate, which these cases compute by hand.
cluster_spec alpha_beta(const std::string& name) {
  auto c = zoo::make_cluster(name);
  c.backend = collective_backend::mpi;
  return c;
}

// A correction of constant log factor k: every prediction scaled alike.
struct constant_correction {
  float k = 0.0f;
  [[nodiscard]] float predict(std::span<const float>) const { return k; }
  [[nodiscard]] std::size_t num_features() const { return cost::feature_count; }
};

// A correction that says parameter-server traffic is measured exp(k) times slower than modelled
// (log factor = k x the fraction of bytes on parameter servers).
struct ps_penalty {
  float k = 2.0f;
  [[nodiscard]] float predict(std::span<const float> row) const {
    const auto at = std::find(cost::feature_names.begin(), cost::feature_names.end(), "ps_frac") - cost::feature_names.begin();
    return k * row[static_cast<std::size_t>(at)];
  }
  [[nodiscard]] std::size_t num_features() const { return cost::feature_count; }
};

strategy_desc one_group_per_tensor(const model_spec& m, std::size_t groups, const group_desc& g = {}) {
  strategy_desc s;
  s.name = "s" + std::to_string(groups);
  for (std::size_t i = 0; i < groups; ++i) s.groups.push_back(g);
  for (std::size_t i = 0; i < m.tensors.size(); ++i)
    s.assignments.push_back(assignment{m.tensors[i].name, static_cast<std::int32_t>(i % groups), 0, {}});
  return s;
}

}  // namespace

TEST_CASE("complexity: groups first, then aspects that differ from the defaults") {
  CHECK(search::non_default_aspects(group_desc{}) == 0);
  group_desc g;
  g.topology = topology_value{topology_kind::hierarchical, topology_kind::halving_doubling, topology_kind::halving_doubling};
  g.fusion = fusion_value{25u << 20, 25u << 20};
  CHECK(search::non_default_aspects(g) == 4);  // the hierarchy, its two non-ring levels, the fusion
  g.schedule = schedule_kind::priority;
  CHECK(search::non_default_aspects(g) == 5);
  // a topology counts its steps from the flat ring
  CHECK(search::topology_steps(topology_value{}) == 0);
  CHECK(search::topology_steps(topology_value{topology_kind::halving_doubling}) == 1);
  CHECK(search::topology_steps(topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::ring}) == 1);
  CHECK(search::topology_steps(topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::halving_doubling}) == 2);
  CHECK(search::topology_steps(topology_value{topology_kind::hierarchical, topology_kind::tree, topology_kind::halving_doubling}) == 3);
  const auto m = zoo::make_model("resnet50");
  CHECK(search::complexity_of(one_group_per_tensor(m, 1, g)) == search::complexity{1, 5});
  CHECK(search::complexity{1, 9} < search::complexity{2, 0});
  CHECK(search::complexity{2, 1} < search::complexity{2, 2});
}

TEST_CASE("archive: the front keeps the simplest strategy for each time; top the fastest; the best of each family") {
  const auto m = zoo::make_model("resnet50");
  search::archive a(2);
  a.offer(m, 10.0, one_group_per_tensor(m, 3), nullptr);
  a.offer(m, 12.0, one_group_per_tensor(m, 1), nullptr);
  a.offer(m, 11.0, one_group_per_tensor(m, 2), nullptr);
  a.offer(m, 13.0, one_group_per_tensor(m, 2), nullptr);  // slower and no simpler than 2 groups at 11
  a.offer(m, 10.0, one_group_per_tensor(m, 4), nullptr);  // as fast as 3 groups, more complex
  REQUIRE(a.front().size() == 3);
  CHECK(a.front()[0].key.groups == 1);
  CHECK(a.front()[0].time == 12.0);
  CHECK(a.front()[1].key.groups == 2);
  CHECK(a.front()[1].time == 11.0);
  CHECK(a.front()[2].key.groups == 3);
  CHECK(a.front()[2].time == 10.0);
  REQUIRE(a.top().size() == 2);
  CHECK(a.top()[0].time == 10.0);
  CHECK(a.top()[1].time == 10.0);
  // a simpler and faster strategy empties the front behind it
  a.offer(m, 9.0, one_group_per_tensor(m, 1), nullptr);
  REQUIRE(a.front().size() == 1);
  CHECK(a.front()[0].time == 9.0);
  REQUIRE(a.best_of(search::family::all_reduce));
  CHECK(a.best_of(search::family::all_reduce)->time == 9.0);
  CHECK_FALSE(a.best_of(search::family::parameter_server));
  group_desc ps;
  ps.architecture = architecture_kind::parameter_server;
  a.offer(m, 20.0, one_group_per_tensor(m, 2, ps), nullptr);
  REQUIRE(a.best_of(search::family::parameter_server));
  CHECK(a.best_of(search::family::parameter_server)->time == 20.0);
  auto mixed = one_group_per_tensor(m, 2);
  mixed.groups[1] = ps;
  CHECK(search::family_of(m, mixed) == search::family::mixed);
}

TEST_CASE("optimize: when many strategies reach the lower bound, the answer is one group") {
  // bert-large on 4 x p3.16xlarge: the NIC floor is reached by any strategy that keeps the NIC
  // busy, so the group structure of the fastest strategy found is arbitrary.
  const auto m = zoo::make_model("bert-large");
  const auto c = alpha_beta("p3.16xlarge-x4");
  const auto r = search::optimize(m, c, {});
  CHECK(r.best_prediction >= r.prediction.lower_bound);
  CHECK(r.best_prediction <= r.prediction.lower_bound * 1.01);  // the floor, within the last bucket's tail
  CHECK(r.strategy.groups.size() == 1);
  // within epsilon of the best-scored candidate as the executor runs it (the estimate's fastest
  // may be a parameter-server strategy the serial replay prices higher)
  CHECK(r.best_prediction <= r.reference);
  CHECK(r.serial_iteration <= r.reference * (1.0 + search::default_epsilon));
  CHECK(r.simplicity == search::complexity_of(r.strategy));
  CHECK(r.score == r.prediction.iteration);
  CHECK_FALSE(r.reranked);

  search::options exact;
  exact.epsilon = 0.0;
  const auto e = search::optimize(m, c, exact);
  CHECK(e.score <= e.best_score);  // the best score, however complex
  exact.serial_executor = false;   // scored by the estimate alone: the fastest prediction found
  const auto f = search::optimize(m, c, exact);
  CHECK(f.prediction.iteration <= f.best_prediction * (1.0 + 1e-12));  // the fastest found (the polish may still gain)
  CHECK(f.strategy.groups.size() >= r.strategy.groups.size());
}

TEST_CASE("optimize: counted budgets; the same seed gives the same strategy") {
  const auto m = zoo::make_model("gpt2");
  const auto c = zoo::make_cluster("dgx-a100-x16");
  search::options o;
  o.seed = 3;
  o.max_work = 100'000;
  const auto a = search::optimize(m, c, o);
  const auto b = search::optimize(m, c, o);
  CHECK(a.strategy == b.strategy);
  CHECK(a.evaluated == b.evaluated);
  CHECK(a.work == b.work);
  o.max_work = 0;  // evaluations only
  o.max_evaluations = 1500;
  const auto full = search::optimize(m, c, o);
  CHECK(a.evaluated < full.evaluated);
  CHECK(full.work > a.work);
}

TEST_CASE("optimize: a parameter-server item counts the servers and nodes its lanes visit") {
  CHECK(search::search_work_per_ps_item(0, 16) == 1);
  CHECK(search::search_work_per_ps_item(16, 16) == 1);  // below 24 + 24: the budget as it was
  CHECK(search::search_work_per_ps_item(24, 24) == 2);
  CHECK(search::search_work_per_ps_item(2000, 2000) == 166);
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  for (const auto& s : baselines::all(m, c)) {
    CAPTURE(s.name);
    const auto n = search::items_of(m, s);
    const bool ps = has_parameter_servers(s);
    CHECK(search::items_of(m, s, 7) == (ps ? 7 * n : n));  // every group of a baseline is one architecture
  }
  // 400 nodes with co-located servers: (400 + 400) / 24 = 33 per PS item. A budget of one item
  // ends the walk after the seeds (every baseline, costed): their work is counted so.
  cluster_spec big;
  big.name = "400x8";
  for (int i = 0; i < 400; ++i) {
    node_spec n = c.nodes.front();
    n.name = "n" + std::to_string(i);
    big.nodes.push_back(n);
  }
  std::uint64_t seeds = 0, unweighted = 0;
  for (const auto& s : baselines::all(m, big)) {
    seeds += search::items_of(m, s, 33);
    unweighted += search::items_of(m, s);
  }
  REQUIRE(seeds > 4 * unweighted);  // the PS baselines dominate
  search::options o;
  o.max_work = 1;
  const auto r = search::optimize(m, big, o);
  CHECK(r.work >= seeds);
  CHECK(r.work < seeds + unweighted);  // and the polish's few evaluations
}

TEST_CASE("optimize: the best of each family, with its prediction") {
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  const auto r = search::optimize(m, c, {});
  REQUIRE(r.families.size() == 3);
  for (const auto& f : r.families) {
    CAPTURE(search::name_of(f.kind));
    CHECK(search::family_of(m, f.strategy) == f.kind);
    CHECK_NOTHROW(f.strategy.validate(m, c));
    CHECK(f.prediction.iteration == doctest::Approx(cost::estimate(m, c, f.strategy).iteration).epsilon(1e-12));
    CHECK(f.prediction.iteration >= r.best_prediction * (1.0 - 1e-12));
  }
}

TEST_CASE("optimize: a learned correction re-ranks the best candidates") {
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("p3.16xlarge-x4");

  // a constant factor k > 0 (slower than the model) scales every score alike: the analytical
  // pick, scored exp(k) higher, with no uncertainty term and the tolerance epsilon; a constant
  // k < 0 (faster) is charged exp(w |k|) more and widens the score's tolerance by w |k|
  const auto plain = search::optimize(m, c, {});
  search::options k;
  k.correction = cost::corrected_evaluator{constant_correction{0.3f}};
  const auto scaled = search::optimize(m, c, k);
  CHECK(scaled.reranked);
  CHECK(scaled.tolerance == search::default_epsilon);
  CHECK(plain.tolerance == search::default_epsilon);
  CHECK(scaled.strategy == plain.strategy);
  CHECK(scaled.log_factor == doctest::Approx(0.3));
  CHECK(scaled.score == doctest::Approx(plain.prediction.iteration * std::exp(0.3)).epsilon(1e-6));
  search::options f;
  f.correction = cost::corrected_evaluator{constant_correction{-0.3f}};
  const auto faster = search::optimize(m, c, f);
  CHECK(faster.tolerance == doctest::Approx(search::default_epsilon + 0.5 * 0.3).epsilon(1e-6));
  CHECK(faster.strategy == plain.strategy);  // the model's threshold (epsilon) binds, as before
  CHECK(faster.log_factor == doctest::Approx(-0.3));
  CHECK(faster.score == doctest::Approx(plain.prediction.iteration * std::exp(-0.3) * std::exp(0.5 * 0.3)).epsilon(1e-6));

  // the embedded correction: the score is the corrected estimate with the uncertainty term,
  // within epsilon of the best score of every candidate
  search::options d;
  d.correction = cost::corrected_evaluator{cost::default_correction{}};
  const auto r = search::optimize(m, c, d);
  const auto p = cost::corrected_estimate(m, c, r.strategy, cost::default_correction{});
  CHECK(r.score == doctest::Approx(p.iteration * std::exp(0.5 * std::max(0.0, -p.log_factor))).epsilon(1e-9));
  CHECK(r.score <= r.best_score * (1.0 + r.tolerance) * (1.0 + 1e-12));
  CHECK(r.prediction.iteration <= r.best_prediction * 2.0);
  CHECK(r.tolerance >= r.epsilon);
  CHECK(r.prediction.iteration == doctest::Approx(cost::estimate(m, c, r.strategy).iteration).epsilon(1e-12));

  // vgg16 on autosync-b: the analytical pick puts part of the bytes on parameter servers; a
  // correction that measured parameter-server traffic e^2 times slower than modelled moves every
  // byte off them
  auto v = zoo::make_model("vgg16");
  v.layers.clear();  // FLOPs alone: the compute of the AutoSync paper's setting
  auto b = alpha_beta("autosync-b");
  for (auto& n : b.nodes) n.compute = {};  // and the preset's FLOP rate, no roofline
  auto ps_share = [&](const strategy_desc& s) {  // the fraction of the model's bytes on parameter servers
    double ps = 0.0, all = 0.0;
    for (const auto& a : s.assignments) {
      const auto t = std::find_if(v.tensors.begin(), v.tensors.end(), [&](const tensor& x) { return x.name == a.tensor; });
      const double bytes = static_cast<double>(t->bytes());
      all += bytes;
      if (!a.split()) {
        ps += s.groups[static_cast<std::size_t>(a.group)].architecture == architecture_kind::parameter_server ? bytes : 0.0;
        continue;
      }
      for (const auto gi : a.shard_groups)
        if (s.groups[static_cast<std::size_t>(gi)].architecture == architecture_kind::parameter_server)
          ps += bytes / static_cast<double>(a.shard_groups.size());
    }
    return ps / all;
  };
  search::options few;
  few.max_evaluations = 1000;
  few.serial_executor = false;  // the correction alone
  const auto analytical = search::optimize(v, b, few);
  CHECK(ps_share(analytical.strategy) > 0.1);
  few.correction = cost::corrected_evaluator{ps_penalty{}};
  const auto slower = search::optimize(v, b, few);
  CHECK(ps_share(slower.strategy) == 0.0);
  CHECK(slower.log_factor == 0.0);
  CHECK(slower.score < cost::corrected_estimate(v, b, analytical.strategy, ps_penalty{}).iteration);
}
