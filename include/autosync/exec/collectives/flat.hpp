// autosync/exec/collectives/flat.hpp — one flat topology (ring, tree, halving_doubling) chosen at run time.
//
// flat_all_reduce / flat_reduce_scatter / flat_all_gather run the topology a group names on one
// communicator: the world, or one level of a hierarchical collective (collectives/hierarchical.hpp).
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

// ---- flat dispatch ----------------------------------------------------------------------------
// V is view (any topology) or segmented (ring and halving-doubling: the tree cuts ranges into
// pipelined chunks and subtree pieces of one contiguous buffer).
template <class V>
inline constexpr bool any_topology = std::is_same_v<V, view>;

template <Backend B, class V>
void flat_all_reduce(B& x, const V& v, const block_layout& l, topology_kind k, bytes& work) {
  if constexpr (any_topology<V>) {
    if (k == topology_kind::tree) return tree_all_reduce(x, v, l, work);
  } else if (k == topology_kind::tree) {
    throw error("topology", "all_reduce: a segmented buffer runs on ring or halving_doubling, not tree");
  }
  if (k == topology_kind::halving_doubling) return hd_all_reduce(x, v, l, work);
  ring_reduce_scatter(x, v, l, work);
  ring_all_gather(x, v, l);
}
template <Backend B, class V>
void flat_reduce_scatter(B& x, const V& v, const block_layout& l, topology_kind k, bytes& work) {
  if constexpr (any_topology<V>) {
    if (k == topology_kind::tree) return tree_reduce_scatter(x, v, l, work);
  } else if (k == topology_kind::tree) {
    throw error("topology", "reduce_scatter: a segmented buffer runs on ring or halving_doubling, not tree");
  }
  if (k == topology_kind::halving_doubling) return hd_reduce_scatter(x, v, l, work);
  ring_reduce_scatter(x, v, l, work);
}
template <Backend B, class V>
void flat_all_gather(B& x, const V& v, const block_layout& l, topology_kind k, bytes& work) {
  if constexpr (any_topology<V>) {
    if (k == topology_kind::tree) return tree_all_gather(x, v, l, work);
  } else if (k == topology_kind::tree) {
    throw error("topology", "all_gather: a segmented buffer runs on ring or halving_doubling, not tree");
  }
  if (k == topology_kind::halving_doubling) return hd_all_gather(x, v, l);
  ring_all_gather(x, v, l);
}

}  // namespace detail

}  // namespace autosync::exec
