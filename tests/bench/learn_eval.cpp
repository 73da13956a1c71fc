// bench_learn_eval — the learned correction and the autotune loop on measured trial records.
//
//   bench_learn_eval [records.jsonl ...]        (default: tests/data/trials/*.jsonl)
//
// Prints, in one run, each figure next to its anchor:
//
// 1. Ranking on held-out strategies (5-fold cross-validation; a fold holds out strategies by
//    the hash of their JSON, never a record it trained on): pairwise accuracy and Spearman's rho
//    within ranking groups (model, cluster, ranks, compute scale) for
//      the analytical model alone, the analytical model + GBT correction (XGBoost, default
//      parameters of learn::xgb_params, bounded by the evidence box of its training rows as
//      `autosync learn` ships it; the unbounded forest on a line of its own), and the linear
//      model on AutoSync's 12 features;
//    anchor: AutoSync's simulator reached 0.83-0.94 pairwise (target here >= 0.95). Next to it,
//    the data's own repeatability: the median of each trial's even iterations ranking the median
//    of its odd ones (no predictor ranks measurements better than they repeat). Then the same
//    held out by machine: leave-one-cluster-out, every testbed cluster's records predicted by
//    models trained on the other clusters' records only. The analytical model is the iteration
//    as the executor runs it (cost::features::executor), the base the correction multiplies.
// 2. Autotune per testbed case (a ranking group with at least 8 distinct strategies): the loop
//    of learn/autotune.hpp over the recorded strategies (replay runner, 4 trials per round, no
//    baseline forced first), without and with the other cases' records pooled into every fit
//    (transfer). Reported: the best measured strategy vs the best measured baseline (anchor:
//    AutoSync up to 1.6x), the trials the loop needed to reach 95 % of the final speedup with
//    and without the source records, and what a random order needs on average.
#include <autosync/compressors/all.hpp>  // records of strategies with a registered compressor (int8, QSGD, top-k, ...)
#include <autosync/cost/features.hpp>
#include <autosync/learn/autotune.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/linear.hpp>
#include <autosync/learn/metrics.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/learn/runners.hpp>
#include <autosync/learn/train.hpp>
#include <autosync/strategy/baselines.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace autosync;

namespace {

std::uint64_t fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

struct scores {
  double pairwise = NAN, spearman = NAN;
};

// Trials (1-based) until the best-so-far reaches `frac` of the final speedup over `base`.
std::size_t trials_to(const std::vector<double>& best_so_far, double base, double frac) {
  if (best_so_far.empty()) return 0;
  const double final_speedup = base / best_so_far.back();
  for (std::size_t i = 0; i < best_so_far.size(); ++i)
    if (base / best_so_far[i] >= frac * final_speedup) return i + 1;
  return best_so_far.size();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) files.emplace_back(argv[i]);
  if (files.empty()) {
    const std::filesystem::path dir = std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests/data/trials";
    if (std::filesystem::exists(dir))
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".jsonl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) {
    std::fprintf(stderr, "bench_learn_eval: no records (pass records files, or put them in tests/data/trials/)\n");
    return 1;
  }
  std::vector<learn::trial_record> recs;
  try {
    for (const auto& f : files) {
      auto r = learn::read_records(f, learn::read_options{.skip_truncated_tail = true});
      for (auto& x : r.records) recs.push_back(std::move(x));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_learn_eval: %s\n", e.what());
    return 1;
  }
  // records of a non-default executor setting (--pack) are not samples: drop them here, so that
  // recs[i] and samples[i] stay the same trial below
  std::erase_if(recs, [](const learn::trial_record& r) { return !learn::default_executor(r); });
  const auto samples = learn::make_samples(recs);
  std::set<std::string> groups;
  for (const auto& s : samples) groups.insert(s.group);
  std::printf("bench_learn_eval: %zu records in %zu files, %zu ranking groups\n\n", samples.size(), files.size(), groups.size());

  // ---- 1. held-out ranking: 5 folds by strategy, then one machine (cluster) at a time ------
  auto machine_of_group = [](const std::string& g) {  // a group is "model@cluster|..."
    const auto at = g.find('@'), bar = g.find('|', at);
    return g.substr(at + 1, bar - at - 1);
  };
  auto machine_of = [&](const learn::sample& s) { return machine_of_group(s.group); };
  std::vector<std::string> machines;
  for (const auto& s : samples)
    if (std::find(machines.begin(), machines.end(), machine_of(s)) == machines.end()) machines.push_back(machine_of(s));
  struct held_out {
    std::vector<double> meas, ana, cor, lin, unb;  // cor: the forest bounded by its evidence box (as it ships); unb: unbounded
    std::vector<std::string> grp;
  };
  // fold_of(sample) in [0, folds): each fold is predicted by models trained on the others
  auto cross_validate = [&](std::size_t folds, auto&& fold_of) {
    held_out h;
    for (std::size_t k = 0; k < folds; ++k) {
      std::vector<learn::sample> train, test;
      for (const auto& s : samples) (fold_of(s) == k ? test : train).push_back(s);
      if (train.size() < 4 || test.empty()) continue;
      const auto b = learn::train_bounded_booster(train);
      const auto l = learn::fit_linear(train);
      for (const auto& s : test) {
        h.meas.push_back(s.measured);
        h.ana.push_back(s.analytical);
        h.cor.push_back(s.analytical * std::exp(static_cast<double>(b.predict(s.row))));
        h.unb.push_back(s.analytical * std::exp(static_cast<double>(b.predict_unbounded(s.row))));
        h.lin.push_back(l.predict(s.autosync));
        h.grp.push_back(s.group);
      }
    }
    return h;
  };
  constexpr std::size_t folds = 5;
  const auto by_strategy = cross_validate(folds, [&](const learn::sample& s) { return fnv(s.key + s.group) % folds; });
  const auto by_machine = cross_validate(machines.size(), [&](const learn::sample& s) {
    return static_cast<std::size_t>(std::find(machines.begin(), machines.end(), machine_of(s)) - machines.begin());
  });
  auto print_table = [&](const held_out& h) {
    auto score = [&](const std::vector<double>& p) { return scores{learn::pairwise_accuracy(p, h.meas, h.grp), learn::grouped_spearman(p, h.meas, h.grp)}; };
    const auto sa = score(h.ana), sc = score(h.cor), sl = score(h.lin);
    std::printf("   predictor                          pairwise  Spearman   pairwise / 0.94\n");
    std::printf("   analytical (as the executor runs)     %.3f     %6.3f       %.3f\n", sa.pairwise, sa.spearman, sa.pairwise / 0.94);
    std::printf("   analytical + GBT correction           %.3f     %6.3f       %.3f\n", sc.pairwise, sc.spearman, sc.pairwise / 0.94);
    std::printf("   linear on AutoSync's 12 features      %.3f     %6.3f       %.3f\n", sl.pairwise, sl.spearman, sl.pairwise / 0.94);
    std::printf("   pairs whose measured times differ by > 5 %%: analytical %.3f, GBT %.3f, linear %.3f\n",
                learn::pairwise_accuracy(h.ana, h.meas, h.grp, 0.05), learn::pairwise_accuracy(h.cor, h.meas, h.grp, 0.05),
                learn::pairwise_accuracy(h.lin, h.meas, h.grp, 0.05));
    const auto su = score(h.unb);
    std::printf("   (the GBT forest unbounded by its evidence box: pairwise %.3f, Spearman %.3f, pairs > 5 %% apart %.3f)\n", su.pairwise,
                su.spearman, learn::pairwise_accuracy(h.unb, h.meas, h.grp, 0.05));
  };
  std::printf("1. ranking on held-out strategies (%zu-fold CV, %zu predictions)   anchor: AutoSync simulator 0.83-0.94 pairwise, target >= 0.95\n",
              folds, by_strategy.meas.size());
  print_table(by_strategy);
  std::printf("   held out by machine (leave-one-cluster-out over %zu clusters, %zu predictions: no row of the machine in training)\n",
              machines.size(), by_machine.meas.size());
  print_table(by_machine);
  // The measurement's own repeatability bounds any predictor: the median of a trial's even
  // iterations "predicting" the median of its odd ones.
  std::vector<double> even, odd;
  std::vector<std::string> g2;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& its = recs[i].iterations;
    if (its.size() < 2) continue;
    std::vector<double> a, b;
    for (std::size_t k = 0; k < its.size(); ++k) (k % 2 ? b : a).push_back(its[k].iteration);
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    };
    even.push_back(med(a));
    odd.push_back(med(b));
    g2.push_back(samples[i].group);
  }
  // per held-out machine: which machine the model ranks worst (pairs within its groups only),
  // beside how well that machine's own measurements repeat
  for (const auto& mc : machines) {
    held_out h;
    for (std::size_t i = 0; i < by_machine.grp.size(); ++i) {
      if (machine_of_group(by_machine.grp[i]) != mc) continue;
      h.meas.push_back(by_machine.meas[i]);
      h.ana.push_back(by_machine.ana[i]);
      h.cor.push_back(by_machine.cor[i]);
      h.grp.push_back(by_machine.grp[i]);
    }
    std::vector<double> e, o;
    std::vector<std::string> g;
    for (std::size_t i = 0; i < g2.size(); ++i)
      if (machine_of_group(g2[i]) == mc) {
        e.push_back(even[i]);
        o.push_back(odd[i]);
        g.push_back(g2[i]);
      }
    std::printf("     %-44s %4zu trials  pairwise analytical %.3f, GBT %.3f  (repeatability %.3f)\n", mc.c_str(), h.meas.size(),
                learn::pairwise_accuracy(h.ana, h.meas, h.grp), learn::pairwise_accuracy(h.cor, h.meas, h.grp),
                learn::pairwise_accuracy(e, o, g));
  }
  std::printf("   repeatability (even iterations' median ranking the odd ones', %zu trials): pairwise %.3f, Spearman %.3f\n\n", even.size(),
              learn::pairwise_accuracy(even, odd, g2), learn::grouped_spearman(even, odd, g2));

  // ---- 2. autotune per case ------------------------------------------------------------------
  std::map<std::string, std::vector<std::size_t>> by_group;
  for (std::size_t i = 0; i < recs.size(); ++i) by_group[samples[i].group].push_back(i);
  std::printf("2. autotune per testbed case (replay of the recorded strategies, 4 per round)   anchor: AutoSync up to 1.6x over the best baseline\n");
  std::printf("   %-72s %5s %11s %11s %8s %8s %8s %8s\n", "case", "pool", "best base", "autotuned", "speedup", "t95", "t95+src", "random");
  const auto tmp = std::filesystem::temp_directory_path() / ("autosync-learn-eval-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  double sum_t = 0, sum_ts = 0, sum_r = 0;
  std::size_t cases = 0;
  for (const auto& [g, idx] : by_group) {
    std::set<std::string> keys;
    for (auto i : idx) keys.insert(samples[i].key);
    if (keys.size() < 8) continue;
    const auto& r0 = recs[idx.front()];
    learn::tune_target t;
    t.model = r0.model;
    t.cluster = r0.cluster;
    t.ranks = r0.environment.ranks;
    t.ranks_per_node = r0.ranks_per_node;
    t.settings = r0.settings;
    std::set<std::string> base_keys;
    for (const auto& b : baselines::all(t.model.spec, t.cluster)) base_keys.insert(learn::strategy_key(b));
    double best_base = 0.0, best_all = 1e300;
    for (auto i : idx) {
      if (base_keys.count(samples[i].key) && (best_base == 0.0 || samples[i].measured < best_base)) best_base = samples[i].measured;
      best_all = std::min(best_all, samples[i].measured);
    }
    if (best_base == 0.0) continue;
    std::vector<learn::trial_record> own;
    std::vector<learn::sample> source;
    for (auto i : idx) own.push_back(recs[i]);
    for (std::size_t i = 0; i < samples.size(); ++i)
      if (samples[i].group != g) source.push_back(samples[i]);
    learn::tune_options o;
    o.budget = keys.size();
    o.per_round = 4;
    o.min_fit_samples = 4;
    o.patience = 1000;
    o.run_baselines = false;
    const auto trainer = learn::default_trainer(learn::xgb_params{.rounds = 100});
    auto run = [&](std::span<const learn::sample> src, const char* tag) {
      const auto file = tmp / (std::to_string(fnv(g)) + tag + ".jsonl");
      std::filesystem::remove(file);
      learn::replay_runner rr(own);
      return learn::autotune(t, rr, file, src, trainer, o);
    };
    const auto plain = run({}, "-plain");
    const auto transfer = run(source, "-transfer");
    const double speedup = best_base / plain.best_so_far().back();
    const auto t95 = trials_to(plain.best_so_far(), best_base, 0.95);
    const auto t95s = trials_to(transfer.best_so_far(), best_base, 0.95);
    // random order: expected position of the first of the m strategies that reach 95 % of it
    std::size_t good = 0;
    std::set<std::string> seen;
    for (auto i : idx)
      if (seen.insert(samples[i].key).second && best_base / samples[i].measured >= 0.95 * speedup) ++good;
    const double random_expect = static_cast<double>(keys.size() + 1) / static_cast<double>(good + 1);
    std::printf("   %-72s %5zu %8.2f ms %8.2f ms %7.2fx %8zu %8zu %8.1f\n", g.c_str(), keys.size(), best_base * 1e3,
                plain.best_so_far().back() * 1e3, speedup, t95, t95s, random_expect);
    sum_t += static_cast<double>(t95);
    sum_ts += static_cast<double>(t95s);
    sum_r += random_expect;
    ++cases;
  }
  std::filesystem::remove_all(tmp);
  if (cases > 0)
    std::printf("   mean trials to 95 %% of the final speedup over %zu cases: %.1f without source records, %.1f with (ratio %.2f), random order %.1f\n",
                cases, sum_t / static_cast<double>(cases), sum_ts / static_cast<double>(cases), sum_ts / std::max(sum_t, 1.0),
                sum_r / static_cast<double>(cases));
  return 0;
}
