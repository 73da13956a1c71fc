// `autosync sample`: strategies to try for real — random draws from the search space
// (search::sample, the one sampler `tune` proposes from too: every draw obeys the search's
// knowledge rules and validates), every
// baseline of strategy/baselines.hpp with --baselines, and the strategy search::optimize finds
// (with --seed; re-ranked by the embedded correction where `optimize` uses it by default) with --search, all for the same (scaled) model and cluster. Files:
// DIR/random-<seed>-<i>.json, DIR/baseline-<name>.json, DIR/autosync.json, and with --model-out
// the (scaled) model's JSON (for peers run on the same tensors); one path per line on stdout.
#include "cli.hpp"
#include "compute_scale.hpp"

#include <autosync/cost/corrected.hpp>
#include <autosync/cost/default_correction.hpp>
#include <autosync/io/json.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/proposals.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/search/space.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace autosync_cli {
namespace {

struct sample_opts {
  std::string model, cluster, out_dir, model_out;
  double scale = 1.0, compute_scale = 1.0;
  bool compute_scale_given = false;  // --compute-scale: compute as `run` simulates it, else the model's own
  int count = 10, max_runs = 8;
  std::uint64_t seed = 1;
  bool baselines = false, search = false, allow_lossy = false, no_correction = false;
  double max_ratio = 0.0;                // --max-compression-ratio (0: no limit)
  std::vector<std::string> compressors;  // --compressors a,b: the lossy ones allowed
};

int run_sample(const sample_opts& so) {
  if (so.out_dir.empty()) throw error("--out-dir", "is required");
  if (so.count == 0 && !so.baselines && !so.search) throw error("--count", "is 0 and neither --baselines nor --search is given: nothing to write");
  if (!(so.scale > 0.0) || !std::isfinite(so.scale)) throw error("--scale", "must be a finite number > 0");
  if (so.scale != 1.0 && looks_like_file(so.model))
    throw error("--scale", "applies to zoo models only; '" + so.model + "' is a file");
  const auto c = load_cluster(so.cluster);
  // with --compute-scale X, the model's compute as `autosync run --compute-scale X` simulates it (as `optimize --compute-scale`)
  auto loaded = looks_like_file(so.model) ? io::load_model_file(so.model) : zoo::make_model_scaled(so.model, so.scale);
  const auto m = so.compute_scale_given ? compute_as_run(std::move(loaded), c, so.compute_scale) : std::move(loaded);
  const auto budget = lossy_budget_of(so.allow_lossy, so.max_ratio, so.compressors, c);
  std::error_code ec;
  std::filesystem::create_directories(so.out_dir, ec);
  if (ec) throw error("--out-dir", "cannot create '" + so.out_dir + "': " + ec.message());
  if (!so.model_out.empty()) {  // the tensors the strategies are for, for peers that run the same tensors
    write_file(so.model_out, io::to_json_text(m), "model");
    std::cout << so.model_out << "\n";
  }
  auto emit = [&](const strategy_desc& s, const std::string& file) {
    const auto path = (std::filesystem::path(so.out_dir) / file).string();
    write_file(path, io::to_json(s).dump() + "\n", "strategy");
    std::cout << path << "\n";
  };

  search::space_options spo;
  spo.allow_lossy = so.allow_lossy;
  spo.lossy = budget;
  const search::space sp(m, c, spo);
  const auto drawn = learn::random_strategies(sp, static_cast<std::size_t>(so.count), so.seed, static_cast<std::size_t>(so.max_runs));
  for (const auto& s : drawn) emit(s, s.name + ".json");
  if (drawn.size() < static_cast<std::size_t>(so.count))
    throw error("--count", "drew only " + std::to_string(drawn.size()) + " distinct valid strategies of " + std::to_string(so.count) +
                               " for " + m.name + " on " + c.name + " (the space may be too small)");
  if (so.baselines || so.search) {
    search::options opt;
    opt.seed = so.seed;
    opt.allow_lossy = so.allow_lossy;
    opt.lossy = budget;
    // as `optimize` picks by default: re-ranked by the embedded correction where it applies
    if (so.search && !so.no_correction && corrects_by_default(c)) opt.correction = cost::corrected_evaluator{cost::default_correction{}};
    const auto r = search::optimize(m, c, opt);
    if (so.baselines)
      for (const auto& bl : r.baselines) emit(bl.strategy, "baseline-" + bl.name + ".json");
    if (so.search) emit(r.strategy, "autosync.json");
  }
  return 0;
}

}  // namespace

subcommand add_sample(CLI::App& app) {
  auto so = std::make_shared<sample_opts>();
  auto* sub = app.add_subcommand("sample", "write strategies to try: random draws from the search space, baselines, the search's pick");
  sub->add_option("--model", so->model, "zoo model name or model JSON file")->required();
  sub->add_option("--scale", so->scale, "scale a zoo model's dim 0 (as `run --scale`)")->capture_default_str();
  sub->add_option("--cluster", so->cluster, "cluster preset name or cluster JSON file")->required();
  sub->add_option("--out-dir", so->out_dir, "directory for the strategy JSON files")->required();
  sub->add_option("--model-out", so->model_out, "also write the (scaled) model as JSON: the tensors the strategies are for");
  auto* compute_scale = sub->add_option("--compute-scale", so->compute_scale,
                                        "cost compute as `run --compute-scale` simulates it: FLOPs / device_flops x this (0: no compute, "
                                        "`run`'s default; default here: the model's own compute, layers or profile)");
  sub->add_option("--count", so->count, "random strategies to draw")->check(whole_number(0, 100'000))->capture_default_str();
  sub->add_option("--seed", so->seed, "random seed (draws and search are deterministic for a seed)")->check(whole_number())->capture_default_str();
  sub->add_option("--max-runs", so->max_runs, "at most this many runs (groups of consecutive tensors) per draw")
      ->check(whole_number(1, 1'000'000))
      ->capture_default_str();
  sub->add_flag("--baselines", so->baselines, "also write every baseline strategy");
  sub->add_flag("--search", so->search, "also write the strategy the search finds (as `optimize` finds it by default)");
  sub->add_flag("--no-correction", so->no_correction, "the search's pick by the analytical model only (as `optimize --no-correction`)");
  sub->add_flag("--allow-lossy", so->allow_lossy,
                "let draws and search use lossy compression (fp16, bf16, int8, qsgd, nuqsgd, alq, amq, topk, randomk, powersgd)");
  add_lossy_budget(sub, so->max_ratio, so->compressors, "the draws and the search");
  return {sub, [so, compute_scale](program&) {
            so->compute_scale_given = compute_scale->count() > 0;
            return run_sample(*so);
          }};
}

}  // namespace autosync_cli
