// autosync/search/aspects.hpp — the aspects a local-search move changes, and the option grids.
//
// An aspect is one slot of a group: a core slot's aspect is its index in slot_list, tried in the
// order of the slots' slot_traits::search_order (all_aspects); each registered extension slot adds
// one after them. The moves of each core slot are search::space's randomize_slot/variants_slot
// overloads on the slot's tag (search/space.hpp); an extension slot's come from its registry entry.
//
// The choices per group (search::space filters each by the rules of constraints.hpp):
//
//   architecture   all_reduce | sharded | parameter_server   (all_gather: sparse only)
//   topology       ring | tree | halving_doubling | hierarchical<intra, inter>   (collectives)
//   compression    none; fp16, bf16 and lossy registered compressors only with allow_lossy
//   <extension>    one aspect per registered slot (aspects(), extension_proposals)
//   fusion         cap from a log-spaced set (64 KiB x4 ... 1 GiB, unbounded; 0 = no fusion for
//                  runs without tiny tensors), first bucket = cap or 1 MiB (DDP's small first)
//   schedule       fifo | priority
//   placement      round_robin | load_balanced | hashed | pinned<i>         (parameter_server)
//   replication    none | local                                             (parameter_server)
//   partitioner    none | by_bytes<1 MiB, 4,096,000, 16 MiB, 64 MiB> | even<K, axis> (overrides;
//                  runs: even<K, 0> when every member has >= K rows)
#pragma once

#include <autosync/registry/core.hpp>
#include <autosync/registry/extensions.hpp>
#include <autosync/search/constraints.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace autosync::search {

// What the space proposes (search::space).
struct space_options {
  bool allow_lossy = false;
  std::uint64_t tiny_bytes = 64 * 1024;        // knowledge::tiny_bytes
  std::uint64_t large_bytes = 4 * 1024 * 1024; // dense tensors from this size get an override slot
  lossy_budget lossy{};                         // knowledge::lossy
};
inline constexpr std::uint64_t small_first_bucket = 1024 * 1024;
// Log-spaced fusion caps (x4 from 64 KiB to 1 GiB) and the whole group in one bucket.
inline constexpr std::array<std::uint64_t, 10> fusion_caps{
    std::uint64_t{1} << 16, std::uint64_t{1} << 18, std::uint64_t{1} << 20, std::uint64_t{1} << 22, std::uint64_t{1} << 24,
    std::uint64_t{1} << 26, std::uint64_t{1} << 28, std::uint64_t{1} << 30, unbounded_bytes, 0};
inline constexpr std::array<std::uint64_t, 4> partition_bytes{std::uint64_t{1} << 20, 4096000, std::uint64_t{1} << 24, std::uint64_t{1} << 26};
// One aspect of a group strategy: what a local-search move changes. A core slot's aspect is its
// index in slot_list (aspect_of<Slot>); registered extension slot k's is core_slot_count + k.
enum class aspect : std::uint8_t {};
template <class Slot>
inline constexpr aspect aspect_of = static_cast<aspect>(core_slot_index<Slot>);
// The core aspects, in the order the search tries them (each slot's slot_traits::search_order).
inline constexpr auto all_aspects = [] {
  std::array<aspect, core_slot_count> r{};
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<aspect>(core_slots_by_search_order[i]);
  return r;
}();
// The aspect of extension slot k (its index in registry::slots()).
[[nodiscard]] constexpr aspect extension_aspect(std::size_t k) noexcept { return static_cast<aspect>(core_slot_count + k); }
// The slot an aspect changes, by name: for reports.
[[nodiscard]] inline std::string aspect_name(aspect a) {
  const auto i = static_cast<std::size_t>(a);
  if (i < core_slot_count) return std::string(core_slot_names[i]);
  const auto k = i - core_slot_count;
  return k < registry::slots().size() ? registry::slots()[k].name : "?";
}

}  // namespace autosync::search
