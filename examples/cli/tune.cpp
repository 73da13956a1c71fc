// `autosync tune`: AutoSync's autotune loop (learn::autotune) — propose, trial-run, learn, repeat.
//
//   autosync tune --model M --cluster C --records r.jsonl [--budget 200] [--runner local]
//                 [--np N] [--ranks-per-node K] [--scale X] [--iters N] [--warmup K] [--compute-scale X]
//                 [--source other.jsonl ...] [--per-round 20] [--proposals 1000] [--allow-lossy
//                 [--max-compression-ratio R] [--compressors a,b]] [--confirm 3] [--out best.json]
//     runners (learn/runners.hpp): local (mpirun ... autosync run on this machine), testbed:NAME
//     (tests/testbed/testbed.sh run --name NAME, the testbed must be up), cmd:TEMPLATE (any
//     command with the placeholders of learn/runners.hpp), replay:FILE (a recorded dataset).
//     Resumable: rerun the same command and it continues from the records file.
#include "cli.hpp"

#include <autosync/cost/corrected.hpp>
#include <autosync/cost/default_correction.hpp>
#include <autosync/learn/autotune.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/learn/runners.hpp>
#include <autosync/learn/train.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace autosync_cli {
namespace {

struct tune_opts {
  std::string model = "resnet50", cluster, records, runner = "local", out;
  std::vector<std::string> source;
  double scale = 1.0, compute_scale = 0.0;
  int np = 2, ranks_per_node = 0, iters = 5, warmup = 2;
  std::size_t budget = 200, per_round = 20, proposals = 1000;
  std::uint64_t seed = 1;
  bool allow_lossy = false;
  double max_ratio = 0.0;                // --max-compression-ratio (0: no limit)
  std::vector<std::string> compressors;  // --compressors a,b: the lossy ones allowed
  std::size_t confirm = 3;
};

std::string msec(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

std::vector<learn::trial_record> read_all(const std::vector<std::string>& files, std::vector<learn::record_origin>* origins = nullptr) {
  return learn::read_record_files(
      files, [](const learn::skipped_line& s) { std::cerr << "autosync: warning: skipped a truncated last line: " << s.message << "\n"; },
      origins);
}

// This program's path, for the runners that start `autosync run`.
std::string self_program(const char* argv0) {
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
  to.lossy = lossy_budget_of(o.allow_lossy, o.max_ratio, o.compressors, t.cluster);
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
  if (!r.best)
    throw error("--runner", "no trial ran: runner '" + o.runner + "' measured none of the proposals (a replay file of another "
                            "model, cluster or layout?)" + (o.out.empty() ? "" : "; nothing written to '" + o.out + "'"));
  const double best = r.best_measured;
  std::cout << "best measured: " << r.best->strategy.name << " " << msec(best)
            << (r.confirmations.empty() ? "" : " (upper median of its runs)") << "\n";
  if (r.best_baseline > 0.0)
    std::cout << "best measured baseline: " << r.best_baseline_name << " " << msec(r.best_baseline) << "  (speedup " << r.best_baseline / best
              << "x)\n";
  if (!o.out.empty()) {
    auto s = r.best->strategy;
    s.made_for = made_for_of(t.cluster, t.ranks, t.ranks_per_node);  // what it was measured on
    std::ofstream f(o.out, std::ios::binary);
    f << io::to_json(s).dump(1) << "\n";
    f.close();
    if (!f) throw error("--out", "cannot write '" + o.out + "'");
    std::cout << "wrote " << o.out << "\n";
  }
  return 0;
}

int run_tune(const tune_opts& o, const char* argv0) {
  if (o.records.empty()) throw error("--records", "give the records file the trials are appended to (and resumed from)");
  if (!o.out.empty()) check_writable(o.out, "--out");  // fail now, not after the trials
  if (o.runner == "testbed:" || o.runner == "cmd:" || o.runner == "replay:")
    throw error("--runner", "'" + o.runner + "' needs its argument (testbed:NAME, cmd:TEMPLATE, replay:FILE)");
  if (o.np < 1) throw error("--np", "must be >= 1");
  if (!(o.compute_scale >= 0.0) || !std::isfinite(o.compute_scale)) throw error("--compute-scale", "must be a finite number >= 0");
  learn::tune_target t;
  t.model = looks_like_file(o.model) ? learn::model_source::inline_model(io::load_model_file(o.model))
                                     : learn::model_source::from_zoo(o.model, o.scale);
  if (looks_like_file(o.model) && o.scale != 1.0) throw error("--scale", "applies to zoo models only");
  t.cluster = o.cluster.empty() ? zoo::make_cluster("local-" + std::to_string(o.np)) : load_cluster(o.cluster);
  t.ranks = o.np;
  if (o.np > t.cluster.world_size())
    throw error("--np", std::to_string(o.np) + " ranks do not fit cluster '" + t.cluster.name + "' of " +
                            std::to_string(t.cluster.world_size()) + " devices");
  t.ranks_per_node = o.ranks_per_node > 0 ? o.ranks_per_node : (t.cluster.world_size() == o.np ? t.cluster.max_devices_per_node() : o.np);
  if (o.np % t.ranks_per_node != 0) throw error("--ranks-per-node", "must divide --np");
  t.settings = {o.warmup, o.compute_scale, o.seed};
  t.iterations = o.iters;
  (void)lossy_budget_of(o.allow_lossy, o.max_ratio, o.compressors, t.cluster);  // a bad budget fails before anything is printed or run
  std::vector<learn::sample> source;
  if (!o.source.empty()) {
    const auto g = t.group();
    std::vector<learn::trial_record> recs;
    std::vector<learn::record_origin> origins;
    try {
      recs = read_all(o.source, &origins);
    } catch (const error& e) {
      throw error("--source", e.what());
    }
    for (const auto& s : learn::make_samples(recs, nullptr, origins))
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
    std::vector<learn::trial_record> recs;
    try {
      recs = read_all({o.runner.substr(7)});
    } catch (const error& e) {
      throw error("--runner", e.what());
    }
    learn::replay_runner r(std::move(recs));
    return tune_with(r, t, o, source);
  }
  throw error("--runner", "unknown runner '" + o.runner + "': local, testbed:NAME, cmd:TEMPLATE or replay:FILE");
}

}  // namespace

subcommand add_tune(CLI::App& app) {
  auto to = std::make_shared<tune_opts>();
  auto* sub = app.add_subcommand("tune", "autotune: propose, trial-run, learn, repeat (AutoSync's loop)");
  sub->add_option("--model", to->model, "zoo model name or model JSON file")->capture_default_str();
  sub->add_option("--cluster", to->cluster, "cluster preset name or cluster JSON file (default: local-<np>)");
  sub->add_option("--records", to->records, "records file: trials are appended to it and resumed from it")->required();
  sub->add_option("--budget", to->budget, "trials in all")->check(whole_number(1, 1'000'000))->capture_default_str();
  sub->add_option("--runner", to->runner, "local | testbed:NAME | cmd:TEMPLATE | replay:FILE")->capture_default_str();
  sub->add_option("--np", to->np, "ranks per trial")->check(whole_number(1, 1'000'000))->capture_default_str();
  sub->add_option("--ranks-per-node", to->ranks_per_node, "ranks per node (default: from the cluster)")->check(whole_number(1, 1'000'000));
  sub->add_option("--scale", to->scale, "scale a zoo model (zoo::make_model_scaled)")->capture_default_str();
  sub->add_option("--iters", to->iters, "measured iterations per trial")->check(whole_number(1, 1'000'000))->capture_default_str();
  sub->add_option("--warmup", to->warmup, "warm-up iterations per trial")->check(whole_number(0, 1'000'000))->capture_default_str();
  sub->add_option("--compute-scale", to->compute_scale, "simulated compute, as in `autosync run`")->capture_default_str();
  sub->add_option("--source", to->source, "records of other models/clusters to learn from too (transfer)")->expected(1, -1);
  sub->add_option("--per-round", to->per_round, "trials per round")->check(whole_number(1, 1'000'000))->capture_default_str();
  sub->add_option("--proposals", to->proposals, "sampled candidates per round")->check(whole_number(1, 100'000'000))->capture_default_str();
  sub->add_option("--seed", to->seed, "seed of the proposals and of the trials' gradients")->check(whole_number())->capture_default_str();
  sub->add_option("--confirm", to->confirm, "run the best N measured strategies and the best baseline once more at the end (0: off)")
      ->check(whole_number(0, 1'000'000))
      ->capture_default_str();
  sub->add_flag("--allow-lossy", to->allow_lossy,
                "let proposals use lossy compression (fp16, bf16, int8, qsgd, nuqsgd, alq, amq, topk, randomk, powersgd)");
  add_lossy_budget(sub, to->max_ratio, to->compressors, "the proposals");
  sub->add_option("--out", to->out, "write the best measured strategy as JSON");
  return {sub, [to](program& prog) { return run_tune(*to, prog.argv[0]); }};
}

}  // namespace autosync_cli
