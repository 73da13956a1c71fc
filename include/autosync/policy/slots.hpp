// autosync/policy/slots.hpp — the aspects of a synchronization decision, as slot tags.
//
// A policy is an empty tag or a struct of `static constexpr` members with
//   using slot = slot::<aspect>;            which slot it fills
//   static constexpr std::string_view name;  its name in JSON and in messages
//   static constexpr <value type> value;     the runtime descriptor piece it stands for
// Adding a slot: a tag here (with `name` and its default policy in `default_policy`),
// its value in group_strategy, and its place in `slot_list`. Nothing else switches on slots.
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

namespace slot {
struct architecture { static constexpr std::string_view name = "architecture"; };
struct partitioner  { static constexpr std::string_view name = "partitioner"; };
struct placement    { static constexpr std::string_view name = "placement"; };
struct replication  { static constexpr std::string_view name = "replication"; };
struct topology     { static constexpr std::string_view name = "topology"; };
struct compression  { static constexpr std::string_view name = "compression"; };
struct fusion       { static constexpr std::string_view name = "fusion"; };
struct schedule     { static constexpr std::string_view name = "schedule"; };
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
