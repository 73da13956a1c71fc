// Training the correction and the autotune loop on records whose true correction is known.
//
// The records are synthetic in one respect only: their measured time is the analytical
// estimate times exp(g(features)) for a fixed law g (a threshold on the parameter-server share,
// a term in the tree share, one in the bucket count). Everything else — strategies sampled
// from the search space, records, the join, XGBoost, the loop — is the real path.
#include <autosync/cost/corrected.hpp>
#include <autosync/gbt/xgboost.hpp>
#include <autosync/learn/autotune.hpp>
#include <autosync/learn/metrics.hpp>
#include <autosync/learn/proposals.hpp>
#include <autosync/learn/runners.hpp>
#include <autosync/learn/train.hpp>
#include <autosync/search/serial.hpp>
#include <autosync/search/space.hpp>
#include <autosync/zoo/models.hpp>

#include "../common/tiny_specs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

using namespace autosync;
using doctest::Approx;

namespace {

cluster_spec two_by_two() { return testing::replicated("2x2", 2, testing::node(2, {1e10, 2e-6}, {1.25e9, 2e-5}, 1e13, 1e10)); }

std::size_t at(std::string_view name) { return testing::index_of(cost::feature_names, name); }

// The law the records follow: log(measured / analytical).
double true_log_factor(const cost::feature_row& r) {
  return (r[at("ps_frac")] > 0.5f ? 0.6 : 0.0) + 0.4 * r[at("tree_frac")] + 0.15 * r[at("log2_buckets")];
}

learn::trial_record synthetic_record(const learn::model_source& src, const cluster_spec& c, const strategy_desc& s) {
  learn::trial_record r;
  r.model = src;
  r.cluster = c;
  r.ranks_per_node = 2;
  r.strategy = s;
  r.settings = {1, 1.0, 7};
  r.environment.ranks = 4;
  r.environment.hostname = "synthetic";
  const auto f = cost::compute_features(src.spec, c, s);
  const double t = f.analytical.iteration * std::exp(true_log_factor(f.row));
  r.iterations.push_back(learn::iteration_sample::from_ranks({t, t, t, t}, {0, 0, 0, 0}, {t, t, t, t}));
  r.predicted_iteration = f.analytical.iteration;
  r.predicted_exposed = f.analytical.exposed;
  return r;
}

struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    path = std::filesystem::temp_directory_path() / ("autosync-learn-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("proposals: sampled strategies are valid, distinct and deterministic; diverse top-k starts at the best") {
  const auto src = learn::model_source::from_zoo("ncf");
  const auto c = two_by_two();
  const search::space sp(src.spec, c);
  const auto a = learn::sample_strategies(sp, 60, 3), b = learn::sample_strategies(sp, 60, 3);
  REQUIRE(a.size() == 60);
  CHECK(a == b);
  std::set<std::string> keys;
  for (const auto& s : a) {
    CHECK_NOTHROW(s.validate(src.spec, c));
    keys.insert(learn::strategy_key(s));
  }
  CHECK(keys.size() == a.size());
  std::vector<double> scores;
  for (const auto& s : a) scores.push_back(cost::estimate(src.spec, c, s).iteration);
  const auto pick = learn::diverse_top_k(a, scores, 5);
  REQUIRE(pick.size() == 5);
  CHECK(scores[pick[0]] == *std::min_element(scores.begin(), scores.end()));
  CHECK(std::set<std::size_t>(pick.begin(), pick.end()).size() == 5);
  // every score 0 (no compute, one rank), or not a number: still k distinct candidates, the
  // finite ones first
  for (const double v : {0.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    std::vector<double> flat(a.size(), v);
    flat[7] = v == 0.0 ? 0.0 : 1.0;
    const auto p2 = learn::diverse_top_k(a, flat, 6);
    REQUIRE(p2.size() == 6);
    CHECK(std::set<std::size_t>(p2.begin(), p2.end()).size() == 6);
    for (auto i : p2) CHECK(i < a.size());
    if (v != 0.0) CHECK(p2[0] == 7);
  }

  // one move away from a strategy the space can express: valid, distinct, not the strategy itself
  const auto base = sp.materialize(sp.equal_runs(group_desc{.fusion = fusion_value{1u << 20, 1u << 20}}, 2));
  const auto near = learn::neighbors(sp, base, 20, 9);
  CHECK(near.size() >= 10);
  std::set<std::string> nk{learn::strategy_key(base)};
  for (const auto& s : near) {
    CHECK_NOTHROW(s.validate(src.spec, c));
    nk.insert(learn::strategy_key(s));
  }
  CHECK(nk.size() == near.size() + 1);
  CHECK(learn::neighbors(sp, base, 20, 9) == near);
}

#if defined(AUTOSYNC_HAS_XGBOOST)

TEST_CASE("training on records with a known correction recovers it on held-out strategies") {
  const auto src = learn::model_source::from_zoo("ncf");
  const auto c = two_by_two();
  const search::space sp(src.spec, c);
  const auto strategies = learn::sample_strategies(sp, 400, 11);
  REQUIRE(strategies.size() == 400);
  std::vector<learn::trial_record> recs;
  for (const auto& s : strategies) recs.push_back(synthetic_record(src, c, s));
  const auto samples = learn::make_samples(recs);
  const std::span<const learn::sample> train(samples.data(), 300), test(samples.data() + 300, 100);

  const auto booster = learn::train_booster(train, learn::xgb_params{.rounds = 300, .max_depth = 4, .eta = 0.1});
  double se = 0.0, se0 = 0.0;
  std::vector<double> corrected, analytical, measured;
  std::vector<std::string> groups;
  for (const auto& s : test) {
    const double y = s.target();
    const double p = booster.predict(s.row);
    se += (p - y) * (p - y);
    se0 += y * y;
    corrected.push_back(s.analytical * std::exp(p));
    analytical.push_back(s.analytical);
    measured.push_back(s.measured);
    groups.push_back(s.group);
  }
  const double rmse = std::sqrt(se / 100.0), rmse0 = std::sqrt(se0 / 100.0);
  MESSAGE("held-out RMSE of log(measured/analytical): " << rmse << " (no correction: " << rmse0 << ")");
  CHECK(rmse < 0.05);
  CHECK(rmse < 0.15 * rmse0);
  const double acc_c = learn::pairwise_accuracy(corrected, measured, groups);
  const double acc_a = learn::pairwise_accuracy(analytical, measured, groups);
  MESSAGE("held-out pairwise accuracy: analytical " << acc_a << ", corrected " << acc_c);
  CHECK(acc_c >= 0.95);
  CHECK(acc_c > acc_a);
}

TEST_CASE("an XGBoost model saved as JSON and loaded again predicts the same bits") {
  const auto src = learn::model_source::from_zoo("ncf");
  const auto c = two_by_two();
  const search::space sp(src.spec, c);
  std::vector<learn::trial_record> recs;
  for (const auto& s : learn::sample_strategies(sp, 120, 5)) recs.push_back(synthetic_record(src, c, s));
  const auto samples = learn::make_samples(recs);
  const auto booster = learn::train_booster(samples, learn::xgb_params{.rounds = 40});
  scratch_dir dir;
  const auto path = dir.path / "model.json";
  booster.save_json(path);
  const auto loaded = learn::xgb_booster::load(path);
  CHECK(loaded.num_features() == cost::feature_count);
  const auto x = learn::feature_matrix(samples);
  std::vector<float> a(samples.size()), b(samples.size());
  booster.predict(x, samples.size(), a);
  loaded.predict(x, samples.size(), b);
  CHECK(a == b);
  CHECK(booster.json() == loaded.json());
  // the other path: the saved JSON read by autosync's own evaluator (no XGBoost at inference)
  const auto forest = gbt::load_xgboost_json(path);
  CHECK(forest.num_features() == cost::feature_count);
  CHECK(forest.num_trees() == 40);
  std::vector<float> c2(samples.size());
  forest.predict(x, samples.size(), c2);
  CHECK(c2 == a);  // the same bits as XGBoost's own prediction
  static_assert(cost::Correction<gbt::forest>);
  const auto via_forest = cost::corrected_estimate(src.spec, c, recs[3].strategy, forest);
  CHECK(via_forest.log_factor == Approx(static_cast<double>(a[3])).epsilon(1e-6));
  // a corrected estimate through the booster is the executor's time x exp(its prediction)
  const auto p = cost::corrected_estimate(src.spec, c, recs[3].strategy, learn::shared_booster{std::make_shared<const learn::xgb_booster>(learn::xgb_booster::load(path))});
  CHECK(p.executor == Approx(std::max(p.analytical.iteration, search::serial_replay(src.spec, c, recs[3].strategy).iteration)).epsilon(1e-12));
  CHECK(p.iteration == Approx(p.executor * std::exp(static_cast<double>(a[3]))).epsilon(1e-12));
}

TEST_CASE("autotune over a recorded dataset: finds the measured best with a fraction of the trials, and resumes") {
  const auto src = learn::model_source::from_zoo("ncf");
  const auto c = two_by_two();
  const search::space sp(src.spec, c);
  std::vector<learn::trial_record> recs;
  for (const auto& s : learn::sample_strategies(sp, 150, 21)) recs.push_back(synthetic_record(src, c, s));
  double truth = 1e30;
  for (const auto& r : recs) truth = std::min(truth, learn::median_iteration(r));

  learn::tune_target t;
  t.model = src;
  t.cluster = c;
  t.ranks = 4;
  t.ranks_per_node = 2;
  t.settings = {1, 1.0, 7};
  scratch_dir dir;
  const auto file = dir.path / "trials.jsonl";
  learn::tune_options o;
  o.budget = 25;
  o.per_round = 5;
  o.patience = 100;
  std::size_t reports = 0;
  o.on_progress = [&](const learn::tune_progress& pg) {
    ++reports;
    CHECK(pg.trials <= pg.budget);
  };
  learn::replay_runner runner(recs);
  const auto trainer = learn::default_trainer(learn::xgb_params{.rounds = 60});
  const auto first = learn::autotune(t, runner, file, {}, trainer, o);
  CHECK(first.trials.size() == 25);
  CHECK(runner.runs() == 25);
  CHECK(first.resumed == 0);
  CHECK(reports > 25);
  CHECK(learn::read_records(file).records.size() == 25);
  MESSAGE("best after 25 of 150 trials: " << learn::median_iteration(*first.best) / truth << " x the pool's best");

  // resume: the 25 recorded trials count, none is run again
  o.budget = 60;
  learn::replay_runner again(recs);
  const auto second = learn::autotune(t, again, file, {}, trainer, o);
  CHECK(second.resumed == 25);
  CHECK(second.trials.size() == 60);
  CHECK(again.runs() == 35);
  std::set<std::string> keys;
  for (const auto& r : learn::read_records(file).records) keys.insert(learn::strategy_key(r.strategy));
  CHECK(keys.size() == 60);
  // with the learned correction the loop reaches the pool's best (within 1 %) in 60 of 150 trials
  CHECK(learn::median_iteration(*second.best) <= truth * 1.01);
}

#endif

TEST_CASE("command runner: the template is filled and a failing command is an error with its output") {
  scratch_dir dir;
  learn::tune_target t;
  t.model = learn::model_source::from_zoo("ncf", 0.5);
  t.cluster = two_by_two();
  t.ranks = 4;
  t.ranks_per_node = 2;
  t.iterations = 3;
  learn::command_runner r("echo {np} {rpn} {model} {scale} {iters} >&2; exit 3 # {records}", dir.path / "w", "autosync");
  CHECK(r.command(t).find("echo 4 2 'ncf' 0.5 3") == 0);
  try {
    (void)r.run(t, learn::sample_strategies(search::space(t.model.spec, t.cluster), 1, 1).front());
    FAIL("the command exits 3");
  } catch (const error& e) {
    const std::string w = e.what();
    CHECK(w.find("exit 3") != std::string::npos);
    CHECK(w.find("4 2 ncf 0.5 3") != std::string::npos);  // the log's tail
  }
  CHECK_THROWS_AS(learn::command_runner("no records placeholder", dir.path / "x"), error);
}

namespace {
// Runs nothing: answers every strategy with a synthetic record and keeps what it was given.
struct keeping_runner {
  std::vector<strategy_desc> seen;
  learn::trial_record run(const learn::tune_target& t, const strategy_desc& s) {
    seen.push_back(s);
    return synthetic_record(t.model, t.cluster, s);
  }
};
// resnet50 at 5 % on the 2x2 cluster, and a short loop over sampled proposals (no fitting).
learn::tune_target small_target() {
  learn::tune_target t;
  t.model = learn::model_source::from_zoo("resnet50", 0.05);
  t.cluster = two_by_two();
  t.ranks = 4;
  t.ranks_per_node = 2;
  t.settings = {1, 1.0, 7};
  return t;
}
learn::tune_options small_options(std::size_t budget) {
  learn::tune_options o;
  o.budget = budget;
  o.per_round = 10;
  o.proposals = 200;
  o.search_evaluations = 200;
  o.patience = 100;
  return o;
}
bool any_lossy(const strategy_desc& s) {
  for (const auto& g : s.groups) {
    const auto info = find_compression(g.compression);
    if (info && !info->lossless) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("autotune proposes lossy compression only when allowed") {
  const auto t = small_target();
  auto o = small_options(40);
  for (const bool lossy : {false, true}) {
    CAPTURE(lossy);
    scratch_dir dir;
    o.allow_lossy = lossy;
    keeping_runner runner;
    const auto r = learn::autotune(t, runner, dir.path / "trials.jsonl", {}, learn::trainer{}, o);
    CHECK(r.trials.size() == 40);
    REQUIRE(runner.seen.size() == 40 + r.confirmations.size());
    const auto n = std::count_if(runner.seen.begin(), runner.seen.end(), any_lossy);
    if (lossy) CHECK(n > 0);
    else CHECK(n == 0);
  }
}

TEST_CASE("autotune keeps its proposals inside the lossy budget") {
  const auto t = small_target();
  auto o = small_options(40);
  scratch_dir dir;
  o.allow_lossy = true;
  REQUIRE(o.lossy.allow("bf16"));  // of the lossy compressors, bf16 alone
  keeping_runner runner;
  const auto r = learn::autotune(t, runner, dir.path / "trials.jsonl", {}, learn::trainer{}, o);
  CHECK(r.trials.size() == 40);
  std::size_t bf16 = 0;
  for (const auto& s : runner.seen)
    for (const auto& g : s.groups) {
      CAPTURE(compression_name(g.compression));
      CHECK((compression_lossless(g.compression.id) || compression_name(g.compression) == "bf16"));
      bf16 += compression_name(g.compression) == "bf16" ? 1 : 0;
    }
  CHECK(bf16 > 0);
}

namespace {
// The first run of every strategy whose name ends in "7" is lucky (a tenth of its time); every
// later run measures the synthetic record's true time.
struct lucky_runner {
  std::map<std::string, int> runs;
  learn::trial_record run(const learn::tune_target& t, const strategy_desc& s) {
    auto r = synthetic_record(t.model, t.cluster, s);
    if (runs[learn::strategy_key(s)]++ == 0 && !s.name.empty() && s.name.back() == '7')
      for (auto& it : r.iterations) {
        it.sync *= 0.1;
        it.exposed *= 0.1;
        it.iteration *= 0.1;
        for (auto* v : {&it.rank_sync, &it.rank_exposed, &it.rank_iteration})
          for (auto& x : *v) x *= 0.1;
      }
    return r;
  }
};
}  // namespace

namespace {
// Answers with the record of another run: another strategy, or the same one on another cluster.
struct mislabeling_runner {
  bool other_cluster = false;
  learn::trial_record run(const learn::tune_target& t, const strategy_desc& s) {
    if (other_cluster) {
      auto c = t.cluster;
      c.name = "elsewhere";
      return synthetic_record(t.model, c, s);
    }
    auto other = uniform_strategy(t.model.spec, group_desc{.topology = topology_value{topology_kind::tree}}, "other");
    return synthetic_record(t.model, t.cluster, s == other ? uniform_strategy(t.model.spec, group_desc{}) : other);
  }
};
}  // namespace

TEST_CASE("autotune refuses a runner's record of another strategy or another run, and files nothing") {
  const auto t = small_target();
  scratch_dir dir;
  mislabeling_runner wrong_strategy;
  CHECK_THROWS_WITH_AS(learn::autotune(t, wrong_strategy, dir.path / "a.jsonl", {}, learn::trainer{}, small_options(4)),
                       doctest::Contains("returned a record of another strategy"), error);
  mislabeling_runner wrong_cluster{true};
  CHECK_THROWS_WITH_AS(learn::autotune(t, wrong_cluster, dir.path / "b.jsonl", {}, learn::trainer{}, small_options(4)),
                       doctest::Contains("returned a record of run 'resnet50@elsewhere"), error);
  CHECK_FALSE(std::filesystem::exists(dir.path / "a.jsonl"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "b.jsonl"));
}

TEST_CASE("autotune's confirm phase: the best strategy is the best median over its runs, not one lucky trial") {
  const auto t = small_target();
  auto o = small_options(30);
  o.confirm = 0;
  scratch_dir dir;
  lucky_runner unconfirmed;
  const auto a = learn::autotune(t, unconfirmed, dir.path / "a.jsonl", {}, learn::trainer{}, o);
  REQUIRE(a.best);
  const bool fooled = !a.best->strategy.name.empty() && a.best->strategy.name.back() == '7';
  REQUIRE(fooled);  // without confirmation a lucky trial wins (the premise of this test)
  CHECK(a.confirmations.empty());

  o.confirm = 3;
  lucky_runner confirmed;
  const auto b = learn::autotune(t, confirmed, dir.path / "b.jsonl", {}, learn::trainer{}, o);
  REQUIRE(b.best);
  CHECK(b.trials.size() == 30);
  CHECK(b.confirmations.size() >= 3);
  CHECK(b.confirmations.size() <= 4);
  // the records file holds the loop's trials and the confirmations
  CHECK(learn::read_records(dir.path / "b.jsonl").records.size() == 30 + b.confirmations.size());
  // a confirmed strategy's time is the slower of its two runs: the winner's is its true time
  const auto truth = learn::median_iteration(synthetic_record(t.model, t.cluster, b.best->strategy));
  CHECK(b.best_measured == Approx(truth).epsilon(1e-9));
  double true_best = 1e30;
  for (const auto& r : learn::read_records(dir.path / "b.jsonl").records)
    true_best = std::min(true_best, learn::median_iteration(synthetic_record(t.model, t.cluster, r.strategy)));
  CHECK(b.best_measured <= true_best * 1.0000001);
  // a finished run resumed runs nothing new, and confirms nothing again
  lucky_runner again;
  const auto c = learn::autotune(t, again, dir.path / "b.jsonl", {}, learn::trainer{}, o);
  CHECK(again.runs.empty());
  CHECK(c.confirmations.empty());
  CHECK(learn::read_records(dir.path / "b.jsonl").records.size() == 30 + b.confirmations.size());
}
