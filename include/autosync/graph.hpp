// autosync/graph.hpp — the Boost.Graph view of a cluster, and the questions it answers.
// Host-only (Boost.Graph); nothing nvcc compiles includes it.
//
// Vertices are devices, per-node switches, NICs and one fabric switch; edges are links with a
// bandwidth (bytes/s in each direction, full duplex) and a latency (seconds to cross it):
//
//       node 0 (4 devices, 2 NICs)                 node 1 (1 device, 1 NIC)    server (2 NICs)
//   d0   d1   d2   d3                                      d0                     (no devices)
//    \    \   /    /      intra (per device)               |
//     +---- sw ----+       <- the node's NVSwitch/PCIe     |
//   d0--nic0  d1--nic1     device j <-> NIC j mod nics     nic0                 nic0   nic1
//   d2--nic0  d3--nic1     (NIC k <-> device k mod devs)    |                     |      |
//      \        \                                           |                     |      |
//       +--------+---------------- fabric -----------------+---------------------+------+
//                                 (one non-blocking switch; NIC <-> fabric at the NIC rate)
//
//   * NVLink/NVSwitch/PCIe inside a node is modelled as a star through a per-node switch
//     vertex `sw`: each device reaches it at `intra.bandwidth`, so a device's own link is its
//     limit, as with NVSwitch. A node with one device has no switch.
//   * device <-> NIC edges carry the NIC's rate (the PCIe path to the NIC is taken to be at
//     least as fast as the NIC). Traffic may go device -> sw -> other device -> its NIC, the
//     way NCCL's PXN routes through a GPU next to the right NIC. For flows a NIC is split
//     into transmit and receive sides, so it never switches traffic between its own devices.
//   * a server_only node has NICs only; its NICs are where its flows start and end.
//   * latencies: intra edges intra.latency/2 and NIC <-> fabric nic.latency/2, so a
//     device -> device message inside a node costs intra.latency and one across nodes
//     nic.latency (device <-> NIC edges cost 0).
//   * node_links: optional direct links between two nodes (a cable between two hosts, a
//     faster rail between two racks' nodes). They connect the nodes' anchors (the switch, the
//     single device of a one-device node, NIC 0 of a server) and add to the fabric path. With
//     a star fabric alone every ring order has the same bottleneck (each node's own NICs);
//     direct links are how the ring order question gets a non-trivial answer.
//
// Questions (all validate their inputs and throw autosync::error naming the field):
//   bottleneck_bandwidth(c, A, B)     max-flow (push-relabel) from A's devices to B's devices
//   ring_order(c) / ring_bottleneck   worker-node ring maximizing its slowest hop
//   nic_contention(c, node, flows)    device flows per NIC and the per-flow share
//   to_dot(c)                         Graphviz text (`autosync explain`)
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace autosync::graph {

// A direct link between nodes `a` and `b` (indices into cluster_spec::nodes).
struct node_link {
  int a = 0;
  int b = 0;
  link l{};
};
using node_links = std::vector<node_link>;

enum class vertex_kind : std::uint8_t { device, node_switch, nic, fabric };
enum class edge_kind : std::uint8_t { intra, device_nic, nic_fabric, direct };

struct vertex_info {
  vertex_kind kind = vertex_kind::fabric;
  int node = -1;     // owning node, -1 for the fabric
  int index = -1;    // device or NIC index inside the node
  int rank = -1;     // global rank of a device
  std::string name;  // "n0.d3", "n0.sw", "n0.nic1", "fabric"
};

struct edge_info {
  edge_kind kind = edge_kind::intra;
  double bandwidth = 0.0;  // bytes/s in each direction
  double latency = 0.0;    // seconds to cross the edge
};

using graph_type = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, vertex_info, edge_info>;
using vertex = boost::graph_traits<graph_type>::vertex_descriptor;

struct cluster_graph {
  graph_type g;
  std::vector<std::vector<vertex>> devices;  // [node][device]
  std::vector<std::vector<vertex>> nics;     // [node][nic]
  std::vector<vertex> hub;                   // [node]: the node switch, or null_vertex() when none
  vertex fabric = boost::graph_traits<graph_type>::null_vertex();
  // [node]: its shape, the number of the first node built alike (devices, NICs and their
  // bandwidths; latencies do not carry flow). Without direct links, a cut between two nodes
  // depends on their shapes alone (detail::pair_cuts).
  std::vector<std::size_t> shape;
  bool direct_links = false;  // made with direct links between nodes

  [[nodiscard]] static vertex none() noexcept { return boost::graph_traits<graph_type>::null_vertex(); }

  // Where direct links attach: the switch, else the single device, else (server) NIC 0.
  [[nodiscard]] vertex anchor(int node) const {
    const auto n = static_cast<std::size_t>(node);
    if (hub[n] != none()) return hub[n];
    if (!devices[n].empty()) return devices[n].front();
    return nics[n].front();
  }
  // Where a node's flows start and end: its devices, or a server's NICs.
  [[nodiscard]] const std::vector<vertex>& terminals(int node) const {
    const auto n = static_cast<std::size_t>(node);
    return devices[n].empty() ? nics[n] : devices[n];
  }
};

namespace detail {

inline std::string node_label(const cluster_spec& c, std::size_t i) {
  return c.nodes[i].name.empty() ? "n" + std::to_string(i) : c.nodes[i].name;
}

inline void check_node(std::size_t nodes, int node, const std::string& field) {
  if (node < 0 || static_cast<std::size_t>(node) >= nodes)
    throw error(field, "node index " + std::to_string(node) + " is out of range [0, " + std::to_string(nodes) + ")");
}

inline void validate_links(const cluster_spec& c, const node_links& links) {
  for (std::size_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    const std::string f = "links[" + std::to_string(i) + "]";
    check_node(c.nodes.size(), l.a, f + ".a");
    check_node(c.nodes.size(), l.b, f + ".b");
    if (l.a == l.b) throw error(f + ".b", "a direct link joins two different nodes");
    if (!std::isfinite(l.l.bandwidth) || l.l.bandwidth <= 0.0) throw error(f + ".bandwidth", "must be a positive number of bytes/s");
    if (!std::isfinite(l.l.latency) || l.l.latency < 0.0) throw error(f + ".latency", "must be a finite non-negative number of seconds");
  }
}

}  // namespace detail

// The graph of `c` (validated) with optional direct links.
[[nodiscard]] inline cluster_graph make_graph(const cluster_spec& c, const node_links& links = {}) {
  c.validate();
  detail::validate_links(c, links);
  cluster_graph cg;
  auto& g = cg.g;
  const std::size_t n = c.nodes.size();
  cg.devices.resize(n);
  cg.nics.resize(n);
  cg.hub.assign(n, cluster_graph::none());
  cg.fabric = boost::add_vertex(vertex_info{vertex_kind::fabric, -1, -1, -1, "fabric"}, g);
  cg.direct_links = !links.empty();
  cg.shape.resize(n);
  {
    // (devices, NICs, NIC bandwidth, device-link bandwidth where there is a switch) -> first node
    std::map<std::tuple<int, int, double, double>, std::size_t> first;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& a = c.nodes[i];
      const int devs = a.server_only ? 0 : a.devices;
      cg.shape[i] = first.try_emplace({devs, a.nics, a.nic.bandwidth, devs > 1 ? a.intra.bandwidth : 0.0}, i).first->second;
    }
  }
  int rank = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& nd = c.nodes[i];
    const int node = static_cast<int>(i);
    const std::string label = detail::node_label(c, i);
    const int devs = nd.server_only ? 0 : nd.devices;
    for (int d = 0; d < devs; ++d)
      cg.devices[i].push_back(
          boost::add_vertex(vertex_info{vertex_kind::device, node, d, rank++, label + ".d" + std::to_string(d)}, g));
    if (devs > 1) {
      cg.hub[i] = boost::add_vertex(vertex_info{vertex_kind::node_switch, node, -1, -1, label + ".sw"}, g);
      for (vertex d : cg.devices[i])
        boost::add_edge(d, cg.hub[i], edge_info{edge_kind::intra, nd.intra.bandwidth, nd.intra.latency / 2.0}, g);
    }
    for (int k = 0; k < nd.nics; ++k) {
      const vertex v = boost::add_vertex(vertex_info{vertex_kind::nic, node, k, -1, label + ".nic" + std::to_string(k)}, g);
      cg.nics[i].push_back(v);
      boost::add_edge(v, cg.fabric, edge_info{edge_kind::nic_fabric, nd.nic.bandwidth, nd.nic.latency / 2.0}, g);
    }
    // device j <-> NIC j mod nics, and NIC k <-> device k mod devices: m -> (m mod g, m mod k)
    // for m < max(g, k) lists each pair once (the larger modulus is the identity).
    for (int m = 0; m < std::max(devs, nd.nics) && devs > 0; ++m)
      boost::add_edge(cg.devices[i][static_cast<std::size_t>(m % devs)], cg.nics[i][static_cast<std::size_t>(m % nd.nics)],
                      edge_info{edge_kind::device_nic, nd.nic.bandwidth, 0.0}, g);
  }
  for (const auto& l : links)
    boost::add_edge(cg.anchor(l.a), cg.anchor(l.b), edge_info{edge_kind::direct, l.l.bandwidth, l.l.latency}, g);
  return cg;
}

namespace detail {

using flow_traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using flow_graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, long long,
                    boost::property<boost::edge_residual_capacity_t, long long,
                                    boost::property<boost::edge_reverse_t, flow_traits::edge_descriptor>>>>;

// Max-flow in bytes/s from `sources` to `sinks` (view vertices) through the part of the view
// that belongs to the nodes marked in `keep` plus the fabric: other nodes do not forward
// traffic. Capacities are whole bytes/s so that push-relabel works on exact integers.
// A NIC is split into a transmit and a receive vertex (device -> tx -> fabric -> rx -> device)
// so that it cannot act as a switch between the devices attached to it; traffic between two
// devices of one node goes through the node switch or hairpins through the fabric.
inline double max_flow(const cluster_graph& cg, const std::vector<char>& keep, const std::vector<vertex>& sources,
                       const std::vector<vertex>& sinks) {
  const auto& g = cg.g;
  const std::size_t nv = boost::num_vertices(g);
  auto kept = [&](vertex v) {
    const int node = g[v].node;
    return node < 0 || keep[static_cast<std::size_t>(node)] != 0;
  };
  // Flow vertices: 0..nv-1 mirror the view (a NIC's id is its tx side), then one rx per NIC,
  // then the source and the sink.
  std::vector<std::size_t> rx(nv);
  std::size_t next = nv;
  for (std::size_t v = 0; v < nv; ++v) rx[v] = g[v].kind == vertex_kind::nic ? next++ : v;
  const std::size_t s = next, t = next + 1;
  flow_graph f(next + 2);
  auto cap = boost::get(boost::edge_capacity, f);
  auto rev = boost::get(boost::edge_reverse, f);
  auto arc = [&](std::size_t u, std::size_t v, long long c) {
    const auto e = boost::add_edge(u, v, f).first;
    const auto r = boost::add_edge(v, u, f).first;
    cap[e] = c;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  long long total = 1;
  for (auto [ei, ee] = boost::edges(g); ei != ee; ++ei) {
    const vertex u = boost::source(*ei, g), v = boost::target(*ei, g);
    if (!kept(u) || !kept(v)) continue;
    const auto c = std::llround(g[*ei].bandwidth);
    if (g[*ei].kind == edge_kind::device_nic) {
      const vertex d = g[u].kind == vertex_kind::device ? u : v;
      const vertex nic = d == u ? v : u;
      arc(d, nic, c);       // device -> tx
      arc(rx[nic], d, c);   // rx -> device
    } else {
      arc(u, rx[v], c);     // toward the fabric or a direct link: leave on tx, enter on rx
      arc(v, rx[u], c);
    }
    total += 2 * c;
  }
  for (vertex v : sources) arc(s, v, total);
  for (vertex v : sinks) arc(rx[v], t, total);
  return static_cast<double>(boost::push_relabel_max_flow(f, s, t));
}

inline std::vector<int> unique_nodes(std::size_t count, const std::vector<int>& nodes, const std::string& field) {
  if (nodes.empty()) throw error(field, "needs at least one node");
  for (std::size_t i = 0; i < nodes.size(); ++i) check_node(count, nodes[i], field + "[" + std::to_string(i) + "]");
  std::vector<int> u = nodes;
  std::sort(u.begin(), u.end());
  u.erase(std::unique(u.begin(), u.end()), u.end());
  return u;
}

inline double node_cut(const cluster_graph& cg, const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<char> keep(cg.devices.size(), 0);
  std::vector<vertex> src, dst;
  for (int n : a) {
    keep[static_cast<std::size_t>(n)] = 1;
    const auto& t = cg.terminals(n);
    src.insert(src.end(), t.begin(), t.end());
  }
  for (int n : b) {
    keep[static_cast<std::size_t>(n)] = 1;
    const auto& t = cg.terminals(n);
    dst.insert(dst.end(), t.begin(), t.end());
  }
  return max_flow(cg, keep, src, dst);
}

// The cut between two nodes, each pair of shapes computed once (cluster_graph::shape): without
// direct links a node-to-node cut depends on the two nodes' shapes alone, so a cluster of many
// alike nodes needs a handful of max-flows, not one per pair. With direct links, every pair.
class pair_cuts {
 public:
  explicit pair_cuts(const cluster_graph& cg) : cg_(&cg) {}
  [[nodiscard]] double operator()(int a, int b) {
    if (cg_->direct_links) return node_cut(*cg_, {a}, {b});
    auto sa = cg_->shape[static_cast<std::size_t>(a)], sb = cg_->shape[static_cast<std::size_t>(b)];
    if (sb < sa) std::swap(sa, sb);  // the view is undirected: a -> b carries what b -> a does
    for (const auto& [x, y, v] : seen_)
      if (x == sa && y == sb) return v;
    const double v = node_cut(*cg_, {a}, {b});
    seen_.emplace_back(sa, sb, v);
    return v;
  }

 private:
  const cluster_graph* cg_;
  std::vector<std::tuple<std::size_t, std::size_t, double>> seen_;
};

}  // namespace detail

// Aggregate bandwidth (bytes/s) from the devices of node set `a` to the devices of node set
// `b` (a server's NICs stand in for its devices) when nothing else uses the network: the
// max-flow of the view restricted to the nodes of a and b and the fabric, i.e. the min cut.
// The sets must be non-empty and disjoint.
//
//   node 0: 2 NICs x 10 GB/s, node 1: 1 NIC x 25 GB/s  ->  cut({0}, {1}) = min(20, 25) = 20 GB/s
// This overload reuses a view built once with make_graph (for callers asking many cuts).
[[nodiscard]] inline double bottleneck_bandwidth(const cluster_graph& cg, const std::vector<int>& a, const std::vector<int>& b) {
  const auto ua = detail::unique_nodes(cg.devices.size(), a, "a");
  const auto ub = detail::unique_nodes(cg.devices.size(), b, "b");
  for (int n : ua)
    if (std::binary_search(ub.begin(), ub.end(), n))
      throw error("b", "node " + std::to_string(n) + " is on both sides of the cut");
  return detail::node_cut(cg, ua, ub);
}

[[nodiscard]] inline double bottleneck_bandwidth(const cluster_spec& c, const std::vector<int>& a, const std::vector<int>& b,
                                                 const node_links& links = {}) {
  return bottleneck_bandwidth(make_graph(c, links), a, b);
}

// The same at device granularity: from the devices of ranks `a` to those of ranks `b`
// (e.g. two halves of one node, where the intra-node links and the NIC hairpin through the
// fabric both count). Nodes holding none of the ranks do not forward traffic.
[[nodiscard]] inline double bottleneck_bandwidth_ranks(const cluster_spec& c, const std::vector<int>& a, const std::vector<int>& b,
                                                       const node_links& links = {}) {
  const auto cg = make_graph(c, links);
  const int world = c.world_size();
  std::vector<vertex> by_rank;
  for (const auto& devs : cg.devices) by_rank.insert(by_rank.end(), devs.begin(), devs.end());
  std::vector<char> keep(c.nodes.size(), 0), side(static_cast<std::size_t>(world), 0);
  auto collect = [&](const std::vector<int>& ranks, const std::string& field, char mark) {
    if (ranks.empty()) throw error(field, "needs at least one rank");
    std::vector<vertex> out;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const int r = ranks[i];
      const std::string f = field + "[" + std::to_string(i) + "]";
      if (r < 0 || r >= world) throw error(f, "rank " + std::to_string(r) + " is out of range [0, " + std::to_string(world) + ")");
      auto& s = side[static_cast<std::size_t>(r)];
      if (s != 0 && s != mark) throw error(f, "rank " + std::to_string(r) + " is on both sides of the cut");
      s = mark;
      keep[static_cast<std::size_t>(c.node_of_rank(r))] = 1;
      out.push_back(by_rank[static_cast<std::size_t>(r)]);
    }
    return out;
  };
  const auto src = collect(a, "a", 1);
  const auto dst = collect(b, "b", 2);
  return detail::max_flow(cg, keep, src, dst);
}

// Bandwidth between two nodes alone: bottleneck_bandwidth(c, {a}, {b}, links).
[[nodiscard]] inline double pair_bandwidth(const cluster_spec& c, int a, int b, const node_links& links = {}) {
  return bottleneck_bandwidth(c, {a}, {b}, links);
}

namespace detail {

// Symmetric pair bandwidths between the worker nodes (indices into `workers`). The view is
// undirected with the same capacity both ways, so the flow a -> b equals b -> a.
inline std::vector<std::vector<double>> worker_pairs(const cluster_graph& cg, const std::vector<int>& workers) {
  const std::size_t n = workers.size();
  std::vector<std::vector<double>> w(n, std::vector<double>(n, std::numeric_limits<double>::infinity()));
  pair_cuts cut(cg);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) w[i][j] = w[j][i] = cut(workers[i], workers[j]);
  return w;
}

inline std::vector<int> worker_nodes(const cluster_spec& c) {
  std::vector<int> w;
  for (std::size_t i = 0; i < c.nodes.size(); ++i)
    if (!c.nodes[i].server_only) w.push_back(static_cast<int>(i));
  return w;
}

inline double cycle_min(const std::vector<std::vector<double>>& w, const std::vector<std::size_t>& cyc) {
  double m = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < cyc.size() && cyc.size() > 1; ++i) m = std::min(m, w[cyc[i]][cyc[(i + 1) % cyc.size()]]);
  return m;
}

// Hamiltonian cycle through 0 in the graph {w >= thr}: exact bitmask dynamic programming
// (Held-Karp reachability) for n <= 16; above that, depth-first search from 0 trying the
// neighbour with the fewest onward choices first (Warnsdorff), within a node budget. Empty
// when none was found.
inline std::vector<std::size_t> hamiltonian(const std::vector<std::vector<double>>& w, double thr) {
  const std::size_t n = w.size();
  std::vector<std::uint32_t> adj32;
  std::vector<std::vector<std::size_t>> adj(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j && w[i][j] >= thr) adj[i].push_back(j);
  if (n <= 16) {
    adj32.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j : adj[i]) adj32[i] |= 1u << j;
    const std::uint32_t full = (1u << n) - 1;
    std::vector<std::uint32_t> ends(std::size_t{1} << n, 0);  // ends[mask]: last vertices of paths 0 ~> v over mask
    ends[1] = 1;
    for (std::uint32_t mask = 1; mask <= full; mask += 2)
      for (std::uint32_t e = ends[mask]; e != 0; e &= e - 1) {
        const auto v = static_cast<std::size_t>(std::countr_zero(e));
        for (std::uint32_t nx = adj32[v] & ~mask; nx != 0; nx &= nx - 1) {
          const std::uint32_t bit = nx & (~nx + 1);
          ends[mask | bit] |= bit;
        }
      }
    std::uint32_t last = ends[full] & adj32[0];
    if (n == 1) last = 1;
    if (last == 0) return {};
    // Walk back: the smallest end that closes the cycle, then the smallest valid predecessor.
    std::vector<std::size_t> rev;
    auto cur = static_cast<std::size_t>(std::countr_zero(last));
    std::uint32_t mask = full;
    while (true) {
      rev.push_back(cur);
      if (mask == 1) break;
      const std::uint32_t prev_mask = mask & ~(1u << cur);
      const std::uint32_t cand = ends[prev_mask] & adj32[cur];
      cur = static_cast<std::size_t>(std::countr_zero(cand));
      mask = prev_mask;
    }
    std::reverse(rev.begin(), rev.end());  // 0 first
    return rev;
  }
  std::vector<std::size_t> path{0};
  std::vector<char> used(n, 0);
  used[0] = 1;
  long budget = 200000;
  auto dfs = [&](auto&& self) -> bool {
    if (--budget < 0) return false;
    const std::size_t v = path.back();
    if (path.size() == n) return w[v][0] >= thr;
    std::vector<std::pair<std::size_t, std::size_t>> next;  // (onward choices, vertex)
    for (std::size_t u : adj[v]) {
      if (used[u]) continue;
      std::size_t deg = 0;
      for (std::size_t x : adj[u]) deg += used[x] ? 0 : 1;
      next.emplace_back(deg, u);
    }
    std::sort(next.begin(), next.end());
    for (const auto& [deg, u] : next) {
      used[u] = 1;
      path.push_back(u);
      if (self(self)) return true;
      path.pop_back();
      used[u] = 0;
    }
    return false;
  };
  return dfs(dfs) ? path : std::vector<std::size_t>{};
}

}  // namespace detail

// The slowest hop (bytes/s) of a ring visiting the worker nodes in `order` (a permutation of
// the worker node indices): min over consecutive pairs, the last back to the first, of the
// pair bandwidth. A one-node ring has no network hop: +infinity.
[[nodiscard]] inline double ring_bottleneck(const cluster_spec& c, const std::vector<int>& order, const node_links& links = {}) {
  const auto cg = make_graph(c, links);
  auto workers = detail::worker_nodes(c);
  if (order.size() != workers.size())
    throw error("order", "a ring visits every worker node once: expected " + std::to_string(workers.size()) + " nodes, got " +
                             std::to_string(order.size()));
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != workers) throw error("order", "must be a permutation of the worker node indices");
  double m = std::numeric_limits<double>::infinity();
  detail::pair_cuts cut(cg);
  for (std::size_t i = 0; i < order.size() && order.size() > 1; ++i) m = std::min(m, cut(order[i], order[(i + 1) % order.size()]));
  return m;
}

// An order of the worker nodes for a ring that maximizes its slowest hop (bottleneck
// travelling salesman: binary search over the distinct pair bandwidths for the largest
// threshold whose graph has a Hamiltonian cycle). Exact up to 16 worker nodes; above, the
// cycle search is a budgeted heuristic, and above ring_search_limit worker nodes of more than
// one shape (or with direct links) the natural order is kept (the pair matrix would grow as the
// square of the nodes). The natural order is returned whenever it is already optimal, and every
// order starts at the first worker node.
inline constexpr std::size_t ring_search_limit = 64;
[[nodiscard]] inline std::vector<int> ring_order(const cluster_spec& c, const node_links& links = {}) {
  const auto cg = make_graph(c, links);
  const auto workers = detail::worker_nodes(c);
  const std::size_t n = workers.size();
  if (n <= 3) return workers;  // every ring of <= 3 nodes uses the same pairs
  // worker nodes all of one shape, without direct links: every ring has the same hops
  if (!cg.direct_links && std::all_of(workers.begin(), workers.end(), [&](int w) {
        return cg.shape[static_cast<std::size_t>(w)] == cg.shape[static_cast<std::size_t>(workers.front())];
      }))
    return workers;
  if (n > ring_search_limit) return workers;
  const auto w = detail::worker_pairs(cg, workers);
  std::vector<std::size_t> natural(n);
  std::iota(natural.begin(), natural.end(), std::size_t{0});
  const double natural_min = detail::cycle_min(w, natural);
  std::vector<double> vals;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) vals.push_back(w[i][j]);
  std::sort(vals.begin(), vals.end());
  vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
  // vals[lo] always has a cycle (natural_min >= vals[0]); find the largest feasible index.
  std::size_t lo = static_cast<std::size_t>(std::lower_bound(vals.begin(), vals.end(), natural_min) - vals.begin());
  std::vector<std::size_t> best = natural;
  std::size_t hi = vals.size() - 1;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    auto cyc = detail::hamiltonian(w, vals[mid]);
    if (!cyc.empty()) {
      lo = mid;
      best = std::move(cyc);
    } else {
      hi = mid - 1;
    }
  }
  if (detail::cycle_min(w, best) <= natural_min) best = natural;
  std::vector<int> out;
  out.reserve(n);
  for (std::size_t i : best) out.push_back(workers[i]);
  return out;
}

// How the device flows of one worker node spread over its NICs. Each device sends
// `flows_per_device` flows, round-robin over the NICs it is attached to in the view.
struct nic_load {
  std::vector<int> flows;                   // [nic] flows through it
  std::vector<double> per_flow_bandwidth;   // [nic] nic.bandwidth / flows (the whole NIC when idle)
  int max_flows = 0;                        // the busiest NIC's flows
  double min_per_flow_bandwidth = 0.0;      // the slowest flow's share, bytes/s
};

// e.g. p3.16xlarge: 8 devices, 1 NIC, 2 flows each -> 16 flows on nic0, 25 Gb/s / 16 per flow.
[[nodiscard]] inline nic_load nic_contention(const cluster_spec& c, const cluster_graph& cg, int node, int flows_per_device) {
  detail::check_node(c.nodes.size(), node, "node");
  const auto& nd = c.nodes[static_cast<std::size_t>(node)];
  if (nd.server_only) throw error("node", "node " + std::to_string(node) + " is server_only: it has no device flows");
  if (flows_per_device < 1) throw error("flows_per_device", "must be at least 1, got " + std::to_string(flows_per_device));
  const auto& g = cg.g;
  nic_load out;
  out.flows.assign(static_cast<std::size_t>(nd.nics), 0);
  for (vertex d : cg.devices[static_cast<std::size_t>(node)]) {
    std::vector<int> mine;
    for (auto [ai, ae] = boost::adjacent_vertices(d, g); ai != ae; ++ai)
      if (g[*ai].kind == vertex_kind::nic) mine.push_back(g[*ai].index);
    std::sort(mine.begin(), mine.end());
    for (int f = 0; f < flows_per_device; ++f) ++out.flows[static_cast<std::size_t>(mine[static_cast<std::size_t>(f) % mine.size()])];
  }
  out.min_per_flow_bandwidth = std::numeric_limits<double>::infinity();
  for (int k : out.flows) {
    const double share = k > 0 ? nd.nic.bandwidth / k : nd.nic.bandwidth;
    out.per_flow_bandwidth.push_back(share);
    out.max_flows = std::max(out.max_flows, k);
    if (k > 0) out.min_per_flow_bandwidth = std::min(out.min_per_flow_bandwidth, share);
  }
  return out;
}
// The same, building the view (cg: make_graph(c), for callers asking about many nodes).
[[nodiscard]] inline nic_load nic_contention(const cluster_spec& c, int node, int flows_per_device) {
  return nic_contention(c, make_graph(c), node, flows_per_device);
}

namespace detail {

inline std::string dot_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += ch;
  }
  return o;
}

inline std::string human_rate(double bytes_per_s) {
  std::ostringstream o;
  o.precision(4);
  o << bytes_per_s / 1e9 << " GB/s";
  return o.str();
}

}  // namespace detail

// Graphviz text of the view: one `subgraph cluster_<i>` per node, the fabric outside, edges
// labelled "<bandwidth> GB/s, <latency> us" (undirected: `graph`, `--`).
inline void to_dot(std::ostream& os, const cluster_spec& c, const node_links& links = {}) {
  const auto cg = make_graph(c, links);
  const auto& g = cg.g;
  auto id = [](vertex v) { return "v" + std::to_string(v); };
  auto shape = [](vertex_kind k) {
    switch (k) {
      case vertex_kind::device: return "box";
      case vertex_kind::node_switch: return "hexagon";
      case vertex_kind::nic: return "ellipse";
      case vertex_kind::fabric: return "diamond";
    }
    return "box";
  };
  auto vertex_line = [&](vertex v, const char* indent) {
    const auto& info = g[v];
    std::string label = detail::dot_escape(info.name);
    if (info.kind == vertex_kind::device) label += "\\nrank " + std::to_string(info.rank);  // a DOT line break
    os << indent << id(v) << " [label=\"" << label << "\", shape=" << shape(info.kind) << "];\n";
  };
  os << "graph \"" << detail::dot_escape(c.name.empty() ? "cluster" : c.name) << "\" {\n";
  os << "  // " << c.world_size() << " ranks on " << c.worker_nodes() << " worker nodes";
  if (c.has_dedicated_servers()) os << " + " << (c.nodes.size() - static_cast<std::size_t>(c.worker_nodes())) << " server nodes";
  os << "\n";
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    const auto& nd = c.nodes[i];
    os << "  subgraph cluster_" << i << " {\n";
    std::string label = detail::node_label(c, i);
    label += nd.server_only ? " (server)" : " (" + std::to_string(nd.devices) + " x " + (c.device.empty() ? "device" : c.device) + ")";
    os << "    label=\"" << detail::dot_escape(label) << "\";\n";
    for (vertex v : cg.devices[i]) vertex_line(v, "    ");
    if (cg.hub[i] != cluster_graph::none()) vertex_line(cg.hub[i], "    ");
    for (vertex v : cg.nics[i]) vertex_line(v, "    ");
    os << "  }\n";
  }
  vertex_line(cg.fabric, "  ");
  for (auto [ei, ee] = boost::edges(g); ei != ee; ++ei) {
    const auto& e = g[*ei];
    std::ostringstream lat;
    lat.precision(3);
    lat << e.latency * 1e6 << " us";
    os << "  " << id(boost::source(*ei, g)) << " -- " << id(boost::target(*ei, g)) << " [label=\"" << detail::human_rate(e.bandwidth)
       << ", " << lat.str() << "\"" << (e.kind == edge_kind::direct ? ", style=bold" : "") << "];\n";
  }
  os << "}\n";
}

[[nodiscard]] inline std::string to_dot(const cluster_spec& c, const node_links& links = {}) {
  std::ostringstream o;
  to_dot(o, c, links);
  return o.str();
}

}  // namespace autosync::graph
