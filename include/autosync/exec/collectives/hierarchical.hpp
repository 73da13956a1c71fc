// autosync/exec/collectives/hierarchical.hpp — the public all_reduce, reduce_scatter and
// all_gather: flat, or hierarchical<I, O> over the intra- and inter-node communicators.
//
//   hierarchical<I, O> with g ranks per node and N nodes (comms: collectives/common.hpp):
//     all_reduce:     intra reduce-scatter with I over g blocks; inter all-reduce with O of my
//                     intra block among the N ranks with my local index; intra all-gather with I
//     reduce_scatter: world block q = k g + l (node k, local l). The blocks are regrouped so the
//                     intra block of local l is S_l = [q = l, g + l, 2g + l, ...]; intra RS with I
//                     over the S_l, inter RS with O inside S_l (node k gets block k g + l), so
//                     world rank r ends with world block r. all_gather runs the same backwards.
//
// Part of exec/collectives.hpp (the overview: block layout, segmented buffers, exactness).
#pragma once

#include <autosync/exec/collectives/common.hpp>
#include <autosync/exec/collectives/flat.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace autosync::exec {

namespace detail {

// World blocks regrouped by local index (hierarchical reduce-scatter / all-gather):
// order[j] = the world block at position j: l-major, node-minor.
struct regrouped {
  std::vector<int> order;     // world block at each position
  block_layout packed;        // the world blocks in `order`, contiguous
  block_layout intra;         // g blocks: S_l = the N world blocks of local index l
};
inline regrouped regroup(const block_layout& world, int g, int nodes) {
  regrouped r;
  std::vector<std::size_t> sizes, intra_sizes;
  for (int l = 0; l < g; ++l) {
    std::size_t s = 0;
    for (int k = 0; k < nodes; ++k) {
      r.order.push_back(k * g + l);
      sizes.push_back(world.size(k * g + l));
      s += world.size(k * g + l);
    }
    intra_sizes.push_back(s);
  }
  r.packed = block_layout::of_sizes(sizes);
  r.intra = block_layout::of_sizes(intra_sizes);
  return r;
}

}  // namespace detail

// --- public collectives -----------------------------------------------------------------------

namespace detail {
template <Backend B, class V>
void all_reduce_on(comms<B>& c, const V& v, std::size_t n, const topology_value& topo) {
  if (topo.kind != topology_kind::hierarchical) {
    flat_all_reduce(c.world, v, block_layout::even(n, c.world.size()), topo.kind, c.scratch);
    return;
  }
  const auto lg = block_layout::even(n, c.intra.size());
  const int l = c.intra.rank();
  flat_reduce_scatter(c.intra, v, lg, topo.intra, c.scratch);
  flat_all_reduce(c.inter, v.sub(lg.begin(l), lg.size(l)), block_layout::even(lg.size(l), c.inter.size()), topo.inter, c.scratch);
  flat_all_gather(c.intra, v, lg, topo.intra, c.scratch);
}
// A segmented buffer runs on ring and halving-doubling (flat, or as both hierarchical levels
// for all_reduce).
template <Backend B>
void check_segmented(const comms<B>& c, const segmented& s, const topology_value& topo, bool hierarchical_ok, const char* op) {
  if (!c.world.valid()) throw error("world", std::string(op) + ": the world backend is empty");
  if (s.off.size() != s.run.size() + 1 || s.off.front() != 0) throw error("segmented", std::string(op) + ": malformed runs");
  auto ok = [](topology_kind k) { return k == topology_kind::ring || k == topology_kind::halving_doubling; };
  if (topo.kind == topology_kind::hierarchical && hierarchical_ok) {
    if (!ok(topo.intra) || !ok(topo.inter))
      throw error("topology", std::string(op) + ": a segmented buffer needs ring or halving_doubling at both hierarchical levels");
  } else if (!ok(topo.kind)) {
    throw error("topology", std::string(op) + ": a segmented buffer runs on ring or halving_doubling" +
                                (hierarchical_ok ? " (or hierarchical of those)" : ""));
  }
}
}  // namespace detail

// In place: every rank's buf ends with the element-wise sum over the world.
template <Backend B>
void all_reduce(comms<B>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "all_reduce");
  detail::check_topology(c, topo, "all_reduce");
  detail::all_reduce_on(c, detail::view(buf, t), n, topo);
}

// The same on a buffer of several runs, summed where they are (ring, halving_doubling,
// hierarchical of those; every rank must pass runs of the same lengths).
template <Backend B>
void all_reduce(comms<B>& c, const segmented& s, const topology_value& topo) {
  detail::check_segmented(c, s, topo, true, "all_reduce");
  detail::check_topology(c, topo, "all_reduce");
  detail::all_reduce_on(c, s, s.total(), topo);
}

// Sharded on a segmented buffer (ring or halving_doubling): reduce_scatter leaves world rank r's
// block of the whole summed, all_gather spreads every rank's block.
template <Backend B>
void reduce_scatter(comms<B>& c, const segmented& s, const topology_value& topo) {
  detail::check_segmented(c, s, topo, false, "reduce_scatter");
  detail::flat_reduce_scatter(c.world, s, detail::block_layout::even(s.total(), c.world.size()), topo.kind, c.scratch);
}
template <Backend B>
void all_gather(comms<B>& c, const segmented& s, const topology_value& topo) {
  detail::check_segmented(c, s, topo, false, "all_gather");
  detail::flat_all_gather(c.world, s, detail::block_layout::even(s.total(), c.world.size()), topo.kind, c.scratch);
}

// After: world rank r's block (even_shard(n, p, r)) of buf holds the sum; other blocks unspecified.
template <Backend B>
void reduce_scatter(comms<B>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "reduce_scatter");
  detail::check_topology(c, topo, "reduce_scatter");
  const detail::view v(buf, t);
  const auto lw = detail::block_layout::even(n, c.world.size());
  if (topo.kind != topology_kind::hierarchical) {
    detail::flat_reduce_scatter(c.world, v, lw, topo.kind, c.scratch);
    return;
  }
  const int g = c.intra.size(), nodes = c.inter.size(), l = c.intra.rank(), k = c.inter.rank();
  const auto rg = detail::regroup(lw, g, nodes);
  const bool identity = g == 1 || nodes == 1;  // the regrouped order is the world order
  detail::view w = v;
  if (!identity) {
    w = detail::view(detail::room(c.staging, n, v.es), t);
    for (std::size_t j = 0; j < rg.order.size(); ++j)
      detail::copy_bytes(w.at(rg.packed.begin(static_cast<int>(j))), v.at(lw.begin(rg.order[j])), lw.size(rg.order[j]) * v.es);
  }
  detail::flat_reduce_scatter(c.intra, w, rg.intra, topo.intra, c.scratch);
  std::vector<std::size_t> sizes;
  for (int kk = 0; kk < nodes; ++kk) sizes.push_back(lw.size(kk * g + l));
  detail::flat_reduce_scatter(c.inter, detail::view(w.at(rg.intra.begin(l)), t), detail::block_layout::of_sizes(sizes), topo.inter,
                              c.scratch);
  if (!identity) {
    const int j = l * nodes + k, r = c.world.rank();
    detail::copy_bytes(v.at(lw.begin(r)), w.at(rg.packed.begin(j)), lw.size(r) * v.es);
  }
}

// Before: world rank r's block (even_shard(n, p, r)) holds its part; after: every rank holds all.
template <Backend B>
void all_gather(comms<B>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "all_gather");
  detail::check_topology(c, topo, "all_gather");
  const detail::view v(buf, t);
  const auto lw = detail::block_layout::even(n, c.world.size());
  if (topo.kind != topology_kind::hierarchical) {
    detail::flat_all_gather(c.world, v, lw, topo.kind, c.scratch);
    return;
  }
  const int g = c.intra.size(), nodes = c.inter.size(), l = c.intra.rank(), k = c.inter.rank();
  const auto rg = detail::regroup(lw, g, nodes);
  const bool identity = g == 1 || nodes == 1;
  detail::view w = v;
  if (!identity) {
    w = detail::view(detail::room(c.staging, n, v.es), t);
    const int j = l * nodes + k, r = c.world.rank();
    detail::copy_bytes(w.at(rg.packed.begin(j)), v.at(lw.begin(r)), lw.size(r) * v.es);
  }
  std::vector<std::size_t> sizes;
  for (int kk = 0; kk < nodes; ++kk) sizes.push_back(lw.size(kk * g + l));
  detail::flat_all_gather(c.inter, detail::view(w.at(rg.intra.begin(l)), t), detail::block_layout::of_sizes(sizes), topo.inter,
                          c.scratch);
  detail::flat_all_gather(c.intra, w, rg.intra, topo.intra, c.scratch);
  if (!identity)
    for (std::size_t j = 0; j < rg.order.size(); ++j)
      detail::copy_bytes(v.at(lw.begin(rg.order[j])), w.at(rg.packed.begin(static_cast<int>(j))), lw.size(rg.order[j]) * v.es);
}

}  // namespace autosync::exec
