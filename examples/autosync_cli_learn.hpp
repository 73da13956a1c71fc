// `autosync learn` and `autosync tune`: the learned corrections from trial records and from
// nccl-tests logs, and AutoSync's autotune loop (include/autosync/learn/). Part of the
// `autosync` command (autosync_cli.cpp registers the subcommands).
//
//   autosync learn --records a.jsonl [b.jsonl ...] [--holdout 0.3] [--out model.json]
//                  [--emit-header default_model.hpp --name default_model] [--rounds N] [--depth D] [--eta E]
//     joins the records into feature rows, reports on held-out strategies (never the training
//     ones) the pairwise ranking accuracy and Spearman correlation of the analytical model,
//     the analytical model + the learned correction, and AutoSync's linear model on its 12
//     features; then trains on every record and writes the XGBoost JSON model and/or the
//     embedded-model header (gbt::emit_header).
//
//   autosync learn --collectives cases.json [--folds 5] [--out model.json]
//                  [--emit-header default_collective_model.hpp --name ...] [--rounds N] [--depth D] [--eta E]
//     the collective-level correction (learn/collectives.hpp): one row per size of every
//     nccl-tests log the manifest pairs with a cluster; reports per case the median relative
//     error of the analytical time and of the corrected one on held-out rows (each case left
//     out whole, and k folds over rows), then trains on every row and writes the model.
//
//   autosync tune --model M --cluster C --records r.jsonl [--budget 200] [--runner local]
//                 [--np N] [--ranks-per-node K] [--scale X] [--iters N] [--warmup K] [--compute-scale X]
//                 [--source other.jsonl ...] [--per-round 20] [--proposals 1000] [--allow-lossy] [--confirm 3] [--out best.json]
//     runners: local (mpirun ... autosync run on this machine), testbed:NAME (tests/testbed/
//     testbed.sh run --name NAME, the testbed must be up), cmd:TEMPLATE (any command with the
//     placeholders of learn/runners.hpp), replay:FILE (a recorded dataset).
//     Resumable: rerun the same command and it continues from the records file.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/corrected.hpp>
#include <autosync/cost/default_correction.hpp>
#include <autosync/error.hpp>
#include <autosync/gbt/emit.hpp>
#include <autosync/gbt/xgboost.hpp>
#include <autosync/io/json.hpp>
#include <autosync/learn/autotune.hpp>
#include <autosync/learn/collectives.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/linear.hpp>
#include <autosync/learn/metrics.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/learn/runners.hpp>
#include <autosync/learn/train.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace autosync_cli_learn {

using namespace autosync;

struct learn_opts {
  std::vector<std::string> records;
  std::string collectives;           // a manifest (learn/collectives.hpp) instead of records
  double holdout = 0.3;
  std::size_t folds = 5;
  std::string out, header, name;     // name "": default_model / default_collective_model
  int rounds = 0, depth = 0;         // 0: the default of the kind of data (see autosync_cli.cpp)
  double eta = 0.0;
};

struct tune_opts {
  std::string model = "resnet50", cluster, records, runner = "local", out;
  std::vector<std::string> source;
  double scale = 1.0, compute_scale = 0.0;
  int np = 2, ranks_per_node = 0, iters = 5, warmup = 2;
  std::size_t budget = 200, per_round = 20, proposals = 1000;
  std::uint64_t seed = 1;
  bool allow_lossy = false;
  std::size_t confirm = 3;
};

inline std::string msec(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

inline bool is_file_arg(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".json") || std::filesystem::exists(s);
}

inline std::vector<learn::trial_record> read_all(const std::vector<std::string>& files) {
  std::vector<learn::trial_record> out;
  for (const auto& f : files) {
    auto r = learn::read_records(f, learn::read_options{.skip_truncated_tail = true});
    for (const auto& s : r.skipped) std::cerr << "autosync: warning: skipped a truncated last line: " << s.message << "\n";
    for (auto& x : r.records) out.push_back(std::move(x));
  }
  return out;
}

// Deterministic hold-out by strategy: FNV-1a of the strategy key, so repeats of one strategy
// are on the same side.
inline bool held_out(const learn::sample& s, double fraction) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s.key + s.group) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return static_cast<double>(h % 10000) < fraction * 10000.0;
}

struct ranking {
  double pairwise = NAN, spearman = NAN;
};
inline ranking rank_of(const std::vector<double>& pred, const std::vector<double>& meas, const std::vector<std::string>& groups) {
  return {learn::pairwise_accuracy(pred, meas, groups), learn::grouped_spearman(pred, meas, groups)};
}

#if defined(AUTOSYNC_HAS_XGBOOST)
// The parameters: the kind's defaults, overridden by the flags given.
inline learn::xgb_params params_of(const learn_opts& o, learn::xgb_params p) {
  if (o.rounds != 0) p.rounds = o.rounds;
  if (o.depth != 0) p.max_depth = o.depth;
  if (o.eta != 0.0) p.eta = o.eta;
  return p;
}

// Writes the model: XGBoost JSON (--out) and/or the embedded-model header (--emit-header) with
// `preamble` (comment lines) above gbt::emit_header's text.
inline void write_model(const learn_opts& o, const learn::xgb_booster& b, const std::string& name, const std::string& preamble,
                        const std::string& what) {
  if (!o.out.empty()) {
    b.save_json(o.out);
    std::cout << "wrote " << o.out << " (XGBoost JSON, " << what << ")\n";
  }
  if (!o.header.empty()) {
    const auto f = gbt::parse_xgboost_json(b.json(), "<trained model>");
    std::ofstream h(o.header, std::ios::binary);
    h << preamble << gbt::emit_header(f, name);
    h.close();
    if (!h) throw error("--emit-header", "cannot write '" + o.header + "'");
    std::cout << "wrote " << o.header << " (constexpr forest '" << name << "')\n";
  }
}

// "(XGBoost, 100 rounds, depth 3, eta 0.15)" for the header comment.
inline std::string trained_with(const learn::xgb_params& p) {
  std::ostringstream s;
  s << "(XGBoost, " << p.rounds << " rounds, depth " << p.max_depth << ", eta " << p.eta << ")";
  return s.str();
}

// The header comment's last lines: how to regenerate it, with the parameters that differ from
// the kind's defaults.
inline std::string regenerate_lines(const std::string& args, const learn::xgb_params& p, const learn::xgb_params& d) {
  std::ostringstream s;
  s << "// Regenerate (from the repository root, after building the autosync command):\n//   build/bin/autosync learn " << args;
  if (p.rounds != d.rounds) s << " --rounds " << p.rounds;
  if (p.max_depth != d.max_depth) s << " --depth " << p.max_depth;
  if (p.eta != d.eta) s << " --eta " << p.eta;
  s << "\n";
  return s.str();
}
#endif

[[noreturn]] inline void needs_xgboost() {
  throw error("`autosync learn` trains with XGBoost: this autosync was built without it (install Debian's libxgboost-dev, "
              "`cmake/setup-deps.sh --xgboost`, and rebuild)");
}

inline int cmd_learn_collectives(const learn_opts& o) {
  const auto m = learn::load_collective_cases(o.collectives);
  const auto rows = learn::load_collective_samples(m);
  std::cout << "autosync learn: " << rows.size() << " rows of " << m.cases.size() << " nccl-tests cases ("
            << std::filesystem::path(o.collectives).filename().string() << ")\n";
  if (rows.size() < 2) throw error("--collectives", "too few rows to train on (" + std::to_string(rows.size()) + ")");
  if (o.folds < 2 || o.folds > rows.size()) throw error("--folds", "must be in [2, rows]");
#if defined(AUTOSYNC_HAS_XGBOOST)
  const auto defaults = learn::collective_xgb_params();
  const auto p = params_of(o, defaults);
  const auto y_loco = learn::leave_one_case_out(rows, p), y_kf = learn::k_fold(rows, o.folds, p);
  auto loco = learn::median_errors(m, rows, y_loco), kf = learn::median_errors(m, rows, y_kf);
  loco.push_back(learn::overall_errors(rows, y_loco));
  kf.push_back(learn::overall_errors(rows, y_kf));
  std::printf("held-out median relative error      rows  analytical  case left out  %zu-fold\n", o.folds);
  for (std::size_t c = 0; c < loco.size(); ++c)
    std::printf("  %-34s %4zu  %10.3f  %13.3f  %6.3f\n", loco[c].label.c_str(), loco[c].rows, loco[c].analytical, loco[c].corrected,
                kf[c].corrected);
  const auto b = learn::train_collective_booster(rows, p);
  std::ostringstream pre;
  pre << "// The collective-level learned correction of cost/collective_features.hpp: y = log(measured /\n"
         "// analytical) of one collective from cost::collective_features, trained by `autosync learn`\n"
         "// "
      << trained_with(p) << " on " << rows.size() << " rows of the nccl-tests logs of "
      << std::filesystem::path(o.collectives).filename().string() << ":\n";
  for (const auto& c : m.cases)
    pre << "//   " << c.file << (c.section.empty() ? "" : " " + c.section) << "  (" << name_of(c.algorithm) << ", " << c.cluster.name << ")\n";
  pre << regenerate_lines("--collectives tests/data/collectives/cases.json --emit-header include/autosync/gbt/default_collective_model.hpp "
                          "--name autosync::gbt::default_collective_model",
                          p, defaults);
  write_model(o, b, o.name.empty() ? "default_collective_model" : o.name, pre.str(), std::to_string(p.rounds) + " trees on " +
              std::to_string(rows.size()) + " rows");
  return 0;
#else
  needs_xgboost();
#endif
}

inline int cmd_learn(const learn_opts& o) {
  if (!o.collectives.empty()) return cmd_learn_collectives(o);
  if (o.records.empty()) throw error("--records", "give at least one records file (or --collectives MANIFEST)");
  if (!(o.holdout >= 0.0 && o.holdout < 1.0)) throw error("--holdout", "must be in [0, 1)");
  const auto recs = read_all(o.records);
  const auto samples = learn::make_samples(recs);
  std::vector<learn::sample> train, test;
  for (const auto& s : samples) (held_out(s, o.holdout) ? test : train).push_back(s);
  std::cout << "autosync learn: " << samples.size() << " records, " << train.size() << " for training, " << test.size()
            << " held out (by strategy)\n";
  if (train.size() < 2) throw error("--records", "too few records to train on (" + std::to_string(train.size()) + ")");
#if defined(AUTOSYNC_HAS_XGBOOST)
  const learn::xgb_params defaults{};
  const auto p = params_of(o, defaults);
  if (!test.empty()) {
    const auto b = learn::train_booster(train, p);
    const auto lin = learn::fit_linear(train);
    std::vector<double> meas, ana, cor, linp;
    std::vector<std::string> groups;
    for (const auto& s : test) {
      meas.push_back(s.measured);
      ana.push_back(s.analytical);
      cor.push_back(s.analytical * std::exp(static_cast<double>(b.predict(s.row))));
      linp.push_back(lin.predict(s.autosync));
      groups.push_back(s.group);
    }
    const auto a = rank_of(ana, meas, groups), c = rank_of(cor, meas, groups), l = rank_of(linp, meas, groups);
    std::printf("held-out ranking            pairwise   Spearman\n");
    std::printf("  analytical                 %6.3f     %6.3f\n", a.pairwise, a.spearman);
    std::printf("  analytical + GBT           %6.3f     %6.3f\n", c.pairwise, c.spearman);
    std::printf("  linear, 12 AutoSync feat.  %6.3f     %6.3f\n", l.pairwise, l.spearman);
  }
  const auto all = learn::train_booster(samples, p);
  std::ostringstream pre;
  pre << "// The learned correction of cost/corrected.hpp: y = log(measured / analytical iteration) from\n"
         "// cost::compute_features, trained by `autosync learn` "
      << trained_with(p) << " on " << samples.size() << " trial records of\n//";
  for (const auto& r : o.records) pre << " " << std::filesystem::path(r).filename().string();
  pre << "\n"
      << regenerate_lines("--records tests/data/trials/*.jsonl --emit-header include/autosync/gbt/default_model.hpp --name autosync::gbt::default_model",
                          p, defaults);
  write_model(o, all, o.name.empty() ? "default_model" : o.name, pre.str(), std::to_string(p.rounds) + " trees on " +
              std::to_string(samples.size()) + " records");
  return 0;
#else
  needs_xgboost();
#endif
}

inline std::string self_program(const char* argv0) {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0) : p.string();
}

template <class R>
int tune_with(R& runner, const learn::tune_target& t, const tune_opts& o, const std::vector<learn::sample>& source) {
  learn::tune_options to;
  to.budget = o.budget;
  to.per_round = o.per_round;
  to.proposals = o.proposals;
  to.seed = o.seed;
  to.allow_lossy = o.allow_lossy;
  to.confirm = o.confirm;
  to.initial = cost::corrected_evaluator(cost::default_correction{});  // the embedded model until the loop can fit
  to.on_progress = [&](const learn::tune_progress& pg) {
    if (pg.phase == "resume" && pg.trials > 0)
      std::cout << "resumed " << pg.trials << " trial(s) from " << o.records << ", best " << msec(pg.best_measured) << " ("
                << pg.best_strategy << ")\n";
    else if (pg.phase == "fit")
      std::cout << "round " << pg.round << ": ranking " << (pg.corrected ? "with a learned correction" : "analytically") << "\n";
    else if (pg.phase == "trial") {
      char line[256];
      std::snprintf(line, sizeof line, "  [%4zu/%zu] %-28s measured %12s  predicted %12s  best %12s\n", pg.trials, pg.budget,
                    pg.last_strategy.c_str(), msec(pg.last_measured).c_str(), msec(pg.last_predicted).c_str(),
                    msec(pg.best_measured).c_str());
      std::cout << line << std::flush;
    } else if (pg.phase == "confirm") {
      std::cout << "  confirm  " << pg.last_strategy << " measured " << msec(pg.last_measured) << "\n" << std::flush;
    }
  };
  auto trainer = learn::default_trainer();
  const auto r = learn::autotune(t, runner, o.records, source, trainer, to);
  std::cout << "\n" << r.trials.size() << " trial(s) (" << r.resumed << " resumed), " << r.rounds << " round(s)"
            << (r.converged ? ", converged" : "") << "\n";
  if (!r.best) return 0;
  const double best = r.best_measured;
  std::cout << "best measured: " << r.best->strategy.name << " " << msec(best)
            << (r.confirmations.empty() ? "" : " (upper median of its runs)") << "\n";
  if (r.best_baseline > 0.0)
    std::cout << "best measured baseline: " << r.best_baseline_name << " " << msec(r.best_baseline) << "  (speedup " << r.best_baseline / best
              << "x)\n";
  if (!o.out.empty()) {
    auto s = r.best->strategy;
    std::ofstream f(o.out, std::ios::binary);
    f << io::to_json(s).dump(1) << "\n";
    f.close();
    if (!f) throw error("--out", "cannot write '" + o.out + "'");
    std::cout << "wrote " << o.out << "\n";
  }
  return 0;
}

inline int cmd_tune(const tune_opts& o, const char* argv0) {
  if (o.records.empty()) throw error("--records", "give the records file the trials are appended to (and resumed from)");
  if (o.np < 1) throw error("--np", "must be >= 1");
  learn::tune_target t;
  t.model = is_file_arg(o.model) ? learn::model_source::inline_model(io::load_model_file(o.model)) : learn::model_source::from_zoo(o.model, o.scale);
  if (is_file_arg(o.model) && o.scale != 1.0) throw error("--scale", "applies to zoo models only");
  t.cluster = o.cluster.empty() ? zoo::make_cluster("local-" + std::to_string(o.np))
                                : (is_file_arg(o.cluster) ? io::load_cluster_file(o.cluster) : zoo::make_cluster(o.cluster));
  t.ranks = o.np;
  t.ranks_per_node = o.ranks_per_node > 0 ? o.ranks_per_node : (t.cluster.world_size() == o.np ? t.cluster.max_devices_per_node() : o.np);
  if (o.np % t.ranks_per_node != 0) throw error("--ranks-per-node", "must divide --np");
  t.settings = {o.warmup, o.compute_scale, o.seed};
  t.iterations = o.iters;
  std::vector<learn::sample> source;
  if (!o.source.empty()) {
    const auto g = t.group();
    for (const auto& s : learn::make_samples(read_all(o.source)))
      if (s.group != g) source.push_back(s);
    std::cout << "transfer: " << source.size() << " source record(s) join every fit\n";
  }
  std::cout << "autosync tune: " << t.model.spec.name << " on " << t.cluster.name << ", " << t.ranks << " ranks (" << t.ranks_per_node
            << " per node), budget " << o.budget << " trials, runner " << o.runner << "\n";
  const auto work = std::filesystem::path(o.records).parent_path() / (std::filesystem::path(o.records).filename().string() + ".work");
  const std::string prog = self_program(argv0);
  if (o.runner == "local") {
    auto r = learn::local_runner(work, prog);
    return tune_with(r, t, o, source);
  }
  if (o.runner.rfind("testbed:", 0) == 0) {
    const auto exe = std::filesystem::path(prog);
    auto script = exe.parent_path().parent_path().parent_path() / "tests/testbed/testbed.sh";  // build/bin/autosync in a source tree
    if (const char* env = std::getenv("AUTOSYNC_TESTBED")) script = env;
    if (!std::filesystem::exists(script))
      throw error("--runner", "testbed script not found at '" + script.string() + "' (set AUTOSYNC_TESTBED to tests/testbed/testbed.sh)");
    auto r = learn::testbed_runner(script, o.runner.substr(8), work, prog);
    return tune_with(r, t, o, source);
  }
  if (o.runner.rfind("cmd:", 0) == 0) {
    learn::command_runner r(o.runner.substr(4), work, prog);
    return tune_with(r, t, o, source);
  }
  if (o.runner.rfind("replay:", 0) == 0) {
    learn::replay_runner r(read_all({o.runner.substr(7)}));
    return tune_with(r, t, o, source);
  }
  throw error("--runner", "unknown runner '" + o.runner + "': local, testbed:NAME, cmd:TEMPLATE or replay:FILE");
}

}  // namespace autosync_cli_learn
