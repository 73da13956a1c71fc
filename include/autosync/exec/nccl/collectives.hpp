// autosync/exec/nccl/collectives.hpp — the topologies of a plan on NCCL communicators.
//
// Overloads of exec::all_reduce, reduce_scatter, all_gather, ps_push_pull and sparse_all_gather
// for comms<nccl_backend> (non-templates: overload resolution prefers them to the generic
// point-to-point algorithms of exec/collectives.hpp, whose host-side sums cannot touch device
// memory). They keep the generic functions' contracts (block layout: even_shard) and realize
// the topologies with NCCL's collectives (exec/nccl/backend.hpp has the table). Buffers may be
// device or host memory (copies use cudaMemcpyDefault; the backend stages host buffers).
//
// even_shard blocks on NCCL (whose reduce-scatter / all-gather blocks are equal): n = q p + rem,
// the first rem blocks hold q + 1 elements. With rem > 0 the vector is laid out in a padded
// device buffer of p blocks of q + 1 (block k at k (q + 1)), reduce-scattered / all-gathered in
// place there, and copied back (two copies: the rem long blocks are already contiguous, the
// others one cudaMemcpy2D).
//
//   n = 7, p = 3:  [a a a | b b | c c]  ->  padded [a a a | b b _ | c c _]   (q + 1 = 3)
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/nccl/communicator.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/partitioner.hpp>
#include <autosync/policy/topology.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace autosync::exec {

namespace nccl_detail {

struct padded {
  std::size_t q = 0, rem = 0, pad = 0;
  padded(std::size_t n, int p) : q(n / static_cast<std::size_t>(p)), rem(n % static_cast<std::size_t>(p)), pad(q + 1) {}
  [[nodiscard]] std::size_t begin(int r) const noexcept {
    const auto k = static_cast<std::size_t>(r);
    return k < rem ? k * pad : rem * pad + (k - rem) * q;
  }
  [[nodiscard]] std::size_t size(int r) const noexcept { return static_cast<std::size_t>(r) < rem ? pad : q; }
};

// vector (even_shard layout, p blocks) <-> padded (p blocks of q + 1); on w's stream.
inline void to_padded(nccl_backend& w, unsigned char* dst, const unsigned char* src, const padded& l, int p, std::size_t es, const char* op) {
  const cudaStream_t st = w.stream();
  w.check_cuda(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(p) * l.pad * es, st), op);
  w.check_cuda(cudaMemcpyAsync(dst, src, l.rem * l.pad * es, cudaMemcpyDefault, st), op);
  const std::size_t rest = static_cast<std::size_t>(p) - l.rem;
  if (rest > 0 && l.q > 0)
    w.check_cuda(cudaMemcpy2DAsync(dst + l.rem * l.pad * es, l.pad * es, src + l.rem * l.pad * es, l.q * es, l.q * es, rest,
                                   cudaMemcpyDefault, st), op);
}
inline void from_padded(nccl_backend& w, unsigned char* dst, const unsigned char* src, const padded& l, int p, std::size_t es, const char* op) {
  const cudaStream_t st = w.stream();
  w.check_cuda(cudaMemcpyAsync(dst, src, l.rem * l.pad * es, cudaMemcpyDefault, st), op);
  const std::size_t rest = static_cast<std::size_t>(p) - l.rem;
  if (rest > 0 && l.q > 0)
    w.check_cuda(cudaMemcpy2DAsync(dst + l.rem * l.pad * es, l.q * es, src + l.rem * l.pad * es, l.pad * es, l.q * es, rest,
                                   cudaMemcpyDefault, st), op);
}

}  // namespace nccl_detail

// In place: every rank's buf ends with the sum (flat: one NCCL all-reduce; hierarchical: intra
// reduce-scatter, inter all-reduce, intra all-gather on the split communicators).
inline void all_reduce(comms<nccl_backend>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "all_reduce");
  detail::check_topology(c, topo, "all_reduce");
  if (n == 0) return;
  if (topo.kind != topology_kind::hierarchical || c.intra.size() == 1 || c.inter.size() == 1) {
    c.world.all_reduce(buf, n, t);
    return;
  }
  const std::size_t g = static_cast<std::size_t>(c.intra.size()), q = n / g, es = size_of(t);
  const auto l = static_cast<std::size_t>(c.intra.rank());
  auto* b = static_cast<unsigned char*>(buf);
  if (q > 0) {
    c.intra.reduce_scatter(b, b + l * q * es, q, t);
    c.inter.all_reduce(b + l * q * es, q, t);
    c.intra.all_gather(b + l * q * es, b, q, t);
  }
  if (n > q * g) c.world.all_reduce(b + q * g * es, n - q * g, t);
}

// After: world rank r's block (even_shard(n, p, r)) of buf holds the sum.
inline void reduce_scatter(comms<nccl_backend>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "reduce_scatter");
  detail::check_topology(c, topo, "reduce_scatter");
  auto& w = c.world;
  const int p = w.size(), r = w.rank();
  if (p == 1 || n == 0) return;
  const std::size_t es = size_of(t);
  auto* b = static_cast<unsigned char*>(buf);
  const nccl_detail::padded l(n, p);
  if (l.rem == 0) {
    w.reduce_scatter(b, b + static_cast<std::size_t>(r) * l.q * es, l.q, t);
    return;
  }
  auto* s = static_cast<unsigned char*>(w.device_scratch(static_cast<std::size_t>(p) * l.pad * es, "reduce_scatter"));
  nccl_detail::to_padded(w, s, b, l, p, es, "reduce_scatter");
  w.reduce_scatter(s, s + static_cast<std::size_t>(r) * l.pad * es, l.pad, t);
  w.check_cuda(cudaMemcpyAsync(b + l.begin(r) * es, s + static_cast<std::size_t>(r) * l.pad * es, l.size(r) * es, cudaMemcpyDefault, w.stream()),
               "reduce_scatter");
  w.synchronize("reduce_scatter");
}

// Before: world rank r's block (even_shard(n, p, r)) holds its part; after: every rank holds all.
inline void all_gather(comms<nccl_backend>& c, void* buf, std::size_t n, dtype t, const topology_value& topo) {
  detail::check_args(c, buf, n, t, "all_gather");
  detail::check_topology(c, topo, "all_gather");
  auto& w = c.world;
  const int p = w.size(), r = w.rank();
  if (p == 1 || n == 0) return;
  const std::size_t es = size_of(t);
  auto* b = static_cast<unsigned char*>(buf);
  const nccl_detail::padded l(n, p);
  if (l.rem == 0) {
    w.all_gather(b + static_cast<std::size_t>(r) * l.q * es, b, l.q, t);
    return;
  }
  auto* s = static_cast<unsigned char*>(w.device_scratch(static_cast<std::size_t>(p) * l.pad * es, "all_gather"));
  w.check_cuda(cudaMemcpyAsync(s + static_cast<std::size_t>(r) * l.pad * es, b + l.begin(r) * es, l.size(r) * es, cudaMemcpyDefault, w.stream()),
               "all_gather");
  w.all_gather(s + static_cast<std::size_t>(r) * l.pad * es, s, l.pad, t);
  nccl_detail::from_padded(w, b, s, l, p, es, "all_gather");
  w.synchronize("all_gather");
}

// Parameter server: the sum lands on server_rank (ncclReduce) and goes back (ncclBroadcast).
// Local replication: the node first reduces onto its local rank 0; the leaders reduce onto the
// server's node leader and broadcast among themselves (inter communicator of local index 0);
// the leaders broadcast to their node.
inline void ps_push_pull(comms<nccl_backend>& c, void* buf, std::size_t n, dtype t, int server_rank, bool local_replication) {
  detail::check_args(c, buf, n, t, "ps_push_pull");
  const int p = c.world.size();
  if (server_rank < 0 || server_rank >= p)
    throw error("server_rank", "ps_push_pull: " + std::to_string(server_rank) + " is not a rank of the " + std::to_string(p) + "-rank world");
  if (p == 1 || n == 0) return;
  if (!local_replication || c.ranks_per_node == 1) {
    c.world.reduce(buf, n, t, server_rank);
    c.world.broadcast(buf, n, t, server_rank);
    return;
  }
  if (!c.intra.valid() || c.intra.size() != c.ranks_per_node)
    throw error("comms", "ps_push_pull: local replication needs the intra communicator of comms::make");
  c.intra.reduce(buf, n, t, 0);
  if (c.local == 0 && c.nodes > 1) {
    const int root = server_rank / c.ranks_per_node;  // the server's node, the rank of its leader in `inter`
    c.inter.reduce(buf, n, t, root);
    c.inter.broadcast(buf, n, t, root);
  }
  c.intra.broadcast(buf, n, t, 0);
}

// Sparse all-gather with the generic contract (exec/collectives.hpp): the untouched rows are
// zeroed, then one dense all-reduce sums the table (the same sums; NCCL has no all-gather of
// varying sizes). Invalid `rows` on any rank throws on every rank.
inline void sparse_all_gather(comms<nccl_backend>& c, void* buf, std::size_t total_rows, std::size_t row_elems, dtype t,
                              std::span<const std::int64_t> rows) {
  detail::check_args(c, buf, total_rows * row_elems, t, "sparse_all_gather");
  auto& w = c.world;
  std::int64_t bad = -1;
  for (std::size_t i = 0; i < rows.size() && bad < 0; ++i)
    if (rows[i] < 0 || static_cast<std::uint64_t>(rows[i]) >= total_rows || (i > 0 && rows[i] <= rows[i - 1])) bad = static_cast<std::int64_t>(i);
  std::int32_t any_bad = bad >= 0 ? 1 : 0;
  w.all_reduce(&any_bad, 1, dtype::i32);
  if (bad >= 0)
    throw error("rows[" + std::to_string(bad) + "]", "sparse_all_gather: row " + std::to_string(rows[static_cast<std::size_t>(bad)]) +
                                                         " is outside [0, " + std::to_string(total_rows) + ") or not above the row before it");
  if (any_bad) throw error("rows", "sparse_all_gather: another rank passed invalid rows");
  const std::size_t rb = row_elems * size_of(t);
  auto* b = static_cast<unsigned char*>(buf);
  std::size_t next = 0;  // first row not yet known to be touched
  cudaPointerAttributes attr{};
  const bool on_device = cudaPointerGetAttributes(&attr, buf) == cudaSuccess &&
                         (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged);
  if (!on_device) (void)cudaGetLastError();
  auto zero = [&](std::size_t from, std::size_t to) {  // a host table is zeroed by the host (the all-reduce stages it)
    if (to <= from) return;
    if (on_device) w.check_cuda(cudaMemsetAsync(b + from * rb, 0, (to - from) * rb, w.stream()), "sparse_all_gather");
    else std::memset(b + from * rb, 0, (to - from) * rb);
  };
  for (const auto row : rows) {
    zero(next, static_cast<std::size_t>(row));
    next = static_cast<std::size_t>(row) + 1;
  }
  zero(next, total_rows);
  w.all_reduce(buf, total_rows * row_elems, t);
}

}  // namespace autosync::exec
