// autosync/exec/collective.hpp — the communication step of a plan bucket, selected by the group's
// policy types (CUTLASS style: one primary template that fails with a named message, one
// specialization per policy).
//
//   collective<arch::all_reduce, Topo>         topology_ops<Topo>::all_reduce       (12 topologies)
//   collective<arch::sharded, Topo>            topology_ops<Topo>::reduce_scatter, then all_gather
//   collective<arch::parameter_server, Topo>   ps_push_pull(server_rank, local replication)
//   collective<arch::all_gather, Topo>         per segment: sparse_all_gather of the touched rows
//                                              (the topology does not change these two)
//
// Each specialization has
//
//   static constexpr bool segmented;           runs on the tensors where they lie (exec::segmented)
//   template <Backend B>
//   static void run(comms<B>&, const plan_bucket&, unsigned char* buf, std::size_t n, dtype t);
//                                              the bucket's n elements of dtype t at buf, in place
//                                              (b.elements of its dtype, or what its codec or a
//                                              registered codec made of them)
//   template <Backend B>                       (segmented only) the same on the bucket's runs
//   static void run(comms<B>&, const plan_bucket&, const segmented&);
//
// and calls the algorithms of exec/collectives/ (flat_algorithm<Topo>, topology_ops<Topo>): the
// runtime path of the executor (exec/host_buckets.hpp, one dispatch per group when the runner is
// built) and the typed path (exec/typed_executor.hpp, no dispatch) run these same functions. On a
// backend whose buffers are not host memory (NCCL) the step is the backend's own overload of
// exec::all_reduce / reduce_scatter / all_gather / ps_push_pull for the topology's value
// (exec/nccl/collectives.hpp), and a sparse bucket is one dense all-reduce (its untouched rows
// are zero on every rank, so the sums are the host path's).
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/policy/architecture.hpp>
#include <autosync/policy/topology.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace autosync::exec {

template <class Arch, class Topo>
struct collective {
  static_assert(sizeof(Arch) == 0, "autosync::exec::collective<Arch, Topo>: no collective for this architecture policy "
                                   "(slot 'architecture': arch::all_reduce, arch::sharded, arch::parameter_server, arch::all_gather)");
};

namespace detail {
template <Backend B>
inline constexpr bool host_steps = host_memory_backend<B>;

// The touched rows of a [rows x row_bytes] table: rows with a non-zero byte.
inline std::vector<std::int64_t> touched_rows(const unsigned char* buf, std::size_t rows, std::size_t row_bytes) {
  std::vector<std::int64_t> r;
  for (std::size_t i = 0; i < rows; ++i) {
    const unsigned char* row = buf + i * row_bytes;
    if (std::any_of(row, row + row_bytes, [](unsigned char c) { return c != 0; })) r.push_back(static_cast<std::int64_t>(i));
  }
  return r;
}
}  // namespace detail

template <class Topo>
  requires TopologyPolicy<Topo>
struct collective<arch::all_reduce, Topo> {
  using ops = topology_ops<Topo>;
  static constexpr bool segmented = ops::segmented_all_reduce;
  template <Backend B>
  static void run(comms<B>& c, const plan_bucket&, unsigned char* buf, std::size_t n, dtype t) {
    if constexpr (detail::host_steps<B>) {
      detail::check_args(c, buf, n, t, "all_reduce");
      ops::check(c, "all_reduce");
      ops::all_reduce(c, detail::view(buf, t), n);
    } else {
      all_reduce(c, buf, n, t, Topo::value);
    }
  }
  template <Backend B>
    requires segmented
  static void run(comms<B>& c, const plan_bucket&, const exec::segmented& s) {
    ops::check(c, "all_reduce");
    ops::all_reduce(c, s, s.total());
  }
};

template <class Topo>
  requires TopologyPolicy<Topo>
struct collective<arch::sharded, Topo> {
  using ops = topology_ops<Topo>;
  static constexpr bool segmented = ops::segmented_sharded;
  template <Backend B>
  static void run(comms<B>& c, const plan_bucket&, unsigned char* buf, std::size_t n, dtype t) {
    if constexpr (detail::host_steps<B>) {
      detail::check_args(c, buf, n, t, "reduce_scatter");
      ops::check(c, "reduce_scatter");
      ops::reduce_scatter(c, detail::view(buf, t), n);
      ops::all_gather(c, detail::view(buf, t), n);
    } else {
      reduce_scatter(c, buf, n, t, Topo::value);
      all_gather(c, buf, n, t, Topo::value);
    }
  }
  template <Backend B>
    requires segmented
  static void run(comms<B>& c, const plan_bucket&, const exec::segmented& s) {
    ops::reduce_scatter(c, s, s.total());
    ops::all_gather(c, s, s.total());
  }
};

template <class Topo>
struct collective<arch::parameter_server, Topo> {
  static constexpr bool segmented = false;
  template <Backend B>
  static void run(comms<B>& c, const plan_bucket& b, unsigned char* buf, std::size_t n, dtype t) {
    ps_push_pull(c, buf, n, t, b.server_rank, b.local);
  }
};

template <class Topo>
struct collective<arch::all_gather, Topo> {
  static constexpr bool segmented = false;
  template <Backend B>
  static void run(comms<B>& c, const plan_bucket& b, unsigned char* buf, std::size_t n, dtype t) {
    if constexpr (!detail::host_steps<B>) {
      c.world.all_reduce(buf, n, t);
    } else {
      (void)n;  // the segments say where each table lies
      for (const auto& sg : b.segments) {
        const auto re = static_cast<std::size_t>(sg.row_elements);
        const std::size_t rows = static_cast<std::size_t>(sg.elements()) / re;
        unsigned char* at = buf + static_cast<std::size_t>(sg.fused) * size_of(t);
        const auto touched = detail::touched_rows(at, rows, re * size_of(t));
        sparse_all_gather(c, at, rows, re, t, std::span<const std::int64_t>(touched));
      }
    }
  }
};

}  // namespace autosync::exec
