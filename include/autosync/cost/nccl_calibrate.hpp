// autosync/cost/nccl_calibrate.hpp — fit a machine's few constants from a few measured sizes.
//
// The structure of cost/nccl_model.hpp stays fixed; calibration fits only what a data sheet
// cannot say about a particular machine:
//
//   bandwidth_scale    the links' effective rate over their stated one (every node's intra and
//                      NIC bandwidth times this): cables, switches, PCIe placement, firmware
//   latency_scale      NCCL's base and per-hop latencies times this (cluster_spec::latency_scale):
//                      the small-message floor
//   message_overhead   the transport's per-message start-up (cluster_spec::transport): the
//                      mid-size ramp; fitted only across nodes (one node has no network messages)
//
// from k measured (bytes, seconds) points of one operation and algorithm. Fewer points fit fewer
// constants: k = 1 the bandwidth only, k = 2 bandwidth and latency, k >= 3 all three (2 on one
// node). The fit minimizes the squared log error over the points plus a weak pull of each log
// factor towards 0 (weight 0.01: a constant the points do not determine stays at its data-sheet
// value), by a deterministic compass search in log space (factors 1/64..64) from a few fixed
// starts: the same points give the same cluster on every machine. With more points than
// constants a data sheet with NVLink SHARP (nvls) is also fitted without it, and the better
// fit's cluster is kept: whether the machine uses NVLS is something its points say and its data
// sheet does not.
//
//   cost::calibration_point pts[] = {{1 << 20, 203e-6}, {1 << 30, 6759e-6}};
//   auto r = cost::calibrate(cluster, pts, {cost::collective_op::all_reduce, cost::collective_algorithm::nccl_default});
//   r.cluster  // the calibrated cluster (backend nccl), ready for io::to_json / estimate / the tuner
//
// `pick_sizes(rows, k)` chooses k of a log's sizes spread evenly over its range (k = 1: the
// largest), what the leave-one-machine-out judgement and `autosync calibrate` without --sizes use.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/transport.hpp>
#include <autosync/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autosync::cost {

struct calibration_point {
  double bytes = 0.0;
  double seconds = 0.0;
};

struct calibration_target {
  collective_op op = collective_op::all_reduce;
  collective_algorithm algorithm = collective_algorithm::nccl_default;
};

struct calibration_result {
  cluster_spec cluster;             // the input with the fitted constants applied
  double bandwidth_scale = 1.0;
  double latency_scale = 1.0;       // relative to the input's
  double overhead_scale = 1.0;      // message overhead relative to the input's (resolved) one
  int fitted = 0;                   // how many constants the points determined (1..3)
  double median_error = 0.0;        // median |predicted - measured| / measured over the points
  double loss = 0.0;                // the fit's objective: squared log errors plus the prior's pull
};

// The cluster with the three factors applied (bandwidths x b, latency_scale x l, the transport's
// message overhead x o); backend set to NCCL.
[[nodiscard]] inline cluster_spec scaled_cluster(const cluster_spec& c, double b, double l, double o) {
  cluster_spec s = c;
  s.backend = collective_backend::nccl;
  for (auto& n : s.nodes) {
    n.intra.bandwidth *= b;
    n.nic.bandwidth *= b;
  }
  s.latency_scale = std::clamp(c.latency_scale * l, 1e-3, 1e3);
  s.transport.message_overhead = resolve(c.transport).message_overhead * o;
  if (s.transport.message_overhead <= 0.0) s.transport.message_overhead = 1e-9;
  return s;
}

// The model's time of target over n bytes on f.
[[nodiscard]] constexpr double predict(const fabric& f, const calibration_target& t, double n) noexcept {
  return analytical_time(f, collective{t.op, t.algorithm, n});
}

namespace detail::cal {
inline constexpr double prior_weight = 0.01;
inline constexpr double max_log = 4.1588830833596715;  // ln 64

[[nodiscard]] inline double loss(const cluster_spec& c, std::span<const calibration_point> pts, const calibration_target& t,
                                 const std::array<double, 3>& x) {
  const auto f = make_fabric(scaled_cluster(c, std::exp(x[0]), std::exp(x[1]), std::exp(x[2])));
  double e = 0.0;
  for (const auto& p : pts) {
    const double m = predict(f, t, p.bytes);
    const double r = std::log(std::max(m, 1e-12) / p.seconds);
    e += r * r;
  }
  for (double v : x) e += prior_weight * v * v;
  return e;
}
}  // namespace detail::cal

namespace detail::cal {
// The compass search in log space from calibrate()'s starts, over the first `fitted` factors:
// the best log factors and their loss.
[[nodiscard]] inline std::pair<std::array<double, 3>, double> fit(const cluster_spec& c, std::span<const calibration_point> pts,
                                                                  const calibration_target& t, int fitted) {
  // Starts: the data sheet, and the bandwidth that matches the largest point (its time is mostly
  // bytes over bandwidth) with the other factors at 1/8, 1 and 8: bandwidth and message overhead
  // trade against each other at large sizes, so one start can stop in the wrong valley.
  const auto largest = std::max_element(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  const double b0 =
      std::clamp(std::log(std::max(predict(make_fabric(c), t, largest->bytes), 1e-12) / largest->seconds), -max_log, max_log);
  std::vector<std::array<double, 3>> starts{{0.0, 0.0, 0.0}};
  for (double o : {-2.0794415416798357, 0.0, 2.0794415416798357})
    starts.push_back({b0, fitted >= 2 ? o : 0.0, fitted >= 3 ? o : 0.0});
  std::array<double, 3> x{0.0, 0.0, 0.0};
  double best = loss(c, pts, t, x);
  for (const auto& s0 : starts) {
    auto xs = s0;
    double bs = loss(c, pts, t, xs);
    for (double step = 1.0; step > 1e-3;) {
      bool improved = false;
      for (int i = 0; i < fitted; ++i)
        for (double d : {step, -step}) {
          auto y = xs;
          y[static_cast<std::size_t>(i)] = std::clamp(y[static_cast<std::size_t>(i)] + d, -max_log, max_log);
          const double l = loss(c, pts, t, y);
          if (l < bs - 1e-15) {
            bs = l;
            xs = y;
            improved = true;
          }
        }
      if (!improved) step *= 0.5;
    }
    if (bs < best - 1e-15) {
      best = bs;
      x = xs;
    }
  }
  return {x, best};
}
}  // namespace detail::cal

// Fits the machine's constants. Throws autosync::error("points") without points or with a
// non-positive or non-finite size or time, and as the cluster's validate() does.
[[nodiscard]] inline calibration_result calibrate(const cluster_spec& c, std::span<const calibration_point> pts,
                                                  const calibration_target& t = {}) {
  c.validate();
  validate(collective{t.op, t.algorithm, 0.0});
  if (pts.empty()) throw error("points", "calibration needs at least one measured size");
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (!(std::isfinite(pts[i].bytes) && pts[i].bytes > 0.0 && std::isfinite(pts[i].seconds) && pts[i].seconds > 0.0))
      throw error("points[" + std::to_string(i) + "]", "needs a positive size and a positive time");
  if (c.world_size() < 2) throw error("cluster", "a collective needs at least 2 ranks to calibrate");
  const bool multi = c.worker_nodes() > 1;
  const std::size_t k = pts.size();
  calibration_result r;
  r.fitted = k == 1 ? 1 : (k == 2 || !multi ? 2 : 3);
  auto [x, best] = detail::cal::fit(c, pts, t, r.fitted);
  const cluster_spec* base = &c;
  // With more points than constants (3 on one node, 4 on several), whether NVLink SHARP is in
  // use is fitted too: a data sheet says the switch has it; whether the fabric manager and NCCL
  // use it is the machine's. A data sheet with nvls is also fitted without, and the lower loss
  // wins (a tie keeps the data sheet's). With no more points than constants both fits can be
  // exact, and the choice would be the prior's.
  cluster_spec off;
  if (c.nvls && k > static_cast<std::size_t>(r.fitted)) {
    off = c;
    off.nvls = false;
    const auto [x_off, best_off] = detail::cal::fit(off, pts, t, r.fitted);
    if (best_off < best - 1e-12) {
      x = x_off;
      best = best_off;
      base = &off;
    }
  }
  r.bandwidth_scale = std::exp(x[0]);
  r.latency_scale = std::exp(x[1]);
  r.overhead_scale = std::exp(x[2]);
  r.cluster = scaled_cluster(*base, r.bandwidth_scale, r.latency_scale, r.overhead_scale);
  const auto f = make_fabric(r.cluster);
  std::vector<double> err;
  for (const auto& p : pts) err.push_back(std::abs(predict(f, t, p.bytes) - p.seconds) / p.seconds);
  std::sort(err.begin(), err.end());
  r.median_error = err.size() % 2 ? err[err.size() / 2] : 0.5 * (err[err.size() / 2 - 1] + err[err.size() / 2]);
  r.loss = best;
  return r;
}

// Whether calibrate_transport fits the transport of c from `points` sizes: on several nodes with
// 4 points or more (more points than constants).
[[nodiscard]] inline bool transport_fittable(const cluster_spec& c, std::size_t points) noexcept {
  return c.worker_nodes() >= 2 && points >= 4;
}

// calibrate() when the network's transport is not known: where transport_fittable, each transport
// kind's structure is fitted and the lowest loss kept (a tie keeps c's kind); otherwise
// calibrate(c) as it is. For a data sheet that does not state the machine's network
// (`autosync calibrate --nccl-tests --transport auto`).
[[nodiscard]] inline calibration_result calibrate_transport(const cluster_spec& c, std::span<const calibration_point> pts,
                                                            const calibration_target& t = {}) {
  auto best = calibrate(c, pts, t);
  if (!transport_fittable(c, pts.size())) return best;
  for (const auto kind : {transport_kind::rdma, transport_kind::efa, transport_kind::slingshot, transport_kind::gpudirect_tcp, transport_kind::tcp}) {
    if (kind == c.transport.kind) continue;
    cluster_spec other = c;
    other.transport = network_transport{};  // that kind's sourced defaults, not c's figures
    other.transport.kind = kind;
    auto r = calibrate(other, pts, t);
    if (r.loss < best.loss - 1e-12) best = std::move(r);
  }
  return best;
}

// k indices of n sorted sizes spread evenly over the range (k = 1: the largest); fewer when n < k.
[[nodiscard]] inline std::vector<std::size_t> pick_sizes(std::size_t n, std::size_t k) {
  std::vector<std::size_t> out;
  if (n == 0 || k == 0) return out;
  if (k == 1) return {n - 1};
  for (std::size_t i = 0; i < k; ++i) {
    const auto j = static_cast<std::size_t>(std::llround(static_cast<double>(i) * static_cast<double>(n - 1) / static_cast<double>(k - 1)));
    if (out.empty() || out.back() != j) out.push_back(j);
  }
  return out;
}

// The data-sheet machine of N nodes x G devices: `base`'s first worker node (its device, links,
// NICs and compute) replicated N times with G devices each, backend NCCL, the transport of
// `base` unless `transport` names another. What `autosync calibrate` fits to an nccl-tests log
// and what a GPU job fits to its own measurements (exec/nccl/calibrate.hpp).
[[nodiscard]] inline cluster_spec datasheet_machine(const cluster_spec& base, int nodes, int devices_per_node,
                                                    std::string_view transport = {}) {
  if (nodes < 1 || nodes > 65536) throw error("nodes", "must be in [1, 65536], got " + std::to_string(nodes));
  if (devices_per_node < 1 || devices_per_node > 1024)
    throw error("devices_per_node", "must be in [1, 1024], got " + std::to_string(devices_per_node));
  const node_spec* proto = nullptr;
  for (const auto& n : base.nodes)
    if (!n.server_only) {
      proto = &n;
      break;
    }
  if (!proto) throw error("cluster", "'" + base.name + "' has no worker node to take the data sheet from");
  cluster_spec c = base;
  c.backend = collective_backend::nccl;
  c.nodes.clear();
  for (int i = 0; i < nodes; ++i) {
    node_spec n = *proto;
    n.name = "n-" + std::to_string(i);
    n.devices = devices_per_node;
    c.nodes.push_back(n);
  }
  if (!transport.empty() && !parse_enum(transport, c.transport.kind))
    throw error("transport", "unknown transport '" + std::string(transport) + "' (valid: " + std::string(valid_names_list<transport_kind>()) + ")");
  c.name = std::to_string(nodes) + "x" + std::to_string(devices_per_node) + " " + base.device + " (calibrated)";
  return c;
}

}  // namespace autosync::cost
