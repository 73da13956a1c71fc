// autosync/exec/backend.hpp — what moves bytes: the backend concept.
//
// A backend is a communicator: `size()` ranks numbered 0..size()-1, this process being
// `rank()`. It offers the collectives NCCL and MPI both have, point-to-point transfers, and
// `split` for hierarchical topologies. Every operation is blocking from the caller's view and
// sums (the only reduction data parallelism needs); buffers are typed by autosync::dtype
// (f32, f64, f16, bf16 — f16/bf16 sums are computed in f32 and rounded to nearest even, and
// i32/i64 for bookkeeping). Counts are in elements. The executor calls a backend from one
// communication thread at a time; a backend needs no internal locking.
//
//   all_reduce(buf, n, t)                 in place: every rank ends with the sum
//   reduce_scatter(send, recv, n, t)      send holds size()*n elements; rank r gets block r summed
//   all_gather(send, recv, n, t)          recv gets size()*n elements, block r from rank r
//   reduce(buf, n, t, root)               in place at root (other ranks' buf unspecified after)
//   broadcast(buf, n, t, root)
//   send(buf, n, t, peer, tag) / recv(buf, n, t, peer, tag)    (blocking; sendrecv for rings)
//   sendrecv(sbuf, sn, dst, rbuf, rn, src, t, tag)              deadlock-free exchange
//   split(color, key) -> backend          ranks with the same color form a new communicator,
//                                          ordered by key (ties by rank); color < 0: not a member
//                                          (returns an empty backend: valid() == false)
//   barrier()
//   abort(reason)                          ends every rank of the job (a dead or stuck peer)
//
// Optional (found with a requires-expression, exec/collectives.hpp falls back to one sendrecv,
// send or recv per piece without it):
//   sendrecv_pieces(span<const mem_piece> s, dst, span<const mem_piece> r, src, t, tag)
//                                          piece k sent is one message, received by the peer's
//                                          piece k; all posted at once (dst/src -1: none)
//   sendrecv_many(span<const peer_piece> s, span<const peer_piece> r, t, tag)
//                                          every piece one message to / from its own peer; all
//                                          posted at once (receives first) and waited on together
//                                          (a parameter server's pushes and pulls side by side)
// The collectives run on the user's tensors in place through it (no packing copy), so a backend
// whose buffers are not host memory (a device backend) opts out with
//   static constexpr bool host_memory = false;
//
// A backend reports failures as autosync::error naming the operation and, where known, the
// peer rank. Operations that wait on a peer give up after `timeout()` seconds (a dead rank
// must not hang the others) and throw autosync::error("rank N", "... timed out ...").
#pragma once

#include <autosync/model.hpp>

#include <concepts>
#include <cstddef>
#include <string_view>

namespace autosync::exec {

// `n` elements at `at`: one contiguous piece of a buffer made of several (a bucket's tensors).
struct mem_piece {
  unsigned char* at = nullptr;
  std::size_t n = 0;
};

// A piece that goes to, or comes from, rank `peer`.
struct peer_piece {
  mem_piece piece;
  int peer = -1;
};

template <class B>
concept Backend = std::movable<B> && requires(B& b, const B& cb, void* p, const void* cp, std::size_t n, dtype t, int r,
                                            std::string_view why, double seconds) {
  { cb.rank() } -> std::convertible_to<int>;
  { cb.size() } -> std::convertible_to<int>;
  { cb.valid() } -> std::convertible_to<bool>;
  { cb.timeout() } -> std::convertible_to<double>;
  b.set_timeout(seconds);
  b.all_reduce(p, n, t);
  b.reduce_scatter(cp, p, n, t);
  b.all_gather(cp, p, n, t);
  b.reduce(p, n, t, r);
  b.broadcast(p, n, t, r);
  b.send(cp, n, t, r, r);
  b.recv(p, n, t, r, r);
  b.sendrecv(cp, n, r, p, n, r, t, r);
  { b.split(r, r) } -> std::same_as<B>;
  b.barrier();
  b.abort(why);
};

// Whether the backend's buffers are host memory (the default): collectives may then read and sum
// them on the CPU, and the executor may run buckets on the user's tensors without packing.
template <class B>
inline constexpr bool host_memory_backend = [] {
  if constexpr (requires { B::host_memory; }) return static_cast<bool>(B::host_memory);
  else return true;
}();

}  // namespace autosync::exec
