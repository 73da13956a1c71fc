// autosync/exec/collectives/halving_doubling.hpp — halving-doubling (Rabenseifner) reduce-scatter, all-gather, all-reduce.
//
//   halving_doubling (Rabenseifner; Thakur, Rabenseifner & Gropp 2005 §4.4). p' = 2^floor(lg p),
//   rem = p - p'. Fold: among ranks < 2 rem, each even rank hands its vector to the odd rank
//   above it; the p' remaining ranks are "virtual ranks" v (odd r < 2 rem -> v = r/2,
//   r >= 2 rem -> v = r - rem). Virtual rank v answers for the p-blocks [2v, 2v+2) (v < rem)
//   or {v + rem}, so every virtual range is a contiguous run of elements:
//
//     p = 6 (p' = 4, rem = 2):  blocks  b0 b1 | b2 b3 | b4 | b5
//                               virtual   v0  |  v1   | v2 | v3      (real ranks 1, 3, 4, 5)
//     halving, mask 2: v0<->v2, v1<->v3 exchange halves [v0 v1] / [v2 v3]
//     halving, mask 1: v0<->v1, v2<->v3       -> v holds its own range summed
//     doubling, mask 1 then 2: the reverse, exchanging what each holds
//
//   All-reduce ends with the odd ranks handing the whole vector back; reduce-scatter ends with
//   the odd rank handing block r-1 to the even rank; all-gather starts with the even rank
//   handing its block to the odd rank.
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

// ---- halving-doubling -------------------------------------------------------------------------
struct hd_map {
  int p = 1, p2 = 1, rem = 0;
  explicit hd_map(int p_) : p(p_), p2(static_cast<int>(std::bit_floor(static_cast<unsigned>(p_)))), rem(p_ - p2) {}
  // virtual rank of real rank r (-1: folded away, an even rank below 2 rem)
  [[nodiscard]] int virt(int r) const noexcept { return r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem; }
  [[nodiscard]] int real(int vr) const noexcept { return vr < rem ? 2 * vr + 1 : vr + rem; }
  // first p-block of virtual rank vr (vr == p2: one past the last block)
  [[nodiscard]] int first_block(int vr) const noexcept { return vr < rem ? 2 * vr : vr + rem; }
  [[nodiscard]] std::size_t elem(const block_layout& l, int vr) const noexcept {
    return vr >= p2 ? l.total() : l.begin(first_block(vr));
  }
};

// Recursive halving among the virtual ranks: vr ends with its own range summed.
template <Backend B, class V>
void hd_rs_core(B& x, const V& v, const block_layout& l, const hd_map& m, bytes& work) {
  const int vr = m.virt(x.rank());
  if (vr < 0 || m.p2 == 1) return;
  for (int mask = m.p2 / 2; mask >= 1; mask /= 2) {
    const int lo = vr & ~(2 * mask - 1);
    const int keep = (vr & mask) ? lo + mask : lo, give = (vr & mask) ? lo : lo + mask;
    const std::size_t kb = m.elem(l, keep), ke = m.elem(l, keep + mask);
    const std::size_t gb = m.elem(l, give), ge = m.elem(l, give + mask);
    unsigned char* const tmp = room(work, ke - kb, v.es);
    swap_add(x, v, gb, ge - gb, m.real(vr ^ mask), kb, ke - kb, m.real(vr ^ mask), tmp, tag_hd_rs);
  }
}

// Recursive doubling among the virtual ranks: from its own range to the whole vector.
template <Backend B, class V>
void hd_ag_core(B& x, const V& v, const block_layout& l, const hd_map& m) {
  const int vr = m.virt(x.rank());
  if (vr < 0) return;
  for (int mask = 1; mask < m.p2; mask *= 2) {
    const int mine = vr & ~(mask - 1), theirs = (vr ^ mask) & ~(mask - 1);
    const std::size_t mb = m.elem(l, mine), me = m.elem(l, mine + mask);
    const std::size_t tb = m.elem(l, theirs), te = m.elem(l, theirs + mask);
    swap_ranges(x, v, mb, me - mb, m.real(vr ^ mask), tb, te - tb, m.real(vr ^ mask), tag_hd_ag);
  }
}

template <Backend B, class V>
void hd_reduce_scatter(B& x, const V& v, const block_layout& l, bytes& work) {
  const int p = x.size(), r = x.rank();
  if (p == 1) return;
  const hd_map m(p);
  const std::size_t n = l.total();
  if (r < 2 * m.rem && r % 2 == 0) {
    send_range(x, v, 0, n, r + 1, tag_hd_fold);
    recv_range(x, v, l.begin(r), l.size(r), r + 1, tag_hd_unfold);
    return;
  }
  if (r < 2 * m.rem) recv_add(x, v, 0, n, r - 1, room(work, n, v.es), tag_hd_fold);
  hd_rs_core(x, v, l, m, work);
  if (r < 2 * m.rem) send_range(x, v, l.begin(r - 1), l.size(r - 1), r - 1, tag_hd_unfold);
}

template <Backend B, class V>
void hd_all_gather(B& x, const V& v, const block_layout& l) {
  const int p = x.size(), r = x.rank();
  if (p == 1) return;
  const hd_map m(p);
  const std::size_t n = l.total();
  if (r < 2 * m.rem && r % 2 == 0) {
    send_range(x, v, l.begin(r), l.size(r), r + 1, tag_hd_fold);
    recv_range(x, v, 0, n, r + 1, tag_hd_unfold);
    return;
  }
  if (r < 2 * m.rem) recv_range(x, v, l.begin(r - 1), l.size(r - 1), r - 1, tag_hd_fold);
  hd_ag_core(x, v, l, m);
  if (r < 2 * m.rem) send_range(x, v, 0, n, r - 1, tag_hd_unfold);
}

template <Backend B, class V>
void hd_all_reduce(B& x, const V& v, const block_layout& l, bytes& work) {
  const int p = x.size(), r = x.rank();
  if (p == 1) return;
  const hd_map m(p);
  const std::size_t n = l.total();
  if (r < 2 * m.rem && r % 2 == 0) {
    send_range(x, v, 0, n, r + 1, tag_hd_fold);
    recv_range(x, v, 0, n, r + 1, tag_hd_unfold);
    return;
  }
  if (r < 2 * m.rem) recv_add(x, v, 0, n, r - 1, room(work, n, v.es), tag_hd_fold);
  hd_rs_core(x, v, l, m, work);
  hd_ag_core(x, v, l, m);
  if (r < 2 * m.rem) send_range(x, v, 0, n, r - 1, tag_hd_unfold);
}

}  // namespace detail

}  // namespace autosync::exec
