// autosync/exec/collectives/common.hpp — what every collective shares: the communicators of one rank
// (comms), block layouts, views of one buffer or of several runs (segmented), the point-to-point
// helpers and the argument checks.
//
// Block layout: n elements over p ranks, block r = even_shard(n, p, r) (policy/partitioner.hpp):
// the first n mod p blocks hold one element more. Blocks may be empty (n < p, n = 0).
//
// Part of exec/collectives.hpp (the overview: block layout, segmented buffers, exactness).
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives/sum.hpp>
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

// Whether backend B posts messages to / from several peers at once (Backend::sendrecv_many).
template <class B>
inline constexpr bool has_sendrecv_many =
    requires(B& x, std::span<const peer_piece> s, dtype t, int tag) { x.sendrecv_many(s, s, t, tag); };

// Every piece of s one message to its peer, every piece of r one from its peer. Backends with
// sendrecv_many post them all at once (the transfers run side by side); others get one blocking
// call per piece: the receives in order, then the sends in order.
template <Backend B>
void exchange_many(B& x, std::span<const peer_piece> s, std::span<const peer_piece> r, dtype t, int tag) {
  if constexpr (has_sendrecv_many<B>) {
    x.sendrecv_many(s, r, t, tag);
  } else {
    for (const auto& q : r) x.recv(q.piece.at, q.piece.n, t, q.peer, tag);
    for (const auto& q : s) x.send(q.piece.at, q.piece.n, t, q.peer, tag);
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

}  // namespace detail

}  // namespace autosync::exec
