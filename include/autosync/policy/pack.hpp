// autosync/policy/pack.hpp — strategy<Policies...>: a group's policies, any order, defaults.
//
//   using s = autosync::strategy<topo::hierarchical<topo::ring, topo::tree>, comp::fp16>;
//   static_assert(std::is_same_v<s::get<slot::architecture>, arch::all_reduce>);  // default
//
// Packs are normalized to basic_strategy<P_architecture, P_partitioner, ...> in slot_list
// order, so two packs with the same policies in another order are the same type. A slot
// named twice fails with "autosync::strategy: two policies for slot '<slot>'" (search for it).
#pragma once

#include <autosync/policy/architecture.hpp>
#include <autosync/policy/compression.hpp>
#include <autosync/policy/fusion.hpp>
#include <autosync/policy/partitioner.hpp>
#include <autosync/policy/placement.hpp>
#include <autosync/policy/replication.hpp>
#include <autosync/policy/schedule.hpp>
#include <autosync/policy/slots.hpp>
#include <autosync/policy/topology.hpp>

#include <type_traits>

namespace autosync {

// Normalized form: one policy per slot of slot_list, in that order.
template <class... Ps>
struct basic_strategy {
  using policies = type_list<Ps...>;

 private:
  template <class Slot, class P, class... Rest>
  static auto find() {
    if constexpr (std::is_same_v<typename P::slot, Slot>)
      return std::type_identity<P>{};
    else {
      static_assert(sizeof...(Rest) > 0, "autosync::strategy: no policy for the requested slot");
      return find<Slot, Rest...>();
    }
  }

 public:
  template <class Slot>
  using get = typename decltype(find<Slot, Ps...>())::type;

  using architecture = get<slot::architecture>;
  using partitioner = get<slot::partitioner>;
  using placement = get<slot::placement>;
  using replication = get<slot::replication>;
  using topology = get<slot::topology>;
  using compression = get<slot::compression>;
  using fusion = get<slot::fusion>;
  using schedule = get<slot::schedule>;
};

namespace detail {

template <class T>
struct is_basic_strategy : std::false_type {};
template <class... Ps>
struct is_basic_strategy<basic_strategy<Ps...>> : std::true_type {};

template <class Slot, class... Ps>
constexpr int count_for_slot = (0 + ... + (std::is_same_v<typename Ps::slot, Slot> ? 1 : 0));

template <class Slot, class... Ps>
struct pick {
  using type = typename default_policy<Slot>::type;
};
template <class Slot, class P, class... Rest>
struct pick<Slot, P, Rest...> {
  using type = typename std::conditional_t<std::is_same_v<typename P::slot, Slot>, std::type_identity<P>, pick<Slot, Rest...>>::type;
};

template <class Slot, class... Slots>
constexpr bool slot_known = (std::is_same_v<Slot, Slots> || ...);

// Named so that the instantiation in a compiler's error trace shows the slot.
template <class Slot, class... Ps>
struct duplicate_policy_for_slot {
  static constexpr bool ok = count_for_slot<Slot, Ps...> <= 1;
};

template <class P>
struct check_policy {
  static_assert(Policy<P>,
                "autosync::strategy: an argument is not a policy (needs `using slot`, `static constexpr name` and `value`)");
  static constexpr bool ok = Policy<P>;
};

template <class SlotList, class... Ps>
struct normalize;

template <class... Slots, class... Ps>
struct normalize<type_list<Slots...>, Ps...> {
  static_assert((check_policy<Ps>::ok && ...));
  static_assert((slot_known<typename Ps::slot, Slots...> && ...),
                "autosync::strategy: a policy names a slot that is not in autosync::slot_list");
  static_assert(duplicate_policy_for_slot<slot::architecture, Ps...>::ok, "autosync::strategy: two policies for slot 'architecture'");
  static_assert(duplicate_policy_for_slot<slot::partitioner, Ps...>::ok, "autosync::strategy: two policies for slot 'partitioner'");
  static_assert(duplicate_policy_for_slot<slot::placement, Ps...>::ok, "autosync::strategy: two policies for slot 'placement'");
  static_assert(duplicate_policy_for_slot<slot::replication, Ps...>::ok, "autosync::strategy: two policies for slot 'replication'");
  static_assert(duplicate_policy_for_slot<slot::topology, Ps...>::ok, "autosync::strategy: two policies for slot 'topology'");
  static_assert(duplicate_policy_for_slot<slot::compression, Ps...>::ok, "autosync::strategy: two policies for slot 'compression'");
  static_assert(duplicate_policy_for_slot<slot::fusion, Ps...>::ok, "autosync::strategy: two policies for slot 'fusion'");
  static_assert(duplicate_policy_for_slot<slot::schedule, Ps...>::ok, "autosync::strategy: two policies for slot 'schedule'");
  static_assert((duplicate_policy_for_slot<Slots, Ps...>::ok && ...), "autosync::strategy: two policies for one slot");
  using type = basic_strategy<typename pick<Slots, Ps...>::type...>;
};

}  // namespace detail

// The compile-time form of one group's strategy. Any order; missing slots take defaults.
template <class... Policies>
using strategy = typename detail::normalize<slot_list, Policies...>::type;

template <class S>
concept StrategyType = detail::is_basic_strategy<S>::value;

}  // namespace autosync
