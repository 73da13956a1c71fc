// autosync/cost/nccl_model.hpp — a collective as NCCL runs it: algorithm x protocol, channels
// that grow with the message, chunked pipelines, the network transport, and NCCL's own choice.
//
// The structure follows NCCL's (src/graph/tuning.cc, src/enqueue.cc, src/include/device.h and
// collectives.h, NCCL 2.2x); the constants marked "NCCL" are its tables, the rest say where they
// come from. Everything is constexpr; `make_profile` precomputes what depends on the cluster
// only, so one collective costs a few dozen flops.
//
// Algorithms (NCCL's order) and protocols:
//   ring       2(p-1) steps (all-reduce), p-1 (reduce-scatter / all-gather); every link and every
//              node's NICs carry 2(p-1)/p n bytes per direction
//   tree       chain inside the node, double binary tree across nodes (all-reduce only); a GPU's
//              link carries n per direction, a node's NICs n (2 nodes) or 2n (more: an inner node
//              of one tree, a leaf of the other)
//   collnet    SHARP in the InfiniBand switches (clusters with `collnet`): n per direction per NIC
//   nvls       NVLink SHARP on one node (clusters with `nvls`, Hopper+): (1 + 1/g) n per GPU link,
//              at NCCL's NVLS efficiency
//   nvls_tree  NVLS inside the nodes, a tree across them
//   pat        reduce-scatter / all-gather with one GPU per node (log-depth)
//   LL         8 data bytes per 16-byte line (flag + data): half the link; 32 KiB per step
//   LL128      120 data bytes per 128-byte line: 15/16 of the link; 576,000 B per step
//   Simple     the whole link; 512 KiB per step (4 MiB buffer / NCCL_STEPS 8), ring chunks of
//              ALLREDUCE_CHUNKSTEPS 4 steps
//
// The time of (algorithm, protocol) for n bytes (`time`):
//   channels   NCCL shrinks the channel count while n < channels x threads x threshold
//              (enqueue.cc topoGetAlgoInfo; threads 512 LL / 640 LL128 / 512 Simple, thresholds
//              8 x p for ring LL, 8 LL128, 64 Simple): small messages run on few channels
//   bandwidth  min(channels x per-channel rate, links x protocol efficiency), the links at the rate
//              NCCL's topology gives them (NVLink ~80 %, PCIe 75 % of the data sheet): a channel gets its
//              share of the bottleneck link when all run, capped by NCCL's per-channel maxima
//              (LL128 20 / 36.7 / 40 GB/s Volta-Ampere / Hopper / Blackwell; tree; LL totals)
//   network    every step that crosses a node is one network message per channel of
//              min(step data, the channel's share of the vector); each costs the transport's
//              message overhead (cost/transport.hpp) on its NIC's proxy, beside the bytes:
//                t_net = messages / NICs x overhead + bytes / (NICs x rate x efficiency)
//              so mid-size vectors (many small messages) run slower than the links allow
//   pipeline   a Simple tree forwards whole chunks (store and forward): depth
//              D = 2(g-1) + 2 ceil(lg N) stages add (D - 1) chunk times before the last chunk
//              leaves: the large start-up of big messages; LL / LL128 forward line by line
//   latency    NCCL's base latency + per-hop hardware latency by link type (NVLink, PCI, NET),
//              the transport's message latency on every network hop (twice with Simple:
//              NCCL's flush), times the cluster's latency_scale
//   time       latency + max(link time, network time) + pipeline start-up
//
// NCCL's choice (`select`): NCCL ranks (algorithm, protocol) by its own cost (`nccl_cost`:
// tuning.cc's latency x 1 + n / busbw with its refinements, the tree correction factors, the
// ring's plateau), which knows the links but not the transport's message latency or overhead;
// the predicted time of "NCCL's default" is `time` of what that ranking picks. So a transport
// that is slower than NCCL believes (TCP-based GPUDirect) keeps LL128 where Simple would win.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/transport.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace autosync::cost::nccl {

enum class algorithm : std::uint8_t { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
enum class protocol : std::uint8_t { ll, ll128, simple };
enum class operation : std::uint8_t { all_reduce, reduce_scatter, all_gather };
inline constexpr int operation_count = 3;
inline constexpr int algorithm_count = 7;
inline constexpr int protocol_count = 3;

// --- NCCL's constants (src/graph/tuning.cc, microseconds and GB/s) --------------------------------
namespace table {
// baseLatencies [algorithm][protocol]
inline constexpr double base[algorithm_count][protocol_count] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
// hwLatencies [link: NVLink, PCI, NET][algorithm][protocol]
inline constexpr double hop[3][algorithm_count][protocol_count] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// llMaxBws [single node: generation | multi-node: Intel CPU row][nodes 1 / 2 / >2]
inline constexpr double ll_max[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
inline constexpr double ring_ll128_per_channel[4] = {20.0, 20.0, 36.7, 40.0};
inline constexpr double tree_ll128_per_channel[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
inline constexpr double tree_per_channel[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
inline constexpr double nvls_tree_per_channel[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
inline constexpr double nvls_efficiency[4] = {0.0, 0.0, 0.85, 0.74};
// treeCorrectionFactor [protocol][log2(n / 64)], 64 B .. 256 MiB
inline constexpr double tree_correction[protocol_count][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// Threads per channel and the per-thread work before NCCL adds a channel (enqueue.cc, comm.h).
inline constexpr double threads[protocol_count] = {512, 640, 512};
inline constexpr double thread_threshold[protocol_count] = {8, 8, 64};
// Data bytes one pipeline step moves per channel (device.h buffer sizes / NCCL_STEPS 8):
// LL 8 lines x 512 threads x 16 B / 2; LL128 120 x 640 x 8 B x 120/128; Simple 4 MiB / 8.
inline constexpr double step_data[protocol_count] = {32768.0, 576000.0, 524288.0};
// Data bytes per line over bytes on the wire.
inline constexpr double efficiency[protocol_count] = {0.5, 120.0 / 128.0, 1.0};
// NCCL's per-channel link rate of its topology search (GB/s): NVLink SM80 20, SM90 20.6,
// PCIe Gen3 x16 12 (the reference tables in the tuner ABI notes) -> the default channel count.
inline constexpr double nvlink_per_channel_gbs = 20.0;
// What NCCL's topology takes one link to carry over its data-sheet rate (src/graph/topo.h: NVLink
// SM70/SM80 20.0 GB/s, SM90 20.6, SM100 40.1 per link against 25 / 25 / 50 GB/s per direction on
// the data sheets; PCI_BW 12 GB/s against 16 for Gen3 x16): the rate a long Simple stream reaches.
inline constexpr double nvlink_efficiency[4] = {20.0 / 25.0, 20.0 / 25.0, 20.6 / 25.0, 40.1 / 50.0};
inline constexpr double pcie_efficiency = 12.0 / 16.0;
}  // namespace table

// --- a cluster boiled down for NCCL ------------------------------------------------------------------
struct profile {
  int p = 1, nodes = 1, g = 1;        // ranks, nodes, ranks per node
  int gen = 1;                        // 0 volta, 1 ampere, 2 hopper, 3 blackwell
  int intra_link = 0;                 // 0 NVLink, 1 PCI (NCCL's hop table row)
  double bw_intra = 0.0;              // bytes/s one GPU's link, one direction (g > 1)
  double bw_net = 0.0;                // bytes/s one node's NICs together x transport efficiency (N > 1)
  int nics = 1;
  double msg_latency = 0.0;           // seconds, transport (cost/transport.hpp)
  double msg_overhead = 0.0;          // seconds per network message per NIC
  bool gpu_direct = true;
  bool ll128 = true;                  // LL128 available (across nodes: the transport's)
  bool nvls = false, collnet = false;
  double latency_scale = 1.0;
  int channels = 1;                   // NCCL's channels per communicator (the maximum)
  [[nodiscard]] constexpr int node_index() const noexcept { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }
};

namespace detail {
[[nodiscard]] constexpr int ceil_lg(int x) noexcept {
  int k = 0;
  while ((1 << k) < x) ++k;
  return k;
}
[[nodiscard]] constexpr int idx(algorithm a) noexcept { return static_cast<int>(a); }
[[nodiscard]] constexpr int idx(protocol q) noexcept { return static_cast<int>(q); }
[[nodiscard]] constexpr double gbs(double v) noexcept { return v * 1e9; }
[[nodiscard]] constexpr double min3(double a, double b, double c) noexcept { return std::min(a, std::min(b, c)); }
inline constexpr double infinite_bw = 1e300;
}  // namespace detail

// A communicator of `ranks` ranks over `nodes` nodes of `per_node` ranks each, on links of
// `bw_intra` (per GPU) and nodes of `bw_net` (all NICs, line rate) — the slowest of the cluster.
[[nodiscard]] constexpr profile make_profile(const cluster_spec& c, int ranks, int nodes, int per_node, double bw_intra, double bw_net,
                                             int nics, bool pcie_intra) noexcept {
  profile f;
  f.p = ranks;
  f.nodes = nodes;
  f.g = per_node;
  f.gen = static_cast<int>(generation_of(c)) - 1;
  if (f.gen < 0) f.gen = 1;
  f.intra_link = pcie_intra ? 1 : 0;
  const auto t = resolve(c.transport);
  f.bw_intra = bw_intra * (pcie_intra ? table::pcie_efficiency : table::nvlink_efficiency[f.gen]);
  f.bw_net = bw_net * t.efficiency;
  f.nics = std::max(1, nics);
  f.msg_latency = t.message_latency;
  f.msg_overhead = t.message_overhead;
  f.gpu_direct = t.gpu_direct;
  f.ll128 = nodes <= 1 || t.ll128;
  f.nvls = c.nvls && f.gen >= 2 && !pcie_intra;
  f.collnet = c.collnet;
  f.latency_scale = c.latency_scale;
  if (c.channels > 0) {
    f.channels = c.channels;
  } else {
    // NCCL's search: as many channels as the GPU's links carry at its per-channel rate (even,
    // 2..32); across nodes 2 per NIC (one ring per NIC and direction), no more than that.
    const double per_gpu = per_node > 1 ? bw_intra : bw_net;
    int ch = static_cast<int>(per_gpu / detail::gbs(table::nvlink_per_channel_gbs) + 0.999);
    ch += ch % 2;
    ch = std::clamp(ch, 2, 32);
    if (nodes > 1) ch = std::clamp(2 * f.nics, 2, ch);
    f.channels = ch;
  }
  return f;
}

// --- the pieces --------------------------------------------------------------------------------------
// Channels NCCL runs a collective of n bytes on (enqueue.cc: shrink while n < nc x threads x threshold).
[[nodiscard]] constexpr int channels_for(const profile& f, algorithm a, protocol q, double n) noexcept {
  if (a == algorithm::nvls || a == algorithm::nvls_tree) return f.channels;
  const double thr = table::thread_threshold[detail::idx(q)] * (a == algorithm::ring && q == protocol::ll ? f.p : 1);
  const double unit = table::threads[detail::idx(q)] * thr;
  const double k = n / unit;
  if (k >= f.channels) return f.channels;
  return std::max(1, static_cast<int>(k));
}

// NCCL's latency (tuning.cc), microseconds; `with_transport` adds the transport's message latency
// to every network hop (what NCCL's table does not know).
[[nodiscard]] constexpr double latency_us(const profile& f, operation op, algorithm a, protocol q, bool with_transport) noexcept {
  using detail::idx;
  const int A = idx(a), Q = idx(q);
  const double intra_hop = table::hop[f.intra_link][A][Q];
  const double tx = with_transport ? f.msg_latency * 1e6 : 0.0;
  double inter_hop = (f.g == 1 ? table::hop[2][idx(algorithm::tree)][Q] : table::hop[2][A][Q]) + tx;
  if (q == protocol::simple) inter_hop += tx;  // NCCL's flush: a second network latency with Simple
  const double base = table::base[A][Q];
  const int N = f.nodes, g = f.g, p = f.p;
  switch (a) {
    case algorithm::ring: {
      const int steps = op == operation::all_reduce ? 2 * (p - 1) : p - 1;
      const int inter = N == 1 ? 0 : (op == operation::all_reduce ? 2 * (N - 1) : N - 1);
      double ih = intra_hop;
      if (N > 1) ih = std::max(ih, q == protocol::simple ? 3.0 : 1.0);  // the network post overhead per step
      return base + (steps - inter) * ih + inter * inter_hop;
    }
    case algorithm::tree: return base + 2.0 * ((g - 1) * intra_hop + detail::ceil_lg(N) * inter_hop);
    case algorithm::collnet_direct:
    case algorithm::collnet_chain: return base + 2.0 * (g - 1) * intra_hop + inter_hop;
    case algorithm::nvls: return table::hop[0][idx(algorithm::nvls)][2] + (N > 1 ? inter_hop : 0.0);
    case algorithm::nvls_tree: return table::hop[0][idx(algorithm::nvls)][2] + 2.0 * detail::ceil_lg(N) * inter_hop;
    case algorithm::pat: return base + detail::ceil_lg(N) * (inter_hop / 3.5) + p * 2.8;
  }
  return base;
}

// Whether NCCL has (a, q) for op on this profile.
[[nodiscard]] constexpr bool available(const profile& f, operation op, algorithm a, protocol q) noexcept {
  if (f.p <= 1) return a == algorithm::ring && q == protocol::simple;
  if (q == protocol::ll128 && !f.ll128) return false;
  const bool ar = op == operation::all_reduce;
  switch (a) {
    case algorithm::ring: return true;
    case algorithm::tree: return ar;
    case algorithm::collnet_direct:
    case algorithm::collnet_chain: return ar && f.collnet && f.nodes > 1 && q == protocol::simple;
    case algorithm::nvls: return f.nvls && f.nodes == 1 && q == protocol::simple && f.g > 1;
    case algorithm::nvls_tree: return ar && f.nvls && f.nodes > 1 && q == protocol::simple;
    case algorithm::pat: return !ar && f.g == 1 && f.nodes > 1 && q == protocol::simple;
  }
  return false;
}

namespace detail {
// Bytes per byte of the vector through one GPU link / one node's NICs, per direction.
struct load {
  double link = 0.0, net = 0.0;
};
[[nodiscard]] constexpr load loads(const profile& f, operation op, algorithm a) noexcept {
  const double fr = f.p <= 1 ? 0.0 : static_cast<double>(f.p - 1) / f.p;
  const double ring = op == operation::all_reduce ? 2.0 * fr : fr;
  const bool multi = f.nodes > 1;
  switch (a) {
    case algorithm::ring: return {f.g > 1 ? ring : 0.0, multi ? ring : 0.0};
    case algorithm::tree: return {f.g > 1 ? 1.0 : 0.0, multi ? (f.nodes <= 2 ? 1.0 : 2.0) : 0.0};
    case algorithm::collnet_direct:
    case algorithm::collnet_chain: return {f.g > 1 ? 1.0 : 0.0, 1.0};
    // NVLS: a GPU's link carries its whole vector to the switch's reductions plus its reduced
    // 1/g for the multicast, each way: (1 + 1/g) n
    case algorithm::nvls: return {1.0 + 1.0 / f.g, 0.0};
    case algorithm::nvls_tree: return {1.0 + 1.0 / f.g, multi ? (f.nodes <= 2 ? 1.0 : 2.0) : 0.0};
    case algorithm::pat: return {0.0, multi ? fr : 0.0};
  }
  return {};
}
// The links' own limit on the algorithm bandwidth (bytes of the vector per second).
[[nodiscard]] constexpr double link_limit(const profile& f, load l) noexcept {
  const double a = l.link > 0.0 ? f.bw_intra / l.link : infinite_bw;
  const double b = l.net > 0.0 ? f.bw_net / l.net : infinite_bw;
  return std::min(a, b);
}
}  // namespace detail

// The predicted time (seconds) of op over n bytes with algorithm a and protocol q.
[[nodiscard]] constexpr double time(const profile& f, operation op, algorithm a, protocol q, double n) noexcept {
  using namespace detail;
  if (f.p <= 1 || n <= 0.0) return 0.0;
  const int Q = idx(q);
  const int nc = channels_for(f, a, q, n);
  const auto l = loads(f, op, a);
  const double eff = table::efficiency[Q];
  // algorithm bandwidth: the links (x protocol efficiency) and the channels' own rate
  double alg = link_limit(f, l) * eff;
  if (a == algorithm::nvls || a == algorithm::nvls_tree) alg *= table::nvls_efficiency[f.gen];
  const double full = link_limit(f, l);  // one channel's share of it when all run
  double per_channel = full / f.channels * eff;
  if (q == protocol::ll128)
    per_channel = std::min(per_channel, gbs(a == algorithm::tree ? table::tree_ll128_per_channel[f.gen][f.node_index()]
                                                                 : table::ring_ll128_per_channel[f.gen]));
  if (a == algorithm::tree && q == protocol::simple) per_channel = std::min(per_channel, gbs(table::tree_per_channel[f.gen][f.node_index()]));
  alg = std::min(alg, nc * per_channel);
  if (q == protocol::ll) {
    const int row = f.nodes == 1 ? f.gen : 0;
    const double bus_over_alg = l.link > 0.0 ? l.link : (l.net > 0.0 ? l.net : 1.0);
    alg = std::min(alg, gbs(table::ll_max[row][f.node_index()]) / bus_over_alg);
  }
  const double t_links = n / alg;
  // network messages and their overhead
  double t_net = 0.0, fill = 0.0;
  if (f.nodes > 1 && l.net > 0.0) {
    const double slots = a == algorithm::ring ? f.p : 1.0;
    const double msg = std::max(1.0, std::min(table::step_data[Q], n / (nc * slots)));
    const double bytes = l.net * n;
    t_net = bytes / msg * f.msg_overhead / f.nics + bytes / f.bw_net;
    // without GPU-direct each message is also copied through host memory; the copy is pipelined
    // with the next message's send, and its cost is in the transport's overhead and efficiency
  }
  if (q == protocol::simple && (a == algorithm::tree || a == algorithm::collnet_chain || a == algorithm::nvls_tree)) {
    const int depth = (a == algorithm::nvls_tree ? 0 : 2 * (f.g - 1)) + 2 * ceil_lg(f.nodes);
    const double chunk = std::min(table::step_data[Q], n / nc);
    fill = std::max(0, depth - 1) * chunk / (alg / nc);
    if (f.nodes > 1) fill += 2.0 * f.msg_overhead;
  }
  const double lat = latency_us(f, op, a, q, true) * 1e-6 * f.latency_scale;
  return lat + std::max(t_links, t_net) + fill;
}

namespace detail {
// The part of nccl_cost that does not depend on the size: (a, q)'s latency (us) and algorithm
// bandwidth (GB/s) before the size's corrections; ok false where nccl_cost answers -1.
struct cost_terms {
  bool ok = false;
  double lat = 0.0, alg_bw = 0.0;
};
[[nodiscard]] constexpr cost_terms nccl_cost_terms(const profile& f, operation op, algorithm a, protocol q) noexcept {
  const int G = f.gen, Ni = f.node_index();
  const double nc = f.channels;
  const double raw_net = f.bw_net;  // NCCL's graph sees the NIC speed
  double bus = 0.0;  // GB/s
  switch (a) {
    case algorithm::ring: bus = std::min(f.g > 1 ? f.bw_intra : infinite_bw, f.nodes > 1 ? raw_net : infinite_bw) / 1e9; break;
    case algorithm::tree: bus = std::min(f.g > 1 ? f.bw_intra : infinite_bw, f.nodes > 1 ? (f.nodes <= 2 ? 2.0 : 1.0) * raw_net : infinite_bw) / 1e9; break;
    case algorithm::collnet_direct:
    case algorithm::collnet_chain: bus = std::min(f.bw_intra, raw_net) / 1e9; break;
    case algorithm::nvls: bus = f.bw_intra / 1e9 * table::nvls_efficiency[G] * (nc - 1) / nc * 2.0; break;
    case algorithm::nvls_tree:
      bus = min3(f.bw_intra / 1e9 * table::nvls_efficiency[G] * (nc - 1) / nc * 2.0, raw_net / 1e9 * (f.nodes <= 2 ? 2.0 : 1.0),
                 nc * table::nvls_tree_per_channel[G][Ni]);
      break;
    case algorithm::pat: bus = raw_net / 1e9 * 0.75; break;
  }
  if (a == algorithm::ring && q == protocol::ll) bus = std::min(table::ll_max[f.nodes == 1 ? G : 0][Ni], bus * 0.5);
  if (a == algorithm::ring && q == protocol::ll128) bus = std::min(bus * 0.92, nc * table::ring_ll128_per_channel[G]);
  if (a == algorithm::tree) bus = std::min(bus * 0.92, nc * table::tree_per_channel[G][Ni]);
  if (a == algorithm::tree && q == protocol::ll) bus = std::min(bus / 3.8, table::ll_max[f.nodes == 1 ? G : 0][Ni]);
  if (a == algorithm::tree && q == protocol::ll128)
    bus = std::min(bus * (f.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nc * table::tree_ll128_per_channel[G][Ni]);
  const int steps = op == operation::all_reduce ? 2 * (f.p - 1) : f.p - 1;
  double alg_bw = bus;
  if (a == algorithm::ring || a == algorithm::nvls || a == algorithm::nvls_tree) alg_bw *= static_cast<double>(f.p) / steps;
  else if (!(op != operation::all_reduce && a == algorithm::pat)) alg_bw *= 0.5;
  if (alg_bw <= 0.0) return {};
  return {true, latency_us(f, op, a, q, false), alg_bw};
}
// nccl_cost of n bytes from its size-independent terms (k.ok): the tree's correction for the
// size and the ring's plateau.
[[nodiscard]] constexpr double nccl_cost_at(const profile& f, operation op, algorithm a, protocol q, const cost_terms& k, double n) noexcept {
  double alg_bw = k.alg_bw, lat = k.lat;
  // floor(log2(n / 64)), -1 below 64 bytes: the exponent of a double >= 1 (exact: what halving
  // it until it falls below 1 counts)
  int log_size = -1;
  if (const double v = n / 64.0; v >= 1.0) log_size = static_cast<int>((std::bit_cast<std::uint64_t>(v) >> 52) & 0x7ffu) - 1023;
  if (a == algorithm::tree && op == operation::all_reduce && log_size >= 0 && log_size < 23) alg_bw *= table::tree_correction[idx(q)][log_size];
  if (a == algorithm::ring && q == protocol::simple && f.nodes > 1 && op == operation::all_reduce && n / (static_cast<double>(f.channels) * f.p) >= 64)
    lat *= f.gen < 1 ? 1.9 : 1.4;  // "plateau effect of ring"
  return lat + n / (1000.0 * alg_bw);
}
}  // namespace detail

// NCCL's own estimate (microseconds) of (a, q): its latency table and its bandwidth model, as
// tuning.cc computes it, on the links it sees (it does not know the transport's message costs).
[[nodiscard]] constexpr double nccl_cost(const profile& f, operation op, algorithm a, protocol q, double n) noexcept {
  if (f.p <= 1) return 0.0;
  const auto k = detail::nccl_cost_terms(f, op, a, q);
  return k.ok ? detail::nccl_cost_at(f, op, a, q, k, n) : -1.0;
}

struct choice {
  algorithm algo = algorithm::ring;
  protocol proto = protocol::simple;
  double time = 0.0;        // seconds (`time`)
};

// Which algorithms the caller allows (bit i = algorithm i).
inline constexpr unsigned all_algorithms = (1u << algorithm_count) - 1;
[[nodiscard]] constexpr unsigned only(algorithm a) noexcept { return 1u << detail::idx(a); }

namespace detail {
// NCCL's pick among the allowed algorithms, given whether (a, q) is available and its nccl_cost.
template <class Available, class Cost>
[[nodiscard]] constexpr choice select_by(const profile& f, operation op, double n, unsigned allowed, const Available& available_,
                                         const Cost& cost) noexcept {
  choice best;
  double best_cost = 0.0;
  bool found = false;
  for (int a = 0; a < algorithm_count; ++a) {
    if (!(allowed & (1u << a))) continue;
    for (int q = 0; q < protocol_count; ++q) {
      const auto A = static_cast<algorithm>(a);
      const auto Q = static_cast<protocol>(q);
      if (!available_(A, Q)) continue;
      const double c = cost(A, Q);
      if (c < 0.0) continue;
      if (!found || c < best_cost) {
        found = true;
        best_cost = c;
        best.algo = A;
        best.proto = Q;
      }
    }
  }
  if (!found) {  // the allowed set has nothing for op (e.g. tree for reduce-scatter): ring
    if (allowed == only(algorithm::ring)) {
      best.algo = algorithm::ring;
      best.proto = protocol::simple;
    } else {
      return select_by(f, op, n, only(algorithm::ring), available_, cost);
    }
  }
  best.time = time(f, op, best.algo, best.proto, n);
  return best;
}
}  // namespace detail

// NCCL's pick among the allowed algorithms (by nccl_cost) and its predicted time.
[[nodiscard]] constexpr choice select(const profile& f, operation op, double n, unsigned allowed = all_algorithms) noexcept {
  return detail::select_by(
      f, op, n, allowed, [&](algorithm a, protocol q) { return available(f, op, a, q); },
      [&](algorithm a, protocol q) { return nccl_cost(f, op, a, q, n); });
}

// A profile with its size-independent selection terms worked out once (availability and
// nccl_cost's terms of every operation, algorithm and protocol): select(selector, ...) gives
// select(profile, ...)'s choice and time, bit for bit, for evaluators that price many sizes.
struct selector {
  profile f{};
  bool available[operation_count][algorithm_count][protocol_count]{};
  detail::cost_terms terms[operation_count][algorithm_count][protocol_count]{};
};
[[nodiscard]] constexpr selector make_selector(const profile& f) noexcept {
  selector s;
  s.f = f;
  for (int o = 0; o < operation_count; ++o)
    for (int a = 0; a < algorithm_count; ++a)
      for (int q = 0; q < protocol_count; ++q) {
        const auto O = static_cast<operation>(o);
        const auto A = static_cast<algorithm>(a);
        const auto Q = static_cast<protocol>(q);
        s.available[o][a][q] = available(f, O, A, Q);
        if (f.p > 1) s.terms[o][a][q] = detail::nccl_cost_terms(f, O, A, Q);
      }
  return s;
}
[[nodiscard]] constexpr choice select(const selector& s, operation op, double n, unsigned allowed = all_algorithms) noexcept {
  const int o = static_cast<int>(op);
  return detail::select_by(
      s.f, op, n, allowed, [&](algorithm a, protocol q) { return s.available[o][detail::idx(a)][detail::idx(q)]; },
      [&](algorithm a, protocol q) {
        if (s.f.p <= 1) return 0.0;
        const auto& k = s.terms[o][detail::idx(a)][detail::idx(q)];
        return k.ok ? detail::nccl_cost_at(s.f, op, a, q, k, n) : -1.0;
      });
}

// The bandwidth-only time of the best available algorithm with Simple at full efficiency: a
// lower bound of every `time` (no latency, no message overhead, every channel).
[[nodiscard]] constexpr double bound(const profile& f, operation op, double n) noexcept {
  if (f.p <= 1 || n <= 0.0) return 0.0;
  double best = detail::infinite_bw;
  for (int a = 0; a < algorithm_count; ++a) {
    const auto A = static_cast<algorithm>(a);
    if (!available(f, op, A, protocol::simple)) continue;
    double lim = detail::link_limit(f, detail::loads(f, op, A));
    best = std::min(best, n / lim);
  }
  return best;
}

}  // namespace autosync::cost::nccl
