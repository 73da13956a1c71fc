// autosync/exec/collectives/ps_push_pull.hpp — the parameter server's push and pull.
//
//   ps_push_pull: a star through one server rank (push: every rank's vector summed on the server,
//   pull: the sum sent back). The server takes the pushes and hands out the pulls side by side
//   (Backend::sendrecv_many: every receive, then every send, posted at once) and adds the pushes
//   in rank order, so the sum has the same bits as one push after another. With local
//   replication the node first sums onto its local rank 0, only node leaders talk to the
//   server, and leaders hand the result to their node.
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

// A parameter server takes its pushes side by side into one scratch block per sender when the
// blocks of one exchange fit in this many bytes; above it, one push after another (scratch of one).
inline constexpr std::size_t ps_side_by_side_bytes = std::size_t{64} << 20;

// The server's side of the pushes of n elements from the ranks `from`: received side by side when
// the backend posts several messages at once (Backend::sendrecv_many) and their blocks fit in
// ps_side_by_side_bytes, one after another otherwise; summed into buf in the order of `from`
// either way (the same additions, the same bits). With replace_first the first push replaces buf.
template <Backend B>
void ps_take_pushes(comms<B>& c, void* buf, std::size_t n, dtype t, std::span<const int> from, bool replace_first) {
  const std::size_t es = size_of(t);
  if (from.empty()) return;
  if constexpr (has_sendrecv_many<B>) {
    if (from.size() > 1 && n > 0 && from.size() <= ps_side_by_side_bytes / (n * es)) {
      unsigned char* tmp = room(c.scratch, from.size() * n, es);
      std::vector<peer_piece> in(from.size());
      for (std::size_t i = 0; i < from.size(); ++i) in[i] = {{tmp + i * n * es, n}, from[i]};
      c.world.sendrecv_many({}, in, t, tag_ps_push);
      for (std::size_t i = 0; i < from.size(); ++i) {
        if (i == 0 && replace_first) copy_bytes(buf, tmp, n * es);
        else sum_into(buf, tmp + i * n * es, n, t);
      }
      return;
    }
  }
  unsigned char* tmp = room(c.scratch, n, es);
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (i == 0 && replace_first) {
      c.world.recv(buf, n, t, from[i], tag_ps_push);
    } else {
      c.world.recv(tmp, n, t, from[i], tag_ps_push);
      sum_into(buf, tmp, n, t);
    }
  }
}

// The server's pulls: buf to every rank of `to`, side by side when the backend posts several
// messages at once, one after another otherwise.
template <Backend B>
void ps_give_pulls(comms<B>& c, void* buf, std::size_t n, dtype t, std::span<const int> to) {
  std::vector<peer_piece> out;
  out.reserve(to.size());
  for (const int q : to) out.push_back({{static_cast<unsigned char*>(buf), n}, q});
  exchange_many(c.world, std::span<const peer_piece>(out), {}, t, tag_ps_pull);
}

}  // namespace detail

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
      std::vector<int> others;  // every other rank, in rank order
      for (int q = 0; q < p; ++q)
        if (q != server_rank) others.push_back(q);
      detail::ps_take_pushes(c, buf, n, t, others, false);
      detail::ps_give_pulls(c, buf, n, t, others);
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
    std::vector<int> leaders;  // the other nodes' leaders, in node order
    for (int k = 0; k < nodes; ++k)
      if (k * g != server_rank) leaders.push_back(k * g);
    // a non-leader server's own part went into its leader's sum: the first push replaces buf
    detail::ps_take_pushes(c, buf, n, t, leaders, !server_leads);
    detail::ps_give_pulls(c, buf, n, t, leaders);
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

}  // namespace autosync::exec

namespace autosync::exec {

// One piece of a concurrent parameter-server exchange: n elements at buf, summed on server_rank.
struct ps_piece {
  void* buf = nullptr;
  std::size_t n = 0;
  int server_rank = 0;
};

// Parameter servers in parallel (BytePS runs its servers side by side): the pieces of one fusion
// bucket go to distinct server ranks, and every server sums its piece at the same time as the
// others (no local replication: every rank talks to every server).
//
//   push, rounds k = 1 .. p-1            pull, rounds k = 1 .. p-1
//     server s receives from s+k           server s sends to s+k
//     rank r sends the piece of the        rank r receives the piece of the
//     server r-k (if r-k is one)           server r-k (if r-k is one)
//   (ranks mod p)
//
// In every round each server receives (sends) one message and each rank sends (receives) at
// most one, since the servers are distinct ranks: p-1 rounds for any number of servers, where
// one server after another took k(p-1). Server s adds the others' vectors in the order s+1,
// s+2, ... (mod p), the same on every run. Throws autosync::error("server_rank") for a rank
// outside the world or two pieces on one server.
template <Backend B>
void ps_push_pull_concurrent(comms<B>& c, std::span<const ps_piece> pieces, dtype t) {
  const int p = c.world.size(), r = c.world.rank();
  std::vector<int> piece_of(static_cast<std::size_t>(std::max(p, 0)), -1);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    detail::check_args(c, pieces[i].buf, pieces[i].n, t, "ps_push_pull_concurrent");
    const int s = pieces[i].server_rank;
    if (s < 0 || s >= p)
      throw error("server_rank", "ps_push_pull_concurrent: " + std::to_string(s) + " is not a rank of the " + std::to_string(p) + "-rank world");
    if (piece_of[static_cast<std::size_t>(s)] >= 0)
      throw error("server_rank", "ps_push_pull_concurrent: two pieces on server rank " + std::to_string(s) + " (the servers must be distinct)");
    piece_of[static_cast<std::size_t>(s)] = static_cast<int>(i);
  }
  if (p == 1 || pieces.empty()) return;
  const std::size_t es = size_of(t);
  const int mine = piece_of[static_cast<std::size_t>(r)];
  unsigned char* tmp = mine >= 0 ? detail::room(c.scratch, pieces[static_cast<std::size_t>(mine)].n, es) : nullptr;
  auto piece = [&](int i) {
    const auto& x = pieces[static_cast<std::size_t>(i)];
    return mem_piece{static_cast<unsigned char*>(x.buf), x.n};
  };
  for (int k = 1; k < p; ++k) {  // push
    const int dst = (r - k + p) % p, di = piece_of[static_cast<std::size_t>(dst)];
    const mem_piece out = di >= 0 ? piece(di) : mem_piece{}, in = mine >= 0 ? mem_piece{tmp, piece(mine).n} : mem_piece{};
    if (di < 0 && mine < 0) continue;
    detail::exchange(c.world, std::span<const mem_piece>(&out, di >= 0 ? 1 : 0), di >= 0 ? dst : -1,
                     std::span<const mem_piece>(&in, mine >= 0 ? 1 : 0), mine >= 0 ? (r + k) % p : -1, t, detail::tag_ps_push);
    if (mine >= 0) sum_into(piece(mine).at, tmp, piece(mine).n, t);
  }
  for (int k = 1; k < p; ++k) {  // pull
    const int src = (r - k + p) % p, si = piece_of[static_cast<std::size_t>(src)];
    const mem_piece out = mine >= 0 ? piece(mine) : mem_piece{}, in = si >= 0 ? piece(si) : mem_piece{};
    if (si < 0 && mine < 0) continue;
    detail::exchange(c.world, std::span<const mem_piece>(&out, mine >= 0 ? 1 : 0), mine >= 0 ? (r + k) % p : -1,
                     std::span<const mem_piece>(&in, si >= 0 ? 1 : 0), si >= 0 ? src : -1, t, detail::tag_ps_pull);
  }
}

}  // namespace autosync::exec
