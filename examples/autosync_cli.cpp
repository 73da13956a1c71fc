// The `autosync` command: search a synchronization strategy for a model on a cluster, and
// explain, save or emit it.
//
//   autosync                                   optimize bert-large on p3.16xlarge-x4 (the default job)
//   autosync optimize [--model NAME|FILE] [--cluster NAME|FILE] [--seed N] [--json]
//                     [--out strategy.json] [--emit-header strategy.hpp] [--timeline timeline.svg]
//   autosync models | clusters
//   autosync explain strategy.json [--model NAME|FILE] [--cluster NAME|FILE] [--timeline t.svg]
//
// Exit codes: 0 success, 1 bad input (unknown name, malformed file: the message names the file,
// line and field), 2 usage error.
#include <autosync/cost/estimate.hpp>
#include <autosync/io/json.hpp>
#include <autosync/io/svg.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/strategy/emit.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

using namespace autosync;

bool looks_like_file(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".json") || std::filesystem::exists(s);
}

model_spec load_model(const std::string& s) { return looks_like_file(s) ? io::load_model_file(s) : zoo::make_model(s); }
cluster_spec load_cluster(const std::string& s) { return looks_like_file(s) ? io::load_cluster_file(s) : zoo::make_cluster(s); }

void write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw error(std::string("cannot open '") + path + "' to write the " + what);
  f << text;
  if (!f) throw error(std::string("cannot write the ") + what + " to '" + path + "'");
}

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}
std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  return buf;
}

std::string describe_group(const group_desc& g) {
  std::string r(name_of(g.architecture));
  if (g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded) {
    r += " ";
    r += name_of(g.topology.kind);
    if (g.topology.kind == topology_kind::hierarchical)
      r += "<" + std::string(name_of(g.topology.intra)) + "," + std::string(name_of(g.topology.inter)) + ">";
  }
  if (g.partitioner.kind == partitioner_kind::even)
    r += " even<" + std::to_string(g.partitioner.shards) + "," + std::to_string(g.partitioner.axis) + ">";
  if (g.partitioner.kind == partitioner_kind::by_bytes) r += " by_bytes<" + human_bytes(double(g.partitioner.max_bytes)) + ">";
  if (g.architecture == architecture_kind::parameter_server) {
    r += " ";
    r += name_of(g.placement.kind);
    if (g.placement.kind == placement_kind::pinned) r += "<" + std::to_string(g.placement.server) + ">";
    if (g.replication == replication_kind::local) r += " local-repl";
  }
  if (g.compression != 0) r += " " + std::string(compression_registry[g.compression].name);
  if (g.fusion.cap_bytes == unbounded_bytes) r += " fuse:all";
  else if (g.fusion.cap_bytes > 0) {
    r += " fuse:" + human_bytes(double(g.fusion.cap_bytes));
    if (g.fusion.first_cap_bytes != g.fusion.cap_bytes) r += "/first " + human_bytes(double(g.fusion.first_cap_bytes));
  }
  if (g.schedule == schedule_kind::priority) r += " priority";
  return r;
}

// The group table of a strategy: members, bytes, aspects. Many groups with the same aspects
// (the search splits runs for their fusion boundaries) are shown as one row unless `all`.
void print_groups(std::ostream& os, const model_spec& m, const cluster_spec& c, const strategy_desc& s, bool all = false) {
  const auto items = expand(m, c, s);
  struct row {
    std::string aspects;
    std::vector<std::size_t> groups;
    std::size_t items = 0;
    std::int64_t bytes = 0, wire = 0;
  };
  std::vector<row> rows;
  std::vector<std::size_t> row_of(s.groups.size());
  std::map<std::string, std::size_t> by_aspects;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    auto a = describe_group(s.groups[g]);
    if (all || !by_aspects.count(a)) {
      by_aspects[a] = rows.size();
      rows.push_back(row{a, {}, 0, 0, 0});
    }
    row_of[g] = by_aspects[a];
    rows[row_of[g]].groups.push_back(g);
  }
  for (const auto& it : items) {
    auto& r = rows[row_of[it.group]];
    r.bytes += it.bytes;
    r.wire += it.wire_bytes;
    ++r.items;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.bytes > b.bytes; });
  os << "  groups  items  gradient bytes  wire bytes   aspects\n";
  for (const auto& r : rows) {
    if (r.items == 0) continue;
    std::string gs = r.groups.size() == 1 ? "#" + std::to_string(r.groups[0]) : std::to_string(r.groups.size()) + "x";
    char line[256];
    std::snprintf(line, sizeof line, "  %6s  %5zu  %14s  %10s   ", gs.c_str(), r.items, human_bytes(double(r.bytes)).c_str(),
                  human_bytes(double(r.wire)).c_str());
    os << line << r.aspects << "\n";
  }
  if (!all && rows.size() < s.groups.size())
    os << "  (" << s.groups.size() << " groups; rows merge groups with the same aspects, \"Nx\" = N groups; "
       << "`autosync explain --all-groups` lists each)\n";
}

struct common_opts {
  bool all_groups = false;
  std::string model = "bert-large";
  std::string cluster = "p3.16xlarge-x4";
  std::string timeline;
};

int cmd_optimize(const common_opts& co, std::uint64_t seed, bool json, const std::string& out, const std::string& header,
                 bool allow_lossy, std::size_t budget) {
  const auto m = load_model(co.model);
  const auto c = load_cluster(co.cluster);
  search::options opt;
  opt.seed = seed;
  opt.allow_lossy = allow_lossy;
  if (budget > 0) opt.max_evaluations = budget;
  const bool tty = isatty(STDERR_FILENO) != 0 && !json;
  if (tty) {
    opt.on_progress = [](const search::progress& p) {
      std::fprintf(stderr, "\r  searching: %7zu strategies evaluated, best %.3f ms   ", p.evaluated, p.best * 1e3);
      std::fflush(stderr);
    };
  }
  if (!json)
    std::cout << "autosync: optimizing " << m.name << " (" << m.tensors.size() << " tensors, "
              << human_bytes(double(m.total_bytes())) << ") on " << c.name << " (" << c.world_size() << " ranks, "
              << c.worker_nodes() << " nodes)\n";
  const auto r = search::optimize(m, c, opt);
  if (tty) std::fprintf(stderr, "\r%80s\r", "");

  if (!out.empty()) write_file(out, io::to_json(r.strategy).dump(2) + "\n", "strategy");
  if (!header.empty()) write_file(header, emit_header(r.strategy, "autosync_strategy"), "header");
  if (!co.timeline.empty()) {
    const auto p = cost::estimate(m, c, r.strategy, cost::options{.timeline = true});
    write_file(co.timeline, io::timeline_svg(m, r.strategy, p, m.name + " on " + c.name + ": " + r.strategy.name), "timeline");
  }

  if (json) {
    nlohmann::json j;
    j["model"] = m.name;
    j["cluster"] = c.name;
    j["strategy"] = io::to_json(r.strategy);
    j["predicted_iteration_s"] = r.prediction.iteration;
    j["predicted_exposed_s"] = r.prediction.exposed;
    j["evaluated"] = r.evaluated;
    j["seconds"] = r.wall_seconds;
    auto& b = j["baselines"] = nlohmann::json::array();
    for (const auto& bl : r.baselines)
      b.push_back({{"name", bl.name}, {"predicted_iteration_s", bl.prediction.iteration},
                   {"speedup", bl.prediction.iteration / r.prediction.iteration}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "\nFound strategy: " << r.strategy.groups.size() << " group(s), predicted iteration " << ms(r.prediction.iteration)
            << " (compute " << ms(r.prediction.forward + r.prediction.backward) << ", exposed communication "
            << ms(r.prediction.exposed) << "); " << r.evaluated << " strategies evaluated in "
            << ms(r.wall_seconds) << "\n";
  print_groups(std::cout, m, c, r.strategy);
  std::cout << "\n  baseline                      predicted    speedup of autosync\n";
  for (const auto& bl : r.baselines) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-28s %10s    %.2fx\n", bl.name.c_str(), ms(bl.prediction.iteration).c_str(),
                  bl.prediction.iteration / r.prediction.iteration);
    std::cout << line;
  }
  if (!out.empty()) std::cout << "\nwrote " << out << "\n";
  if (!header.empty()) std::cout << "wrote " << header << "\n";
  if (!co.timeline.empty()) std::cout << "wrote " << co.timeline << "\n";
  return 0;
}

int cmd_explain(const common_opts& co, const std::string& file) {
  const auto m = load_model(co.model);
  const auto c = load_cluster(co.cluster);
  const auto s = io::load_strategy_file(file);
  s.validate(m, c);
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = !co.timeline.empty()});
  std::cout << "strategy '" << s.name << "' for " << m.name << " on " << c.name << "\n";
  print_groups(std::cout, m, c, s, co.all_groups);
  std::cout << "\npredicted iteration " << ms(p.iteration) << ": forward " << ms(p.forward) << ", backward "
            << ms(p.backward) << ", communication busy " << ms(p.communication) << ", exposed " << ms(p.exposed) << "\n";
  if (!co.timeline.empty()) {
    write_file(co.timeline, io::timeline_svg(m, s, p, m.name + " on " + c.name + ": " + s.name), "timeline");
    std::cout << "wrote " << co.timeline << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"autosync: find the best way to synchronize gradients for a model on a cluster"};
  app.require_subcommand(0, 1);
  common_opts co;
  std::uint64_t seed = 1;
  bool json = false, allow_lossy = false;
  std::size_t budget = 0;
  std::string out, header, strategy_file;

  auto add_common = [&](CLI::App* sub) {
    sub->add_option("--model", co.model, "zoo model name or model JSON file")->capture_default_str();
    sub->add_option("--cluster", co.cluster, "cluster preset name or cluster JSON file")->capture_default_str();
    sub->add_option("--timeline", co.timeline, "write the predicted iteration timeline as SVG");
  };
  auto* opt = app.add_subcommand("optimize", "search the best strategy (the default command)");
  add_common(opt);
  opt->add_option("--seed", seed, "random seed (the search is deterministic for a seed)")->capture_default_str();
  opt->add_flag("--json", json, "print the result as JSON");
  opt->add_option("--out", out, "write the found strategy as JSON");
  opt->add_option("--emit-header", header, "write the found strategy as a C++ header of policy types");
  opt->add_flag("--allow-lossy", allow_lossy, "let the search use lossy compression (fp16/bf16)");
  opt->add_option("--budget", budget, "maximum number of strategies to evaluate");
  auto* models = app.add_subcommand("models", "list the built-in models");
  auto* clusters = app.add_subcommand("clusters", "list the built-in cluster presets");
  auto* explain = app.add_subcommand("explain", "show and cost a strategy file");
  add_common(explain);
  explain->add_option("strategy", strategy_file, "strategy JSON file")->required();
  explain->add_flag("--all-groups", co.all_groups, "list every group on its own row");

  // `autosync --model x ...` means `autosync optimize --model x ...`
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0].starts_with("--") && args[0] != "--help") args.insert(args.begin(), "optimize");
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*models) {
      for (auto n : zoo::model_names()) {
        const auto m = zoo::make_model(n);
        std::printf("  %-14s %4zu tensors %14lld parameters  %10s\n", std::string(n).c_str(), m.tensors.size(),
                    static_cast<long long>(m.total_elements()), human_bytes(double(m.total_bytes())).c_str());
      }
      return 0;
    }
    if (*clusters) {
      for (auto n : zoo::cluster_names()) {
        const auto c = zoo::make_cluster(n);
        std::printf("  %-20s %3d nodes %4d ranks  %s\n", std::string(n).c_str(), static_cast<int>(c.nodes.size()), c.world_size(),
                    c.device.c_str());
      }
      return 0;
    }
    if (*explain) return cmd_explain(co, strategy_file);
    return cmd_optimize(co, seed, json, out, header, allow_lossy, budget);
  } catch (const autosync::error& e) {
    std::cerr << "autosync: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "autosync: error: " << e.what() << "\n";
    return 1;
  }
}
