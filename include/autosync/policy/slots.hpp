// autosync/policy/slots.hpp — the aspects of a synchronization decision, as slot tags.
//
// A policy is an empty tag or a struct of `static constexpr` members with
//   using slot = slot::<aspect>;            which slot it fills
//   static constexpr std::string_view name;  its name in JSON and in messages
//   static constexpr <value type> value;     the runtime descriptor piece it stands for
// Slots are defined by the registry (autosync/registry/values.hpp explains its two halves):
//   a core slot: its tag here (AUTOSYNC_SLOT_TAG), its place in `slot_list`, its header
//     policy/<slot>.hpp (policies, value, `default_policy`), its field in group_desc and, where
//     it constrains another slot, a rule in registry/rules.hpp. strategy<...>'s checks iterate
//     slot_list; the run-time parts that still read each core field by name are listed in
//     registry/extensions.hpp.
//   an extension slot (user code, nothing under include/ changes): a tag made with
//     AUTOSYNC_SLOT_TAG in the user's namespace, policies whose `value` is an ext_value, a
//     `default_policy` specialization, and a runtime entry registered with
//     autosync::registry::add_slot (JSON, validation, search, cost and executor hooks).
#pragma once

#include <concepts>
#include <cstddef>
#include <string_view>
#include <string>
#include <type_traits>

namespace autosync {

template <class... Ts>
struct type_list {
  static constexpr std::size_t size = sizeof...(Ts);
};

// A slot tag: its name, and the check strategy<...> runs for it (a static_assert message has
// to be a literal, so each tag carries its own).
#define AUTOSYNC_SLOT_TAG(id)                                                                     \
  struct id {                                                                                     \
    static constexpr std::string_view name = #id;                                                 \
    template <int Count>                                                                          \
    static constexpr bool unique() {                                                              \
      static_assert(Count <= 1, "autosync::strategy: two policies for slot '" #id "'");           \
      return Count <= 1;                                                                          \
    }                                                                                             \
  }

namespace slot {
AUTOSYNC_SLOT_TAG(architecture);
AUTOSYNC_SLOT_TAG(partitioner);
AUTOSYNC_SLOT_TAG(placement);
AUTOSYNC_SLOT_TAG(replication);
AUTOSYNC_SLOT_TAG(topology);
AUTOSYNC_SLOT_TAG(compression);
AUTOSYNC_SLOT_TAG(fusion);
AUTOSYNC_SLOT_TAG(schedule);
}  // namespace slot

// The slots of a group strategy, in canonical order (the order of basic_strategy's arguments).
using slot_list = type_list<slot::architecture, slot::partitioner, slot::placement, slot::replication,
                            slot::topology, slot::compression, slot::fusion, slot::schedule>;

// Specialized next to each slot's policies.
template <class Slot>
struct default_policy;

// A policy: has a slot, a name and a value.
template <class P>
concept Policy = requires {
  typename P::slot;
  { P::name } -> std::convertible_to<std::string_view>;
  P::value;
};

template <class P, class Slot>
concept PolicyFor = Policy<P> && std::same_as<typename P::slot, Slot>;

template <class P> concept ArchitecturePolicy = PolicyFor<P, slot::architecture>;
template <class P> concept PartitionerPolicy  = PolicyFor<P, slot::partitioner>;
template <class P> concept PlacementPolicy    = PolicyFor<P, slot::placement>;
template <class P> concept ReplicationPolicy  = PolicyFor<P, slot::replication>;
template <class P> concept TopologyPolicy     = PolicyFor<P, slot::topology>;
template <class P> concept CompressionPolicy  = PolicyFor<P, slot::compression> && requires {
  { P::lossless } -> std::convertible_to<bool>;
  { P::wire_bytes_per_element } -> std::convertible_to<double>;
  { P::flops_per_element } -> std::convertible_to<double>;
};
template <class P> concept FusionPolicy       = PolicyFor<P, slot::fusion>;
template <class P> concept SchedulePolicy     = PolicyFor<P, slot::schedule>;

// Runtime enums get their names from one table each; `enum_names<E>` is specialized next to E.
template <class E>
struct enum_names;

template <class E>
[[nodiscard]] constexpr std::string_view name_of(E e) noexcept
  requires requires { enum_names<E>::names; }
{
  const auto i = static_cast<std::size_t>(e);
  return i < enum_names<E>::names.size() ? enum_names<E>::names[i] : std::string_view{"?"};
}

template <class E>
[[nodiscard]] constexpr bool parse_enum(std::string_view s, E& out) noexcept {
  for (std::size_t i = 0; i < enum_names<E>::names.size(); ++i)
    if (enum_names<E>::names[i] == s) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

// "a, b, c": for error messages that list the valid names.
template <class E>
[[nodiscard]] inline std::string_view valid_names_list() {
  static const std::string s = [] {
    std::string r;
    for (auto n : enum_names<E>::names) {
      if (!r.empty()) r += ", ";
      r += n;
    }
    return r;
  }();
  return s;
}

}  // namespace autosync
