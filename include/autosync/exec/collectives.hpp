// autosync/exec/collectives.hpp — the topology policies realized on any Backend.
//
// The search picks a topology per group (ring, tree, halving_doubling, hierarchical<I, O>);
// this header makes that topology the one that runs. Every algorithm is written with the
// backend's point-to-point `sendrecv` / `send` / `recv` only (never the backend's own
// all_reduce), so MPI and NCCL run the same communication pattern the cost model priced
// (cost/collectives.hpp has the matching formulas). All reductions are sums, in place.
//
// Block layout: n elements over p ranks, block r = even_shard(n, p, r) (policy/partitioner.hpp):
// the first n mod p blocks hold one element more. Blocks may be empty (n < p, n = 0).
//
//   collectives/ring.hpp               ring (Patarasuk & Yuan): reduce-scatter + all-gather
//   collectives/halving_doubling.hpp   Rabenseifner's halving-doubling, any p (fold to 2^k)
//   collectives/tree.hpp               NCCL's double binary tree, pipelined in chunks
//   collectives/flat.hpp               flat_algorithm<Topo>: those three as types (and chosen
//                                      from a runtime topology_kind into the same functions)
//   collectives/hierarchical.hpp       topology_ops<Topo>: all_reduce, reduce_scatter, all_gather,
//                                      flat or hierarchical<I, O> (intra level I, inter level O);
//                                      the public functions take a runtime topology_value and
//                                      call them (with_topology)
//   collectives/ps_push_pull.hpp       parameter server: push to one server rank, pull back
//   collectives/sparse_all_gather.hpp  touched rows all-gathered and summed (Horovod's sparse path)
//   collectives/common.hpp             comms, block layouts, views, point-to-point helpers
//   collectives/sum.hpp                sum_into in every dtype
//
// Each algorithm's header draws its communication pattern. exec/collective.hpp selects a plan
// bucket's step from its group's policy types (collective<Arch, Topo>) on top of these.
//
// Segmented buffers (exec::segmented): ring and halving-doubling (flat, and as both levels of a
// hierarchical all-reduce) also run on a buffer made of several runs, e.g. a bucket's tensors
// where the user keeps them. Their steps address element ranges; a range crossing runs is one
// message per run (Backend::sendrecv_pieces posts them together), a received range is summed
// run by run. The pack and unpack copies of a fused buffer disappear; the bytes on the wire and
// the step count are the same.
//
// Exactness: each element is summed in the dtype of the buffer (f16/bf16 in f32, rounded to
// nearest even once per addition), so integer-valued inputs whose partial sums stay exact in the
// dtype (below 2^24 for f32, 2048 for f16, 256 for bf16) give the exact sum on every topology.
//
// Threading: like the backends, these functions are called from one thread at a time per comms.
#pragma once

#include <autosync/exec/collectives/common.hpp>
#include <autosync/exec/collectives/flat.hpp>
#include <autosync/exec/collectives/halving_doubling.hpp>
#include <autosync/exec/collectives/hierarchical.hpp>
#include <autosync/exec/collectives/ps_push_pull.hpp>
#include <autosync/exec/collectives/ring.hpp>
#include <autosync/exec/collectives/sparse_all_gather.hpp>
#include <autosync/exec/collectives/sum.hpp>
#include <autosync/exec/collectives/tree.hpp>
