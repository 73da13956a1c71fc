// autosync/exec/collectives/ring.hpp — ring reduce-scatter and all-gather.
//
//   ring (Patarasuk & Yuan): reduce-scatter in p-1 steps, then all-gather in p-1 steps.
//     RS step s: rank r sends block r-s-1 to r+1, receives block r-s-2 from r-1 and adds it;
//     after p-1 steps rank r holds block r summed (the layout reduce_scatter promises).
//     AG step s: rank r sends block r-s to r+1, receives block r-s-1 from r-1.
//
// Part of exec/collectives.hpp (the overview: block layout, segmented buffers, exactness).
#pragma once

#include <autosync/exec/collectives/common.hpp>

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

// ---- ring -----------------------------------------------------------------------------------
template <Backend B, class V>
void ring_reduce_scatter(B& x, const V& v, const block_layout& l, bytes& work) {
  const int p = x.size(), r = x.rank();
  if (p == 1) return;
  unsigned char* const tmp = room(work, l.max_block(), v.es);
  const int right = mod(r + 1, p), left = mod(r - 1, p);
  for (int s = 0; s < p - 1; ++s) {
    const int sb = mod(r - s - 1, p), rb = mod(r - s - 2, p);
    swap_add(x, v, l.begin(sb), l.size(sb), right, l.begin(rb), l.size(rb), left, tmp, tag_ring_rs);
  }
}

template <Backend B, class V>
void ring_all_gather(B& x, const V& v, const block_layout& l) {
  const int p = x.size(), r = x.rank();
  if (p == 1) return;
  const int right = mod(r + 1, p), left = mod(r - 1, p);
  for (int s = 0; s < p - 1; ++s) {
    const int sb = mod(r - s, p), rb = mod(r - s - 1, p);
    swap_ranges(x, v, l.begin(sb), l.size(sb), right, l.begin(rb), l.size(rb), left, tag_ring_ag);
  }
}

}  // namespace detail

}  // namespace autosync::exec
