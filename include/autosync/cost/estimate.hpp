// autosync/cost/estimate.hpp — the iteration time of a strategy, without running it.
//
// `estimate(model, cluster, strategy)` plays one training iteration on a timeline:
//
//   time ─────────────────────────────────────────────────────────────────────────────>
//   compute  |<── forward ──>|<────────────── backward ──────────────>|
//   ready                       t9  t8 ... (gradients, back layers first)   t0
//   buckets                        [b0 ready]      [b1 ready]            [b2 ready]
//   lane 0 (collectives)              [== b0 ==]      [=== b1 ===]          [== b2 ==]
//   lane 1 (PS server 0)                 [ b0/s0 ]       [ b1/s0 ]
//   lane 2 (PS server 1)                 [ b0/s1 ]                  [ b2/s1 ]
//                                                                            exposed
//   iteration = forward + max(backward, last lane end - forward)          |<-------->|
//
// The steps, in order (every one of them constexpr):
//
// 1. Items: `autosync::expand` (strategy/items.hpp; `expand_into` in the evaluator): one item per
//    tensor or shard, with its wire bytes (compressed, or touched rows of a sparse gradient)
//    and its parameter server resolved. The strategy must be valid (strategy_desc::validate).
// 2. Compute (cost/compute.hpp): the forward time and each tensor's backward time on the
//    slowest device of the cluster (data parallelism waits for it) — from a measured profile,
//    from the model's layers on the device's roofline at the model's precision, or from FLOPs
//    alone (forward_flops / rate, backward_flops / rate). Gradients become ready in
//    model.backward_order(); the tensor at position k is ready at forward + the backward time
//    of positions 0..k (a profile: at forward + its measured ready time).
// 3. Fusion: per group, the items in ready order are packed into buckets. The first bucket
//    holds at most fusion.first_cap_bytes, the others fusion.cap_bytes (dense bytes, the
//    size of the fusion buffer); a bucket closes when the next item would push it past its
//    cap; an item larger than the cap travels alone; cap 0 = one item per bucket. A bucket is
//    ready when its last item is. Buckets are numbered in ready order (ties: creation order).
// 4. Cost of a bucket of S wire bytes (cost/fabric.hpp maps the topology onto the cluster):
//      all_reduce        all_reduce(fabric, topology, S)
//      sharded           reduce_scatter(S) then all_gather(S) as two events on lane 0. ZeRO
//                        may defer the all-gather into the next forward; it is kept on the
//                        critical path here (the conservative choice; the GBT correction
//                        learns how much a real overlap hides).
//      all_gather        sparse: every rank gathers the others' S bytes, (p-1) S in per rank
//      parameter_server  one transfer per (bucket, server) with B = the bucket's bytes on that
//                        server. copies = N nodes with local replication, else p ranks; c_k =
//                        1 with local replication, else node k's ranks. A dedicated server
//                        node has a NIC of its own; a co-located server s (a cluster without
//                        server_only nodes) lives on worker node h = fabric::servers[s].worker
//                        and shares h's NICs, and h's own c_h copies never cross the network.
//                          own     = 0 (dedicated) or c_h (co-located)
//                          remote  = copies - own: the copies through the server's NIC, pushed
//                                    in and pulled out (NICs are full duplex: in and out overlap)
//                          server  = max(2 remote alpha_srv + remote B beta_srv,
//                                        2 own alpha_intra + own B beta_intra)
//                                    (the second term only without local replication: the host's
//                                    ranks push and pull over their device links; with it the
//                                    host's one reduced copy is already there)
//                          worker  = max over worker nodes k != h of 2 c_k alpha_k + c_k B beta_k
//                          local   = intra-node reduce before the push + broadcast after the
//                                    pull on g ranks (cost::reduce / cost::broadcast)
//                        transfer = local reduce + max(server, worker) + local broadcast.
//                        Server summation is taken as hidden behind the receive (BytePS).
//                        NIC occupancy of the transfer on worker node k, max(out, in) beta_k:
//                          k != h   c_k B beta_k        (c_k B out: push; c_k B in: pull)
//                          k == h   remote B beta_h     (remote B in: pushes; out: pulls)
//                        With co-located servers a node's NICs carry its own pushes AND the
//                        pulls its server sends to everyone else. N nodes, local replication,
//                        a bucket of X bytes spread evenly, B = X/N on each node's server:
//
//                          node 0 [s0] ──X/N──> s1, s2, .. s(N-1)    pushes  (N-1) X/N out
//                                      <──X/N── s1, s2, .. s(N-1)    pulls   (N-1) X/N in
//                                      <──X/N── nodes 1..N-1 to s0   pushes  (N-1) X/N in
//                                      ──X/N──> nodes 1..N-1 from s0 pulls   (N-1) X/N out
//                          per node: 2(N-1)/N X out and in  ->  2(N-1)/N X beta of NIC time,
//
//                        exactly a ring all-reduce's node-level cut: co-located servers cannot
//                        beat an all-reduce on bandwidth, only dedicated ones can (BytePS: each
//                        worker node then moves X out and X in, X beta < 2(N-1)/N X beta, if
//                        the servers' NICs keep up: N X / (servers) beta_srv each).
//    Compression adds encode + decode compute, flops_per_element x elements / device_flops,
//    as a kind-2 event on the same lane right before the bytes move.
// 5. Lanes: lane 0 is the collective communicator — all_reduce, sharded and all_gather buckets
//    of every group are serialized on it. Lanes 1..S are the parameter servers: a server takes
//    one transfer at a time, servers run in parallel. A job starts at max(ready, its lane free).
//    Each worker node's NICs are a serial resource beside the PS lanes, nic_free[k]: a transfer
//    that starts at t pushes at t' = t + compression + local reduce, puts its occupancy
//    through every node it crosses after that node's earlier work,
//      nic_free[k] = max(nic_free[k], t') + occupancy_k        (for occupancy_k > 0)
//    and ends at max(t' + exchange, max_k nic_free[k]) + local broadcast — so many servers
//    cannot beat the workers' own NICs, while latencies to different servers overlap.
// 6. Schedule: when a lane frees, it takes among its jobs ready by then the best by key —
//    priority groups first, lowest forward tensor index of the bucket first (ByteScheduler:
//    the next forward needs front layers first), then fifo groups in ready order; with none
//    ready it waits for the next. A busy server holds up no other server's transfers.
// 7. iteration = forward + max(backward, last lane end - forward, step 8's bound - forward);
//    exposed = iteration - forward - backward; communication = busy time of kinds 0 and 1
//    summed over lanes; compression = busy time of kind 2.
//    lower_bound = forward + max(backward, L) where L = max(sum over lane-0 buckets of their
//    bandwidth bound (fabric lower_bound / sparse_all_gather_lower_bound), max over servers
//    of the server-bandwidth part of its transfers, max over worker nodes k of the NIC time
//    of all jobs on k (step 8)). Each term is a busy time that happens after the forward, so
//    iteration >= lower_bound always; the search prunes on it.
// 8. The shared NICs (when there are PS lanes and N > 1): lane 0 and the PS lanes share each
//    worker node's NICs. A lane-0 job occupies every node's NICs alike for its node-level cut,
//    nic_occupancy(fabric, S) = 2(N-1)/N S inter.beta (sparse all-gather: (N-1)/N p S
//    inter.beta); a PS transfer occupies node k for its occupancy_k of step 4. Then
//      iteration end >= max over nodes k, max over jobs j of
//                       (ready_j + sum of occupancy_k over the jobs ready no earlier than j)
//    (the single-machine bound with release times, node by node) — so splitting a model
//    between a collective and parameter servers cannot make a node's NICs move bytes faster
//    than they can. O(jobs x nodes): lane-0 jobs add one common term to every node.
//
// `evaluator` precomputes what depends on (model, cluster) and reuses its buffers: use it in
// loops (one evaluator per thread: its scratch is mutable). It keeps references to the model
// and the cluster, which must outlive it.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/collectives.hpp>
#include <autosync/cost/compute.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace autosync::cost {

inline constexpr std::uint8_t event_collective = 0;
inline constexpr std::uint8_t event_ps_transfer = 1;
inline constexpr std::uint8_t event_compression = 2;

struct event {
  int lane = 0;                // 0 collective communicator, 1 + s parameter server s
  std::uint32_t group = 0;     // strategy group
  std::uint32_t bucket = 0;    // bucket number (ready order)
  double start = 0.0, end = 0.0;  // seconds from the start of the iteration
  std::int64_t bytes = 0;      // wire bytes one rank moves (PS: on this server)
  std::uint8_t kind = 0;       // event_collective, event_ps_transfer, event_compression
};

struct bucket {
  std::uint32_t group = 0;
  std::vector<std::uint32_t> items;  // indices into expand(model, cluster, strategy), ready order
  std::int64_t wire_bytes = 0;
  double ready = 0.0;                // seconds from the start of the iteration
};

struct prediction {
  double iteration = 0.0;      // forward + backward + exposed communication
  double forward = 0.0, backward = 0.0;
  double communication = 0.0;  // busy time of collectives and PS transfers, summed over lanes
  double compression = 0.0;    // busy time of encode/decode compute, summed over lanes
  double exposed = 0.0;        // iteration - forward - backward
  double lower_bound = 0.0;    // forward + max(backward, bandwidth bound of the lanes); <= iteration
  std::vector<event> events;   // only when options.timeline
};

struct options {
  bool timeline = false;
};

// What depends only on (model, cluster).
struct context {
  fabric fab;
  double forward = 0.0, backward = 0.0;
  std::vector<std::uint32_t> order;       // backward order: the tensor at each ready position
  std::vector<double> ready_at;           // absolute ready time of each ready position
  std::vector<std::uint32_t> position;    // per tensor: its ready position
  // PS NIC occupancy per byte (step 4, fabric.hpp ps_nic_unit), [0, W) with local replication,
  // [W, 2W) without: ps_unit on worker node k for a server it does not host, ps_host_unit[s]
  // (2 S entries alike) on the node that hosts server s (co-located servers only).
  std::vector<double> ps_unit, ps_host_unit;
};

[[nodiscard]] constexpr context make_context(const model_spec& m, const cluster_spec& c) {
  context x;
  x.fab = make_fabric(c);
  // compute (step 2): cost/compute.hpp — a measured profile, the layers' roofline, or FLOPs
  const compute_times ct = compute(m, c);
  x.forward = ct.forward;
  const auto ord = m.backward_order();
  x.order.resize(ord.size());
  x.ready_at.resize(ord.size());
  x.position.resize(ord.size());
  double t = x.forward;
  for (std::size_t k = 0; k < ord.size(); ++k) {
    x.order[k] = static_cast<std::uint32_t>(ord[k]);
    x.position[ord[k]] = static_cast<std::uint32_t>(k);
    t = ct.from == compute_times::source::profile ? std::max(t, x.forward + ct.ready[ord[k]]) : t + ct.backward[ord[k]];
    x.ready_at[k] = t;
  }
  x.backward = t - x.forward + ct.tail;
  const auto W = x.fab.workers.size(), S = x.fab.servers.size();
  x.ps_unit.assign(2 * W, 0.0);
  x.ps_host_unit.assign(2 * S, 0.0);
  for (std::size_t k = 0; k < W; ++k) {  // ps_nic_unit on a node that does not host the server
    x.ps_unit[k] = x.fab.workers[k].nic.beta;
    x.ps_unit[W + k] = x.fab.workers[k].ranks * x.fab.workers[k].nic.beta;
  }
  for (std::size_t sv = 0; sv < S; ++sv) {
    const int h = x.fab.servers[sv].worker;
    if (h < 0) continue;
    x.ps_host_unit[sv] = ps_nic_unit(x.fab, sv, true, static_cast<std::size_t>(h));
    x.ps_host_unit[S + sv] = ps_nic_unit(x.fab, sv, false, static_cast<std::size_t>(h));
  }
  return x;
}

// Reusable buffers of one evaluation.
struct workspace {
  std::vector<sync_item> items;
  std::vector<std::uint32_t> first;        // per tensor: index of its first item (items of a tensor are contiguous)
  std::vector<std::uint32_t> count;        // per tensor: its items
  std::vector<std::uint32_t> next;         // per item: the next item of its bucket (linked list)
  struct open_bucket {
    std::uint32_t head = 0, tail = 0, n = 0, min_tensor = 0, ready_pos = 0;
    std::uint64_t bytes = 0;
    std::int64_t wire = 0;
    double comp_flops = 0.0;
    bool first = true;
  };
  std::vector<open_bucket> open;           // per group
  struct group_info {
    architecture_kind arch{};
    topology_value topology{};
    std::uint64_t cap = 0, first_cap = 0;
    bool priority = false, local = false;
    double comp_flops_per_element = 0.0, comp_wire_per_element = 0.0;
  };
  std::vector<group_info> groups;
  struct job {
    double ready = 0.0;
    std::uint64_t key = 0;
    std::uint32_t bucket = 0, group = 0, ready_pos = 0, head = 0, count = 0;
    int lane = 0;
    double comp = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
    double nic = 0.0;        // lane 0: how long it keeps every worker node's NICs busy (PS: step 4's
                             // occupancy is bytes x context::ps_unit / ps_host_unit, per node)
    std::int64_t bytes = 0;
  };
  std::vector<job> jobs, sorted;
  std::vector<std::uint32_t> hist;         // counting sort by ready position
  std::vector<std::uint64_t> heap;
  std::vector<std::vector<std::uint32_t>> pending;   // per server: its jobs in ready order
  std::vector<std::vector<std::uint64_t>> ready_heap; // per server: keys of its ready jobs
  std::vector<std::size_t> pending_at;
  std::vector<double> queued_at;
  std::vector<double> server_bytes, server_lb, lane_free;
  std::vector<double> nic_free;            // per worker node: when its NICs are free (5); then step 8's suffix sums
  std::vector<double> nic_sum;             // per worker node: the PS transfers' occupancy, summed (5)
  std::vector<std::uint32_t> touched;
  std::vector<std::uint32_t> bucket_number;  // creation index -> ready-order number
};

namespace detail {

[[nodiscard]] constexpr bool floating(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16;
}

// Elements an item's compressor encodes (0 when it travels uncompressed).
[[nodiscard]] constexpr double compressed_elements(const model_spec& m, const sync_item& it, double wire_per_element) noexcept {
  const auto& t = m.tensors[it.tensor];
  if (!(wire_per_element > 0.0) || !floating(t.type) || !(wire_per_element < size_of(t.type))) return 0.0;
  if (!t.sparse) return static_cast<double>(it.elements);
  const std::int64_t rows = it.axis == 0 ? it.end - it.begin : t.shape[0];
  if (rows <= 0) return 0.0;
  const double touched = std::max(1.0, static_cast<double>(rows) * t.sparse_density);
  return touched * (static_cast<double>(it.elements) / static_cast<double>(rows));
}

// The transfer of B bytes to server s (see the header comment, step 4): its time parts into `j`
// (t1 local reduce, t2 exchange, t3 local broadcast) and the server's bandwidth part into
// `server_bw_part`. Its NIC occupancy per worker node is B x fabric.hpp's ps_nic_unit.
constexpr void ps_transfer(const fabric& f, std::size_t s, double B, bool local, workspace::job& j, double& server_bw_part) noexcept {
  const auto& srv = f.servers[s];
  const int h = srv.worker;  // the worker node that hosts s (-1: a dedicated server node)
  const double copies = local ? f.nodes : f.p;
  // the host's own copies never cross the network: with local replication its one reduced
  // copy is already there; without, its ranks push and pull over their own device links
  const double own = h < 0 ? 0.0 : (local ? 1.0 : f.workers[static_cast<std::size_t>(h)].ranks);
  const double remote = copies - own;  // copies through the server's NIC, in and out
  const double net_bw = remote * B * srv.nic.beta;
  const double own_bw = local ? 0.0 : own * B * f.intra.beta;
  server_bw_part = std::max(net_bw, own_bw);
  double server = remote > 0.0 ? 2.0 * remote * srv.nic.alpha + net_bw : 0.0;
  if (own_bw > 0.0) server = std::max(server, 2.0 * own * f.intra.alpha + own_bw);
  // every other worker node k: c_k B out (push), c_k B in (pull)
  double worker = 0.0;
  for (std::size_t k = 0; k < f.workers.size(); ++k) {
    if (static_cast<int>(k) == h) continue;
    const auto& w = f.workers[k];
    const double c = local ? 1.0 : w.ranks;
    worker = std::max(worker, 2.0 * c * w.nic.alpha + c * B * w.nic.beta);
  }
  j.t1 = local && f.g > 1 ? reduce(f.g, B, f.intra.alpha, f.intra.beta, f.gamma) : 0.0;
  j.t2 = std::max(server, worker);
  j.t3 = local && f.g > 1 ? broadcast(f.g, B, f.intra.alpha, f.intra.beta) : 0.0;
  // latency is time in flight, not NIC occupancy: transfers to different servers overlap it
}

// Calls visit(k, o) for every worker node k that PS transfer j crosses, with its NIC occupancy
// o > 0 there (step 4): o = bytes x ps_unit[k], on the node hosting the server bytes x
// ps_host_unit (skipped when 0: one node hosting everything). A valid cluster's NICs have
// bandwidth > 0, so every other node's o is > 0.
template <class Visit>
constexpr void for_each_occupancy(const context& x, const workspace& ws, const workspace::job& j, Visit&& visit) {
  const auto W = x.fab.workers.size(), S = x.fab.servers.size();
  const auto sv = static_cast<std::size_t>(j.lane - 1);
  const bool local = ws.groups[j.group].local;
  const double B = static_cast<double>(j.bytes);
  const double* unit = x.ps_unit.data() + (local ? 0 : W);
  const int h = x.fab.servers[sv].worker;
  const std::size_t hk = h < 0 ? W : static_cast<std::size_t>(h);
  for (std::size_t k = 0; k < hk; ++k) visit(k, B * unit[k]);
  if (hk == W) return;
  if (const double o = B * x.ps_host_unit[(local ? 0 : S) + sv]; o > 0.0) visit(hk, o);
  for (std::size_t k = hk + 1; k < W; ++k) visit(k, B * unit[k]);
}

// The core: items (in ws.items) -> prediction. `out_buckets` (optional) receives the buckets.
constexpr prediction run(const model_spec& m, const context& x, const strategy_desc& s, const options& opt, workspace& ws,
                         std::vector<bucket>* out_buckets) {
  const fabric& f = x.fab;
  prediction r;
  r.forward = x.forward;
  r.backward = x.backward;
  const double flops = f.device_flops > 0.0 ? f.device_flops : 1.0;
  const auto T = m.tensors.size();
  const auto& items = ws.items;
  const auto N = items.size();
  const auto S = f.servers.size();

  // groups
  ws.groups.resize(s.groups.size());
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const auto& g = s.groups[gi];
    auto& gi_ = ws.groups[gi];
    gi_.arch = g.architecture;
    gi_.topology = g.topology;
    gi_.cap = g.fusion.cap_bytes;
    gi_.first_cap = g.fusion.first_cap_bytes;
    gi_.priority = g.schedule == schedule_kind::priority;
    gi_.local = g.replication == replication_kind::local;
    const auto c = find_compression(g.compression);
    gi_.comp_flops_per_element = c ? c->flops_per_element : 0.0;
    gi_.comp_wire_per_element = c ? c->wire_bytes_per_element : 0.0;
  }

  // items of each tensor (contiguous in expand's output)
  ws.first.assign(T, 0);
  ws.count.assign(T, 0);
  for (std::uint32_t i = 0; i < N; ++i) {
    const auto t = items[i].tensor;
    if (ws.count[t]++ == 0) ws.first[t] = i;
  }
  ws.next.resize(N);
  ws.open.assign(s.groups.size(), workspace::open_bucket{});
  ws.jobs.clear();
  ws.server_bytes.assign(S, 0.0);
  ws.server_lb.assign(S, 0.0);
  ws.touched.clear();
  const auto W = f.workers.size();
  double lane0_lb = 0.0, lane0_nic = 0.0;
  std::uint32_t nbuckets = 0;

  auto close = [&](std::uint32_t gi) {
    auto& ob = ws.open[gi];
    if (ob.n == 0) return;
    const auto& g = ws.groups[gi];
    const std::uint32_t b = nbuckets++;
    const double comp = ob.comp_flops / flops;
    const double S_ = static_cast<double>(ob.wire);
    workspace::job j;
    j.ready_pos = ob.ready_pos;
    j.ready = x.ready_at[ob.ready_pos];
    j.bucket = b;
    j.group = gi;
    j.head = ob.head;
    j.count = ob.n;
    j.key = g.priority ? (static_cast<std::uint64_t>(ob.min_tensor) << 32) : (std::uint64_t{1} << 63);
    j.comp = comp;
    if (g.arch == architecture_kind::parameter_server) {
      // one transfer per server the bucket touches
      for (std::uint32_t i = ob.head, k = 0; k < ob.n; ++k, i = ws.next[i]) {
        const auto sv = static_cast<std::size_t>(items[i].server);
        if (ws.server_bytes[sv] == 0.0) ws.touched.push_back(static_cast<std::uint32_t>(sv));
        ws.server_bytes[sv] += static_cast<double>(std::max<std::int64_t>(items[i].wire_bytes, 1));
      }
      std::sort(ws.touched.begin(), ws.touched.end());
      for (auto sv : ws.touched) {
        const double B = ws.server_bytes[sv];
        workspace::job t = j;
        t.lane = 1 + static_cast<int>(sv);
        t.bytes = static_cast<std::int64_t>(B);
        double bw_part = 0.0;
        ps_transfer(f, sv, B, g.local, t, bw_part);
        ws.server_lb[sv] += bw_part;
        ws.jobs.push_back(t);
        ws.server_bytes[sv] = 0.0;
        j.comp = 0.0;  // the bucket's compression is paid once, before its first transfer
      }
      ws.touched.clear();
    } else {
      j.lane = 0;
      j.bytes = ob.wire;
      switch (g.arch) {
        case architecture_kind::sharded:
          j.t1 = reduce_scatter(f, g.topology, S_);
          j.t2 = all_gather(f, g.topology, S_);
          lane0_lb += lower_bound(f, S_);
          j.nic = nic_occupancy(f, S_);
          break;
        case architecture_kind::all_gather:
          j.t1 = sparse_all_gather(f, S_);
          lane0_lb += sparse_all_gather_lower_bound(f, S_);
          j.nic = sparse_all_gather_nic_occupancy(f, S_);
          break;
        default:
          j.t1 = all_reduce(f, g.topology, S_);
          lane0_lb += lower_bound(f, S_);
          j.nic = nic_occupancy(f, S_);
          break;
      }
      lane0_nic += j.nic;
      ws.jobs.push_back(j);
    }
    ob = workspace::open_bucket{};
    ob.first = false;
  };

  // 3. fusion, in ready order
  for (std::uint32_t pos = 0; pos < T; ++pos) {
    const auto t = x.order[pos];
    for (std::uint32_t k = 0, i = ws.first[t]; k < ws.count[t]; ++k, ++i) {
      const auto& it = items[i];
      const auto gi = it.group;
      auto& ob = ws.open[gi];
      const auto& g = ws.groups[gi];
      const std::uint64_t cap = ob.first ? g.first_cap : g.cap;
      const auto ib = static_cast<std::uint64_t>(it.bytes);
      if (ob.n > 0 && (g.cap == 0 || ib > cap || ob.bytes + ib > cap)) close(gi);
      auto& o = ws.open[gi];
      if (o.n == 0) {
        o.head = i;
        o.min_tensor = it.tensor;
      } else {
        ws.next[o.tail] = i;
      }
      o.tail = i;
      ++o.n;
      o.bytes += ib;
      o.wire += it.wire_bytes;
      o.ready_pos = pos;
      o.min_tensor = std::min(o.min_tensor, it.tensor);
      if (g.comp_flops_per_element > 0.0)
        o.comp_flops += g.comp_flops_per_element * compressed_elements(m, it, g.comp_wire_per_element);
    }
  }
  for (std::uint32_t gi = 0; gi < s.groups.size(); ++gi) close(gi);

  // jobs in ready order (counting sort by ready position; ties keep creation order)
  ws.hist.assign(T + 1, 0);
  for (const auto& j : ws.jobs) ++ws.hist[j.ready_pos + 1];
  for (std::size_t k = 1; k <= T; ++k) ws.hist[k] += ws.hist[k - 1];
  ws.sorted.resize(ws.jobs.size());
  for (const auto& j : ws.jobs) ws.sorted[ws.hist[j.ready_pos]++] = j;
  // bucket numbers in ready order, keys complete with the ready rank
  ws.bucket_number.assign(nbuckets, 0xffffffffu);
  std::uint32_t numbered = 0;
  for (std::uint32_t k = 0; k < ws.sorted.size(); ++k) {
    auto& j = ws.sorted[k];
    if (ws.bucket_number[j.bucket] == 0xffffffffu) ws.bucket_number[j.bucket] = numbered++;
    j.bucket = ws.bucket_number[j.bucket];
    j.key |= k;
  }

  // 5/6. dispatch: lane 0 on its own, PS lanes through the NICs
  ws.lane_free.assign(1 + S, 0.0);
  double last_end = 0.0;
  if (opt.timeline) r.events.reserve(ws.sorted.size() * 2);
  // Heaps of keys; a key's low 32 bits are the job's index in `sorted`. Lane 0 takes fifo-only
  // work in sorted order without the heap.
  auto key_greater = [](std::uint64_t a, std::uint64_t b) { return a > b; };  // min-heap
  auto commit = [&](std::uint32_t pick, double start, double end, bool ps) {
    const auto& j = ws.sorted[pick];
    const double busy = end - start - j.comp;
    ws.lane_free[static_cast<std::size_t>(j.lane)] = end;
    last_end = std::max(last_end, end);
    r.communication += busy;
    r.compression += j.comp;
    if (opt.timeline) {
      double at = start;
      if (j.comp > 0.0) {
        r.events.push_back(event{j.lane, j.group, j.bucket, at, at + j.comp, j.bytes, event_compression});
        at += j.comp;
      }
      if (ps) {
        r.events.push_back(event{j.lane, j.group, j.bucket, at, end, j.bytes, event_ps_transfer});
      } else {
        r.events.push_back(event{j.lane, j.group, j.bucket, at, at + j.t1, j.bytes, event_collective});
        if (ws.groups[j.group].arch == architecture_kind::sharded)
          r.events.push_back(event{j.lane, j.group, j.bucket, at + j.t1, end, j.bytes, event_collective});
      }
    }
    return end;
  };
  const auto n = static_cast<std::uint32_t>(ws.sorted.size());

  // lane 0: the communicator takes, when free, the best ready job (fifo: the next in ready order)
  {
    bool any_priority = false;
    std::uint32_t count = 0;
    for (std::uint32_t q = 0; q < n; ++q)
      if (ws.sorted[q].lane == 0) {
        ++count;
        any_priority = any_priority || (ws.sorted[q].key >> 63) == 0;
      }
    double t = 0.0;
    ws.heap.clear();
    std::uint32_t k = 0;
    auto skip = [&] { while (k < n && ws.sorted[k].lane != 0) ++k; };
    skip();
    for (std::uint32_t done = 0; done < count; ++done) {
      std::uint32_t pick = 0;
      if (!any_priority) {
        pick = k++;
        skip();
        t = std::max(t, ws.sorted[pick].ready);
      } else {
        if (ws.heap.empty() && t < ws.sorted[k].ready) t = ws.sorted[k].ready;
        while (k < n && ws.sorted[k].ready <= t) {
          ws.heap.push_back(ws.sorted[k].key);
          std::push_heap(ws.heap.begin(), ws.heap.end(), key_greater);
          ++k;
          skip();
        }
        std::pop_heap(ws.heap.begin(), ws.heap.end(), key_greater);
        pick = static_cast<std::uint32_t>(ws.heap.back() & 0xffffffffu);
        ws.heap.pop_back();
      }
      const auto& j = ws.sorted[pick];
      t = commit(pick, t, t + j.comp + j.t1 + j.t2, false);
    }
  }

  // PS lanes: each server has its own queue and takes, when free, its best ready transfer
  // (ties between servers: the earlier start, then the key). Each worker node's NICs are one
  // more serial resource beside them: a transfer's bytes through node k (its occupancy there)
  // go after that node's earlier work, and the transfer ends no earlier than the last node.
  if (S > 0) {
    if (ws.pending.size() < S) ws.pending.resize(S);
    if (ws.ready_heap.size() < S) ws.ready_heap.resize(S);
    ws.pending_at.assign(S, 0);
    ws.queued_at.assign(S, 0.0);
    std::uint32_t count = 0;
    for (std::size_t sv = 0; sv < S; ++sv) {
      ws.pending[sv].clear();
      ws.ready_heap[sv].clear();
    }
    for (std::uint32_t q = 0; q < n; ++q)
      if (ws.sorted[q].lane > 0) {
        ws.pending[static_cast<std::size_t>(ws.sorted[q].lane - 1)].push_back(q);
        ++count;
      }
    ws.nic_free.assign(W, 0.0);
    ws.nic_sum.assign(W, 0.0);
    for (std::uint32_t done = 0; done < count; ++done) {
      std::size_t best = S;
      double best_start = 0.0;
      std::uint64_t best_key = 0;
      for (std::size_t sv = 0; sv < S; ++sv) {
        auto& pend = ws.pending[sv];
        auto& heap = ws.ready_heap[sv];
        auto& at = ws.pending_at[sv];
        if (heap.empty() && at == pend.size()) continue;
        // the server's next start: when it is free and its queue has a ready transfer (jobs
        // already queued were ready by the start computed when they were queued)
        double ts = std::max(ws.lane_free[1 + sv], heap.empty() ? ws.sorted[pend[at]].ready : ws.queued_at[sv]);
        ws.queued_at[sv] = ts;
        while (at < pend.size() && ws.sorted[pend[at]].ready <= ts) {
          heap.push_back(ws.sorted[pend[at]].key);
          std::push_heap(heap.begin(), heap.end(), key_greater);
          ++at;
        }
        const std::uint64_t key = heap.front();
        if (best == S || ts < best_start || (ts == best_start && key < best_key)) {
          best = sv;
          best_start = ts;
          best_key = key;
        }
      }
      auto& heap = ws.ready_heap[best];
      std::pop_heap(heap.begin(), heap.end(), key_greater);
      heap.pop_back();
      const auto pick = static_cast<std::uint32_t>(best_key & 0xffffffffu);
      const auto& j = ws.sorted[pick];
      const double pushed = best_start + j.comp + j.t1;  // after the local reduce
      double nic_end = pushed + j.t2;
      double* nic_free = ws.nic_free.data();
      double* nic_sum = ws.nic_sum.data();
      for_each_occupancy(x, ws, j, [&](std::size_t k, double o) {
        const double done_k = std::max(nic_free[k], pushed) + o;
        nic_free[k] = done_k;
        nic_sum[k] += o;
        nic_end = std::max(nic_end, done_k);
      });
      commit(pick, best_start, nic_end + j.t3, true);
    }
  }

  // 8. Each worker node's NICs are shared by lane 0 and the PS lanes: whatever the lanes do,
  // node k's NICs move every job's bytes through k one after another, and no job's bytes move
  // before it is ready. Completion >= max over k and jobs j of (ready_j + occupancy of node k
  // by the jobs ready no earlier than j): the single-machine bound with release times, per
  // node. Each lane alone already meets it (the PS lanes through nic_free, lane 0 because a
  // collective lasts at least its node-level cut), so the pass runs only when both have NIC
  // work. ws.sorted is in ready order. A lane-0 job occupies every node alike (j.nic), so the
  // suffix sums are kept as lane0 (common to all nodes) + suffix[k] (PS transfers), and
  // top = max_k suffix[k] (never decreases): O(1) per lane-0 job, O(nodes) per transfer.
  double nic_bound = 0.0;  // the busiest node's NIC time, all jobs (for the lower bound)
  if (f.nodes > 1 && S > 0) {
    double ps_top = 0.0;
    for (double v : ws.nic_sum) ps_top = std::max(ps_top, v);  // nic_sum: filled by the PS lanes
    nic_bound = lane0_nic + ps_top;
    if (lane0_nic > 0.0 && ps_top > 0.0) {
      auto& suffix = ws.nic_free;  // free again: the PS lanes are done with it
      suffix.assign(W, 0.0);
      double lane0 = 0.0, top = 0.0;
      for (std::uint32_t q = n; q-- > 0;) {
        const auto& j = ws.sorted[q];
        if (j.lane == 0) {
          lane0 += j.nic;
        } else {
          double* suf = suffix.data();
          for_each_occupancy(x, ws, j, [&](std::size_t k, double o) {
            const double v = suf[k] + o;
            suf[k] = v;
            top = std::max(top, v);
          });
        }
        last_end = std::max(last_end, j.ready + lane0 + top);
      }
    }
  }

  const double compute_end = r.forward + r.backward;
  r.iteration = std::max(compute_end, last_end);
  r.exposed = r.iteration - compute_end;
  double lb = std::max(lane0_lb, nic_bound);  // the shared NICs (8) move every job's bytes after the forward
  for (double v : ws.server_lb) lb = std::max(lb, v);
  r.lower_bound = r.forward + std::max(r.backward, lb);

  if (out_buckets) {
    out_buckets->assign(nbuckets, bucket{});
    for (const auto& j : ws.sorted) {
      auto& b = (*out_buckets)[j.bucket];
      if (!b.items.empty()) continue;  // a PS bucket's further transfers
      b.group = j.group;
      b.ready = j.ready;
      b.items.reserve(j.count);
      for (std::uint32_t i = j.head, q = 0; q < j.count; ++q, i = ws.next[i]) {
        b.items.push_back(i);
        b.wire_bytes += items[i].wire_bytes;
      }
    }
  }
  return r;
}

}  // namespace detail

[[nodiscard]] constexpr prediction estimate(const model_spec& m, const cluster_spec& c, const strategy_desc& s, const options& opt = {}) {
  const auto x = make_context(m, c);
  workspace ws;
  expand_into(ws.items, m, c, s, x.position);
  return detail::run(m, x, s, opt, ws, nullptr);
}

// The buckets the fusion step packs (step 3), numbered in ready order as in the events.
[[nodiscard]] constexpr std::vector<bucket> buckets(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  const auto x = make_context(m, c);
  workspace ws;
  expand_into(ws.items, m, c, s, x.position);
  std::vector<bucket> out;
  (void)detail::run(m, x, s, options{}, ws, &out);
  return out;
}

class evaluator {
 public:
  evaluator(const model_spec& m, const cluster_spec& c) : model_(&m), cluster_(&c), ctx_(make_context(m, c)) {}

  [[nodiscard]] prediction operator()(const strategy_desc& s, const options& opt = {}) const {
    expand_into(ws_.items, *model_, *cluster_, s, ctx_.position);
    return detail::run(*model_, ctx_, s, opt, ws_, nullptr);
  }
  [[nodiscard]] const fabric& fab() const noexcept { return ctx_.fab; }
  [[nodiscard]] const context& ctx() const noexcept { return ctx_; }

 private:
  const model_spec* model_;
  const cluster_spec* cluster_;
  context ctx_;
  mutable workspace ws_;
};

}  // namespace autosync::cost
