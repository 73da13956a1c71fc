// autosync/io/fabric_report.hpp — the cost model's links held against the cluster's graph.
// Host-only (Boost.Graph, through graph.hpp).
//
// The cost model (cost/fabric.hpp) summarizes a cluster in a few links: the node network a ring
// across nodes sees (the slowest node's NICs together), the lane of each parameter server (its
// NICs), and the share of a node's NICs one of g side-by-side hierarchical flows gets. The
// Boost.Graph view (graph.hpp) answers the same questions from the cluster's structure alone,
// as max-flows / min cuts over devices, switches, NICs and the fabric. `autosync explain`
// prints both side by side for the links a strategy uses, and says where they disagree:
//
//   fabric (cut: Boost.Graph max-flow; model: the cost model's link)
//     ring over worker nodes n0 > n1 > n2 > n3       cut  3.12 GB/s   model  3.12 GB/s
//     workers -> server n4 (groups 0, 2)             cut  3.12 GB/s   model  3.12 GB/s
//     hierarchical flow on n0, n1, n2 and 1 more (8 flows on the busiest of 1 NIC)  ...
//
//   ring       graph::ring_order (the worker-node ring maximizing its slowest hop) and its
//              slowest hop (graph::ring_bottleneck)  vs  1 / fabric.inter.beta
//   server     graph::bottleneck_bandwidth(all worker nodes, {server})  vs  the server's NICs,
//              capped by the workers' NICs together (what the model's lane can carry)
//   flow       graph::nic_contention(node, 1): the slowest device flow's share of its NIC
//              vs  1 / max(intra.beta, g inter.beta) (fabric::inter_flow)
//
// The model takes the slowest node for every collective link; the graph takes the real cut. On
// the built-in clusters they agree (tests/unit/fabric_report.cpp checks every preset); a
// disagreement is printed as "model is X faster/slower than the cut", the first place to look
// when a prediction and a measurement differ on a heterogeneous cluster.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/graph.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace autosync::io {

struct fabric_check {
  std::string what;      // "ring over worker nodes n0 > n1", "workers -> server n4 (groups 0, 2)", ...
  double cut = 0.0;      // bytes/s, Boost.Graph max-flow
  double model = 0.0;    // bytes/s, the cost model's link
  [[nodiscard]] double ratio() const noexcept { return cut > 0.0 ? model / cut : 0.0; }
  [[nodiscard]] bool agrees(double tolerance = 0.01) const noexcept { return std::abs(ratio() - 1.0) <= tolerance; }
};

namespace fabric_detail {  // not io::detail: that would hide autosync::detail from io's code
inline std::string node_name(const cluster_spec& c, int i) {
  const auto& n = c.nodes[static_cast<std::size_t>(i)].name;
  return n.empty() ? "n" + std::to_string(i) : n;
}
inline double bandwidth_of(const cost::link_cost& l) { return l.beta > 0.0 ? 1.0 / l.beta : 0.0; }
}  // namespace fabric_detail

// The links the strategy uses, each as a cut and as the model sees it. The strategy must be
// valid for the cluster (strategy_desc::validate).
[[nodiscard]] inline std::vector<fabric_check> fabric_checks(const cluster_spec& c, const strategy_desc& s) {
  std::vector<fabric_check> out;
  const auto f = cost::make_fabric(c);
  const auto cg = graph::make_graph(c);
  std::vector<int> workers;
  for (std::size_t i = 0; i < c.nodes.size(); ++i)
    if (!c.nodes[i].server_only) workers.push_back(static_cast<int>(i));

  bool collective = false, hierarchical = false;
  for (const auto& g : s.groups) {
    const bool coll = g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded;
    collective = collective || coll;
    hierarchical = hierarchical || (coll && g.topology.kind == topology_kind::hierarchical);
  }

  if (collective && workers.size() > 1) {
    const auto order = graph::ring_order(c);
    std::string what = "ring over worker nodes ";
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order.size() > 8 && i == 6) {  // a long ring: its first nodes, how many more, and its last
        what += " > ... (" + std::to_string(order.size() - 7) + " more)";
        i = order.size() - 1;
      }
      what += (i ? " > " : "") + fabric_detail::node_name(c, order[i]);
    }
    out.push_back({what, graph::ring_bottleneck(c, order), fabric_detail::bandwidth_of(f.inter)});
  }

  // Parameter servers: which servers the strategy's groups use.
  const auto servers = c.server_nodes();
  std::vector<std::vector<int>> users(servers.size());
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const auto& g = s.groups[gi];
    if (g.architecture != architecture_kind::parameter_server) continue;
    for (std::size_t k = 0; k < servers.size(); ++k)
      if (g.placement.kind != placement_kind::pinned || g.placement.server == static_cast<int>(k)) users[k].push_back(static_cast<int>(gi));
  }
  double worker_nics = 0.0;
  for (const auto& w : f.workers) worker_nics += fabric_detail::bandwidth_of(w.nic);
  for (std::size_t k = 0; k < servers.size(); ++k) {
    if (users[k].empty()) continue;
    const int node = servers[k];
    std::vector<int> others;
    for (int w : workers)
      if (w != node) others.push_back(w);
    if (others.empty()) continue;  // a one-node cluster's server is local: no network cut
    std::string what = "workers -> server " + fabric_detail::node_name(c, node) + " (group" + (users[k].size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < users[k].size() && i < 4; ++i) what += (i ? ", " : "") + std::to_string(users[k][i]);
    if (users[k].size() > 4) what += ", ...";
    what += ")";
    // The model's lane: the server's NICs; the senders' NICs together bound it from the other side.
    double sender_nics = worker_nics;
    if (f.servers[k].colocated && f.servers[k].worker >= 0)
      sender_nics -= fabric_detail::bandwidth_of(f.workers[static_cast<std::size_t>(f.servers[k].worker)].nic);
    out.push_back({what, graph::bottleneck_bandwidth(cg, others, {node}), std::min(fabric_detail::bandwidth_of(f.servers[k].nic), sender_nics)});
  }

  if (hierarchical && workers.size() > 1) {
    // One row per kind of worker node: nodes whose flows see the same cut and model share it.
    struct row { double cut, model; int flows, nics; std::vector<int> nodes; };
    std::vector<row> rows;
    const double model = fabric_detail::bandwidth_of(f.inter_flow());
    for (int w : workers) {
      const auto& nd = c.nodes[static_cast<std::size_t>(w)];
      if (nd.devices < 1) continue;
      const auto load = graph::nic_contention(c, cg, w, 1);
      // The slowest flow also crosses its device's own link inside the node.
      const double cut = nd.devices > 1 ? std::min(load.min_per_flow_bandwidth, nd.intra.bandwidth) : load.min_per_flow_bandwidth;
      auto it = std::find_if(rows.begin(), rows.end(), [&](const row& r) {
        return r.cut == cut && r.flows == load.max_flows && r.nics == nd.nics;
      });
      if (it == rows.end()) rows.push_back({cut, model, load.max_flows, nd.nics, {w}});
      else it->nodes.push_back(w);
    }
    for (const auto& r : rows) {
      std::string names;
      for (std::size_t i = 0; i < r.nodes.size() && i < 3; ++i) names += (i ? ", " : "") + fabric_detail::node_name(c, r.nodes[i]);
      if (r.nodes.size() > 3) names += " and " + std::to_string(r.nodes.size() - 3) + " more";
      out.push_back({"hierarchical flow on " + names + " (" + std::to_string(r.flows) + " flow" + (r.flows == 1 ? "" : "s") +
                         " on the busiest of " + std::to_string(r.nics) + " NIC" + (r.nics == 1 ? "" : "s") + ")",
                     r.cut, r.model});
    }
  }
  return out;
}

inline void print_fabric(std::ostream& os, const std::vector<fabric_check>& checks) {
  if (checks.empty()) return;
  os << "fabric (cut: Boost.Graph max-flow over the cluster; model: the cost model's link)\n";
  std::size_t w = 0;
  for (const auto& k : checks) w = std::max(w, k.what.size());
  for (const auto& k : checks) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "   cut %8.3f GB/s   model %8.3f GB/s", k.cut / 1e9, k.model / 1e9);
    os << "  " << k.what << std::string(w - k.what.size(), ' ') << buf;
    if (!k.agrees()) {
      char r[96];
      const double x = k.ratio();
      std::snprintf(r, sizeof r, "   model is %.2fx %s than the cut", x >= 1.0 ? x : 1.0 / x, x >= 1.0 ? "faster" : "slower");
      os << r;
    }
    os << "\n";
  }
}

}  // namespace autosync::io
