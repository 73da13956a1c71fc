// `autosync optimize` (the default command): search the best strategy for a model on a cluster
// (search::optimize), print it next to every baseline (io/search_report.hpp), and write it as JSON,
// as a header of policy types and as a timeline picture on request. The search shows its
// progress on a terminal and is deterministic for a --seed (counted budgets, no clock). Its
// answer is the simplest strategy within --epsilon of the best score; the embedded learned
// correction re-ranks the best candidates on MPI (alpha-beta-gamma) clusters unless
// --no-correction; it was trained on such clusters, so on an NCCL cluster it is used only with
// --correction. --compute-scale X costs compute as `autosync run --compute-scale X` simulates it
// (learn::scaled_compute), in place of the model's own.
#include "cli.hpp"
#include "compute_scale.hpp"

#include <autosync/cost/corrected.hpp>
#include <autosync/cost/default_correction.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/io/compression_report.hpp>
#include <autosync/io/json.hpp>
#include <autosync/io/report.hpp>
#include <autosync/io/svg.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/io/search_report.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/strategy/emit.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <unistd.h>

namespace autosync_cli {
namespace {

struct optimize_opts {
  model_cluster_opts in;
  std::uint64_t seed = 1;
  bool json = false, allow_lossy = false, no_correction = false, force_correction = false;
  std::size_t budget = 0;
  double epsilon = search::default_epsilon, compute_scale = 1.0;
  bool compute_scale_given = false;  // --compute-scale: compute as `run` simulates it, else the model's own
  double max_ratio = 0.0;              // --max-compression-ratio (0: no limit)
  std::vector<std::string> compressors;  // --compressors a,b: the lossy ones allowed
  std::string out, header;
};

int run_optimize(const optimize_opts& o) {
  if (!(o.epsilon >= 0.0) || !std::isfinite(o.epsilon)) throw error("--epsilon", "must be a finite number >= 0");
  const auto c = load_cluster(o.in.cluster);
  // with --compute-scale X, the model's compute as `autosync run --compute-scale X` simulates it
  if (o.compute_scale_given && !o.in.recompute.empty())
    throw error("--recompute", "cannot be combined with --compute-scale: `run` simulates compute from FLOPs, not from layers");
  if (o.compute_scale_given && !o.in.precision.empty())
    throw error("--precision", "cannot be combined with --compute-scale: `run` simulates compute from FLOPs, in no precision");
  const auto m = o.compute_scale_given ? compute_as_run(load_model(o.in), c, o.compute_scale) : load_model(o.in);
  search::options opt;
  opt.seed = o.seed;
  opt.allow_lossy = o.allow_lossy;
  opt.epsilon = o.epsilon;
  opt.lossy = lossy_budget_of(o.allow_lossy, o.max_ratio, o.compressors, c);
  if (o.no_correction && o.force_correction) throw error("--correction", "cannot be given with --no-correction");
  // the embedded correction was trained on the testbed's MPI trial records (tests/data/trials):
  // on an NCCL cluster, whose executor it has never seen, it is opt-in
  const bool correct = o.force_correction || (!o.no_correction && corrects_by_default(c));
  if (correct) opt.correction = cost::corrected_evaluator{cost::default_correction{}};
  if (o.budget > 0) opt.max_evaluations = o.budget;
  const bool tty = isatty(STDERR_FILENO) != 0 && !o.json;
  if (tty) {
    opt.on_progress = [](const search::progress& p) {
      std::fprintf(stderr, "\r  searching: %7zu strategies evaluated, best %.3f ms   ", p.evaluated, p.best * 1e3);
      std::fflush(stderr);
    };
  }
  if (!o.json)
    std::cout << "autosync: optimizing " << m.name << " (" << m.tensors.size() << " tensors, " << io::human_bytes(double(m.total_bytes()))
              << ", " << name_of(m.training_precision) << ") on " << c.name << " (" << c.world_size() << " ranks, "
              << c.worker_nodes() << " nodes)\n";
  if (!o.json && !correct && !o.no_correction)
    std::cout << "  (an NCCL cluster: ranked by the analytical model; the embedded correction was trained on MPI clusters, --correction uses it)\n";
  const auto r = search::optimize(m, c, opt);
  if (tty) std::fprintf(stderr, "\r%80s\r", "");

  if (!o.out.empty()) {  // stamped with the cluster and layout it was searched for (`run` checks it)
    auto stamped = r.strategy;
    stamped.made_for = made_for_of(c);
    write_file(o.out, io::to_json(stamped).dump(2) + "\n", "strategy");
  }
  if (!o.header.empty()) write_file(o.header, emit_header(r.strategy, "autosync_strategy"), "header");
  if (!o.in.timeline.empty()) {
    const auto p = cost::estimate(m, c, r.strategy, cost::options{.timeline = true});
    write_file(o.in.timeline, io::timeline_svg(m, r.strategy, p, m.name + " on " + c.name + ": " + r.strategy.name), "timeline");
  }

  if (o.json) {
    std::cout << io::result_json(m, c, r).dump(2) << "\n";
    return 0;
  }
  io::print_result(std::cout, m, c, r);
  const auto per_group = io::compression_by_group(m, c, r.strategy);
  bool compressed = o.allow_lossy;
  for (const auto& g : per_group) compressed = compressed || g.compressor != "none";
  if (compressed) {
    std::cout << "\n";
    io::print_compression(std::cout, per_group);
  }
  if (!o.out.empty()) std::cout << "\nwrote " << o.out << "\n";
  if (!o.header.empty()) std::cout << "wrote " << o.header << "\n";
  if (!o.in.timeline.empty()) std::cout << "wrote " << o.in.timeline << "\n";
  return 0;
}

}  // namespace

subcommand add_optimize(CLI::App& app) {
  auto o = std::make_shared<optimize_opts>();
  auto* sub = app.add_subcommand("optimize", "search the best strategy (the default command)");
  add_model_cluster(sub, o->in);
  sub->add_option("--seed", o->seed, "random seed (the search is deterministic for a seed)")->check(whole_number())->capture_default_str();
  sub->add_flag("--json", o->json, "print the result as JSON");
  sub->add_option("--out", o->out, "write the found strategy as JSON");
  sub->add_option("--emit-header", o->header, "write the found strategy as a C++ header of policy types");
  sub->add_flag("--allow-lossy", o->allow_lossy, "let the search use lossy compression (fp16, bf16, int8, qsgd, nuqsgd, alq, amq, topk, randomk, powersgd)");
  add_lossy_budget(sub, o->max_ratio, o->compressors, "the search");
  sub->add_option("--budget", o->budget, "maximum number of strategies to evaluate (0: the search's own end)")
      ->check(whole_number(0, 1'000'000'000));
  sub->add_option("--epsilon", o->epsilon, "answer the simplest strategy within this relative tolerance of the best score")
      ->capture_default_str();
  sub->add_flag("--no-correction", o->no_correction, "rank by the analytical model only (no re-rank by the embedded learned correction)");
  sub->add_flag("--correction", o->force_correction,
                "re-rank by the embedded learned correction on an NCCL cluster too (by default only MPI clusters, the kind it was trained on)");
  auto* scale = sub->add_option("--compute-scale", o->compute_scale,
                                "cost compute as `autosync run --compute-scale` simulates it: FLOPs / device_flops x this (0: no "
                                "compute; default: the model's own compute, layers or profile)");
  return {sub, [o, scale](program&) {
            o->compute_scale_given = scale->count() > 0;
            return run_optimize(*o);
          }};
}

}  // namespace autosync_cli
