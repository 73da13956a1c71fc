// autosync/exec/collectives/flat.hpp — one flat topology (ring, tree, halving_doubling) chosen at run time.
//
// flat_algorithm<Topo> runs one flat topology on one communicator: the world, or one level of a
// hierarchical collective (collectives/hierarchical.hpp); flat_all_reduce / flat_reduce_scatter /
// flat_all_gather pick it from a runtime topology_kind and call the same functions.
//
// Part of exec/collectives.hpp (the overview: block layout, segmented buffers, exactness).
#pragma once

#include <autosync/exec/collectives/common.hpp>
#include <autosync/exec/collectives/halving_doubling.hpp>
#include <autosync/exec/collectives/ring.hpp>
#include <autosync/exec/collectives/tree.hpp>

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

// ---- the flat algorithms as types -------------------------------------------------------------
// flat_algorithm<Topo> (Topo: topo::ring, topo::tree, topo::halving_doubling) runs that topology
// on one communicator: the world, or one level of a hierarchical collective. V is view (any
// topology) or segmented (ring and halving-doubling: `segmented` says which; the tree cuts ranges
// into pipelined chunks and subtree pieces of one contiguous buffer). These are the only entry
// points to the algorithms: the typed executor calls them directly, the runtime flat_* below
// switch on a topology_kind into the same functions.
template <class Topo>
struct flat_algorithm {
  static_assert(sizeof(Topo) == 0, "autosync::exec::flat_algorithm<Topo>: Topo must be topo::ring, topo::tree or topo::halving_doubling");
};
template <>
struct flat_algorithm<topo::ring> {
  template <class V>
  static constexpr bool accepts = true;
  template <Backend B, class V>
  static void all_reduce(B& x, const V& v, const block_layout& l, bytes& work) {
    ring_reduce_scatter(x, v, l, work);
    ring_all_gather(x, v, l);
  }
  template <Backend B, class V>
  static void reduce_scatter(B& x, const V& v, const block_layout& l, bytes& work) { ring_reduce_scatter(x, v, l, work); }
  template <Backend B, class V>
  static void all_gather(B& x, const V& v, const block_layout& l, bytes&) { ring_all_gather(x, v, l); }
};
template <>
struct flat_algorithm<topo::halving_doubling> {
  template <class V>
  static constexpr bool accepts = true;
  template <Backend B, class V>
  static void all_reduce(B& x, const V& v, const block_layout& l, bytes& work) { hd_all_reduce(x, v, l, work); }
  template <Backend B, class V>
  static void reduce_scatter(B& x, const V& v, const block_layout& l, bytes& work) { hd_reduce_scatter(x, v, l, work); }
  template <Backend B, class V>
  static void all_gather(B& x, const V& v, const block_layout& l, bytes&) { hd_all_gather(x, v, l); }
};
template <>
struct flat_algorithm<topo::tree> {
  template <class V>
  static constexpr bool accepts = std::is_same_v<V, view>;
  template <Backend B>
  static void all_reduce(B& x, const view& v, const block_layout& l, bytes& work) { tree_all_reduce(x, v, l, work); }
  template <Backend B>
  static void reduce_scatter(B& x, const view& v, const block_layout& l, bytes& work) { tree_reduce_scatter(x, v, l, work); }
  template <Backend B>
  static void all_gather(B& x, const view& v, const block_layout& l, bytes& work) { tree_all_gather(x, v, l, work); }
};

// Calls f(std::type_identity<Topo>{}) for the flat topology of kind k (ring for anything else:
// callers check the kind first, detail::check_topology).
template <class F>
decltype(auto) with_flat(topology_kind k, F&& f) {
  switch (k) {
    case topology_kind::tree: return std::forward<F>(f)(std::type_identity<topo::tree>{});
    case topology_kind::halving_doubling: return std::forward<F>(f)(std::type_identity<topo::halving_doubling>{});
    default: return std::forward<F>(f)(std::type_identity<topo::ring>{});
  }
}

// ---- flat dispatch (runtime topology) -----------------------------------------------------------
template <Backend B, class V>
void flat_all_reduce(B& x, const V& v, const block_layout& l, topology_kind k, bytes& work) {
  with_flat(k, [&](auto t) {
    using A = flat_algorithm<typename decltype(t)::type>;
    if constexpr (A::template accepts<V>) A::all_reduce(x, v, l, work);
    else throw error("topology", "all_reduce: a segmented buffer runs on ring or halving_doubling, not tree");
  });
}
template <Backend B, class V>
void flat_reduce_scatter(B& x, const V& v, const block_layout& l, topology_kind k, bytes& work) {
  with_flat(k, [&](auto t) {
    using A = flat_algorithm<typename decltype(t)::type>;
    if constexpr (A::template accepts<V>) A::reduce_scatter(x, v, l, work);
    else throw error("topology", "reduce_scatter: a segmented buffer runs on ring or halving_doubling, not tree");
  });
}
template <Backend B, class V>
void flat_all_gather(B& x, const V& v, const block_layout& l, topology_kind k, bytes& work) {
  with_flat(k, [&](auto t) {
    using A = flat_algorithm<typename decltype(t)::type>;
    if constexpr (A::template accepts<V>) A::all_gather(x, v, l, work);
    else throw error("topology", "all_gather: a segmented buffer runs on ring or halving_doubling, not tree");
  });
}

}  // namespace detail

}  // namespace autosync::exec
