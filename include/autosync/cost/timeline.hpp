// autosync/cost/timeline.hpp — the state of one evaluation of cost/estimate.hpp's timeline: what
// it returns (prediction, events, buckets), what depends only on (model, cluster) (context),
// the reusable buffers (workspace), and the per-bucket formulas of step 4 (compressed elements,
// a parameter-server transfer, its NIC occupancy per node). The steps themselves are in
// cost/timeline_steps.hpp; cost/estimate.hpp describes them and is the header to include.
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
#include <utility>
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
  // Every server on a node of its own and every worker node's occupancy per byte the same (both
  // halves of ps_unit): a PS transfer occupies every worker node alike, so their NICs' free times
  // and sums stay equal (run_servers keeps one of each).
  bool uniform_nics = false;
  // Per tensor its dtype, for a model whose tensors have several (empty when they share one):
  // the plan compiler (exec/plan.hpp) cuts a fusion bucket into one piece per dtype, and each
  // piece is a collective or transfer of its own.
  std::vector<dtype> types;
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
  for (const auto& u : m.tensors)
    if (u.type != m.tensors.front().type) {
      x.types.reserve(m.tensors.size());
      for (const auto& v : m.tensors) x.types.push_back(v.type);
      break;
    }
  x.uniform_nics = S > 0 && W > 0;
  for (std::size_t sv = 0; sv < S; ++sv) x.uniform_nics = x.uniform_nics && x.fab.servers[sv].worker < 0;
  for (std::size_t k = 1; k < W; ++k) x.uniform_nics = x.uniform_nics && x.ps_unit[k] == x.ps_unit[0] && x.ps_unit[W + k] == x.ps_unit[W];
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
    dtype type{};        // its first item's dtype (context::types: a model of several dtypes only)
    bool mixed = false;  // ... and an item of another: the plan cuts it into one piece per dtype
  };
  std::vector<open_bucket> open;           // per group
  struct group_info {
    architecture_kind arch{};
    topology_value topology{};
    fusion_value fusion{};
    bool priority = false, local = false;
    bool per_bucket = false;  // priced_per_bucket (strategy/items.hpp): a fused bucket's wire is its pieces'
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
  std::vector<std::uint32_t> rank, by_rank;  // lane 0 with priority jobs: a job's rank in key order, and back
  std::vector<std::uint64_t> bits;         // lane 0: the ready jobs, by rank
  std::vector<std::vector<std::uint32_t>> pending;   // per server: its jobs in ready order
  std::vector<std::vector<std::uint64_t>> ready_heap; // per server: keys of its ready jobs
  std::vector<std::size_t> pending_at;
  std::vector<std::uint32_t> held;         // fuse_unfused, per group: the job whose sums wait for the group's next item
  std::vector<double> held_lb;             // ... and a lane-0 job's bandwidth bound
  std::vector<const std::uint32_t*> cursor;  // run_servers without priority: per server its next transfer, then (from S) its queue's end
  std::vector<double> queued_at;           // per server: its next start (run_servers)
  std::vector<std::uint64_t> next_key;     // per server: its next transfer's key
  std::vector<std::uint8_t> live;          // per server: transfers left
  std::vector<double> server_bytes, server_lb, lane_free;
  std::vector<double> nic_free;            // per worker node: when its NICs are free (5); then step 8's suffix sums
  std::vector<double> nic_sum;             // per worker node: the PS transfers' occupancy, summed (5)
  std::vector<std::uint32_t> touched;
  // a bucket of several dtypes (open_bucket::mixed): its pieces in first-appearance order, each
  // its dtype and the bytes one rank sends for it (price_pieces)
  std::vector<std::pair<dtype, std::int64_t>> pieces;
  std::vector<std::uint32_t> bucket_number;  // creation index -> ready-order number
  // The memos' entries belong to the evaluation numbered `generation` (prepare counts them):
  // an entry of an earlier one is a miss, so the memos are never cleared between evaluations.
  std::uint32_t generation = 0;
  // per server, direct-mapped by bytes: detail::ps_transfer's result, reused by later transfers
  // of the same bytes and replication (a pure function of them: the same bits)
  struct ps_memo {
    std::int64_t bytes = -1;
    std::uint32_t gen = 0;
    bool local = false;
    double t1 = 0.0, t2 = 0.0, t3 = 0.0, bw_part = 0.0;
  };
  static constexpr std::size_t ps_memo_log2 = 5;  // 32 slots per server (a model's shards repeat a few dozen sizes)
  std::vector<ps_memo> ps_last;
  // per group, direct-mapped by wire bytes: a lane-0 bucket's collective times, bandwidth bound
  // and NIC occupancy (pure functions of the group's aspects and the bytes: the same bits).
  // Per-tensor and equal-sized buckets repeat a few sizes.
  struct collective_memo {
    std::int64_t wire = -1;
    std::uint32_t gen = 0;
    double t1 = 0.0, t2 = 0.0, lb = 0.0, nic = 0.0;
  };
  static constexpr std::size_t collective_memo_log2 = 4;  // 16 slots per group
  static constexpr std::size_t collective_memo_slots = std::size_t{1} << collective_memo_log2;
  std::vector<collective_memo> coll_memo;  // groups x collective_memo_slots
};

namespace detail {

// The slot of a direct-mapped memo of 2^log2 slots for an integral key (Fibonacci hashing: the
// top log2 bits of key x 2^64 / phi), shared by the per-server and the per-group memos.
[[nodiscard]] constexpr std::size_t memo_slot(std::uint64_t key, std::size_t log2) noexcept {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - log2));
}

// Elements an item's compressor encodes (0 when it travels uncompressed).
[[nodiscard]] constexpr double compressed_elements(const model_spec& m, const sync_item& it, double wire_per_element) noexcept {
  const auto& t = m.tensors[it.tensor];
  if (!shrinks(t.type, wire_per_element)) return 0.0;
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
  // The exchange as exec/collectives/ps_push_pull.hpp runs it over MPI: the server posts every
  // receive at once (Backend::sendrecv_many), so the pushes flow side by side, bounded by the
  // server's NIC (all remote copies), each sender's NIC (its own copies) and the host's device
  // links (its other ranks); the server adds the pushes; then the pulls flow out the same way.
  // One latency per direction (the messages' flights overlap).
  double alpha = 0.0, slowest = 0.0;
  for (std::size_t k = 0; k < f.workers.size(); ++k) {
    if (static_cast<int>(k) == h) continue;
    const auto& w = f.workers[k];
    const double c = local ? 1.0 : w.ranks;
    alpha = std::max(alpha, std::max(w.nic.alpha, srv.nic.alpha));
    slowest = std::max(slowest, c * B * w.nic.beta);
  }
  const double own_senders = local || own < 1.0 ? 0.0 : own - 1.0;  // the host's other ranks, over its device links
  if (own_senders > 0.0) alpha = std::max(alpha, f.intra.alpha);
  const double one_way = alpha + std::max({net_bw, slowest, own_senders * B * f.intra.beta});
  const double senders = remote + own_senders;
  j.t1 = local && f.g > 1 ? reduce(f.g, B, f.intra.alpha, f.intra.beta, f.gamma) : 0.0;
  j.t2 = 2.0 * one_way + senders * B * f.gamma;  // pushes, each added on arrival, then pulls
  j.t3 = local && f.g > 1 ? broadcast(f.g, B, f.intra.alpha, f.intra.beta) : 0.0;
  // latency is time in flight, not NIC occupancy: transfers to different servers overlap it
}

// Calls visit(k, o) for every worker node k that a transfer of B bytes to server sv crosses
// (`local`: its group's replication is local), with its NIC occupancy o > 0 there (step 4):
// o = B x ps_unit[k], on the node hosting the server B x ps_host_unit (skipped when 0: one node
// hosting everything). A valid cluster's NICs have bandwidth > 0, so every other node's o is > 0.
template <class Visit>
AUTOSYNC_ALWAYS_INLINE constexpr void for_each_occupancy(const context& x, std::size_t sv, bool local, double B, Visit&& visit) {
  const auto W = x.fab.workers.size(), S = x.fab.servers.size();
  const double* unit = x.ps_unit.data() + (local ? 0 : W);
  const int h = x.fab.servers[sv].worker;
  const std::size_t hk = h < 0 ? W : static_cast<std::size_t>(h);
  for (std::size_t k = 0; k < hk; ++k) visit(k, B * unit[k]);
  if (hk == W) return;
  if (const double o = B * x.ps_host_unit[(local ? 0 : S) + sv]; o > 0.0) visit(hk, o);
  for (std::size_t k = hk + 1; k < W; ++k) visit(k, B * unit[k]);
}

// With uniform NICs (context::uniform_nics): the occupancy of B bytes on every worker node alike,
// the o that for_each_occupancy visits each node with (the same product: the same bits).
[[nodiscard]] AUTOSYNC_ALWAYS_INLINE constexpr double uniform_occupancy(const context& x, bool local, double B) noexcept {
  return B * x.ps_unit[local ? 0 : x.fab.workers.size()];
}

// The same for PS transfer j (a job of ws.sorted).
template <class Visit>
AUTOSYNC_ALWAYS_INLINE constexpr void for_each_occupancy(const context& x, const workspace& ws, const workspace::job& j, Visit&& visit) {
  for_each_occupancy(x, static_cast<std::size_t>(j.lane - 1), ws.groups[j.group].local, static_cast<double>(j.bytes),
                     static_cast<Visit&&>(visit));
}

}  // namespace detail

}  // namespace autosync::cost
