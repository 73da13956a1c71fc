// `autosync explain strategy.json`: validate a strategy file against a model and cluster, show
// its groups (io/report.hpp) and cost it (cost::estimate): the predicted iteration, the lower
// bound and the bottleneck resource (search/report.hpp), and per group what its choice saves
// over the fastest one-aspect alternative, the cost model's links against the cluster graph's
// cuts (io/fabric_report.hpp); optionally draw the timeline and the cluster graph (Graphviz).
#include "cli.hpp"

#include <autosync/cost/estimate.hpp>
#include <autosync/graph.hpp>
#include <autosync/io/fabric_report.hpp>
#include <autosync/io/json.hpp>
#include <autosync/io/report.hpp>
#include <autosync/io/search_report.hpp>
#include <autosync/io/svg.hpp>
#include <autosync/search/report.hpp>

#include <iostream>
#include <memory>
#include <string>

namespace autosync_cli {
namespace {

struct explain_opts {
  model_cluster_opts in;
  std::string strategy, dot;
  bool all_groups = false, allow_lossy = false, other_cluster = false;
};

int run_explain(const explain_opts& o) {
  const auto m = load_model(o.in);
  const auto c = load_cluster(o.in.cluster);
  const auto s = io::load_strategy_file(o.strategy);
  s.validate(m, c);
  // a strategy stamped for another cluster or layout: an error, or with --other-cluster a note
  if (s.made_for) {
    try {
      check_made_for(*s.made_for, s.name, c, c.world_size(), c.max_devices_per_node());
    } catch (const error& e) {
      if (!o.other_cluster) throw error(e.field(), e.message() + " (--other-cluster: cost it here anyway)");
      std::cerr << "autosync: note: " << e.what() << "; costed on '" << c.name << "' as asked (--other-cluster)\n";
    }
  }
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = !o.in.timeline.empty()});
  std::cout << "strategy '" << s.name << "' for " << m.name << " on " << c.name << "\n";
  io::print_groups(std::cout, m, c, s, o.all_groups);
  std::cout << "\n" << io::describe_prediction(p) << "\n";
  io::print_bottleneck(std::cout, search::bottleneck(m, c, s));
  io::print_alternatives(std::cout, m, c, s, search::knowledge{search::knowledge{}.tiny_bytes, o.allow_lossy});
  io::print_fabric(std::cout, io::fabric_checks(c, s));
  if (!o.dot.empty()) {
    write_file(o.dot, graph::to_dot(c), "dot");
    std::cout << "wrote " << o.dot << "\n";
  }
  if (!o.in.timeline.empty()) {
    write_file(o.in.timeline, io::timeline_svg(m, s, p, m.name + " on " + c.name + ": " + s.name), "timeline");
    std::cout << "wrote " << o.in.timeline << "\n";
  }
  return 0;
}

}  // namespace

subcommand add_explain(CLI::App& app) {
  auto o = std::make_shared<explain_opts>();
  auto* sub = app.add_subcommand("explain", "show and cost a strategy file");
  add_model_cluster(sub, o->in);
  sub->add_option("strategy", o->strategy, "strategy JSON file")->required();
  sub->add_flag("--other-cluster", o->other_cluster,
                "cost a strategy stamped (made_for) for another cluster or layout on this one, with a note, not an error");
  sub->add_option("--dot", o->dot, "write the cluster graph (devices, switches, NICs, links) as Graphviz text");
  sub->add_flag("--all-groups", o->all_groups, "list every group on its own row");
  sub->add_flag("--allow-lossy", o->allow_lossy, "let the alternatives use lossy compression (fp16/bf16)");
  return {sub, [o](program&) { return run_explain(*o); }};
}

}  // namespace autosync_cli
