// autosync/exec/collectives/hierarchical.hpp — all_reduce, reduce_scatter and all_gather of a
// topology: flat, or hierarchical<I, O> over the intra- and inter-node communicators.
// topology_ops<Topo> holds them per topology type (what the typed executor calls); the public
// functions take a runtime topology_value and call the same ones.
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

// --- the topologies as types ------------------------------------------------------------------
// topology_ops<Topo> runs all_reduce, reduce_scatter and all_gather of n elements over the world
// of `c` with topology Topo: a flat topology on the world, or hierarchical<I, O> on the intra and
// inter communicators. V is view, or segmented where segmented_all_reduce / segmented_sharded say
// so. The typed executor (exec/collective.hpp) calls these directly; the public functions below
// take a runtime topology_value and call the same ones (with_topology).
template <class Topo>
struct topology_ops {
  static_assert(sizeof(Topo) == 0, "autosync::exec::topology_ops<Topo>: Topo must be a topology policy (topo::ring, topo::tree, "
                                   "topo::halving_doubling or topo::hierarchical<I, O>)");
};

template <class Topo>
  requires topo::FlatTopology<Topo>
struct topology_ops<Topo> {
  using level = detail::flat_algorithm<Topo>;
  static constexpr bool segmented_all_reduce = level::template accepts<segmented>;
  static constexpr bool segmented_sharded = level::template accepts<segmented>;
  // Whether a sharded group may use it (validate_group: its reduce-scatter is not the tree's).
  static constexpr bool sharded_ok = !std::is_same_v<Topo, topo::tree>;
  template <Backend B>
  static void check(const comms<B>&, const char*) {}
  template <Backend B, class V>
  static void all_reduce(comms<B>& c, const V& v, std::size_t n) {
    level::all_reduce(c.world, v, detail::block_layout::even(n, c.world.size()), c.scratch);
  }
  template <Backend B, class V>
  static void reduce_scatter(comms<B>& c, const V& v, std::size_t n) {
    level::reduce_scatter(c.world, v, detail::block_layout::even(n, c.world.size()), c.scratch);
  }
  template <Backend B, class V>
  static void all_gather(comms<B>& c, const V& v, std::size_t n) {
    level::all_gather(c.world, v, detail::block_layout::even(n, c.world.size()), c.scratch);
  }
};

template <class I, class O>
struct topology_ops<topo::hierarchical<I, O>> {
  using intra = detail::flat_algorithm<I>;
  using inter = detail::flat_algorithm<O>;
  static constexpr bool segmented_all_reduce = intra::template accepts<segmented> && inter::template accepts<segmented>;
  static constexpr bool segmented_sharded = false;  // the regrouped vector is one contiguous staging buffer
  static constexpr bool sharded_ok = !std::is_same_v<I, topo::tree>;
  template <Backend B>
  static void check(const comms<B>& c, const char* op) {
    if (!c.intra.valid() || !c.inter.valid() || c.intra.size() * c.inter.size() != c.world.size())
      throw error("comms", std::string(op) + ": hierarchical needs the intra and inter communicators of comms::make");
  }
  template <Backend B, class V>
  static void all_reduce(comms<B>& c, const V& v, std::size_t n) {
    const auto lg = detail::block_layout::even(n, c.intra.size());
    const int l = c.intra.rank();
    intra::reduce_scatter(c.intra, v, lg, c.scratch);
    inter::all_reduce(c.inter, v.sub(lg.begin(l), lg.size(l)), detail::block_layout::even(lg.size(l), c.inter.size()), c.scratch);
    intra::all_gather(c.intra, v, lg, c.scratch);
  }
  template <Backend B>
  static void reduce_scatter(comms<B>& c, const detail::view& v, std::size_t n) {
    const dtype t = v.t;
    const auto lw = detail::block_layout::even(n, c.world.size());
    const int g = c.intra.size(), nodes = c.inter.size(), l = c.intra.rank(), k = c.inter.rank();
    const auto rg = detail::regroup(lw, g, nodes);
    const bool identity = g == 1 || nodes == 1;  // the regrouped order is the world order
    detail::view w = v;
    if (!identity) {
      w = detail::view(detail::room(c.staging, n, v.es), t);
      for (std::size_t j = 0; j < rg.order.size(); ++j)
        detail::copy_bytes(w.at(rg.packed.begin(static_cast<int>(j))), v.at(lw.begin(rg.order[j])), lw.size(rg.order[j]) * v.es);
    }
    intra::reduce_scatter(c.intra, w, rg.intra, c.scratch);
    std::vector<std::size_t> sizes;
    for (int kk = 0; kk < nodes; ++kk) sizes.push_back(lw.size(kk * g + l));
    inter::reduce_scatter(c.inter, detail::view(w.at(rg.intra.begin(l)), t), detail::block_layout::of_sizes(sizes), c.scratch);
    if (!identity) {
      const int j = l * nodes + k, r = c.world.rank();
      detail::copy_bytes(v.at(lw.begin(r)), w.at(rg.packed.begin(j)), lw.size(r) * v.es);
    }
  }
  template <Backend B>
  static void all_gather(comms<B>& c, const detail::view& v, std::size_t n) {
    const dtype t = v.t;
    const auto lw = detail::block_layout::even(n, c.world.size());
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
    inter::all_gather(c.inter, detail::view(w.at(rg.intra.begin(l)), t), detail::block_layout::of_sizes(sizes), c.scratch);
    intra::all_gather(c.intra, w, rg.intra, c.scratch);
    if (!identity)
      for (std::size_t j = 0; j < rg.order.size(); ++j)
        detail::copy_bytes(v.at(lw.begin(rg.order[j])), w.at(rg.packed.begin(static_cast<int>(j))), lw.size(rg.order[j]) * v.es);
  }
};

// Calls f(std::type_identity<Topo>{}) for the topology policy whose value is `topo` (one of 12:
// the three flat ones, hierarchical<I, O> for I, O flat). Callers check the value first
// (detail::check_topology).
template <class F>
decltype(auto) with_topology(const topology_value& topo, F&& f) {
  if (topo.kind != topology_kind::hierarchical) return detail::with_flat(topo.kind, std::forward<F>(f));
  return detail::with_flat(topo.intra, [&](auto i) -> decltype(auto) {
    return detail::with_flat(topo.inter, [&](auto o) -> decltype(auto) {
      return std::forward<F>(f)(std::type_identity<topo::hierarchical<typename decltype(i)::type, typename decltype(o)::type>>{});
    });
  });
}

// --- public collectives (runtime topology) ------------------------------------------------------

namespace detail {
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
  with_topology(topo, [&](auto tt) { topology_ops<typename decltype(tt)::type>::all_reduce(c, detail::view(buf, t), n); });
}

// The same on a buffer of several runs, summed where they are (ring, halving_doubling,
// hierarchical of those; every rank must pass runs of the same lengths).
template <Backend B>
void all_reduce(comms<B>& c, const segmented& s, const topology_value& topo) {
  detail::check_segmented(c, s, topo, true, "all_reduce");
  detail::check_topology(c, topo, "all_reduce");
  with_topology(topo, [&](auto tt) {
    using T = topology_ops<typename decltype(tt)::type>;
    if constexpr (T::segmented_all_reduce) T::all_reduce(c, s, s.total());
  });
}

// Sharded on a segmented buffer (ring or halving_doubling): reduce_scatter leaves world rank r's
// block of the whole summed, all_gather spreads every rank's block.
template <Backend B>
void reduce_scatter(comms<B>& c, const segmented& s, const topology_value& topo) {
  detail::check_segmented(c, s, topo, false, "reduce_scatter");
  with_topology(topo, [&](auto tt) {
    using T = topology_ops<typename decltype(tt)::type>;
    if constexpr (T::segmented_sharded) T::reduce_scatter(c, s, s.total());
  });
}
template <Backend B>
void all_gather(comms<B>& c, const segmented& s, const topology_value& topo) {
  detail::check_segmented(c, s, topo, false, "all_gather");
  with_topology(topo, [&](auto tt) {
    using T = topology_ops<typename decltype(tt)::type>;
    if constexpr (T::segmented_sharded) T::all_gather(c, s, s.total());
  });
}

// After: world rank r's block (even_shard(n, p, r)) of buf holds the sum; other blocks unspecified.
template <Backend B>
void reduce_scatter(comms<B>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "reduce_scatter");
  detail::check_topology(c, topo, "reduce_scatter");
  with_topology(topo, [&](auto tt) { topology_ops<typename decltype(tt)::type>::reduce_scatter(c, detail::view(buf, t), n); });
}

// Before: world rank r's block (even_shard(n, p, r)) holds its part; after: every rank holds all.
template <Backend B>
void all_gather(comms<B>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "all_gather");
  detail::check_topology(c, topo, "all_gather");
  with_topology(topo, [&](auto tt) { topology_ops<typename decltype(tt)::type>::all_gather(c, detail::view(buf, t), n); });
}

}  // namespace autosync::exec
