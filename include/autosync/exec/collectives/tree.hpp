// autosync/exec/collectives/tree.hpp — NCCL's double binary tree: all-reduce, reduce-scatter, all-gather.
//
//   tree (NCCL's double binary tree; Sanders, Speck & Träff 2009). Tree 0 is the in-order
//   binary tree of NCCL's ncclGetBtree (rank 0 the root with one child); tree 1 is tree 0
//   mirrored (p even: r -> p-1-r) or shifted by one (p odd: r -> r+1), so every rank is an
//   inner node of at most one tree (p odd: except rank 0, tree 0's root). The vector is split
//   in two halves, half t runs on tree t:
//
//     p = 8, tree 0:           0             tree 1 (mirror):       7
//                              |                                    |
//                              4                                    3
//                            /   \                                /   \    .
//                           2     6                              5     1
//                          / \   / \                            / \   / \  .
//                         1   3 5   7                          6   4 2   0
//
//     all_reduce     = reduce up + broadcast down, pipelined in chunks of tree_chunk_bytes
//     reduce_scatter = reduce up + scatter down  (each child gets the blocks of its subtree)
//     all_gather     = gather up (each node forwards its subtree's blocks) + broadcast down
//   (cost/collectives.hpp prices tree reduce-scatter / all-gather as the up / down halves.)
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

// ---- double binary tree ---------------------------------------------------------------------
struct tree_links {
  int parent = -1;
  std::array<int, 2> child{-1, -1};
};

// NCCL's ncclGetBtree: in-order binary tree, the level of r is its lowest set bit; rank 0 is the
// root with one child (the highest power of two below p).
[[nodiscard]] constexpr tree_links btree(int p, int r) noexcept {
  tree_links t;
  int bit = 1;
  while (bit < p && !(bit & r)) bit <<= 1;
  if (r == 0) {
    t.child[1] = p > 1 ? bit >> 1 : -1;
    return t;
  }
  int up = (r ^ bit) | (bit << 1);
  if (up >= p) up = r ^ bit;
  t.parent = up;
  int low = bit >> 1;
  t.child[0] = low == 0 ? -1 : r - low;
  int down1 = low == 0 ? -1 : r + low;
  while (down1 >= p) {
    low >>= 1;
    down1 = low == 0 ? -1 : r + low;
  }
  t.child[1] = down1;
  return t;
}

// Tree `which` (0 or 1) of NCCL's double binary tree (ncclGetDtree) as seen from rank r.
[[nodiscard]] constexpr tree_links dtree(int p, int r, int which) noexcept {
  if (which == 0) return btree(p, r);
  auto map = [&](int x, bool back) {  // tree 1's rank -> tree 0's rank and back
    if (x < 0) return -1;
    if (p % 2 == 1) return back ? (x + 1) % p : (x - 1 + p) % p;
    return p - 1 - x;
  };
  const tree_links s = btree(p, map(r, false));
  return tree_links{map(s.parent, true), {map(s.child[0], true), map(s.child[1], true)}};
}

// The ranks of the subtree below r (r included), ascending.
[[nodiscard]] inline std::vector<int> subtree(int p, int r, int which) {
  std::vector<int> out, stack{r};
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    out.push_back(u);
    for (int c : dtree(p, u, which).child)
      if (c >= 0) stack.push_back(c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline constexpr std::size_t tree_chunk_bytes = std::size_t{1} << 17;

// Elements [a, b) of v reduced up tree `which` (the root ends with the sum), in chunks.
template <Backend B>
void tree_reduce_up(B& x, view v, std::size_t a, std::size_t b, int which, bytes& work) {
  const tree_links t = dtree(x.size(), x.rank(), which);
  const std::size_t chunk = std::max<std::size_t>(1, tree_chunk_bytes / v.es);
  unsigned char* tmp = nullptr;
  if (t.child[0] >= 0 || t.child[1] >= 0) tmp = room(work, std::min(chunk, b - a), v.es);
  for (std::size_t c = a; c < b; c += chunk) {  // every rank knows [a, b): an empty half sends nothing
    const std::size_t len = std::min(chunk, b - c);
    for (int ch : t.child) {
      if (ch < 0) continue;
      x.recv(tmp, len, v.t, ch, tag_tree_up + which);
      sum_into(v.at(c), tmp, len, v.t);
    }
    if (t.parent >= 0) x.send(v.at(c), len, v.t, t.parent, tag_tree_up + which);
  }
}

template <Backend B>
void tree_broadcast_down(B& x, view v, std::size_t a, std::size_t b, int which) {
  const tree_links t = dtree(x.size(), x.rank(), which);
  const std::size_t chunk = std::max<std::size_t>(1, tree_chunk_bytes / v.es);
  for (std::size_t c = a; c < b; c += chunk) {
    const std::size_t len = std::min(chunk, b - c);
    if (t.parent >= 0) x.recv(v.at(c), len, v.t, t.parent, tag_tree_down + which);
    for (int ch : t.child)
      if (ch >= 0) x.send(v.at(c), len, v.t, ch, tag_tree_down + which);
  }
}

// The pieces (block q ∩ [a, b)) of the ranks in `ranks`, in that order.
struct piece {
  std::size_t begin, len;
};
inline std::vector<piece> pieces(const block_layout& l, const std::vector<int>& ranks, std::size_t a, std::size_t b) {
  std::vector<piece> out;
  for (int q : ranks) {
    const std::size_t s = std::max(a, l.begin(q)), e = std::min(b, l.end(q));
    if (e > s) out.push_back({s, e - s});
  }
  return out;
}
inline std::size_t total_len(const std::vector<piece>& ps) {
  std::size_t n = 0;
  for (auto& p : ps) n += p.len;
  return n;
}

// Root of tree `which` holds [a, b) summed; each rank receives the blocks of its subtree.
template <Backend B>
void tree_scatter_down(B& x, view v, const block_layout& l, std::size_t a, std::size_t b, int which, bytes& work) {
  const int p = x.size();
  const tree_links t = dtree(p, x.rank(), which);
  if (t.parent >= 0) {
    const auto ps = pieces(l, subtree(p, x.rank(), which), a, b);
    unsigned char* const buf = room(work, total_len(ps), v.es);
    x.recv(buf, total_len(ps), v.t, t.parent, tag_tree_scatter + which);
    std::size_t o = 0;
    for (auto& pc : ps) detail::copy_bytes(v.at(pc.begin), buf + o * v.es, pc.len * v.es), o += pc.len;
  }
  for (int ch : t.child) {
    if (ch < 0) continue;
    const auto ps = pieces(l, subtree(p, ch, which), a, b);
    unsigned char* const buf = room(work, total_len(ps), v.es);
    std::size_t o = 0;
    for (auto& pc : ps) detail::copy_bytes(buf + o * v.es, v.at(pc.begin), pc.len * v.es), o += pc.len;
    x.send(buf, o, v.t, ch, tag_tree_scatter + which);
  }
}

// Each rank holds its block ∩ [a, b); the root of tree `which` ends with all of [a, b).
template <Backend B>
void tree_gather_up(B& x, view v, const block_layout& l, std::size_t a, std::size_t b, int which, bytes& work) {
  const int p = x.size();
  const tree_links t = dtree(p, x.rank(), which);
  for (int ch : t.child) {
    if (ch < 0) continue;
    const auto ps = pieces(l, subtree(p, ch, which), a, b);
    unsigned char* const buf = room(work, total_len(ps), v.es);
    x.recv(buf, total_len(ps), v.t, ch, tag_tree_gather + which);
    std::size_t o = 0;
    for (auto& pc : ps) detail::copy_bytes(v.at(pc.begin), buf + o * v.es, pc.len * v.es), o += pc.len;
  }
  if (t.parent >= 0) {
    const auto ps = pieces(l, subtree(p, x.rank(), which), a, b);
    unsigned char* const buf = room(work, total_len(ps), v.es);
    std::size_t o = 0;
    for (auto& pc : ps) detail::copy_bytes(buf + o * v.es, v.at(pc.begin), pc.len * v.es), o += pc.len;
    x.send(buf, o, v.t, t.parent, tag_tree_gather + which);
  }
}

// Half `which` of the vector: [0, ceil(n/2)) runs on tree 0, the rest on tree 1.
[[nodiscard]] inline std::pair<std::size_t, std::size_t> tree_half(std::size_t n, int which) noexcept {
  const std::size_t h = n - n / 2;
  return which == 0 ? std::pair{std::size_t{0}, h} : std::pair{h, n};
}

template <Backend B>
void tree_all_reduce(B& x, view v, const block_layout& l, bytes& work) {
  if (x.size() == 1) return;
  for (int w = 0; w < 2; ++w) {
    auto [a, b] = tree_half(l.total(), w);
    tree_reduce_up(x, v, a, b, w, work);
    tree_broadcast_down(x, v, a, b, w);
  }
}
template <Backend B>
void tree_reduce_scatter(B& x, view v, const block_layout& l, bytes& work) {
  if (x.size() == 1) return;
  for (int w = 0; w < 2; ++w) {
    auto [a, b] = tree_half(l.total(), w);
    tree_reduce_up(x, v, a, b, w, work);
    tree_scatter_down(x, v, l, a, b, w, work);
  }
}
template <Backend B>
void tree_all_gather(B& x, view v, const block_layout& l, bytes& work) {
  if (x.size() == 1) return;
  for (int w = 0; w < 2; ++w) {
    auto [a, b] = tree_half(l.total(), w);
    tree_gather_up(x, v, l, a, b, w, work);
    tree_broadcast_down(x, v, a, b, w);
  }
}

}  // namespace detail

}  // namespace autosync::exec
