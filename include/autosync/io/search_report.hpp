// autosync/io/search_report.hpp — the search's result (search::optimize) for people and for programs.
//
//   print_result(os, m, c, r)   "Found strategy: ..." (groups, predicted iteration split into
//                               compute and exposed communication, strategies evaluated), the
//                               group table (io/report.hpp) and every baseline with its
//                               predicted time and the speedup of the found strategy
//   result_json(m, c, r)        the same as JSON: model, cluster, strategy (io/json.hpp's
//                               format), predictions, evaluated, seconds, baselines
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/io/json.hpp>
#include <autosync/io/report.hpp>
#include <autosync/model.hpp>
#include <autosync/search/optimizer.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>

namespace autosync::io {

inline void print_result(std::ostream& os, const model_spec& m, const cluster_spec& c, const search::result& r) {
  os << "\nFound strategy: " << r.strategy.groups.size() << " group(s), predicted iteration " << format_ms(r.prediction.iteration)
     << " (compute " << format_ms(r.prediction.forward + r.prediction.backward) << ", exposed communication "
     << format_ms(r.prediction.exposed) << "); " << r.evaluated << " strategies evaluated in " << format_ms(r.wall_seconds) << "\n";
  print_groups(os, m, c, r.strategy);
  os << "\n  baseline                      predicted    speedup of autosync\n";
  for (const auto& bl : r.baselines) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-28s %10s    %.2fx\n", bl.name.c_str(), format_ms(bl.prediction.iteration).c_str(),
                  bl.prediction.iteration / r.prediction.iteration);
    os << line;
  }
}

[[nodiscard]] inline nlohmann::json result_json(const model_spec& m, const cluster_spec& c, const search::result& r) {
  nlohmann::json j;
  j["model"] = m.name;
  j["cluster"] = c.name;
  j["strategy"] = to_json(r.strategy);
  j["predicted_iteration_s"] = r.prediction.iteration;
  j["predicted_exposed_s"] = r.prediction.exposed;
  j["evaluated"] = r.evaluated;
  j["seconds"] = r.wall_seconds;
  auto& b = j["baselines"] = nlohmann::json::array();
  for (const auto& bl : r.baselines)
    b.push_back({{"name", bl.name}, {"predicted_iteration_s", bl.prediction.iteration},
                 {"speedup", bl.prediction.iteration / r.prediction.iteration}});
  return j;
}

}  // namespace autosync::io
