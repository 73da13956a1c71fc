// autosync/cost/features.hpp — what the learned correction sees of a (strategy, model, cluster).
//
// The analytical model (cost/estimate.hpp) ranks strategies well but not perfectly: real
// collectives have launch overheads, real NICs do not reach their line rate, real overlap is
// partial. The learned correction (cost/corrected.hpp, learn/) predicts
//
//     y = log(measured iteration / executor iteration)
//
// where the executor iteration is max(estimate, cost::serial_replay): the estimate runs
// parameter-server lanes beside each other and beside the collective lane, the executors one
// bucket at a time (cost/replay.hpp), so the correction learns what neither model holds.
//
// from a fixed-length row of features computed here, deterministically, from the estimate's
// own timeline. Two sets:
//
// * `feature_row` (feature_count floats, names in `feature_names`): the analytical terms
//   (exposed, compute, communication, compression, lower bound as fractions of the iteration;
//   the executor's serial replay over the estimate), the cluster (ranks, worker nodes, ranks per
//   node, servers; its links only as ratios: device-link over network bandwidth and latency,
//   the fastest worker NIC over the slowest, the network latency over the iteration), the
//   strategy's structure (groups, buckets, lane-0 buckets, PS transfers, shards per tensor; the
//   wire bytes' time at the network's rate over the iteration, wire over dense bytes; bucket
//   and item sizes over the network's bandwidth-delay product; the fraction of wire bytes per
//   architecture / topology / schedule / replication / compression; server load imbalance and
//   the busiest server's bytes at its NIC's rate over the iteration) and AutoSync's 12
//   aggregates below as fractions of the iteration. Machine-relative on purpose: no absolute
//   bandwidth, latency, byte count or time, so a correction trained on some machines reads a
//   new one through the same ratios (judged leave-one-machine-out: bench_learn_eval). The
//   network is the slowest worker NIC (fabric::inter) on several nodes, the device link on one.
//   Log-scaled where magnitudes span decades, so trees split on ratios, not units.
//
// * `autosync_row` (12 doubles, seconds, names in `autosync_feature_names`): the features of
//   AutoSync's released simulator (NeurIPS 2020) — transmission, overhead and kernel latency,
//   each the max and the sum over parameter servers and over all-reduce groups. Here, from
//   the timeline of cost::estimate:
//
//     per server s       transmission  busy time of its PS transfer events (lane 1 + s)
//                        overhead      compression (encode/decode) events on that lane
//                        latency       transfers x 2 alpha of the server's NIC (push + pull)
//     per collective     transmission  busy time of the group's lane-0 collective events
//     group g            overhead      the group's compression events on lane 0
//                        latency       buckets x fabric::flat(1).alpha (one launch each)
//
//   Groups / servers without events contribute 0; max and sum over none are 0. These feed
//   the linear baseline (learn/linear.hpp), as AutoSync's linear ranker did.
//
// Everything is a pure function of its inputs (no clock, no randomness): the same inputs give
// bit-identical rows.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/error.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/replay.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autosync::cost {

inline constexpr std::size_t autosync_feature_count = 12;
inline constexpr std::array<std::string_view, autosync_feature_count> autosync_feature_names{
    "ps_transmission_max", "ps_transmission_sum", "ps_overhead_max", "ps_overhead_sum", "ps_latency_max", "ps_latency_sum",
    "ar_transmission_max", "ar_transmission_sum", "ar_overhead_max", "ar_overhead_sum", "ar_latency_max", "ar_latency_sum"};

inline constexpr std::array<std::string_view, 50> feature_names{
    "log10_executor_over_estimate", "exposed_frac",     "compute_frac",        "communication_frac",  "compression_frac",
    "lower_bound_frac",      "log2_ranks",           "log2_nodes",          "ranks_per_node",      "servers",
    "dedicated_servers",     "log10_intra_over_net_bw", "log10_nic_spread", "log10_intra_over_net_lat", "log10_net_lat_frac",
    "groups",                "log2_buckets",         "log2_lane0_buckets",  "log2_ps_transfers",   "log10_wire_time_frac",
    "log10_wire_over_dense", "ps_frac",              "sharded_frac",        "all_gather_frac",     "compressed_frac",
    "ring_frac",             "tree_frac",            "halving_doubling_frac", "hierarchical_frac", "priority_frac",
    "local_replication_frac", "items_per_tensor",    "log10_mean_bucket_over_bdp", "log10_max_bucket_over_bdp",
    "log10_min_bucket_over_bdp", "server_imbalance", "max_server_time_frac", "log10_tensors",   "launch_latency_frac",
    "log10_mean_item_over_bdp",
    "ps_transmission_max_frac", "ps_transmission_sum_frac", "ps_overhead_max_frac", "ps_overhead_sum_frac",
    "ps_latency_max_frac",   "ps_latency_sum_frac",  "ar_transmission_max_frac", "ar_transmission_sum_frac",
    "ar_overhead_max_frac",  "ar_latency_max_frac"};
inline constexpr std::size_t feature_count = feature_names.size();

using feature_row = std::array<float, feature_count>;
using autosync_row = std::array<double, autosync_feature_count>;

struct features {
  prediction analytical;   // cost::estimate with its timeline
  double executor = 0.0;   // max(analytical.iteration, cost::serial_replay): the correction's base
  feature_row row{};       // the learned correction's input
  autosync_row autosync{}; // AutoSync's 12 aggregates, seconds
};

namespace detail {

[[nodiscard]] inline float lg10(double v) noexcept { return static_cast<float>(std::log10(std::max(v, 1e-30))); }
[[nodiscard]] inline float lg2p1(double v) noexcept { return static_cast<float>(std::log2(1.0 + std::max(v, 0.0))); }

}  // namespace detail

// The features of strategy `s` for model `m` on cluster `c` (s must be valid for them:
// strategy_desc::validate throws autosync::error naming the field otherwise).
[[nodiscard]] inline features compute_features(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  s.validate(m, c);
  features out;
  auto ev = evaluate(m, c, s, options{.timeline = true}, true);
  const std::vector<sync_item>& items = ev.ws.items;
  const std::vector<bucket>& bks = ev.buckets;
  out.analytical = std::move(ev.p);
  const auto& p = out.analytical;
  const fabric& f = ev.ctx.fab;
  out.executor = std::max(p.iteration, serial_replay(p, bks, items, s, f).iteration);
  const double it = p.iteration > 0.0 ? p.iteration : 1.0;
  const std::size_t S = f.servers.size(), G = s.groups.size();

  // AutoSync's aggregates from the timeline
  std::vector<double> srv_tx(S, 0.0), srv_ov(S, 0.0), srv_n(S, 0.0);
  std::vector<double> grp_tx(G, 0.0), grp_ov(G, 0.0);
  std::size_t lane0_events = 0, ps_transfers = 0;
  for (const auto& e : p.events) {
    const double d = e.end - e.start;
    if (e.lane > 0) {
      const auto sv = static_cast<std::size_t>(e.lane - 1);
      if (e.kind == event_compression) srv_ov[sv] += d;
      else {
        srv_tx[sv] += d;
        srv_n[sv] += 1.0;
        ++ps_transfers;
      }
    } else {
      if (e.kind == event_compression) grp_ov[e.group] += d;
      else {
        grp_tx[e.group] += d;
        ++lane0_events;
      }
    }
  }
  std::vector<double> grp_buckets(G, 0.0);
  std::size_t lane0_buckets = 0;
  for (const auto& b : bks)
    if (s.groups[b.group].architecture != architecture_kind::parameter_server) {
      grp_buckets[b.group] += 1.0;
      ++lane0_buckets;
    }
  const double launch_alpha = f.flat(1).alpha;
  auto agg = [](const std::vector<double>& v, double scale, double& mx, double& sum) {
    mx = 0.0;
    sum = 0.0;
    for (double a : v) {
      mx = std::max(mx, a * scale);
      sum += a * scale;
    }
  };
  auto& a = out.autosync;
  agg(srv_tx, 1.0, a[0], a[1]);
  agg(srv_ov, 1.0, a[2], a[3]);
  {
    std::vector<double> lat(S);
    for (std::size_t sv = 0; sv < S; ++sv) lat[sv] = srv_n[sv] * 2.0 * f.servers[sv].nic.alpha;
    agg(lat, 1.0, a[4], a[5]);
  }
  agg(grp_tx, 1.0, a[6], a[7]);
  agg(grp_ov, 1.0, a[8], a[9]);
  agg(grp_buckets, launch_alpha, a[10], a[11]);

  // byte shares per aspect
  double wire = 0.0, dense = 0.0, ps = 0.0, sharded = 0.0, gathered = 0.0, compressed = 0.0;
  double ring = 0.0, tree = 0.0, hd = 0.0, hier = 0.0, prio = 0.0, local = 0.0;
  std::vector<double> server_bytes(S, 0.0);
  for (const auto& i : items) {
    const auto& g = s.groups[i.group];
    const double w = static_cast<double>(i.wire_bytes);
    wire += w;
    dense += static_cast<double>(i.bytes);
    if (i.wire_bytes < i.bytes && !i.sparse) compressed += w;
    if (g.schedule == schedule_kind::priority) prio += w;
    switch (g.architecture) {
      case architecture_kind::parameter_server:
        ps += w;
        if (g.replication == replication_kind::local) local += w;
        if (i.server >= 0) server_bytes[static_cast<std::size_t>(i.server)] += w;
        break;
      case architecture_kind::all_gather: gathered += w; break;
      default:
        if (g.architecture == architecture_kind::sharded) sharded += w;
        switch (g.topology.kind) {
          case topology_kind::ring: ring += w; break;
          case topology_kind::tree: tree += w; break;
          case topology_kind::halving_doubling: hd += w; break;
          default: hier += w; break;
        }
        break;
    }
  }
  const double wd = wire > 0.0 ? wire : 1.0;
  double bmin = 0.0, bmax = 0.0, bsum = 0.0;
  for (std::size_t k = 0; k < bks.size(); ++k) {
    const double b = static_cast<double>(bks[k].wire_bytes);
    bsum += b;
    bmax = k == 0 ? b : std::max(bmax, b);
    bmin = k == 0 ? b : std::min(bmin, b);
  }
  double smax = 0.0, ssum = 0.0;
  for (double b : server_bytes) {
    smax = std::max(smax, b);
    ssum += b;
  }
  bool dedicated = false;
  for (const auto& sv : f.servers) dedicated = dedicated || sv.worker < 0;

  auto& r = out.row;
  std::size_t k = 0;
  auto put = [&](double v) { r[k++] = static_cast<float>(v); };
  using detail::lg10;
  using detail::lg2p1;
  // the network: the slowest worker NIC on several nodes, the device link on one; its
  // bandwidth-delay product in bytes (sizes below are read against it)
  const link_cost net = f.nodes > 1 ? f.inter : f.intra;
  const double bdp = net.beta > 0.0 && net.alpha > 0.0 ? net.alpha / net.beta : 1.0;
  auto ratio = [](double num, double den) { return num > 0.0 && den > 0.0 ? num / den : 1.0; };
  double nic_fast = 0.0, nic_slow = 0.0;  // worker NICs' beta: the smallest and the largest
  for (std::size_t w = 0; w < f.workers.size(); ++w) {
    const double b = f.workers[w].nic.beta;
    nic_fast = w == 0 ? b : std::min(nic_fast, b);
    nic_slow = w == 0 ? b : std::max(nic_slow, b);
  }
  double server_time = 0.0;  // the busiest server's bytes at its own NIC's rate
  for (std::size_t sv = 0; sv < S; ++sv) server_time = std::max(server_time, server_bytes[sv] * f.servers[sv].nic.beta);
  put(lg10(ratio(out.executor, p.iteration)));
  put(p.exposed / it);
  put((p.forward + p.backward) / it);
  put(p.communication / it);
  put(p.compression / it);
  put(p.lower_bound / it);
  put(std::log2(static_cast<double>(f.p)));
  put(std::log2(static_cast<double>(f.nodes)));
  put(f.g);
  put(static_cast<double>(S));
  put(dedicated ? 1.0 : 0.0);
  put(lg10(ratio(net.beta, f.intra.beta)));  // device-link bandwidth over the network's
  put(lg10(ratio(nic_slow, nic_fast)));       // the fastest worker NIC over the slowest
  put(lg10(ratio(f.intra.alpha, net.alpha)));
  put(lg10(net.alpha / it));
  put(static_cast<double>(G));
  put(lg2p1(static_cast<double>(bks.size())));
  put(lg2p1(static_cast<double>(lane0_buckets)));
  put(lg2p1(static_cast<double>(ps_transfers)));
  put(lg10(wire * net.beta / it));
  put(lg10(ratio(wire, dense)));
  put(ps / wd);
  put(sharded / wd);
  put(gathered / wd);
  put(compressed / wd);
  put(ring / wd);
  put(tree / wd);
  put(hd / wd);
  put(hier / wd);
  put(prio / wd);
  put(local / wd);
  put(m.tensors.empty() ? 0.0 : static_cast<double>(items.size()) / static_cast<double>(m.tensors.size()));
  put(lg10((bks.empty() ? 0.0 : bsum / static_cast<double>(bks.size())) / bdp));
  put(lg10(bmax / bdp));
  put(lg10(bmin / bdp));
  put(S > 0 && ssum > 0.0 ? smax / (ssum / static_cast<double>(S)) : 0.0);
  put(server_time / it);
  put(lg10(static_cast<double>(m.tensors.size())));
  put(static_cast<double>(lane0_events + ps_transfers) * launch_alpha / it);
  put(lg10((items.empty() ? 0.0 : wire / static_cast<double>(items.size())) / bdp));
  for (std::size_t q = 0; q < 10; ++q) put(a[q == 9 ? 10 : q] / it);
  if (k != feature_count) throw error("cost::compute_features: filled " + std::to_string(k) + " of " + std::to_string(feature_count) + " features");
  return out;
}

}  // namespace autosync::cost
