// autosync/io/search_report.hpp — the search's result (search::optimize) for people and for programs.
//
//   print_result(os, m, c, r)   "Found strategy: ..." (groups, predicted iteration split into
//                               compute and exposed communication, strategies evaluated), how
//                               it was chosen (epsilon, the best prediction, the correction's
//                               score), its lower bound and bottleneck (search/report.hpp), the
//                               group table (io/report.hpp), the best strategy of each other
//                               family and every baseline with its predicted time and the
//                               speedup of the found strategy
//   print_alternatives(os, m, c, s)  per group, the fastest one-aspect change and what the
//                               group's choice saves over it (`autosync explain`)
//   result_json(m, c, r)        the same as JSON: model, cluster, strategy (io/json.hpp's
//                               format), predictions, choice, bottleneck, families, evaluated,
//                               seconds, baselines
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/io/json.hpp>
#include <autosync/io/report.hpp>
#include <autosync/model.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/search/report.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <ostream>

namespace autosync::io {

// A strategy's iteration as the executor runs it: the estimate, or the serial replay where the
// executor runs parameter-server transfers one after another (search/serial.hpp) and is slower.
[[nodiscard]] inline double as_run(const model_spec& m, const cluster_spec& c, const strategy_desc& s,
                                   const cost::prediction& p) {
  return std::max(p.iteration, search::serial_replay(m, c, s).iteration);
}
[[nodiscard]] inline double as_run(const search::result& r) { return std::max(r.prediction.iteration, r.serial_iteration); }

// "lower bound 712.24 ms (forward 68.76 ms + NIC 643.48 ms); NIC-bound: 643.5 of 746.2 ms"
inline void print_bottleneck(std::ostream& os, const search::bottleneck_report& b) {
  os << "  lower bound " << format_ms(b.lower_bound) << " (forward " << format_ms(b.forward) << " + the busiest resource); "
     << search::summary(b);
  if (b.resources.size() > 1) {
    os << " (";
    for (std::size_t i = 1; i < b.resources.size(); ++i)
      os << (i > 1 ? ", " : "") << b.resources[i].resource << " " << format_ms(b.resources[i].busy);
    os << ")";
  }
  os << "\n";
}

inline void print_result(std::ostream& os, const model_spec& m, const cluster_spec& c, const search::result& r) {
  os << "\nFound strategy: " << r.strategy.groups.size() << " group(s), predicted iteration " << format_ms(r.prediction.iteration)
     << " (compute " << format_ms(r.prediction.forward + r.prediction.backward) << ", exposed communication "
     << format_ms(r.prediction.exposed) << "); " << r.evaluated << " strategies evaluated in " << format_ms(r.wall_seconds) << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  the simplest strategy within epsilon = %.1f %% of the best, %s as the executor runs it (the estimate's fastest: %s)\n",
                r.epsilon * 100.0, format_ms(r.reference).c_str(), format_ms(r.best_prediction).c_str());
  os << line;
  if (r.reranked) {
    std::snprintf(line, sizeof line,
                  "  re-ranked by the learned correction: score %s (correction x%.3f and its uncertainty term; scores within %.1f %% "
                  "of the best count as equal)\n",
                  format_ms(r.score).c_str(), std::exp(r.log_factor), r.tolerance * 100.0);
    os << line;
  }
  if (r.serial_iteration > r.prediction.iteration * (1.0 + 1e-9))
    os << "  one bucket at a time, as the executor runs it: " << format_ms(r.serial_iteration) << "\n";
  print_bottleneck(os, search::bottleneck(m, c, r.strategy));
  print_groups(os, m, c, r.strategy);
  // every comparison as the executor runs each strategy (search/serial.hpp: parameter-server
  // transfers one after another), the way the pick itself was scored
  const double mine = as_run(r);
  const auto own = search::family_of(m, r.strategy);
  bool header = false;
  for (const auto& f : r.families) {
    if (f.kind == own) continue;
    if (!header) os << "\n  best of each other family      predicted      as run    speedup of autosync\n";
    header = true;
    const double t = as_run(m, c, f.strategy, f.prediction);
    std::snprintf(line, sizeof line, "  %-28s %10s  %10s    %.2fx   (%zu group(s))\n", std::string(search::name_of(f.kind)).c_str(),
                  format_ms(f.prediction.iteration).c_str(), format_ms(t).c_str(), t / mine, f.strategy.groups.size());
    os << line;
  }
  os << "\n  baseline                      predicted      as run    speedup of autosync\n";
  for (const auto& bl : r.baselines) {
    const double t = as_run(m, c, bl.strategy, bl.prediction);
    std::snprintf(line, sizeof line, "  %-28s %10s  %10s    %.2fx\n", bl.name.c_str(), format_ms(bl.prediction.iteration).c_str(),
                  format_ms(t).c_str(), t / mine);
    os << line;
  }
}

// Per group: what the choice saves over the fastest one-aspect change (search::alternatives).
inline void print_alternatives(std::ostream& os, const model_spec& m, const cluster_spec& c, const strategy_desc& s,
                               const search::knowledge& rules = {}) {
  const auto alts = search::alternatives(m, c, s, rules);
  os << "\n  group  saves over the next alternative   (the alternative: one aspect changed, the iteration with it as the executor runs it)\n";
  for (const auto& a : alts) {
    char line[512];
    if (!a.found) {
      std::snprintf(line, sizeof line, "  #%-5zu (no other choice allowed)\n", a.group);
    } else {
      std::snprintf(line, sizeof line, "  #%-5zu %9s   %s -> %s   %s\n", a.group, format_ms(a.saving).c_str(),
                    std::string(search::name_of(a.changed)).c_str(), describe_group(a.alternative).c_str(),
                    format_ms(a.iteration).c_str());
    }
    os << line;
  }
  os << "  (a negative saving: the alternative is predicted faster)\n";
}

[[nodiscard]] inline nlohmann::json result_json(const model_spec& m, const cluster_spec& c, const search::result& r) {
  nlohmann::json j;
  j["model"] = m.name;
  j["cluster"] = c.name;
  j["strategy"] = to_json(r.strategy);
  j["predicted_iteration_s"] = r.prediction.iteration;
  j["predicted_exposed_s"] = r.prediction.exposed;
  j["best_predicted_iteration_s"] = r.best_prediction;
  j["reference_iteration_s"] = r.reference;
  j["epsilon"] = r.epsilon;
  j["tolerance"] = r.tolerance;
  j["score_s"] = r.score;
  j["reranked"] = r.reranked;
  j["log_factor"] = r.log_factor;
  j["serial_iteration_s"] = r.serial_iteration;
  j["lower_bound_s"] = r.prediction.lower_bound;
  const auto b = search::bottleneck(m, c, r.strategy);
  j["bottleneck"] = {{"resource", b.bottleneck().resource}, {"busy_s", b.bottleneck().busy}, {"summary", search::summary(b)}};
  auto& fam = j["families"] = nlohmann::json::array();
  for (const auto& f : r.families)
    fam.push_back({{"family", std::string(search::name_of(f.kind))}, {"predicted_iteration_s", f.prediction.iteration},
                   {"as_run_iteration_s", as_run(m, c, f.strategy, f.prediction)},
                   {"groups", f.strategy.groups.size()}, {"strategy", to_json(f.strategy)}});
  j["evaluated"] = r.evaluated;
  j["work"] = r.work;
  j["seconds"] = r.wall_seconds;
  auto& bls = j["baselines"] = nlohmann::json::array();
  for (const auto& bl : r.baselines)
    bls.push_back({{"name", bl.name}, {"predicted_iteration_s", bl.prediction.iteration},
                   {"as_run_iteration_s", as_run(m, c, bl.strategy, bl.prediction)},
                   {"speedup", as_run(m, c, bl.strategy, bl.prediction) / as_run(r)}});
  return j;
}

}  // namespace autosync::io
