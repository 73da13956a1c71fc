// autosync/cost/timeline_steps.hpp — the steps of cost/estimate.hpp's timeline, one function
// each, and detail::run, which plays them in order:
//
//   prepare            1  the groups' aspects, the items of each tensor
//   fuse_items         3  items in ready order into buckets (the fusion rule); close_bucket
//                        turns each into its jobs: fill_collective (lane 0) or
//                        push_ps_transfers (one per server touched)            (step 4);
//                        fuse_unfused when no group fuses and no tensor is split (one
//                        job per item, priced and queued as it is written)
//   order_jobs            jobs in ready order, buckets numbered in ready order
//   run_lane0          5/6 the collective communicator
//   run_servers        5/6 the parameter servers, through each worker node's NICs
//   shared_nic_bound   8  lane 0 and the PS lanes sharing the NICs
//   run                7  iteration, exposed, lower bound (collect_buckets: the buckets)
//
// cost/estimate.hpp documents every step and is the header to include.
#pragma once

#include <autosync/cost/collectives.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/timeline.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/fusion.hpp>
#include <autosync/strategy/items.hpp>  // AUTOSYNC_ALWAYS_INLINE

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace autosync::cost::detail {

// What one evaluation accumulates besides the prediction: the lane-0 bounds (steps 4 and 7),
// the buckets closed so far (their creation index) and the last lane end (step 7).
struct tally {
  double lane0_lb = 0.0;   // lane 0: sum of the buckets' bandwidth bounds
  double lane0_nic = 0.0;  // lane 0: sum of the buckets' NIC occupancy (step 8)
  std::uint32_t buckets = 0;
  double last_end = 0.0;
  std::uint32_t lane0_jobs = 0;  // lane-0 jobs (buckets) created
  bool lane0_priority = false;   // a lane-0 job has a priority key
  bool ps_priority = false;      // a PS transfer has a priority key
  bool in_order = true;          // the jobs were created in ready order
  std::uint32_t last_pos = 0;    // the ready position of the last bucket closed
  bool priced = false;           // the PS transfers are priced (fuse_unfused)
  bool queued = false;           // ... and queued on their servers (ws.pending), ps_jobs of them
  std::uint32_t ps_jobs = 0;
};

// Step 1 (what run needs of the strategy and the items): each group's aspects in ws.groups,
// the items of each tensor (contiguous in expand's output) in ws.first / ws.count, the
// per-evaluation buffers reset and the memos' generation advanced (their entries are not cleared).
constexpr void prepare(const model_spec& m, const context& x, const strategy_desc& s, workspace& ws) {
  const auto T = m.tensors.size();
  const auto N = ws.items.size();
  const auto S = x.fab.servers.size();
  ws.groups.resize(s.groups.size());
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const auto& g = s.groups[gi];
    auto& gi_ = ws.groups[gi];
    gi_.arch = g.architecture;
    gi_.topology = g.topology;
    gi_.fusion = g.fusion;
    gi_.priority = g.schedule == schedule_kind::priority;
    gi_.local = g.replication == replication_kind::local;
    gi_.per_bucket = !std::is_constant_evaluated() && priced_per_bucket(g);
    const auto c = find_compression(g.compression.id);  // built-ins; registered codecs cost per item
    gi_.comp_flops_per_element = c ? c->flops_per_element : 0.0;
    gi_.comp_wire_per_element = c ? c->wire_bytes_per_element : 0.0;
  }
  ws.first.assign(T, 0);
  ws.count.assign(T, 0);
  for (std::uint32_t i = 0; i < N; ++i) {
    const auto t = ws.items[i].tensor;
    if (ws.count[t]++ == 0) ws.first[t] = i;
  }
  ws.next.resize(N);
  ws.open.assign(s.groups.size(), workspace::open_bucket{});
  ws.server_bytes.assign(S, 0.0);
  ws.server_lb.assign(S, 0.0);
  ws.touched.clear();
  if (++ws.generation == 0) {  // after 2^32 evaluations: no entry may pass for this one's
    ws.ps_last.clear();
    ws.coll_memo.clear();
    ws.generation = 1;
  }
  // grown, never cleared: new entries (generation 0) and earlier ones are misses
  if (ws.ps_last.size() < (S << workspace::ps_memo_log2)) ws.ps_last.resize(S << workspace::ps_memo_log2);
  if (ws.coll_memo.size() < s.groups.size() * workspace::collective_memo_slots)
    ws.coll_memo.resize(s.groups.size() * workspace::collective_memo_slots);
}

// Transfer t (a job of ws.jobs) goes B bytes to server sv; price_ps_transfers prices it (in
// fuse_unfused, price_ps_transfer as each job settles).
AUTOSYNC_ALWAYS_INLINE constexpr void fill_ps_transfer(workspace::job& t, std::size_t sv, double B) {
  t.lane = 1 + static_cast<int>(sv);
  t.bytes = static_cast<std::int64_t>(B);  // B is a sum of integers: exact, and double(t.bytes) == B
}

// Step 4's time parts of every PS transfer (detail::ps_transfer) and the servers' bandwidth
// parts, in creation order, through each server's memo (direct-mapped by bytes: the parts are a
// pure function of server, bytes and replication). One pass after fusing, so that the memo's
// loads overlap from one transfer to the next.
AUTOSYNC_ALWAYS_INLINE constexpr void price_ps_transfer(const context& x, workspace& ws, workspace::job& t) {
  const auto sv = static_cast<std::size_t>(t.lane - 1);
  const bool local = ws.groups[t.group].local;
  const auto slot = memo_slot(static_cast<std::uint64_t>(t.bytes), workspace::ps_memo_log2);
  auto& memo = ws.ps_last[(sv << workspace::ps_memo_log2) + slot];
  if (memo.gen != ws.generation || memo.bytes != t.bytes || memo.local != local) {
    double bw_part = 0.0;
    ps_transfer(x.fab, sv, static_cast<double>(t.bytes), local, t, bw_part);
    memo = workspace::ps_memo{t.bytes, ws.generation, local, t.t1, t.t2, t.t3, bw_part};
  } else {
    t.t1 = memo.t1;
    t.t2 = memo.t2;
    t.t3 = memo.t3;
  }
  ws.server_lb[sv] += memo.bw_part;
}
constexpr void price_ps_transfers(const context& x, workspace& ws) {
  for (auto& t : ws.jobs)
    if (t.lane != 0) price_ps_transfer(x, ws, t);
}

// Step 4 for a parameter-server bucket, whose job is ws.jobs.back() (filled but for its
// server): one transfer per server the bucket touches, in server order; the bucket's
// compression is paid once, before its first transfer.
constexpr void push_ps_transfers_many(workspace& ws) {
  const std::size_t at = ws.jobs.size() - 1;
  const auto head = ws.jobs[at].head, count = ws.jobs[at].count;
  for (std::uint32_t i = head, k = 0; k < count; ++k, i = ws.next[i]) {
    const auto sv = static_cast<std::size_t>(ws.items[i].server);
    if (ws.server_bytes[sv] == 0.0) ws.touched.push_back(static_cast<std::uint32_t>(sv));
    ws.server_bytes[sv] += static_cast<double>(std::max<std::int64_t>(ws.items[i].wire_bytes, 1));
  }
  std::sort(ws.touched.begin(), ws.touched.end());
  const workspace::job bucket = ws.jobs[at];
  for (std::size_t k = 0; k < ws.touched.size(); ++k) {
    const auto sv = ws.touched[k];
    if (k > 0) {
      ws.jobs.push_back(bucket);
      ws.jobs.back().comp = 0.0;
    }
    fill_ps_transfer(ws.jobs.back(), sv, ws.server_bytes[sv]);
    ws.server_bytes[sv] = 0.0;
  }
  ws.touched.clear();
}
// push_ps_transfers_many for a bucket of several dtypes (open_bucket::mixed): one transfer per
// server and dtype (the plan's pieces), in server order, a server's dtypes in first-appearance order.
constexpr void push_ps_pieces(const context& x, workspace& ws) {
  const std::size_t at = ws.jobs.size() - 1;
  const auto head = ws.jobs[at].head, count = ws.jobs[at].count;
  struct piece {
    std::uint32_t server = 0, kind = 0;  // kind: the dtype's place in ws.pieces
    double bytes = 0.0;
  };
  std::vector<piece> ps;
  for (std::uint32_t i = head, k = 0; k < count; ++k, i = ws.next[i]) {
    const auto& it = ws.items[i];
    const auto sv = static_cast<std::uint32_t>(it.server);
    const auto ty = x.types[it.tensor];
    std::uint32_t kind = 0;
    while (kind < ws.pieces.size() && ws.pieces[kind].first != ty) ++kind;
    auto p = std::find_if(ps.begin(), ps.end(), [&](const piece& q) { return q.server == sv && q.kind == kind; });
    if (p == ps.end()) p = ps.insert(ps.end(), piece{sv, kind, 0.0});
    p->bytes += static_cast<double>(std::max<std::int64_t>(it.wire_bytes, 1));
  }
  std::sort(ps.begin(), ps.end(), [](const piece& a, const piece& b) { return a.server != b.server ? a.server < b.server : a.kind < b.kind; });
  const workspace::job bucket = ws.jobs[at];
  for (std::size_t k = 0; k < ps.size(); ++k) {
    if (k > 0) {
      ws.jobs.push_back(bucket);
      ws.jobs.back().comp = 0.0;
    }
    fill_ps_transfer(ws.jobs.back(), ps[k].server, ps[k].bytes);
  }
}
AUTOSYNC_ALWAYS_INLINE constexpr void push_ps_transfers(workspace& ws) {
  auto& j = ws.jobs.back();
  if (j.count == 1) {  // one item, one server (the bytes as the general path sums them)
    const auto& it = ws.items[j.head];
    fill_ps_transfer(j, static_cast<std::size_t>(it.server), 0.0 + static_cast<double>(std::max<std::int64_t>(it.wire_bytes, 1)));
    return;
  }
  push_ps_transfers_many(ws);
}

// Step 4 for a lane-0 bucket of `wire` bytes, job j: its collective's time (t1, and t2 for
// sharded) and its NIC occupancy, through the group's memo, which then holds its bandwidth
// bound (memo.lb): the caller adds the bounds to the tally.
constexpr void fill_collective(const fabric& f, const workspace::group_info& g, workspace::job& j, std::int64_t wire,
                               workspace::collective_memo& memo, std::uint32_t generation) {
  j.lane = 0;
  j.bytes = wire;
  if (memo.gen != generation || memo.wire != wire) {
    const double S_ = static_cast<double>(wire);
    memo.wire = wire;
    memo.gen = generation;
    memo.t2 = 0.0;
    switch (g.arch) {
      case architecture_kind::sharded:
        memo.t1 = reduce_scatter(f, g.topology, S_);
        memo.t2 = all_gather(f, g.topology, S_);
        memo.lb = lower_bound(f, S_);
        memo.nic = nic_occupancy(f, S_);
        break;
      case architecture_kind::all_gather:
        if (!f.nccl) {
          memo.t1 = sparse_all_gather(f, S_);
          memo.lb = sparse_all_gather_lower_bound(f, S_);
          memo.nic = sparse_all_gather_nic_occupancy(f, S_);
          break;
        }
        [[fallthrough]];  // the device backend all-reduces a sparse bucket (its items' wire is dense there)
      default:
        memo.t1 = all_reduce(f, g.topology, S_);
        memo.lb = lower_bound(f, S_);
        memo.nic = nic_occupancy(f, S_);
        break;
    }
  }
  j.t1 = memo.t1;
  j.t2 = memo.t2;
  j.nic = memo.nic;
}

// Group gi's memo entry for a collective of `wire` bytes (direct-mapped by bytes).
AUTOSYNC_ALWAYS_INLINE constexpr workspace::collective_memo& collective_memo_of(workspace& ws, std::uint32_t gi, std::int64_t wire) {
  const auto slot = memo_slot(static_cast<std::uint64_t>(wire), workspace::collective_memo_log2);
  return ws.coll_memo[gi * workspace::collective_memo_slots + slot];
}

// Step 4 for a lane-0 job j of group gi (g = ws.groups[gi]) of `wire` bytes: counted, its priority
// noted, priced through the group's memo (fill_collective). Returns the memo, which holds the
// job's bandwidth bound (memo.lb) for the caller to add.
AUTOSYNC_ALWAYS_INLINE constexpr const workspace::collective_memo& lane0_job(const context& x, workspace& ws,
                                                                            const workspace::group_info& g, std::uint32_t gi,
                                                                            workspace::job& j, std::int64_t wire, tally& tl) {
  ++tl.lane0_jobs;
  tl.lane0_priority = tl.lane0_priority || g.priority;
  auto& memo = collective_memo_of(ws, gi, wire);
  fill_collective(x.fab, g, j, wire, memo, ws.generation);
  return memo;
}

// lane0_job for a bucket of several dtypes (open_bucket::mixed), job j: each piece of ws.pieces
// priced through the group's memo as a bucket of its own, the pieces run one after another (their
// t1, t2 and NIC occupancy summed); the job moves the bucket's bytes. Returns the pieces' bandwidth
// bounds, summed, for the caller to add.
constexpr double lane0_pieces(const context& x, workspace& ws, const workspace::group_info& g, std::uint32_t gi, workspace::job& j,
                              tally& tl) {
  ++tl.lane0_jobs;
  tl.lane0_priority = tl.lane0_priority || g.priority;
  double t1 = 0.0, t2 = 0.0, nic = 0.0, lb = 0.0;
  std::int64_t bytes = 0;
  for (const auto& [type, wire] : ws.pieces) {
    auto& memo = collective_memo_of(ws, gi, wire);
    fill_collective(x.fab, g, j, wire, memo, ws.generation);
    t1 += j.t1;
    t2 += j.t2;
    nic += j.nic;
    lb += memo.lb;
    bytes += wire;
  }
  j.t1 = t1;
  j.t2 = t2;
  j.nic = nic;
  j.bytes = bytes;
  return lb;
}

// Closes group gi's open bucket (if any): it becomes bucket number tl.buckets (creation
// order) and its jobs (step 4) go to ws.jobs.
AUTOSYNC_ALWAYS_INLINE constexpr void close_bucket(const context& x, workspace& ws, std::uint32_t gi, tally& tl) {
  auto& ob = ws.open[gi];
  if (ob.n == 0) return;
  const auto& g = ws.groups[gi];
  const double flops = x.fab.codec_flops > 0.0 ? x.fab.codec_flops : 1.0;  // compression work per second
  tl.in_order = tl.in_order && tl.last_pos <= ob.ready_pos;
  tl.last_pos = ob.ready_pos;
  auto& j = ws.jobs.emplace_back();  // filled in place
  j.ready_pos = ob.ready_pos;
  j.ready = x.ready_at[ob.ready_pos];
  j.bucket = tl.buckets++;
  j.group = gi;
  j.head = ob.head;
  j.count = ob.n;
  j.key = g.priority ? (static_cast<std::uint64_t>(ob.min_tensor) << 32) : (std::uint64_t{1} << 63);
  j.comp = ob.comp_flops / flops;
  if (g.arch == architecture_kind::parameter_server) {
    tl.ps_priority = tl.ps_priority || g.priority;
    if (ob.mixed)
      push_ps_pieces(x, ws);
    else
      push_ps_transfers(ws);
  } else {
    tl.lane0_lb += ob.mixed ? lane0_pieces(x, ws, g, gi, j, tl) : lane0_job(x, ws, g, gi, j, ob.wire, tl).lb;
    tl.lane0_nic += j.nic;
    // On a host backend a sparse bucket runs one sparse all-gather per segment (item). The price
    // above holds one per piece; add the start-ups of the other segments (sparse_all_gather is
    // affine in the bytes, so this is the sum over the segments).
    if (g.arch == architecture_kind::all_gather && !x.fab.nccl && ob.n > 1) {
      const std::size_t priced = ob.mixed ? ws.pieces.size() : 1;
      j.t1 += static_cast<double>(ob.n - priced) * sparse_all_gather(x.fab, 0.0);
    }
  }
  ob.n = 0;  // what the next item's fusion_closes and fuse_items read; the rest is set when it joins
  ob.bytes = 0;
  ob.wire = 0;
  ob.comp_flops = 0.0;
  ob.first = false;
  ob.mixed = false;
}

// Whether every item of s is a bucket of its own and the buckets of one ready position keep
// item order: no group fuses (cap 0: fusion_closes closes every open bucket) and no tensor is
// split across groups (one group per ready position).
[[nodiscard]] constexpr bool unfused(const strategy_desc& s) noexcept {
  for (const auto& g : s.groups)
    if (g.fusion.cap_bytes != 0) return false;
  for (const auto& a : s.assignments)
    if (a.split()) return false;
  return true;
}

// Step 3 when unfused(s): one bucket per item, its job written in ready order. fuse_items'
// general pass creates each bucket when its group's next item arrives (the last ones at the
// end, in group order); with one group per ready position order_jobs gives both the same order,
// numbers and keys, and every job the same fields. The sums that follow creation order (lane
// 0's bounds, the servers' bandwidth parts: price_ps_transfer here) are added when the general
// pass would create the bucket: the same prediction, bit for bit (tests/unit/cost_estimate.cpp).
constexpr void fuse_unfused(const model_spec& m, const context& x, workspace& ws, tally& tl) {
  const auto T = static_cast<std::uint32_t>(m.tensors.size());
  const double flops = x.fab.codec_flops > 0.0 ? x.fab.codec_flops : 1.0;  // compression work per second
  const auto* groups = ws.groups.data();
  const sync_item* items = ws.items.data();
  // one job per item, every field written: the buffer's earlier jobs are overwritten, not zeroed first
  ws.jobs.resize(ws.items.size());
  workspace::job* out = ws.jobs.data();
  std::uint32_t n = 0;
  // per group: its job whose sums wait for the group's next item (none: ~0), and lane 0's bound
  constexpr std::uint32_t none = ~std::uint32_t{0};
  const auto G = ws.groups.size();
  // each server's transfers in ready order (their indices in ws.sorted: in order, jobs are not moved)
  const auto S = x.fab.servers.size();
  if (ws.pending.size() < S) ws.pending.resize(S);
  for (std::size_t sv = 0; sv < S; ++sv) ws.pending[sv].clear();
  ws.held.assign(G, none);
  ws.held_lb.resize(G);
  auto settle = [&](std::size_t gi) AUTOSYNC_ALWAYS_INLINE {
    const auto k = ws.held[gi];
    if (k == none) return;
    auto& j = out[k];
    if (j.lane == 0) {
      tl.lane0_lb += ws.held_lb[gi];
      tl.lane0_nic += j.nic;
    } else {
      price_ps_transfer(x, ws, j);
    }
  };
  for (std::uint32_t pos = 0; pos < T; ++pos) {
    const auto t = x.order[pos];
    const std::uint32_t first = ws.first[t], end = first + ws.count[t];
    const double ready = x.ready_at[pos];
    for (std::uint32_t i = first; i < end; ++i) {
      const auto& it = items[i];
      const auto gi = it.group;
      const auto& g = groups[gi];
      double comp_flops = 0.0;  // as an open bucket sums its one item
      if (g.comp_flops_per_element > 0.0) comp_flops += g.comp_flops_per_element * compressed_elements(m, it, g.comp_wire_per_element);
      comp_flops += it.codec_flops;
      settle(gi);
      ws.held[gi] = n;
      auto& j = out[n++];
      j.t3 = 0.0;
      j.nic = 0.0;
      j.ready_pos = pos;
      j.ready = ready;
      j.bucket = tl.buckets++;
      j.group = gi;
      j.head = i;
      j.count = 1;
      j.key = g.priority ? (static_cast<std::uint64_t>(it.tensor) << 32) : (std::uint64_t{1} << 63);
      j.comp = comp_flops / flops;
      if (g.arch == architecture_kind::parameter_server) {
        tl.ps_priority = tl.ps_priority || g.priority;
        fill_ps_transfer(j, static_cast<std::size_t>(it.server), 0.0 + static_cast<double>(std::max<std::int64_t>(it.wire_bytes, 1)));
        ws.pending[static_cast<std::size_t>(it.server)].push_back(n - 1);
        ++tl.ps_jobs;
      } else {
        ws.held_lb[gi] = lane0_job(x, ws, g, gi, j, it.wire_bytes, tl).lb;  // added by settle()
      }
    }
  }
  for (std::size_t gi = 0; gi < G; ++gi) settle(gi);
  ws.jobs.resize(n);
  tl.priced = true;
  tl.queued = true;
  tl.in_order = true;
  tl.last_pos = T == 0 ? 0 : T - 1;
}

// Group gi's open bucket when its codecs run once per bucket piece (priced_per_bucket) or it holds
// items of several dtypes (open_bucket::mixed): the plan compiler (exec/plan.hpp) cuts a bucket
// into one piece per dtype, each its own collective (or, on a parameter server, its own
// transfers). ws.pieces: each piece's dtype, in first-appearance order, and the bytes one rank
// sends for it: under such codecs the piece's price (piece_wire_bytes), not the sum of its items'
// (a sparse item keeps its own); otherwise its items' wire bytes summed. The bucket's wire is
// their sum. A bucket of one item costs what the item does.
constexpr void price_pieces(const model_spec& m, const context& x, workspace& ws, const group_desc& g, std::uint32_t gi) {
  auto& ob = ws.open[gi];
  if (ob.n < 2) return;
  const bool whole = ws.groups[gi].per_bucket;
  std::array<std::int64_t, std::size(all_dtypes)> elements{};
  ws.pieces.clear();
  for (std::uint32_t i = ob.head, k = 0; k < ob.n; ++k, i = ws.next[i]) {
    const auto& it = ws.items[i];
    const dtype type = m.tensors[it.tensor].type;
    auto p = std::find_if(ws.pieces.begin(), ws.pieces.end(), [&](const auto& q) { return q.first == type; });
    if (p == ws.pieces.end()) p = ws.pieces.insert(ws.pieces.end(), {type, 0});
    if (whole && !it.sparse)
      elements[static_cast<std::size_t>(type)] += it.elements;
    else
      p->second += it.wire_bytes;
  }
  std::int64_t wire = 0;
  for (auto& [type, w] : ws.pieces) {
    if (const auto n = elements[static_cast<std::size_t>(type)]; n > 0) w += piece_wire_bytes(type, n, g, x.fab.p);
    wire += w;
  }
  ob.wire = wire;
}

// Step 3: the items in ready order, packed per group into buckets by the fusion rule
// (strategy/fusion.hpp, fusion_closes; fuse_buckets() gives the same buckets); every closed
// bucket becomes its jobs (step 4).
constexpr void fuse_items(const model_spec& m, const context& x, const strategy_desc& s, workspace& ws, tally& tl) {
  const auto T = static_cast<std::uint32_t>(m.tensors.size());
  if (unfused(s)) {
    fuse_unfused(m, x, ws, tl);
    return;
  }
  ws.jobs.clear();
  for (std::uint32_t pos = 0; pos < T; ++pos) {
    const auto t = x.order[pos];
    const std::uint32_t first = ws.first[t], end = first + ws.count[t];  // read once: the stores below may alias
    for (std::uint32_t i = first; i < end; ++i) {
      const auto& it = ws.items[i];
      const auto gi = it.group;
      const auto& g = ws.groups[gi];
      const auto ib = static_cast<std::uint64_t>(it.bytes);
      if (const auto& ob = ws.open[gi]; fusion_closes(g.fusion, ob.first, ob.n, ob.bytes, ib)) {
        if (ob.mixed || g.per_bucket) price_pieces(m, x, ws, s.groups[gi], gi);
        close_bucket(x, ws, gi, tl);
      }
      auto& o = ws.open[gi];
      if (o.n == 0) {
        o.head = i;
        o.min_tensor = it.tensor;
        if (!x.types.empty()) o.type = x.types[it.tensor];
      } else {
        ws.next[o.tail] = i;
        if (!x.types.empty() && x.types[it.tensor] != o.type) o.mixed = true;
      }
      o.tail = i;
      ++o.n;
      o.bytes += ib;
      o.wire += it.wire_bytes;
      o.ready_pos = pos;
      o.min_tensor = std::min(o.min_tensor, it.tensor);
      if (g.comp_flops_per_element > 0.0)
        o.comp_flops += g.comp_flops_per_element * compressed_elements(m, it, g.comp_wire_per_element);
      o.comp_flops += it.codec_flops;  // registered codecs and extension slots (strategy/items.hpp)
    }
  }
  for (std::uint32_t gi = 0; gi < s.groups.size(); ++gi) {
    if (ws.open[gi].mixed || ws.groups[gi].per_bucket) price_pieces(m, x, ws, s.groups[gi], gi);
    close_bucket(x, ws, gi, tl);
  }
}

// The jobs in ready order into ws.sorted (counting sort by ready position; ties keep creation
// order), buckets renumbered in ready order, each key completed with its job's ready rank.
constexpr void order_jobs(std::size_t T, workspace& ws, std::uint32_t buckets, bool in_order) {
  // jobs are created as buckets close, mostly in ready order already (one group always;
  // `in_order`, from close_bucket): then the stable sort is the identity and the buffers swap
  // instead of copying
  if (in_order) {
    // the jobs in creation order, each bucket's jobs side by side: buckets first appear in
    // creation order, so their ready-order numbers are their creation numbers
    ws.sorted.swap(ws.jobs);
    for (std::uint32_t k = 0; k < ws.sorted.size(); ++k) ws.sorted[k].key |= k;
    return;
  }
  ws.hist.assign(T + 1, 0);
  for (const auto& j : ws.jobs) ++ws.hist[j.ready_pos + 1];
  for (std::size_t k = 1; k <= T; ++k) ws.hist[k] += ws.hist[k - 1];
  ws.sorted.resize(ws.jobs.size());
  for (const auto& j : ws.jobs) ws.sorted[ws.hist[j.ready_pos]++] = j;
  ws.bucket_number.assign(buckets, 0xffffffffu);
  std::uint32_t numbered = 0;
  for (std::uint32_t k = 0; k < ws.sorted.size(); ++k) {
    auto& j = ws.sorted[k];
    if (ws.bucket_number[j.bucket] == 0xffffffffu) ws.bucket_number[j.bucket] = numbered++;
    j.bucket = ws.bucket_number[j.bucket];
    j.key |= k;
  }
}

// Orders the heaps of job keys as min-heaps; a key's low 32 bits are the job's index in ws.sorted.
struct key_greater {
  constexpr bool operator()(std::uint64_t a, std::uint64_t b) const noexcept { return a > b; }
};

// A job of ws.sorted runs on its lane from `start` to `end`: the lane is busy until then, its
// busy time counts as communication (and compression), and with a timeline its events are
// written (compression first, then the transfer, or the two collectives of a sharded bucket).
// (emit: the events alone; commit's sums kept elsewhere, as run_servers' fifo loop does)
AUTOSYNC_ALWAYS_INLINE constexpr void emit(const workspace& ws, prediction& r, const workspace::job& j, double start, double end, bool ps) {
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
AUTOSYNC_ALWAYS_INLINE constexpr double commit(workspace& ws, prediction& r, const options& opt, tally& tl, std::uint32_t pick,
                                               double start, double end, bool ps) {
  const auto& j = ws.sorted[pick];
  const double busy = end - start - j.comp;
  ws.lane_free[static_cast<std::size_t>(j.lane)] = end;
  tl.last_end = std::max(tl.last_end, end);
  r.communication += busy;
  r.compression += j.comp;
  if (opt.timeline) emit(ws, r, j, start, end, ps);
  return end;
}
// Steps 5/6 on lane 0: the communicator takes, when free, the best ready job (fifo only: the
// next in ready order). With priority jobs, the ready jobs are a bitset over the jobs' ranks in
// key order (a counting sort by the key's tensor, fifo keys after every priority key, ties by
// index as in the keys): taking the lowest set bit is taking the smallest key.
constexpr void run_lane0(std::size_t T, workspace& ws, prediction& r, const options& opt, tally& tl) {
  const auto n = static_cast<std::uint32_t>(ws.sorted.size());
  const bool any_priority = tl.lane0_priority;
  const std::uint32_t count = tl.lane0_jobs;
  if (count == 0) return;
  double t = 0.0;
  std::uint32_t k = 0;
  auto skip = [&] { while (k < n && ws.sorted[k].lane != 0) ++k; };
  skip();
  if (!any_priority) {
    for (std::uint32_t done = 0; done < count; ++done) {
      const std::uint32_t pick = k++;
      skip();
      const auto& j = ws.sorted[pick];
      t = std::max(t, j.ready);
      t = commit(ws, r, opt, tl, pick, t, t + j.comp + j.t1 + j.t2, false);
    }
    return;
  }
  auto bucket_of = [&](std::uint64_t key) { return (key >> 63) != 0 ? T : static_cast<std::size_t>(key >> 32); };
  ws.hist.assign(T + 2, 0);
  for (std::uint32_t q = 0; q < n; ++q)
    if (ws.sorted[q].lane == 0) ++ws.hist[bucket_of(ws.sorted[q].key) + 1];
  for (std::size_t b = 1; b <= T + 1; ++b) ws.hist[b] += ws.hist[b - 1];
  ws.rank.resize(n);
  ws.by_rank.resize(count);
  for (std::uint32_t q = 0; q < n; ++q)
    if (ws.sorted[q].lane == 0) {
      const auto rk = ws.hist[bucket_of(ws.sorted[q].key)]++;
      ws.rank[q] = rk;
      ws.by_rank[rk] = q;
    }
  ws.bits.assign((count + 63) / 64, 0);
  std::size_t lo = ws.bits.size(), queued = 0;  // lo: no set bit below word lo
  for (std::uint32_t done = 0; done < count; ++done) {
    if (queued == 0 && t < ws.sorted[k].ready) t = ws.sorted[k].ready;
    while (k < n && ws.sorted[k].ready <= t) {
      const auto rk = ws.rank[k];
      ws.bits[rk / 64] |= std::uint64_t{1} << (rk % 64);
      lo = std::min<std::size_t>(lo, rk / 64);
      ++queued;
      ++k;
      skip();
    }
    while (ws.bits[lo] == 0) ++lo;
    const auto bit = static_cast<std::uint32_t>(std::countr_zero(ws.bits[lo]));
    ws.bits[lo] &= ws.bits[lo] - 1;
    --queued;
    const std::uint32_t pick = ws.by_rank[lo * 64 + bit];
    const auto& j = ws.sorted[pick];
    t = commit(ws, r, opt, tl, pick, t, t + j.comp + j.t1 + j.t2, false);
  }
}

// Steps 5/6 on the PS lanes: each server has its own queue and takes, when free, its best ready
// transfer (ties between servers: the earlier start, then the key). Each worker node's NICs are
// one more serial resource beside them: a transfer's bytes through node k (its occupancy there)
// go after that node's earlier work, and the transfer ends no earlier than the last node.
constexpr void run_servers(const context& x, workspace& ws, prediction& r, const options& opt, tally& tl) {
  const auto S = x.fab.servers.size();
  const auto W = x.fab.workers.size();
  const auto n = static_cast<std::uint32_t>(ws.sorted.size());
  if (ws.pending.size() < S) ws.pending.resize(S);
  if (ws.ready_heap.size() < S) ws.ready_heap.resize(S);
  ws.queued_at.assign(S, 0.0);
  std::uint32_t count = tl.ps_jobs;
  for (std::size_t sv = 0; sv < S; ++sv) ws.ready_heap[sv].clear();
  const bool fifo = !tl.ps_priority;  // no priority group among the transfers: each server's queue is in ready order
  if (!tl.queued) {  // (fuse_unfused queues its transfers as it writes them)
    count = 0;
    for (std::size_t sv = 0; sv < S; ++sv) ws.pending[sv].clear();
    for (std::uint32_t q = 0; q < n; ++q)
      if (const int lane = ws.sorted[q].lane; lane > 0) {
        ws.pending[static_cast<std::size_t>(lane - 1)].push_back(q);
        ++count;
      }
  }
  ws.nic_free.assign(W, 0.0);
  ws.nic_sum.assign(W, 0.0);
  // With priority groups: server sv's next start and key (its smallest queued key), queuing
  // what is ready by then; false when it has nothing left. Only the server that runs a transfer
  // changes state: the others' starts and keys stay as computed (their queues already hold what
  // is ready by their start), so each step rescans one server.
  auto next_of = [&](std::size_t sv) {
    auto& pend = ws.pending[sv];
    auto& heap = ws.ready_heap[sv];
    auto& at = ws.pending_at[sv];
    if (heap.empty() && at == pend.size()) return false;
    // the server's next start: when it is free and its queue has a ready transfer (jobs
    // already queued were ready by the start computed when they were queued)
    const double ts = std::max(ws.lane_free[1 + sv], !heap.empty() ? ws.queued_at[sv] : ws.sorted[pend[at]].ready);
    ws.queued_at[sv] = ts;
    while (at < pend.size() && ws.sorted[pend[at]].ready <= ts) {
      heap.push_back(ws.sorted[pend[at]].key);
      std::push_heap(heap.begin(), heap.end(), key_greater{});
      ++at;
    }
    ws.next_key[sv] = heap.front();
    return true;
  };
  // When transfer j, which server sv started at `start`, ends: its bytes go through each worker
  // node's NICs after the local reduce and after that node's earlier work (its occupancy there
  // is added to the node's sum), then the local broadcast.
  double* nic_free = ws.nic_free.data();
  double* nic_sum = ws.nic_sum.data();
  const auto* groups = ws.groups.data();
  // With uniform NICs (context::uniform_nics) every node's free time and sum are the same: one of
  // each, in locals (the same steps on the same values: the same bits), written to every node at
  // the end (sync_nics).
  const bool uniform = x.uniform_nics;
  double free_all = 0.0, sum_all = 0.0;
  auto through_nics = [&](const workspace::job& j, std::size_t sv, double start) AUTOSYNC_ALWAYS_INLINE {
    const double pushed = start + j.comp + j.t1;
    double nic_end = pushed + j.t2;
    if (uniform) {
      const double o = uniform_occupancy(x, groups[j.group].local, static_cast<double>(j.bytes));
      free_all = std::max(free_all, pushed) + o;
      sum_all += o;
      return std::max(nic_end, free_all) + j.t3;
    }
    for_each_occupancy(x, sv, groups[j.group].local, static_cast<double>(j.bytes), [&](std::size_t k, double o) AUTOSYNC_ALWAYS_INLINE {
      const double done_k = std::max(nic_free[k], pushed) + o;
      nic_free[k] = done_k;
      nic_sum[k] += o;
      nic_end = std::max(nic_end, done_k);
    });
    return nic_end + j.t3;
  };
  auto sync_nics = [&] {
    if (!uniform) return;
    for (std::size_t k = 0; k < W; ++k) {
      nic_free[k] = free_all;
      nic_sum[k] = sum_all;
    }
  };
  ws.next_key.resize(S);
  if (fifo) {
    // Each server's queue is in ready order and its smallest key is its next transfer's, so its
    // next start is max(free, that transfer's ready time): what next_of computes (a queued
    // transfer was ready by the last start, and the lane is free no earlier). A server with
    // nothing left starts at +inf with the largest key: never the best while one is live.
    constexpr double never = std::numeric_limits<double>::infinity();
    const workspace::job* jobs = ws.sorted.data();
    double* qa = ws.queued_at.data();
    std::uint64_t* nk = ws.next_key.data();
    const double* server_free = ws.lane_free.data() + 1;
    // each server's queue as a cursor and an end
    ws.cursor.resize(2 * S);
    const std::uint32_t** cur = ws.cursor.data();
    const std::uint32_t** last = cur + S;
    for (std::size_t sv = 0; sv < S; ++sv) {
      cur[sv] = ws.pending[sv].data();
      last[sv] = cur[sv] + ws.pending[sv].size();
    }
    auto head_of = [&](std::size_t sv) AUTOSYNC_ALWAYS_INLINE {
      if (cur[sv] == last[sv]) {
        qa[sv] = never;
        nk[sv] = ~std::uint64_t{0};
        return;
      }
      const auto& j = jobs[*cur[sv]];
      qa[sv] = std::max(server_free[sv], j.ready);
      nk[sv] = j.key;
    };
    for (std::size_t sv = 0; sv < S; ++sv) head_of(sv);
    // The best server: the least (start, key), keys distinct among servers with transfers left.
    // `skip`'s pair is left out (S: none); a server with none left never wins over one with some.
    auto least = [&](std::size_t skip, std::size_t& best, double& start, std::uint64_t& key) AUTOSYNC_ALWAYS_INLINE {
      best = S;
      start = never;
      key = ~std::uint64_t{0};
      for (std::size_t sv = 0; sv < S; ++sv) {
        const double q = qa[sv];
        const std::uint64_t k = nk[sv];
        const bool better = sv != skip && ((q < start) | ((q == start) & (k < key)));
        best = better ? sv : best;
        key = better ? k : key;
        start = better ? q : start;
      }
    };
    std::size_t best = 0;
    double start = 0.0;
    std::uint64_t best_key = 0;
    least(S, best, start, best_key);
    if (count > 0 && best == S) throw error("cost", "a parameter-server transfer has no start time (NaN)");
    // commit's sums in locals (in memory they would chain every transfer through a store and a
    // load), added in the same order: the same bits
    double communication = r.communication, compression = r.compression, last_end = tl.last_end;
    double* lane_free = ws.lane_free.data();
    for (std::uint32_t done = 0; done < count; ++done) {
      // The runner-up is worked out while the transfer runs (it does not depend on its end); the
      // next best is then the runner-up or this server again, one comparison after the end:
      // the same pick as the least over all servers.
      std::size_t next = S;
      double next_start = never;
      std::uint64_t next_key = ~std::uint64_t{0};
      least(best, next, next_start, next_key);
      ++cur[best];
      const auto pick = static_cast<std::uint32_t>(best_key & 0xffffffffu);
      const auto& job = jobs[pick];
      const double end = through_nics(job, best, start);
      lane_free[static_cast<std::size_t>(job.lane)] = end;
      last_end = std::max(last_end, end);
      communication += end - start - job.comp;
      compression += job.comp;
      if (opt.timeline) emit(ws, r, job, start, end, true);
      double q = never;  // head_of(best), the server free at `end`
      std::uint64_t k = ~std::uint64_t{0};
      if (cur[best] != last[best]) {
        const auto& j = jobs[*cur[best]];
        q = std::max(end, j.ready);
        k = j.key;
      }
      qa[best] = q;
      nk[best] = k;
      const bool stay = next == S || (q < next_start) | ((q == next_start) & (k < next_key));
      best = stay ? best : next;
      start = stay ? q : next_start;
      best_key = stay ? k : next_key;
    }
    r.communication = communication;
    r.compression = compression;
    tl.last_end = last_end;
    sync_nics();
    return;
  }
  ws.pending_at.assign(S, 0);  // what next_of has queued of each server's transfers (the heap path only)
  ws.live.assign(S, 0);
  for (std::size_t sv = 0; sv < S; ++sv) ws.live[sv] = next_of(sv) ? 1 : 0;
  for (std::uint32_t done = 0; done < count; ++done) {
    std::size_t best = S;
    double best_start = 0.0;
    std::uint64_t best_key = 0;
    for (std::size_t sv = 0; sv < S; ++sv) {
      if (!ws.live[sv]) continue;
      const double ts = ws.queued_at[sv];
      const std::uint64_t key = ws.next_key[sv];
      if (best == S || ts < best_start || (ts == best_start && key < best_key)) {
        best = sv;
        best_start = ts;
        best_key = key;
      }
    }
    auto& heap = ws.ready_heap[best];
    std::pop_heap(heap.begin(), heap.end(), key_greater{});
    heap.pop_back();
    const auto pick = static_cast<std::uint32_t>(best_key & 0xffffffffu);
    commit(ws, r, opt, tl, pick, best_start, through_nics(ws.sorted[pick], best, best_start), true);
    ws.live[best] = next_of(best) ? 1 : 0;
  }
  sync_nics();
}

// Step 8. Each worker node's NICs are shared by lane 0 and the PS lanes: whatever the lanes do,
// node k's NICs move every job's bytes through k one after another, and no job's bytes move
// before it is ready. Completion >= max over k and jobs j of (ready_j + occupancy of node k
// by the jobs ready no earlier than j): the single-machine bound with release times, per
// node. Each lane alone already meets it (the PS lanes through nic_free, lane 0 because a
// collective lasts at least its node-level cut), so the pass runs only when both have NIC
// work. ws.sorted is in ready order. A lane-0 job occupies every node alike (j.nic), so the
// suffix sums are kept as lane0 (common to all nodes) + suffix[k] (PS transfers), and
// top = max_k suffix[k] (never decreases): O(1) per lane-0 job, O(nodes) per transfer.
// Raises tl.last_end to the bound; returns the busiest node's NIC time over all jobs (for the
// lower bound). Needs run_servers' ws.nic_sum.
constexpr double shared_nic_bound(const context& x, workspace& ws, tally& tl) {
  double ps_top = 0.0;
  for (double v : ws.nic_sum) ps_top = std::max(ps_top, v);  // nic_sum: filled by the PS lanes
  const double nic_bound = tl.lane0_nic + ps_top;
  if (tl.lane0_nic > 0.0 && ps_top > 0.0) {
    auto& suffix = ws.nic_free;  // free again: the PS lanes are done with it
    suffix.assign(x.fab.workers.size(), 0.0);
    double lane0 = 0.0, top = 0.0;
    double suffix_all = 0.0;  // uniform NICs (context::uniform_nics): every node's suffix is the same, one is kept
    for (auto q = static_cast<std::uint32_t>(ws.sorted.size()); q-- > 0;) {
      const auto& j = ws.sorted[q];
      if (j.lane == 0) {
        lane0 += j.nic;
      } else if (x.uniform_nics) {
        suffix_all += uniform_occupancy(x, ws.groups[j.group].local, static_cast<double>(j.bytes));
        top = std::max(top, suffix_all);
      } else {
        double* suf = suffix.data();
        for_each_occupancy(x, ws, j, [&](std::size_t k, double o) {
          const double v = suf[k] + o;
          suf[k] = v;
          top = std::max(top, v);
        });
      }
      tl.last_end = std::max(tl.last_end, j.ready + lane0 + top);
    }
  }
  return nic_bound;
}

// The buckets (step 3) in ready order, with their items (indices into ws.items).
constexpr void collect_buckets(const workspace& ws, std::uint32_t buckets, std::vector<bucket>& out) {
  out.assign(buckets, bucket{});
  for (const auto& j : ws.sorted) {
    auto& b = out[j.bucket];
    if (!b.items.empty()) continue;  // a PS bucket's further transfers
    b.group = j.group;
    b.ready = j.ready;
    b.items.reserve(j.count);
    for (std::uint32_t i = j.head, q = 0; q < j.count; ++q, i = ws.next[i]) {
      b.items.push_back(i);
      b.wire_bytes += ws.items[i].wire_bytes;
    }
    if (j.lane == 0) b.wire_bytes = j.bytes;  // the collective's (price_pieces: not always its items' sum)
  }
}

// The core: items (in ws.items) -> prediction, in the steps of the header comment.
// `out_buckets` (optional) receives the buckets.
constexpr prediction run(const model_spec& m, const context& x, const strategy_desc& s, const options& opt, workspace& ws,
                         std::vector<bucket>* out_buckets) {
  prediction r;
  r.forward = x.forward;
  r.backward = x.backward;
  tally tl;
  prepare(m, x, s, ws);                          // 1
  fuse_items(m, x, s, ws, tl);                   // 3, 4
  if (!x.fab.servers.empty() && !tl.priced) price_ps_transfers(x, ws);  // 4
  order_jobs(m.tensors.size(), ws, tl.buckets, tl.in_order);  // bucket numbers in ready order
  ws.lane_free.assign(1 + x.fab.servers.size(), 0.0);
  if (opt.timeline) r.events.reserve(ws.sorted.size() * 2);
  run_lane0(m.tensors.size(), ws, r, opt, tl);   // 5, 6
  double nic_bound = 0.0;
  if (!x.fab.servers.empty()) {
    run_servers(x, ws, r, opt, tl);              // 5, 6
    if (x.fab.nodes > 1) nic_bound = shared_nic_bound(x, ws, tl);  // 8
  }
  // 7.
  const double compute_end = r.forward + r.backward;
  r.iteration = std::max(compute_end, tl.last_end);
  r.exposed = r.iteration - compute_end;
  double lb = std::max(tl.lane0_lb, nic_bound);  // the shared NICs (8) move every job's bytes after the forward
  for (double v : ws.server_lb) lb = std::max(lb, v);
  r.lower_bound = r.forward + std::max(r.backward, lb);
  if (out_buckets) collect_buckets(ws, tl.buckets, *out_buckets);
  return r;
}

}  // namespace autosync::cost::detail
