// Low-shot calibration judged per machine: for every case of tests/data/collectives/nccl_cases.json,
// fit the machine's constants (cost/nccl_calibrate.hpp) from k of its own measured sizes (spread
// over the log's range, cost::pick_sizes) and predict all of its sizes. Nothing is fitted on any
// other machine (the constants start from data sheets), so each figure is leave-one-machine-out.
// Shared by tests/unit/cost_nccl_lowshot.cpp (bounds) and tests/bench/nccl_lowshot.cpp (table).
#pragma once

#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/nccl_calibrate.hpp>
#include <autosync/cost/nccl_tests_log.hpp>
#include <autosync/io/nccl_tests_json.hpp>
#include <autosync/learn/collectives.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace autosync::lowshot {

inline std::string data_dir() { return std::string(AUTOSYNC_SOURCE_DIR) + "/tests/data/collectives/"; }

inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The measured points of a case (out-of-place time, seconds), sorted by size.
inline std::vector<cost::calibration_point> points(const learn::collective_case& c) {
  const auto log = io::load_nccl_tests(data_dir() + c.file);
  const auto& sec = learn::find_section(log, c.section);
  std::vector<cost::calibration_point> out;
  for (const auto& r : sec.rows) out.push_back({static_cast<double>(r.bytes), r.seconds()});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  return out;
}

// Median relative error of cluster's model over pts.
inline double error_on(const cluster_spec& cl, const cost::calibration_target& t, const std::vector<cost::calibration_point>& pts) {
  const auto f = cost::make_fabric(cl);
  std::vector<double> e;
  for (const auto& p : pts) e.push_back(std::abs(cost::predict(f, t, p.bytes) - p.seconds) / p.seconds);
  return median(e);
}

inline cost::calibration_target target_of(const learn::collective_case& c) { return {c.op, c.algorithm}; }

// The error on all of the case's sizes after fitting from k of them (k = 0: the data sheet).
inline double lowshot_error(const learn::collective_case& c, std::size_t k) {
  const auto pts = points(c);
  const auto t = target_of(c);
  if (k == 0) return error_on(c.cluster, t, pts);
  std::vector<cost::calibration_point> few;
  for (auto i : cost::pick_sizes(pts.size(), k)) few.push_back(pts[i]);
  return error_on(cost::calibrate(c.cluster, few, t).cluster, t, pts);
}

// The same case costed by the alpha-beta-gamma forms (the cluster's MPI backend): the old model.
inline double alpha_beta_error(const learn::collective_case& c) {
  auto cl = c.cluster;
  cl.backend = collective_backend::mpi;
  return error_on(cl, target_of(c), points(c));
}

}  // namespace autosync::lowshot
