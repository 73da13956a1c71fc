// autosync/learn/dataset.hpp — trial records joined into training rows for the correction.
//
//   trial_record ──make_sample──> sample{row, autosync, analytical, measured, group, key}
//
// * measured   the median of the record's iteration_s (the maxima over the ranks): the median
//              of a handful of iterations shrugs off one slow outlier.
// * analytical the recorded strategy's iteration as the executor runs it (features::executor:
//              max(cost::estimate, cost::serial_replay)) for the recorded model and cluster,
//              with the model's FLOPs scaled by the run's settings.compute_scale (the run slept
//              backward_flops / device_flops x compute_scale per tensor; 0 simulated no
//              compute, so the analytical iteration is then communication only). This is the
//              same quantity the run measured, so the target
//                y = log(measured / analytical)
//              is the analytical model's error alone.
// * row        cost::compute_features on the same (scaled model, cluster, strategy).
// * group      the ranking group: records of the same model, scale, cluster, ranks, ranks per
//              node and compute scale compete with each other; pairwise accuracy and rank
//              correlation are computed within groups (learn/metrics.hpp).
// * key        the strategy's JSON without its name: the same strategy run twice has one key.
// Records of a run that overrode the executor's packing (`autosync run --pack always|never`:
// settings.pack) measured another executor than the one the correction serves, which the
// analytical model does not tell apart: make_samples leaves them out (and counts them).
// learn/matrix.hpp turns samples into the matrix and targets XGBoost trains on.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/features.hpp>
#include <autosync/error.hpp>
#include <autosync/io/json.hpp>
#include <autosync/learn/matrix.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/model.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace autosync::learn {

struct sample {
  cost::feature_row row{};
  cost::autosync_row autosync{};
  double analytical = 0.0;  // predicted iteration as the executor runs it (features::executor), seconds (compute scaled as the run did)
  double measured = 0.0;    // median measured iteration, seconds
  std::string group;        // ranking group (see the header comment)
  std::string key;          // the strategy without its name
  [[nodiscard]] double target() const { return std::log(measured / analytical); }
};

// The model as `autosync run --compute-scale X` simulates its compute on cluster c: on every
// rank a forward of forward_flops / device_flops x X, then each tensor's backward_flops /
// device_flops x X in ready order; the iteration waits for the slowest worker node (the least
// device_flops). X = 0 simulates none. The timeline gets exactly those times:
//   X = 0                       FLOPs x 0, without layers or a profile: no compute;
//   no worker's device described  FLOPs x X, without layers or a profile: the timeline prices FLOPs
//                                 at each node's device_flops (the trial records' testbeds);
//   else                        a measured profile of those times (a described device prices FLOPs
//                                 at its matrix rate and layers on its roofline, neither of which
//                                 the run sleeps).
// Throws autosync::error naming "compute_scale" when X is not a finite number >= 0, when X > 0 on
// a cluster whose workers state no device_flops, or when the times come out beyond the model's
// limits (1e6 s).
[[nodiscard]] inline model_spec scaled_compute(model_spec m, const cluster_spec& c, double compute_scale) {
  if (!(compute_scale >= 0.0) || !std::isfinite(compute_scale)) throw error("compute_scale", "must be a finite number >= 0");
  m.layers.clear();
  m.measured_forward = 0.0;
  m.measured_backward = 0.0;
  for (auto& t : m.tensors) t.ready_time = -1.0;
  double flops = 0.0;  // the slowest worker's device_flops
  bool described = false;
  for (const auto& n : c.nodes) {
    if (n.server_only || n.devices < 1) continue;
    flops = flops > 0.0 ? std::min(flops, n.device_flops) : n.device_flops;
    described = described || n.compute.described();
  }
  if (compute_scale > 0.0 && !(flops > 0.0))
    throw error("compute_scale", "cluster '" + c.name + "' states no device_flops: there is no compute to simulate");
  auto too_long = [&](double seconds) {
    if (seconds < 1e6) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%g simulates %g s of compute: beyond the model's limit of 1e6 s", compute_scale, seconds);
    throw error("compute_scale", buf);
  };
  if (compute_scale == 0.0 || !described) {
    too_long(m.forward_flops * compute_scale / (flops > 0.0 ? flops : 1.0));
    m.forward_flops *= compute_scale;
    double backward = 0.0;
    for (auto& t : m.tensors) {
      t.backward_flops *= compute_scale;
      backward += t.backward_flops / (flops > 0.0 ? flops : 1.0);
    }
    too_long(backward);
    return m;
  }
  const double per_flop = compute_scale / flops;
  m.measured_forward = m.forward_flops * per_flop;
  double t = 0.0;
  for (const auto i : m.backward_order()) {
    t += m.tensors[i].backward_flops * per_flop;
    m.tensors[i].ready_time = t;
  }
  too_long(m.measured_forward);
  too_long(t);
  if (t > 0.0) {
    m.measured_backward = t;
  } else {  // no backward FLOPs: no profile (it needs a backward); the forward is priced from its FLOPs x X
    for (auto& x : m.tensors) x.ready_time = -1.0;
    m.measured_forward = 0.0;
    m.forward_flops *= compute_scale;
  }
  return m;
}

[[nodiscard]] inline double median_iteration(const trial_record& r) {
  std::vector<double> v;
  v.reserve(r.iterations.size());
  for (const auto& it : r.iterations) v.push_back(it.iteration);
  if (v.empty()) throw error("iterations", "a record needs at least one measured iteration");
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The ranking group of a record's run (model, scale, cluster, ranks, layout, compute scale);
// the scales as the shortest text that reads back as the same double (%g's six digits filed
// scales 0.07337 and 0.073370004 together).
[[nodiscard]] inline std::string group_of(const trial_record& r) {
  return (r.model.zoo.empty() ? r.model.spec.name : r.model.zoo) + "@" + r.cluster.name + "|x" + number_text(r.model.scale) + "|" +
         std::to_string(r.environment.ranks) + "r/" + std::to_string(r.ranks_per_node) + "|cs" +
         number_text(r.settings.compute_scale);
}

// What the strategy does, without its name or what it was made for.
[[nodiscard]] inline std::string strategy_key(strategy_desc s) {
  s.name.clear();
  s.made_for.reset();
  return io::to_json(s).dump();
}

// One training row. Throws autosync::error when the record's times make no target (a zero
// measured or predicted time).
[[nodiscard]] inline sample make_sample(const trial_record& r) {
  const model_spec m = scaled_compute(r.model.spec, r.cluster, r.settings.compute_scale);
  const auto f = cost::compute_features(m, r.cluster, r.strategy);
  sample s;
  s.row = f.row;
  s.autosync = f.autosync;
  s.analytical = f.executor;
  s.measured = median_iteration(r);
  if (!(s.analytical > 0.0)) throw error("predicted", "the analytical iteration of strategy '" + r.strategy.name + "' is 0: no target");
  if (!(s.measured > 0.0)) throw error("iterations", "the measured iterations of strategy '" + r.strategy.name + "' are 0: no target");
  s.group = group_of(r);
  s.key = strategy_key(r.strategy);
  return s;
}

// Whether a record ran the default executor (settings.pack automatic): the rows the correction learns from.
[[nodiscard]] inline bool default_executor(const trial_record& r) noexcept { return r.settings.pack == exec::packing::automatic; }

// Where a record was read: its file and 1-based line (read_record_files).
struct record_origin {
  std::string file;
  int line = 0;
};

// Every record's row, but those of runs with another packing (default_executor; their number
// into *left_out when given); an error names the record that failed: its file and line when
// `origins` holds one per record, else its index (0-based).
[[nodiscard]] inline std::vector<sample> make_samples(std::span<const trial_record> records, std::size_t* left_out = nullptr,
                                                      std::span<const record_origin> origins = {}) {
  std::vector<sample> out;
  out.reserve(records.size());
  if (left_out) *left_out = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (!default_executor(records[i])) {
      if (left_out) ++*left_out;
      continue;
    }
    try {
      out.push_back(make_sample(records[i]));
    } catch (const error& e) {
      if (i < origins.size()) throw file_error(origins[i].file, origins[i].line, 1, e.field(), e.message());
      throw error("records[" + std::to_string(i) + "]", e.what());
    }
  }
  return out;
}

// Every record of several records files, in order. A last line cut off by a crash is skipped
// (read_options::skip_truncated_tail) and reported through `on_skipped`; any other bad line
// throws, naming the file and line. `origins` (optional) receives each record's file and line.
template <class OnSkipped>
[[nodiscard]] std::vector<trial_record> read_record_files(std::span<const std::string> files, OnSkipped&& on_skipped,
                                                          std::vector<record_origin>* origins = nullptr) {
  std::vector<trial_record> out;
  for (const auto& f : files) {
    auto r = read_records(f, read_options{.skip_truncated_tail = true});
    for (const auto& s : r.skipped) on_skipped(s);
    if (origins)
      for (const int line : r.lines) origins->push_back(record_origin{f, line});
    for (auto& x : r.records) out.push_back(std::move(x));
  }
  return out;
}

// A deterministic hold-out by strategy: about `fraction` of the strategies (FNV-1a of the
// strategy key and its ranking group), so every run of one strategy in one group falls on the
// same side and the held-out rows are strategies the model never saw.
[[nodiscard]] inline bool held_out(const sample& s, double fraction) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s.key + s.group) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return static_cast<double>(h % 10000) < fraction * 10000.0;
}

}  // namespace autosync::learn
