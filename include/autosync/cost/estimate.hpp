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
// The steps, in order (every one of them constexpr; cost/timeline_steps.hpp has one function
// per step, cost/timeline.hpp the state they share):
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
//    (strategy/fusion.hpp: the rule, and fuse_buckets(), which the plan compiler uses.)
// 4. Cost of a bucket of S wire bytes (cost/fabric.hpp maps the topology onto the cluster).
//    S is the sum of its items' wire bytes, except in an all_reduce or sharded group whose
//    registered compressor or extension slots run on the packed bucket (priced_per_bucket):
//    there S prices each dtype's piece of the bucket whole, as the executor encodes it.
//    A bucket of several dtypes is several pieces (the plan compiler, exec/plan.hpp, cuts a
//    fusion bucket into one per dtype, and per server): each piece's collective below is priced
//    on its own S and they run one after another on lane 0 (one job, their times summed); a
//    parameter-server bucket has one transfer per server and dtype.
//      all_reduce        all_reduce(fabric, topology, S)
//      sharded           reduce_scatter(S) then all_gather(S) as two events on lane 0. ZeRO
//                        may defer the all-gather into the next forward; it is kept on the
//                        critical path here (the conservative choice; the GBT correction
//                        learns how much a real overlap hides).
//      all_gather        sparse: every rank gathers the others' S bytes, (p-1) S in per rank
//      parameter_server  one transfer per (bucket, server, dtype) with B = the bucket's bytes
//                        of that dtype on that server. copies = N nodes with local replication,
//                        else p ranks; c_k = 1 with local replication, else node k's ranks. A
//                        dedicated server node has a NIC of its own; a co-located server s (a
//                        cluster without server_only nodes) lives on worker node h =
//                        fabric::servers[s].worker and shares h's NICs, and h's own c_h copies
//                        never cross the network.
//                          own     = 0 (dedicated) or c_h (co-located)
//                          remote  = copies - own: the copies through the server's NIC, pushed
//                                    in and pulled out
//                        The exchange is the executor's (exec/collectives/ps_push_pull.hpp) over
//                        MPI: the server posts every receive at once and every pull at once
//                        (Backend::sendrecv_many), so the pushes flow side by side, bounded by
//                        the busiest port, and then the pulls the same way:
//                          one_way = max(alpha_k, alpha_srv) + max(remote B beta_srv,
//                                    max over nodes k != h of c_k B beta_k,
//                                    (c_h - 1) B beta_intra without local replication)
//                          senders = remote copies + (c_h - 1) without local replication
//                          exchange = 2 one_way + senders B gamma
//                                    (pushes, each added on arrival, then the pulls the same way)
//                          local   = intra-node reduce before the push + broadcast after the
//                                    pull on g ranks (cost::reduce / cost::broadcast)
//                        transfer = local reduce + exchange + local broadcast. On the testbed
//                        (4 hosts at 1 Gb/s to 100 Mb/s, one server, 64 KiB-1 MiB) the measured
//                        exchange is 1.05-1.33x this; on a fast server behind slow senders it is
//                        0.63-0.79x the messages one after another. (BytePS also overlaps push
//                        and pull and hides the sums; the executor does neither.)
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
//    Compression adds encode + decode work, flops_per_element x elements / codec_flops (the
//    slowest worker's codec rate, fabric.hpp codec_rate: the executor's CPU core on the MPI
//    backend, the device's memory stream on NCCL, or the node's calibrated codec_flops), as a
//    kind-2 event on the same lane right before the bytes move.
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
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/timeline.hpp>
#include <autosync/cost/timeline_steps.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace autosync::cost {

// One evaluation from scratch, with what it made: the context (fabric, ready times), the items
// as expanded (ws.items, which the buckets index), the prediction and, when asked, the buckets.
// estimate, buckets, estimate_and_replay (cost/replay.hpp) and compute_features
// (cost/features.hpp) each read a part of it.
struct evaluation {
  context ctx;
  workspace ws;
  prediction p;
  std::vector<bucket> buckets;  // with_buckets only
};
[[nodiscard]] constexpr evaluation evaluate(const model_spec& m, const cluster_spec& c, const strategy_desc& s, const options& opt = {},
                                            bool with_buckets = false) {
  evaluation e{make_context(m, c), {}, {}, {}};
  expand_into(e.ws.items, m, c, s, e.ctx.position);
  e.p = detail::run(m, e.ctx, s, opt, e.ws, with_buckets ? &e.buckets : nullptr);
  return e;
}

[[nodiscard]] constexpr prediction estimate(const model_spec& m, const cluster_spec& c, const strategy_desc& s, const options& opt = {}) {
  return evaluate(m, c, s, opt).p;
}

// The buckets the fusion step packs (step 3), numbered in ready order as in the events.
[[nodiscard]] constexpr std::vector<bucket> buckets(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  return evaluate(m, c, s, options{}, true).buckets;
}

class evaluator {
 public:
  evaluator(const model_spec& m, const cluster_spec& c)
      : model_(&m), cluster_(&c), ctx_(make_context(m, c)), name_hash_(tensor_name_hashes(m)) {}

  [[nodiscard]] prediction operator()(const strategy_desc& s, const options& opt = {}) const {
    expand_into(ws_.items, *model_, *cluster_, s, ctx_.position, name_hash_);
    return detail::run(*model_, ctx_, s, opt, ws_, nullptr);
  }
  [[nodiscard]] const fabric& fab() const noexcept { return ctx_.fab; }
  [[nodiscard]] const context& ctx() const noexcept { return ctx_; }

 private:
  const model_spec* model_;
  const cluster_spec* cluster_;
  context ctx_;
  std::vector<std::uint64_t> name_hash_;  // tensor_name_hashes(model): hashed placement's keys, once per model
  mutable workspace ws_;
};

}  // namespace autosync::cost
