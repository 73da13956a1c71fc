// autosync/exec/typed_executor.hpp — an executor instantiated for a static strategy: the group
// policy types pick each bucket's collective and codec at compile time, no runtime dispatch.
//
// An emitted header (strategy/emit.hpp) names the searched strategy as types:
//
//   #include "my_strategy.hpp"                   // using strategy_t = static_strategy<group_0, ...>
//   #include <autosync/exec/typed_executor.hpp>
//
//   auto pl = exec::compile_plan<my::sync::strategy_t>(model, cluster, my::sync::assignments, lay);
//   exec::typed_executor<my::sync::strategy_t, exec::mpi_backend> ex(comms, model, pl);
//   ex.setup();  ... begin_iteration / ready / finish, as with exec::executor
//
// typed_executor<S, B> is exec::executor<B> (the same scheduling, handshake and error handling)
// with typed_bucket_runner<B, S>: bucket b of group i runs
//
//   host_bucket_runner<B>::run_as<group<i>::architecture, group<i>::topology, group<i>::compression>
//
// chosen by a fold over the group index (a comparison per group, no table, no function pointer;
// the compiler sees every call). The runtime executor reaches the same run_as instantiations
// through one dispatch per group when it is built (exec/host_buckets.hpp), so the two produce the
// same sums bit for bit (tests/emit: typed_mpi). The plan is the runtime one (fused buffers and
// segments are numbers: compile_plan<S> builds it from the types and the assignments); the runner
// checks, when it is built, that every bucket of the plan belongs to a group whose policies are
// the static strategy's, and throws autosync::error naming the bucket otherwise.
//
// Host-memory backends (MPI). On NCCL the executor's bucket runner (exec/nccl/bucket_runner.hpp)
// keeps the device-side pipeline.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/host_buckets.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/strategy/static_strategy.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace autosync::exec {

template <Backend B, StaticStrategy S>
class typed_bucket_runner : public host_bucket_runner<B> {
  static_assert(host_memory_backend<B>, "autosync::exec::typed_executor<S, B>: B must be a host-memory backend (MPI); "
                                        "a device backend runs buckets through its own bucket_runner");
  using base = host_bucket_runner<B>;

  template <std::size_t I>
  using arch_t = typename S::template group<I>::architecture;
  // The topology where the collective reads it (all_reduce, sharded); ring otherwise, as the
  // runtime dispatch does (one instantiation for the parameter server and the sparse path).
  template <std::size_t I>
  using topo_t = std::conditional_t<topology_matters<arch_t<I>>, typename S::template group<I>::topology, topo::ring>;
  template <std::size_t I>
  using comp_t = typename S::template group<I>::compression;

 public:
  typed_bucket_runner(comms<B>& c, const plan& p, const executor_options& o) : base(c, p, o, typename base::no_dispatch{}) {
    if (p.group_fingerprints.size() != S::size)
      throw error("plan", "typed executor: the plan has " + std::to_string(p.group_fingerprints.size()) + " groups, the static strategy " +
                              std::to_string(S::size));
    for (std::uint32_t bi = 0; bi < p.buckets.size(); ++bi) {
      const auto& b = p.buckets[bi];
      if (b.group >= S::size)
        throw error("buckets[" + std::to_string(bi) + "].group", "typed executor: group " + std::to_string(b.group) + " is not in the static strategy");
      check(b, bi, std::make_index_sequence<S::size>{});
    }
  }

  // Runs bucket bi (the communication thread, or finish()).
  void run(std::uint32_t bi, std::span<const gradient> grads) {
    run_group(this->compiled().buckets[bi].group, bi, grads, std::make_index_sequence<S::size>{});
  }
  // Buckets [first, last): one bucket through run() above; a parameter-server batch (several
  // uncompressed pieces on distinct servers) through the base runner's concurrent exchange.
  void run_batch(std::uint32_t first, std::uint32_t last, std::span<const gradient> grads) {
    if (last - first <= 1) return run(first, grads);
    host_bucket_runner<B>::run_batch(first, last, grads);
  }

 private:
  template <std::size_t... I>
  void run_group(std::uint32_t g, std::uint32_t bi, std::span<const gradient> grads, std::index_sequence<I...>) {
    (void)((g == I && (this->template run_as<arch_t<I>, topo_t<I>, comp_t<I>>(bi, grads), true)) || ...);
  }
  template <std::size_t... I>
  static void check(const plan_bucket& b, std::uint32_t bi, std::index_sequence<I...>) {
    (void)((b.group == I && (base::template check_bucket<arch_t<I>, topo_t<I>, comp_t<I>>(b, bi), true)) || ...);
  }
};

// exec::executor<B> running the buckets of static strategy S typed.
template <StaticStrategy S, Backend B>
using typed_executor = executor<B, typed_bucket_runner<B, S>>;

// The plan of static strategy S with these assignments (an emitted header's `assignments`).
template <StaticStrategy S, std::size_t N>
[[nodiscard]] plan compile_plan(const model_spec& m, const cluster_spec& c, const std::array<static_assignment, N>& assignments,
                                const layout& lay, std::string_view name = {}) {
  return compile_plan(m, c, to_descriptor<S>(assignments, name), lay);
}

}  // namespace autosync::exec
