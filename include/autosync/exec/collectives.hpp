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
//   ring (Patarasuk & Yuan): reduce-scatter in p-1 steps, then all-gather in p-1 steps.
//     RS step s: rank r sends block r-s-1 to r+1, receives block r-s-2 from r-1 and adds it;
//     after p-1 steps rank r holds block r summed (the layout reduce_scatter promises).
//     AG step s: rank r sends block r-s to r+1, receives block r-s-1 from r-1.
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
//   hierarchical<I, O> with g ranks per node and N nodes (comms below):
//     all_reduce:     intra reduce-scatter with I over g blocks; inter all-reduce with O of my
//                     intra block among the N ranks with my local index; intra all-gather with I
//     reduce_scatter: world block q = k g + l (node k, local l). The blocks are regrouped so the
//                     intra block of local l is S_l = [q = l, g + l, 2g + l, ...]; intra RS with I
//                     over the S_l, inter RS with O inside S_l (node k gets block k g + l), so
//                     world rank r ends with world block r. all_gather runs the same backwards.
//
//   ps_push_pull: a star through one server rank (push: every rank's vector summed on the server,
//   pull: the sum sent back). With local replication the node first sums onto its local rank 0,
//   only node leaders talk to the server, and leaders hand the result to their node.
//
//   sparse_all_gather (Horovod's sparse path, allgatherv of indices and rows): the touched row
//   indices and their rows are ring-all-gathered (blocks of varying size), then every rank sums
//   the rows of every rank, in rank order, into a zeroed buffer.
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

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/partitioner.hpp>
#include <autosync/policy/topology.hpp>

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

// --- f16 / bf16 <-> f32 (round to nearest even): the conversions of exec/compress.hpp --------
// IEEE binary16 with subnormals, overflow -> inf, NaN stays NaN; bfloat16 = the upper half of
// an f32, rounded to nearest even. Sums of f16/bf16 buffers are computed in f32.
[[nodiscard]] constexpr float f16_to_f32(std::uint16_t h) noexcept { return from_f16(h); }
[[nodiscard]] constexpr std::uint16_t f32_to_f16(float f) noexcept { return to_f16(f); }
[[nodiscard]] constexpr float bf16_to_f32(std::uint16_t b) noexcept { return from_bf16(b); }
[[nodiscard]] constexpr std::uint16_t f32_to_bf16(float f) noexcept { return to_bf16(f); }

namespace detail {

// Elements per chunk of sum_into: two 4 KiB..8 KiB staging arrays stay in L1.
inline constexpr std::size_t sum_chunk_bytes = 4096;

// dst[i] += src[i] for n elements of T, through whole-chunk memcpy into local arrays: defined
// for any alignment and any aliasing of the buffers' declared types, and the add loop runs on
// local arrays of a fixed length, which the compiler vectorizes (even at -O2).
// Fixed-length inner loops: vectorized at -O2 too (GCC's cheap cost model wants a known count).
template <class T>
inline void add_aligned(T* __restrict d, const T* __restrict s, std::size_t n) noexcept {
  constexpr std::size_t C = 1024 / sizeof(T);
  std::size_t i = 0;
  for (; i + C <= n; i += C)
    for (std::size_t k = 0; k < C; ++k) d[i + k] += s[i + k];
  for (; i < n; ++i) d[i] += s[i];
}

template <class T>
inline void add_chunks(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  // Aligned buffers (every tensor and scratch buffer in practice): one vectorized pass, no staging.
  if (reinterpret_cast<std::uintptr_t>(d) % alignof(T) == 0 && reinterpret_cast<std::uintptr_t>(s) % alignof(T) == 0)
    return add_aligned(reinterpret_cast<T*>(d), reinterpret_cast<const T*>(s), n);
  constexpr std::size_t C = sum_chunk_bytes / sizeof(T);
  T a[C], b[C];
  std::size_t i = 0;
  for (; i + C <= n; i += C) {
    std::memcpy(a, d + i * sizeof(T), sizeof a);
    std::memcpy(b, s + i * sizeof(T), sizeof b);
    for (std::size_t k = 0; k < C; ++k) a[k] += b[k];
    std::memcpy(d + i * sizeof(T), a, sizeof a);
  }
  const std::size_t rest = n - i;
  if (rest == 0) return;
  std::memcpy(a, d + i * sizeof(T), rest * sizeof(T));
  std::memcpy(b, s + i * sizeof(T), rest * sizeof(T));
  for (std::size_t k = 0; k < rest; ++k) a[k] += b[k];
  std::memcpy(d + i * sizeof(T), a, rest * sizeof(T));
}

// The same for 16-bit floats: convert a chunk to f32, add, round back (nearest even).
template <float (*From)(std::uint16_t), std::uint16_t (*To)(float)>
inline void add_half_chunks(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  constexpr std::size_t C = sum_chunk_bytes / sizeof(float);
  std::uint16_t a[C], b[C];
  float f[C];
  for (std::size_t i = 0; i < n; i += C) {
    const std::size_t len = std::min(C, n - i);
    std::memcpy(a, d + i * 2, len * 2);
    std::memcpy(b, s + i * 2, len * 2);
    for (std::size_t k = 0; k < len; ++k) f[k] = From(a[k]);
    for (std::size_t k = 0; k < len; ++k) f[k] += From(b[k]);
    for (std::size_t k = 0; k < len; ++k) a[k] = To(f[k]);
    std::memcpy(d + i * 2, a, len * 2);
  }
}

inline float f16_in(std::uint16_t h) noexcept { return from_f16(h); }
inline std::uint16_t f16_out(float f) noexcept { return to_f16(f); }
inline float bf16_in(std::uint16_t h) noexcept { return from_bf16(h); }
inline std::uint16_t bf16_out(float f) noexcept { return to_bf16(f); }

}  // namespace detail

// dst[i] += src[i] for n elements of t (f16/bf16 summed in f32, rounded to nearest even;
// integers wrap). dst and src do not overlap. Unaligned buffers are fine (loads go through memcpy).
inline void sum_into(void* dst, const void* src, std::size_t n, dtype t) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  switch (t) {
    case dtype::f32: detail::add_chunks<float>(d, s, n); break;
    case dtype::f64: detail::add_chunks<double>(d, s, n); break;
    case dtype::i32: detail::add_chunks<std::uint32_t>(d, s, n); break;  // unsigned: wraps, no UB
    case dtype::i64: detail::add_chunks<std::uint64_t>(d, s, n); break;
    case dtype::f16: detail::add_half_chunks<&detail::f16_in, &detail::f16_out>(d, s, n); break;
    case dtype::bf16: detail::add_half_chunks<&detail::bf16_in, &detail::bf16_out>(d, s, n); break;
  }
}

// --- communicators of one rank --------------------------------------------------------------
// Ranks [k*ranks_per_node, (k+1)*ranks_per_node) form node k (a setting: one host may pretend to
// be several nodes). `intra` holds the ranks of my node ordered by local index, `inter` the
// ranks of every node with my local index ordered by node.
//
//   8 ranks, ranks_per_node = 4:   node 0: 0 1 2 3    node 1: 4 5 6 7
//                                  intra of rank 5: {4 5 6 7} (rank 1 there)
//                                  inter of rank 5: {1 5}     (rank 1 there)
template <Backend B>
struct comms {
  B world, intra, inter;
  int ranks_per_node = 1, node = 0, local = 0, nodes = 1;
  // Working memory of the collectives below, kept between calls (grown, never shrunk, never
  // zeroed): `scratch` receives the blocks that are summed or forwarded, `staging` holds the
  // regrouped vector of hierarchical reduce-scatter / all-gather and the parameter server's sum.
  std::vector<unsigned char> scratch, staging;

  static comms make(B world_, int ranks_per_node_) {
    if (!world_.valid()) throw error("world", "comms::make: the world backend is empty");
    const int p = world_.size();
    if (ranks_per_node_ < 1 || p % ranks_per_node_ != 0)
      throw error("ranks_per_node", "comms::make: " + std::to_string(ranks_per_node_) + " does not divide the " +
                                        std::to_string(p) + " ranks of the world");
    comms c;
    c.ranks_per_node = ranks_per_node_;
    c.node = world_.rank() / ranks_per_node_;
    c.local = world_.rank() % ranks_per_node_;
    c.nodes = p / ranks_per_node_;
    c.intra = world_.split(c.node, c.local);
    c.inter = world_.split(c.local, c.node);
    c.world = std::move(world_);
    return c;
  }
};

namespace detail {

// Tags of the point-to-point steps (one per phase: a stray message can never match another phase).
enum coll_tag : int {
  tag_ring_rs = 101, tag_ring_ag, tag_hd_fold, tag_hd_rs, tag_hd_ag, tag_hd_unfold,
  tag_tree_up = 111, tag_tree_down = 113, tag_tree_scatter = 115, tag_tree_gather = 117,  // +tree index
  tag_ps_intra = 121, tag_ps_push, tag_ps_pull, tag_ps_bcast, tag_sparse_idx, tag_sparse_val
};

// p blocks as p+1 element offsets (block b = [off[b], off[b+1])).
struct block_layout {
  std::vector<std::size_t> off{0};
  static block_layout even(std::size_t n, int p) {
    block_layout l;
    l.off.assign(static_cast<std::size_t>(p) + 1, 0);
    for (int b = 0; b < p; ++b)
      l.off[static_cast<std::size_t>(b) + 1] =
          static_cast<std::size_t>(even_shard(static_cast<std::int64_t>(n), p, b).end);
    return l;
  }
  static block_layout of_sizes(std::span<const std::size_t> sizes) {
    block_layout l;
    for (auto s : sizes) l.off.push_back(l.off.back() + s);
    return l;
  }
  [[nodiscard]] int blocks() const noexcept { return static_cast<int>(off.size()) - 1; }
  [[nodiscard]] std::size_t begin(int b) const noexcept { return off[static_cast<std::size_t>(b)]; }
  [[nodiscard]] std::size_t end(int b) const noexcept { return off[static_cast<std::size_t>(b) + 1]; }
  [[nodiscard]] std::size_t size(int b) const noexcept { return end(b) - begin(b); }
  [[nodiscard]] std::size_t total() const noexcept { return off.back(); }
  [[nodiscard]] std::size_t max_block() const noexcept {
    std::size_t m = 0;
    for (int b = 0; b < blocks(); ++b) m = std::max(m, size(b));
    return m;
  }
};

// A typed byte buffer view: element i of dtype t at base + i * es.
struct view {
  unsigned char* base = nullptr;
  dtype t = dtype::f32;
  std::size_t es = 4;
  view(void* b, dtype tt) : base(static_cast<unsigned char*>(b)), t(tt), es(size_of(tt)) {}
  [[nodiscard]] unsigned char* at(std::size_t i) const noexcept { return base + i * es; }
  // The ring and halving-doubling steps address element ranges through these (segmented below):
  // a range is one piece (also when empty: one message, as always).
  void pieces(std::size_t a, std::size_t len, std::vector<mem_piece>& out) const { out.push_back({at(a), len}); }
  void pieces_like(std::size_t, std::size_t len, unsigned char* tmp, std::vector<mem_piece>& out) const { out.push_back({tmp, len}); }
  void add(std::size_t a, const unsigned char* tmp, std::size_t len) const;
  [[nodiscard]] view sub(std::size_t a, std::size_t) const { return view(at(a), t); }
};

}  // namespace detail

// A buffer made of several contiguous runs of one dtype (a bucket's tensors where they live):
// element range [off[k], off[k+1]) of the whole is at run[k]. The collectives that accept it
// (ring and halving-doubling, flat or as the hierarchical levels) move and sum the elements
// where they are; a range that crosses runs travels as one message per run (the peers cut it
// the same way: they hold the same runs).
//
//   whole:   [ run 0 ......... | run 1 ... | run 2 ............ ]
//   block b:          [==========|==========|===]  -> 3 messages
struct segmented {
  dtype t = dtype::f32;
  std::size_t es = 4;
  std::vector<std::size_t> off{0};
  std::vector<unsigned char*> run;

  explicit segmented(dtype tt = dtype::f32) : t(tt), es(size_of(tt)) {}
  // Appends the next `n` elements (n > 0) at `at`.
  void append(void* at, std::size_t n) {
    if (n == 0) return;
    run.push_back(static_cast<unsigned char*>(at));
    off.push_back(off.back() + n);
  }
  [[nodiscard]] std::size_t total() const noexcept { return off.back(); }
  [[nodiscard]] std::size_t runs() const noexcept { return run.size(); }

  // f(pointer, elements) for every run-piece of [a, a + len), in order.
  template <class F>
  void for_each(std::size_t a, std::size_t len, F&& f) const {
    if (len == 0) return;
    const std::size_t e = a + len;
    auto k = static_cast<std::size_t>(std::upper_bound(off.begin(), off.end(), a) - off.begin()) - 1;
    for (; k < run.size() && off[k] < e; ++k) {
      const std::size_t s = std::max(a, off[k]), x = std::min(e, off[k + 1]);
      f(run[k] + (s - off[k]) * es, x - s);
    }
  }
  void pieces(std::size_t a, std::size_t len, std::vector<mem_piece>& out) const {
    for_each(a, len, [&](unsigned char* p, std::size_t n) { out.push_back({p, n}); });
  }
  // A contiguous tmp cut like [a, a + len) (what the peer sends of that range).
  void pieces_like(std::size_t a, std::size_t len, unsigned char* tmp, std::vector<mem_piece>& out) const {
    std::size_t o = 0;
    for_each(a, len, [&](unsigned char*, std::size_t n) { out.push_back({tmp + o * es, n}), o += n; });
  }
  void add(std::size_t a, const unsigned char* tmp, std::size_t len) const;
  // Elements [a, a + len) as a segmented buffer of their own.
  [[nodiscard]] segmented sub(std::size_t a, std::size_t len) const {
    segmented s(t);
    for_each(a, len, [&](unsigned char* p, std::size_t n) { s.append(p, n); });
    return s;
  }
};

namespace detail {

inline std::vector<unsigned char> scratch(std::size_t elems, std::size_t es) { return std::vector<unsigned char>(elems * es); }

// Working memory of at least elems * es bytes from a buffer kept between calls: grows (without
// copying the old contents), never zeroes what it already holds.
using bytes = std::vector<unsigned char>;
inline unsigned char* room(bytes& s, std::size_t elems, std::size_t es) {
  const std::size_t need = elems * es;
  if (s.size() < need) {
    s.clear();
    s.shrink_to_fit();
    s.resize(need);
  }
  return s.data();
}

// memcpy of `count` bytes that tolerates empty ranges (an empty vector's data() may be null).
inline void copy_bytes(void* dst, const void* src, std::size_t count) noexcept {
  if (count > 0) std::memcpy(dst, src, count);
}

[[nodiscard]] constexpr int mod(int a, int p) noexcept { return ((a % p) + p) % p; }

inline void view::add(std::size_t a, const unsigned char* tmp, std::size_t len) const { sum_into(at(a), tmp, len, t); }
}  // namespace detail
inline void segmented::add(std::size_t a, const unsigned char* tmp, std::size_t len) const {
  std::size_t o = 0;
  for_each(a, len, [&](unsigned char* p, std::size_t n) { sum_into(p, tmp + o * es, n, t), o += n; });
}
namespace detail {

// Piece k of `s` is one message to dst, piece k of `r` one from src (-1: no such side). Backends
// with sendrecv_pieces post them all at once; others get one call per piece.
template <Backend B>
void exchange(B& x, std::span<const mem_piece> s, int dst, std::span<const mem_piece> r, int src, dtype t, int tag) {
  if (dst >= 0 && src >= 0 && s.size() == 1 && r.size() == 1) return x.sendrecv(s[0].at, s[0].n, dst, r[0].at, r[0].n, src, t, tag);
  if (dst >= 0 && src < 0 && s.size() == 1) return x.send(s[0].at, s[0].n, t, dst, tag);
  if (src >= 0 && dst < 0 && r.size() == 1) return x.recv(r[0].at, r[0].n, t, src, tag);
  if constexpr (requires { x.sendrecv_pieces(s, dst, r, src, t, tag); }) {
    x.sendrecv_pieces(s, dst, r, src, t, tag);
  } else {
    const std::size_t ns = dst >= 0 ? s.size() : 0, nr = src >= 0 ? r.size() : 0;
    for (std::size_t k = 0; k < std::max(ns, nr); ++k) {
      if (k < ns && k < nr) x.sendrecv(s[k].at, s[k].n, dst, r[k].at, r[k].n, src, t, tag);
      else if (k < ns) x.send(s[k].at, s[k].n, t, dst, tag);
      else x.recv(r[k].at, r[k].n, t, src, tag);
    }
  }
}

// Range [sa, sa + sn) of v to dst while range [ra, ra + rn) of v comes from src (rings, exchanges).
template <Backend B, class V>
void swap_ranges(B& x, const V& v, std::size_t sa, std::size_t sn, int dst, std::size_t ra, std::size_t rn, int src, int tag) {
  std::vector<mem_piece> ps, pr;
  v.pieces(sa, sn, ps);
  v.pieces(ra, rn, pr);
  exchange(x, ps, dst, pr, src, v.t, tag);
}
// Range [sa, sa + sn) of v to dst while the peer's range [ra, ra + rn) lands in tmp, then is added
// to v's range [ra, ra + rn) (reduce steps).
template <Backend B, class V>
void swap_add(B& x, const V& v, std::size_t sa, std::size_t sn, int dst, std::size_t ra, std::size_t rn, int src, unsigned char* tmp,
              int tag) {
  std::vector<mem_piece> ps, pr;
  v.pieces(sa, sn, ps);
  v.pieces_like(ra, rn, tmp, pr);
  exchange(x, ps, dst, pr, src, v.t, tag);
  v.add(ra, tmp, rn);
}
template <Backend B, class V>
void send_range(B& x, const V& v, std::size_t a, std::size_t n, int dst, int tag) {
  std::vector<mem_piece> ps;
  v.pieces(a, n, ps);
  exchange(x, ps, dst, std::span<const mem_piece>{}, -1, v.t, tag);
}
template <Backend B, class V>
void recv_range(B& x, const V& v, std::size_t a, std::size_t n, int src, int tag) {
  std::vector<mem_piece> pr;
  v.pieces(a, n, pr);
  exchange(x, std::span<const mem_piece>{}, -1, pr, src, v.t, tag);
}
template <Backend B, class V>
void recv_add(B& x, const V& v, std::size_t a, std::size_t n, int src, unsigned char* tmp, int tag) {
  std::vector<mem_piece> pr;
  v.pieces_like(a, n, tmp, pr);
  exchange(x, std::span<const mem_piece>{}, -1, pr, src, v.t, tag);
  v.add(a, tmp, n);
}

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

// ---- validation -------------------------------------------------------------------------------
template <Backend B>
void check_args(const comms<B>& c, const void* buf, std::size_t n, dtype t, const char* op) {
  if (!c.world.valid()) throw error("world", std::string(op) + ": the world backend is empty");
  if (n > 0 && buf == nullptr) throw error("buf", std::string(op) + ": null buffer for " + std::to_string(n) + " elements");
  if (static_cast<unsigned>(t) > static_cast<unsigned>(dtype::i64)) throw error("dtype", std::string(op) + ": unknown dtype");
}
template <Backend B>
void check_topology(const comms<B>& c, const topology_value& topo, const char* op) {
  auto flat = [](topology_kind k) { return k == topology_kind::ring || k == topology_kind::tree || k == topology_kind::halving_doubling; };
  if (topo.kind == topology_kind::hierarchical) {
    if (!flat(topo.intra)) throw error("topology.intra", std::string(op) + ": must be ring, tree or halving_doubling");
    if (!flat(topo.inter)) throw error("topology.inter", std::string(op) + ": must be ring, tree or halving_doubling");
    if (!c.intra.valid() || !c.inter.valid() || c.intra.size() * c.inter.size() != c.world.size())
      throw error("comms", std::string(op) + ": hierarchical needs the intra and inter communicators of comms::make");
  } else if (!flat(topo.kind)) {
    throw error("topology.kind", std::string(op) + ": unknown topology");
  }
}

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

// Parameter server: server_rank sums every rank's buf, then every rank receives the sum.
//
//   local_replication = false            local_replication = true (2 nodes x 2, server 1)
//     r0 --push--> S <--push-- r2          r0 <-- r1(S) : node 0 sums on its leader r0
//     r1 --push--> S                       r2 <-- r3    : node 1 sums on its leader r2
//     S --pull--> r0 r1 r2                 r0, r2 --push--> S (r1); S --pull--> r0, r2
//                                          r0 -> (r1 already has it), r2 -> r3
template <Backend B>
void ps_push_pull(comms<B>& c, void* buf, std::size_t n, dtype t, int server_rank, bool local_replication) {
  detail::check_args(c, buf, n, t, "ps_push_pull");
  const int p = c.world.size(), r = c.world.rank();
  if (server_rank < 0 || server_rank >= p)
    throw error("server_rank", "ps_push_pull: " + std::to_string(server_rank) + " is not a rank of the " + std::to_string(p) + "-rank world");
  const detail::view v(buf, t);
  if (p == 1) return;
  unsigned char* tmp = nullptr;
  if (!local_replication) {
    if (r == server_rank) {
      tmp = detail::room(c.scratch, n, v.es);
      for (int q = 0; q < p; ++q) {
        if (q == server_rank) continue;
        c.world.recv(tmp, n, t, q, detail::tag_ps_push);
        sum_into(buf, tmp, n, t);
      }
      for (int q = 0; q < p; ++q)
        if (q != server_rank) c.world.send(buf, n, t, q, detail::tag_ps_pull);
    } else {
      c.world.send(buf, n, t, server_rank, detail::tag_ps_push);
      c.world.recv(buf, n, t, server_rank, detail::tag_ps_pull);
    }
    return;
  }
  if (!c.intra.valid() || c.intra.size() != c.ranks_per_node)
    throw error("comms", "ps_push_pull: local replication needs the intra communicator of comms::make");
  const int g = c.ranks_per_node, nodes = c.nodes;
  // 1. the node sums onto its local rank 0 (the leader)
  if (c.local == 0) {
    if (g > 1) tmp = detail::room(c.scratch, n, v.es);
    for (int l = 1; l < g; ++l) {
      c.intra.recv(tmp, n, t, l, detail::tag_ps_intra);
      sum_into(buf, tmp, n, t);
    }
  } else {
    c.intra.send(buf, n, t, 0, detail::tag_ps_intra);
  }
  // 2. leaders push to the server, 3. the server sends the sum back to the leaders
  const bool server_leads = server_rank % g == 0;
  if (r == server_rank) {
    if (tmp == nullptr) tmp = detail::room(c.scratch, n, v.es);
    bool first = !server_leads;  // a non-leader server's own part went into its leader's sum
    for (int k = 0; k < nodes; ++k) {
      const int leader = k * g;
      if (leader == server_rank) continue;
      if (first) {
        c.world.recv(buf, n, t, leader, detail::tag_ps_push);
        first = false;
      } else {
        c.world.recv(tmp, n, t, leader, detail::tag_ps_push);
        sum_into(buf, tmp, n, t);
      }
    }
    for (int k = 0; k < nodes; ++k)
      if (k * g != server_rank) c.world.send(buf, n, t, k * g, detail::tag_ps_pull);
  } else if (c.local == 0) {
    c.world.send(buf, n, t, server_rank, detail::tag_ps_push);
    c.world.recv(buf, n, t, server_rank, detail::tag_ps_pull);
  }
  // 4. leaders hand the sum to their node (the server already has it)
  if (c.local == 0) {
    for (int l = 1; l < g; ++l)
      if (c.node * g + l != server_rank) c.intra.send(buf, n, t, l, detail::tag_ps_bcast);
  } else if (r != server_rank) {
    c.intra.recv(buf, n, t, 0, detail::tag_ps_bcast);
  }
}

// Sparse all-gather: buf is a row-major [total_rows x row_elems] table; this rank touched `rows`
// (sorted, unique, < total_rows). After, every rank's buf holds, for each row, the sum of that
// row over the ranks that touched it (zero where nobody did). Invalid `rows` on any rank throws
// on every rank (the ranks agree on the row counts first, so nobody hangs).
template <Backend B>
void sparse_all_gather(comms<B>& c, void* buf, std::size_t total_rows, std::size_t row_elems, dtype t,
                       std::span<const std::int64_t> rows) {
  detail::check_args(c, buf, total_rows * row_elems, t, "sparse_all_gather");
  const int p = c.world.size(), r = c.world.rank();
  std::int64_t bad = -1;
  for (std::size_t i = 0; i < rows.size() && bad < 0; ++i)
    if (rows[i] < 0 || static_cast<std::uint64_t>(rows[i]) >= total_rows || (i > 0 && rows[i] <= rows[i - 1]))
      bad = static_cast<std::int64_t>(i);
  std::array<std::int64_t, 2> mine{bad < 0 ? static_cast<std::int64_t>(rows.size()) : -1, bad};
  std::vector<std::int64_t> meta(2 * static_cast<std::size_t>(p));
  c.world.all_gather(mine.data(), meta.data(), 2, dtype::i64);
  for (int q = 0; q < p; ++q) {
    const std::int64_t i = meta[2 * static_cast<std::size_t>(q) + 1];
    if (meta[2 * static_cast<std::size_t>(q)] >= 0) continue;
    const std::string field = "rows[" + std::to_string(i) + "]";
    if (q == r)
      throw error(field, "sparse_all_gather: row " + std::to_string(rows[static_cast<std::size_t>(i)]) +
                             (rows[static_cast<std::size_t>(i)] < 0 || static_cast<std::uint64_t>(rows[static_cast<std::size_t>(i)]) >= total_rows
                                  ? " is outside [0, " + std::to_string(total_rows) + ")"
                                  : " is not above the row before it (rows must be sorted and unique)"));
    throw error(field, "sparse_all_gather: rank " + std::to_string(q) + " passed invalid rows");
  }
  const detail::view v(buf, t);
  std::vector<std::size_t> counts, vcounts;
  for (int q = 0; q < p; ++q) {
    counts.push_back(static_cast<std::size_t>(meta[2 * static_cast<std::size_t>(q)]));
    vcounts.push_back(counts.back() * row_elems);
  }
  const auto li = detail::block_layout::of_sizes(counts), lv = detail::block_layout::of_sizes(vcounts);
  std::vector<std::int64_t> idx(li.total());
  std::copy(rows.begin(), rows.end(), idx.begin() + static_cast<std::ptrdiff_t>(li.begin(r)));
  auto vals = detail::scratch(lv.total(), v.es);
  for (std::size_t i = 0; i < rows.size(); ++i)
    detail::copy_bytes(vals.data() + (lv.begin(r) + i * row_elems) * v.es, v.at(static_cast<std::size_t>(rows[i]) * row_elems), row_elems * v.es);
  detail::ring_all_gather(c.world, detail::view(idx.data(), dtype::i64), li);
  detail::ring_all_gather(c.world, detail::view(vals.data(), t), lv);
  if (total_rows * row_elems > 0) std::memset(buf, 0, total_rows * row_elems * v.es);
  for (std::size_t j = 0; j < idx.size(); ++j)
    sum_into(v.at(static_cast<std::size_t>(idx[j]) * row_elems), vals.data() + j * row_elems * v.es, row_elems, t);
}

}  // namespace autosync::exec
