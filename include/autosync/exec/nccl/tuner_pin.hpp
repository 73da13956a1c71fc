// autosync/exec/nccl/tuner_pin.hpp — pinning the NCCL algorithm of one communicator through
// autosync's tuner plugin (plugin/nccl_tuner.hpp, "Pins"; libnccl-tuner-autosync.so).
//
// NCCL picks an algorithm per collective; a plan's bucket names a topology. When NCCL loads
// autosync's tuner (NCCL_TUNER_PLUGIN names it), the NCCL bucket runner creates one duplicate
// of the world communicator per flat topology its plan uses, each pinned to what NCCL runs for
// that topology, and runs the bucket there, so the topology the search chose is the algorithm
// NCCL runs:
//
//   plan topology       AllReduce                      ReduceScatter / AllGather
//   ring                RING                           RING
//   tree                TREE                           NCCL's choice (NCCL has no tree for them)
//   halving_doubling    NCCL's choice (NCCL has no     PAT (NCCL's logarithmic algorithm)
//                       halving-doubling all-reduce)
//   hierarchical        the intra / inter split communicators: AUTOSYNC_TUNER_STRATEGY decides
//
// Without autosync's tuner the communicators are not duplicated and NCCL picks (its own model,
// NCCL_ALGO, or another tuner).
#pragma once

#include <autosync/policy/topology.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace autosync::exec::nccl {

// NCCL algorithm numbers (its cost-table rows): TREE 0, RING 1, COLLNET_DIRECT 2,
// COLLNET_CHAIN 3, NVLS 4, NVLS_TREE 5, PAT 6; -1: no pin (NCCL's choice).
inline constexpr int nccl_algo_tree = 0, nccl_algo_ring = 1, nccl_algo_pat = 6;

struct algorithm_pin {
  int all_reduce = -1;  // AllReduce
  int rs_ag = -1;       // ReduceScatter and AllGather
  [[nodiscard]] constexpr bool any() const noexcept { return all_reduce >= 0 || rs_ag >= 0; }
  friend constexpr bool operator==(const algorithm_pin&, const algorithm_pin&) = default;
};

// What NCCL runs for a flat topology (the table above); hierarchical: no pin here.
[[nodiscard]] constexpr algorithm_pin pin_of(topology_kind k) noexcept {
  switch (k) {
    case topology_kind::ring: return {nccl_algo_ring, nccl_algo_ring};
    case topology_kind::tree: return {nccl_algo_tree, -1};
    case topology_kind::halving_doubling: return {-1, nccl_algo_pat};
    default: return {};
  }
}

// The plugin's autosync_tuner_pin_next, when the library NCCL_TUNER_PLUGIN names (a path, or a
// name N for libnccl-tuner-N.so, as NCCL reads it) is autosync's; else null. Looked up once.
using tuner_pin_next_fn = int (*)(int, int);
[[nodiscard]] inline tuner_pin_next_fn tuner_pin_entry() {
  static const tuner_pin_next_fn entry = []() -> tuner_pin_next_fn {
    const char* v = std::getenv("NCCL_TUNER_PLUGIN");
    if (v == nullptr || *v == '\0') return nullptr;
    const std::string name(v);
    const std::string tries[] = {name.find('/') != std::string::npos ? name : "libnccl-tuner-" + name + ".so", name};
    for (const auto& t : tries) {
      // the same library NCCL opens (dlopen returns the loaded instance): one pin registry
      if (void* h = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        if (void* f = dlsym(h, "autosync_tuner_pin_next")) return reinterpret_cast<tuner_pin_next_fn>(f);
        dlclose(h);
      }
    }
    return nullptr;
  }();
  return entry;
}

// Held by nccl_backend from a pin until the new communicator settled (and for every other
// communicator it creates), so that the pin reaches that communicator's tuner init and no other.
[[nodiscard]] inline std::mutex& communicator_creation_lock() {
  static std::mutex m;
  return m;
}

}  // namespace autosync::exec::nccl
