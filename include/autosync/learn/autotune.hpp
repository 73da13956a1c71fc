// autosync/learn/autotune.hpp — AutoSync's loop: propose, rank, trial-run, learn, repeat.
//
//   records file ──read (resume)──> trials so far ──┐
//   source records (other models/clusters) ─────────┤
//                                                   v
//        ┌──> fit the correction on every sample (pooled: source + target)
//        │      │
//        │      v
//        │    propose: sampled strategies + baselines + the search's optimum (round 0: the
//        │    baselines are all run, they are what the result is compared with)
//        │      │   score each by the corrected estimate (cost/corrected.hpp)
//        │      v
//        │    diverse top-k of the untried ones (learn/proposals.hpp)
//        │      │
//        │      v
//        │    runner.run(strategy) ──> trial_record ──append──> records file
//        └──────┘   until the budget of trials, or no better measured time for `patience` rounds
//   confirm: the `confirm` best measured strategies and the best baseline run once more; the
//   result ranks every strategy by the upper median of its runs (of two, the slower): a
//   3-iteration trial can be lucky, and a lucky first run must be repeated to win (a call that
//   runs no new trial on records that hold a confirm phase already confirms nothing)
//
// A runner (`Runner`) executes one strategy for the tuning target and returns its record, which
// must be of that strategy, the target's group and the default executor (else an error):
// learn/runners.hpp has one that calls `mpirun ... autosync run` (local), one that wraps any
// command line (the testbed script, a user's cluster launcher), and one that replays a
// recorded dataset (a pool-based loop over strategies measured earlier). The loop never
// includes exec/ headers: execution happens behind the runner.
//
// Resumable: the target's records already in the file count as trials done (their strategies
// are not run again), so a stopped `autosync tune` continues where it stopped.
//
// Transfer: `source` samples (records of other models or clusters) join every fit, so the
// first rounds already rank with a correction learned elsewhere.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/corrected.hpp>
#include <autosync/error.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/proposals.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/model.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace autosync::learn {

// What is being tuned: a model on a cluster, run as `ranks` ranks (`ranks_per_node` per node)
// with these settings.
struct tune_target {
  model_source model;
  cluster_spec cluster;
  int ranks = 2;
  int ranks_per_node = 2;
  run_settings settings{};
  int iterations = 5;  // measured iterations per trial

  // The ranking group of the target's records (learn/dataset.hpp group_of).
  [[nodiscard]] std::string group() const {
    trial_record r;
    r.model = model;
    r.cluster = cluster;
    r.ranks_per_node = ranks_per_node;
    r.settings = settings;
    r.environment.ranks = ranks;
    return group_of(r);
  }
};

// Runs one strategy for the target; returns the record of the run (the loop appends it).
template <class R>
concept Runner = requires(R& r, const tune_target& t, const strategy_desc& s) {
  { r.run(t, s) } -> std::same_as<trial_record>;
};
// A runner that can only run strategies from a fixed pool (a recorded dataset) offers it.
template <class R>
concept PoolRunner = Runner<R> && requires(const R& r, const tune_target& t) {
  { r.pool(t) } -> std::convertible_to<std::vector<strategy_desc>>;
};

// Fits a correction on samples; the default (learn/train.hpp) trains XGBoost when available.
using trainer = std::function<cost::corrected_evaluator(std::span<const sample>)>;

struct tune_progress {
  std::size_t round = 0;
  std::size_t trials = 0;            // target trials so far (resumed ones included)
  std::size_t budget = 0;
  double best_measured = 0.0;        // seconds (0 before any trial)
  std::string best_strategy;
  double last_measured = 0.0;        // the trial just finished (0 at a round's start)
  double last_predicted = 0.0;       // its corrected estimate
  std::string last_strategy;
  bool corrected = false;            // whether this round ranks with a learned correction
  std::string_view phase;            // "resume", "fit", "trial", "round", "confirm", "done"
};

struct tune_options {
  std::size_t budget = 200;          // target trials in all (resumed ones count)
  std::size_t per_round = 20;        // trials per round (AutoSync: 20-100)
  std::size_t proposals = 1000;      // sampled candidates per round
  std::size_t neighbors = 60;        // candidates one move away from each of the 3 best measured
  std::size_t min_fit_samples = 8;   // fewer samples: rank analytically
  std::size_t patience = 3;          // rounds without a better measured time (by > tolerance) end it
  double tolerance = 0.01;           // relative improvement that counts
  bool run_baselines = true;         // round 0 runs every baseline (the comparison)
  double diversity = 0.3;            // weight of diversity against the relative score gap (diverse_top_k)
  std::uint64_t seed = 1;
  std::size_t search_evaluations = 2000;  // the search's budget for its optimum (0: no search)
  std::size_t confirm = 3;           // best strategies run again at the end (0: none; a PoolRunner
                                     // replays the same record, so it never confirms)
  bool allow_lossy = false;          // proposals (draws, neighbours, the search) may use fp16/bf16
                                     // compression: AutoSync's space had its fp16 compressors; opt-in
                                     // here because it changes what training computes
  search::lossy_budget lossy{};      // with allow_lossy: which lossy compressors, the largest ratio
  std::function<void(const tune_progress&)> on_progress{};
  // How candidates are ranked before the loop can fit (fewer than min_fit_samples, or no
  // trainer): the analytical model, or e.g. cost::default_correction (the embedded model).
  cost::corrected_evaluator initial{};
};

struct trial_result {
  std::string strategy;              // its name
  double measured = 0.0;             // median iteration, seconds
  double predicted = 0.0;            // corrected estimate when it was chosen (0: resumed)
  bool baseline = false;
};

struct tune_result {
  std::vector<trial_result> trials;  // in the order run (resumed ones first; a strategy run again,
                                     // by an earlier confirmation, is resumed as a trial too)
  std::vector<trial_result> confirmations;  // the runs of the confirm phase (not in `trials`)
  std::size_t resumed = 0;
  std::size_t rounds = 0;
  std::optional<trial_record> best;  // the best measured strategy: the lowest upper median of its
                                     // runs (one run: its time; two: the slower; three: the middle)
  double best_measured = 0.0;        // that median, seconds (0: no trial)
  double best_baseline = 0.0;        // the best measured baseline, the same way (0: none ran)
  std::string best_baseline_name;
  bool converged = false;            // stopped by patience, not by the budget
  // best single measured time after each trial (trials[i])
  [[nodiscard]] std::vector<double> best_so_far() const {
    std::vector<double> v;
    double b = std::numeric_limits<double>::infinity();
    for (const auto& t : trials) v.push_back(b = std::min(b, t.measured));
    return v;
  }
};

// The loop. `records` is the target's records file (read to resume, appended to); `source`
// samples join every fit. Throws autosync::error on bad options or a failing runner.
template <class R>
tune_result autotune(const tune_target& t, R& runner, const std::filesystem::path& records, std::span<const sample> source,
                     const trainer& fit, const tune_options& o = {}) {
  static_assert(Runner<R>, "learn::autotune: the runner must satisfy learn::Runner (trial_record run(const tune_target&, const strategy_desc&))");
  if (o.budget < 1) throw error("budget", "must be >= 1");
  if (o.per_round < 1) throw error("per_round", "must be >= 1");
  // the model as the trials run it: compute scaled like `autosync run --compute-scale` (0: the
  // iteration is communication only), so the ranking estimates what the trials measure
  const auto& c = t.cluster;
  const model_spec m = scaled_compute(t.model.spec, c, t.settings.compute_scale);
  m.validate();
  c.validate();
  const std::string group = t.group();

  // the baselines, by strategy (records name them "ddp", "baseline:ddp", ...)
  std::set<std::string> baseline_keys;
  for (const auto& s : baselines::all(m, c)) baseline_keys.insert(strategy_key(s));
  auto is_baseline = [&](const strategy_desc& s) { return baseline_keys.count(strategy_key(s)) > 0; };

  tune_result res;
  std::vector<sample> target;
  std::vector<strategy_desc> target_strategies;  // target[i]'s strategy
  std::set<std::string> tried;
  std::map<std::string, std::vector<double>> runs_of;  // strategy key -> every measured time
  std::map<std::string, trial_record> record_of;       // strategy key -> its first record
  auto note = [&](const trial_record& r, double predicted, bool resumed) {
    auto s = make_sample(r);
    tried.insert(s.key);
    runs_of[s.key].push_back(s.measured);
    record_of.emplace(s.key, r);
    res.trials.push_back(trial_result{r.strategy.name, s.measured, predicted, is_baseline(r.strategy)});
    if (res.trials.back().baseline && (res.best_baseline == 0.0 || s.measured < res.best_baseline)) {
      res.best_baseline = s.measured;
      res.best_baseline_name = r.strategy.name;
    }
    if (!res.best || s.measured < median_iteration(*res.best)) res.best = r;
    target.push_back(std::move(s));
    target_strategies.push_back(r.strategy);
    if (resumed) ++res.resumed;
  };
  tune_progress pg;
  pg.budget = o.budget;
  auto report = [&](std::string_view phase) {
    if (!o.on_progress) return;
    pg.phase = phase;
    pg.trials = res.trials.size();
    pg.best_measured = res.best ? median_iteration(*res.best) : 0.0;
    pg.best_strategy = res.best ? res.best->strategy.name : std::string();
    o.on_progress(pg);
  };

  // A runner's record must be of the run it was asked for: this target's group, the default
  // executor, the strategy given (a record of another run would be filed under its name).
  auto checked_run = [&](const strategy_desc& s) {
    auto rec = runner.run(t, s);
    const auto rg = group_of(rec);
    if (rg != group)
      throw error("runner", "the trial of strategy '" + s.name + "' returned a record of run '" + rg + "', expected '" + group + "'");
    if (!default_executor(rec))
      throw error("runner", "the trial of strategy '" + s.name + "' returned a record of a run with --pack " +
                                std::string(exec::packing_name(rec.settings.pack)) + ", expected the default executor");
    if (strategy_key(rec.strategy) != strategy_key(s))
      throw error("runner", "the trial of strategy '" + s.name + "' returned a record of another strategy ('" + rec.strategy.name + "')");
    return rec;
  };

  // 1. resume
  if (std::filesystem::exists(records)) {
    const auto rr = read_records(records, read_options{.skip_truncated_tail = true});
    for (std::size_t i = 0; i < rr.records.size(); ++i) {
      const auto& r = rr.records[i];
      if (group_of(r) != group || !default_executor(r)) continue;  // not runs with `--pack always|never`
      try {
        note(r, 0.0, true);
      } catch (const file_error&) {
        throw;
      } catch (const error& e) {  // a record that makes no training row: where it is
        throw file_error(records.string(), rr.lines[i], 1, e.field(), e.message());
      }
    }
  }
  report("resume");
  // the loop runs a strategy once; a strategy the records hold twice was confirmed
  const bool confirmed_before = std::any_of(runs_of.begin(), runs_of.end(), [](const auto& kv) { return kv.second.size() >= 2; });

  // candidate sources that do not change between rounds
  std::vector<strategy_desc> fixed;
  if constexpr (PoolRunner<R>) {
    fixed = runner.pool(t);
  } else {
    for (auto s : baselines::all(m, c)) {
      try {
        s.validate(m, c);
      } catch (const error&) {
        continue;
      }
      s.name = "baseline:" + s.name;
      fixed.push_back(std::move(s));
    }
    if (o.search_evaluations > 0) {
      search::options so;
      so.seed = o.seed;
      so.max_evaluations = o.search_evaluations;
      so.allow_lossy = o.allow_lossy;
      so.lossy = o.lossy;
      auto found = search::optimize(m, c, so).strategy;
      found.name = "search";
      fixed.push_back(std::move(found));
    }
  }
  search::space_options spo;
  spo.allow_lossy = o.allow_lossy;
  spo.lossy = o.lossy;
  const search::space sp(m, c, spo);
  double best_seen = res.best ? median_iteration(*res.best) : std::numeric_limits<double>::infinity();
  std::size_t stale = 0;

  for (std::size_t round = 0; res.trials.size() < o.budget; ++round) {
    pg.round = round;
    // 2. fit
    std::vector<sample> pool(source.begin(), source.end());
    pool.insert(pool.end(), target.begin(), target.end());
    cost::corrected_evaluator ev = o.initial;
    if (fit && pool.size() >= o.min_fit_samples) ev = fit(pool);
    pg.corrected = ev.corrected();
    pg.last_measured = pg.last_predicted = 0.0;
    pg.last_strategy.clear();
    report("fit");

    // 3. propose and score
    std::vector<strategy_desc> cands;
    std::vector<double> scores;
    std::vector<char> forced;
    std::set<std::string> cand_keys;  // one serialization per candidate (not one per pair)
    auto consider = [&](strategy_desc s, bool force) {
      auto key = strategy_key(s);
      if (tried.count(key) || !cand_keys.insert(std::move(key)).second) return;
      scores.push_back(ev(m, c, s).iteration);
      forced.push_back(force ? 1 : 0);
      cands.push_back(std::move(s));
    };
    for (const auto& s : fixed) consider(s, o.run_baselines && is_baseline(s));
    if constexpr (!PoolRunner<R>) {
      auto sampled = sample_strategies(sp, o.proposals, o.seed * 1000003u + round);
      for (auto& s : sampled) {
        s.name = "r" + std::to_string(round) + "-" + s.name;
        consider(std::move(s), false);
      }
      // around the best measured strategies
      std::vector<std::size_t> order(target_strategies.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return target[x].measured < target[y].measured; });
      for (std::size_t q = 0; q < std::min<std::size_t>(3, order.size()) && o.neighbors > 0; ++q) {
        auto near = neighbors(sp, target_strategies[order[q]], o.neighbors, o.seed * 7919u + round * 31u + q);
        for (auto& s : near) {
          s.name = "r" + std::to_string(round) + "-n" + std::to_string(q) + "-" + std::to_string(&s - near.data());
          consider(std::move(s), false);
        }
      }
    }
    if (cands.empty()) break;  // nothing left to try
    const std::size_t room = o.budget - res.trials.size();
    std::vector<std::size_t> pick;
    for (std::size_t i = 0; i < cands.size() && pick.size() < room; ++i)
      if (forced[i]) pick.push_back(i);
    const std::size_t want = std::min(room, std::max(o.per_round, pick.size())) - pick.size();
    if (want > 0) {
      std::vector<strategy_desc> rest;
      std::vector<double> rest_scores;
      std::vector<std::size_t> back;
      for (std::size_t i = 0; i < cands.size(); ++i)
        if (!forced[i]) {
          rest.push_back(cands[i]);
          rest_scores.push_back(scores[i]);
          back.push_back(i);
        }
      for (auto k : diverse_top_k(rest, rest_scores, want, o.diversity)) pick.push_back(back[k]);
    }
    if (pick.empty()) break;

    // 4. run
    for (auto i : pick) {
      auto rec = checked_run(cands[i]);
      rec.strategy.name = cands[i].name;
      append_record(records, rec);
      note(rec, scores[i], false);
      pg.last_measured = res.trials.back().measured;
      pg.last_predicted = scores[i];
      pg.last_strategy = cands[i].name;
      report("trial");
    }
    ++res.rounds;
    report("round");

    // 5. convergence
    const double now = median_iteration(*res.best);
    if (now < best_seen * (1.0 - o.tolerance)) {
      best_seen = now;
      stale = 0;
    } else if (++stale >= o.patience) {
      res.converged = true;
      break;
    }
  }
  // 6. confirm: run the best measured strategies (and the best baseline) once more
  if constexpr (!PoolRunner<R>) {
    // (not when this call ran no trial and the records hold a confirm phase already, a strategy
    // run twice: a finished run resumed confirms nothing again)
    if (o.confirm > 0 && !res.trials.empty() && (res.trials.size() > res.resumed || !confirmed_before)) {
      std::vector<std::pair<double, std::string>> by_best;
      std::string best_base_key;
      double best_base = std::numeric_limits<double>::infinity();
      for (const auto& [key, v] : runs_of) {
        const double fastest = *std::min_element(v.begin(), v.end());
        by_best.emplace_back(fastest, key);
        if (is_baseline(record_of.at(key).strategy) && fastest < best_base) {
          best_base = fastest;
          best_base_key = key;
        }
      }
      std::sort(by_best.begin(), by_best.end());
      std::vector<std::string> again;
      for (std::size_t i = 0; i < by_best.size() && again.size() < o.confirm; ++i) again.push_back(by_best[i].second);
      if (!best_base_key.empty() && std::find(again.begin(), again.end(), best_base_key) == again.end()) again.push_back(best_base_key);
      for (const auto& key : again) {
        const auto& first = record_of.at(key);
        auto rec = checked_run(first.strategy);
        rec.strategy.name = first.strategy.name;
        append_record(records, rec);
        const double again_ms = median_iteration(rec);
        runs_of[key].push_back(again_ms);
        res.confirmations.push_back(trial_result{first.strategy.name, again_ms, 0.0, is_baseline(first.strategy)});
        pg.last_measured = again_ms;
        pg.last_predicted = 0.0;
        pg.last_strategy = first.strategy.name;
        report("confirm");
      }
    }
  }
  // the result: every strategy by the median of its runs
  res.best.reset();
  res.best_baseline = 0.0;
  res.best_baseline_name.clear();
  for (const auto& [key, v] : runs_of) {
    std::vector<double> w = v;
    std::sort(w.begin(), w.end());
    const double med = w[w.size() / 2];  // the upper median: of two runs the slower, so one lucky run cannot win
    const auto& r = record_of.at(key);
    if (!res.best || med < res.best_measured) {
      res.best = r;
      res.best_measured = med;
    }
    if (is_baseline(r.strategy) && (res.best_baseline == 0.0 || med < res.best_baseline)) {
      res.best_baseline = med;
      res.best_baseline_name = r.strategy.name;
    }
  }
  pg.best_measured = res.best_measured;
  pg.best_strategy = res.best ? res.best->strategy.name : std::string();
  if (o.on_progress) {
    pg.phase = "done";
    pg.trials = res.trials.size();
    o.on_progress(pg);
  }
  return res;
}

}  // namespace autosync::learn
