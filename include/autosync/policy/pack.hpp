// autosync/policy/pack.hpp — strategy<Policies...>: a group's policies, any order, defaults.
//
//   using s = autosync::strategy<topo::hierarchical<topo::ring, topo::tree>, comp::fp16>;
//   static_assert(std::is_same_v<s::get<slot::architecture>, arch::all_reduce>);  // default
//
// Packs are normalized to basic_strategy<P_architecture, P_partitioner, ...> in slot_list
// order, so two packs with the same policies in another order are the same type; policies of
// extension slots (registry/values.hpp) follow, ordered by their slot's stable id, unless they
// are their slot's default. Every check iterates the slots, one static_assert each:
//   "autosync::strategy: an argument is not a policy"           (and nothing else is checked)
//   "autosync::strategy: two policies for slot '<slot>'"         (AUTOSYNC_SLOT_TAG)
//   "autosync::strategy: slot 'topology' = tree is not valid with slot 'architecture' = ..."
//                                                                (registry/rules.hpp)
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
#include <autosync/registry/rules.hpp>
#include <autosync/registry/values.hpp>

#include <type_traits>
#include <utility>

namespace autosync {

namespace detail {
// The policy of Slot among Ps (a namespace-scope metafunction: clang 14 checks a private member
// named by a public alias template against the alias's user, so it cannot be a private helper).
template <class Slot, class... Ps>
struct policy_for {
  static_assert(sizeof...(Ps) > 0, "autosync::strategy: no policy for the requested slot");
};
template <class Slot, class P, class... Rest>
struct policy_for<Slot, P, Rest...> {
  using type = typename std::conditional_t<std::is_same_v<typename P::slot, Slot>, std::type_identity<P>,
                                           policy_for<Slot, Rest...>>::type;
};
}  // namespace detail

// Normalized form: one policy per slot of slot_list, in that order.
template <class... Ps>
struct basic_strategy {
  using policies = type_list<Ps...>;

  template <class Slot>
  using get = typename detail::policy_for<Slot, Ps...>::type;

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
template <class Slot, class List>
constexpr bool in_list = false;
template <class Slot, class... Slots>
constexpr bool in_list<Slot, type_list<Slots...>> = slot_known<Slot, Slots...>;

// The values the cross-slot rules read (registry/rules.hpp), from a strategy's policies.
template <class Arch, class Topo, class Fuse>
struct rule_values {
  architecture_kind architecture = Arch::value;
  topology_value topology = Topo::value;
  fusion_value fusion = Fuse::value;
};

// An extension slot's policy (its slot is not in slot_list): kept unless it is the slot's
// default, ordered by the slot's stable id so that any argument order gives one type.
template <class P>
constexpr bool is_default_ext = requires { default_policy<typename P::slot>::type::value; } &&
                                (default_policy<typename P::slot>::type::value == P::value);
template <class P, class... Es>
constexpr std::size_t ext_rank = (std::size_t{0} + ... + (stable_id(Es::slot::name) < stable_id(P::slot::name) ? 1u : 0u));
template <std::size_t I, class All, class... Es>
struct ext_at;
template <std::size_t I, class... All, class E, class... Es>
struct ext_at<I, type_list<All...>, E, Es...> {
  using type = typename std::conditional_t<ext_rank<E, All...> == I, std::type_identity<E>, ext_at<I, type_list<All...>, Es...>>::type;
};
template <class List, class Seq>
struct ext_sorted;
template <class... Es, std::size_t... I>
struct ext_sorted<type_list<Es...>, std::index_sequence<I...>> {
  using type = type_list<typename ext_at<I, type_list<Es...>, Es...>::type...>;
};
template <class Out, class... Ps>
struct ext_filter {
  using type = Out;
};
template <class... Out, class P, class... Ps>
struct ext_filter<type_list<Out...>, P, Ps...> {
  using type = typename ext_filter<std::conditional_t<!in_list<typename P::slot, slot_list> && !is_default_ext<P>,
                                                      type_list<Out..., P>, type_list<Out...>>,
                                   Ps...>::type;
};

template <class Core, class Ext>
struct join;
template <class... Cs, class... Es>
struct join<type_list<Cs...>, type_list<Es...>> {
  using type = basic_strategy<Cs..., Es...>;
};

template <class SlotList, class... Ps>
struct normalize_policies;

template <class... Slots, class... Ps>
struct normalize_policies<type_list<Slots...>, Ps...> {
  // an extension slot needs a default (absent from a group = its default)
  static_assert(((slot_known<typename Ps::slot, Slots...> || requires { typename default_policy<typename Ps::slot>::type; }) && ...),
                "autosync::strategy: a policy names a slot that is neither in autosync::slot_list nor an extension slot "
                "with an autosync::default_policy<Slot> specialization");
  // one static_assert per slot tag, each naming its slot (AUTOSYNC_SLOT_TAG)
  static constexpr bool unique = (Slots::template unique<count_for_slot<Slots, Ps...>>() && ...) &&
                                 (Ps::slot::template unique<count_for_slot<typename Ps::slot, Ps...>>() && ...);
  using core = type_list<typename pick<Slots, Ps...>::type...>;
  using ext_list = typename ext_filter<type_list<>, Ps...>::type;
  template <class... Es>
  static auto sort(type_list<Es...>) -> typename ext_sorted<type_list<Es...>, std::make_index_sequence<sizeof...(Es)>>::type;
  using type = typename join<core, decltype(sort(ext_list{}))>::type;
  static constexpr bool rules_hold =
      unique && rules::check_all<rule_values<typename pick<slot::architecture, Ps...>::type, typename pick<slot::topology, Ps...>::type,
                                             typename pick<slot::fusion, Ps...>::type>>();
};

// The values the rules read for policies Ps (one per slot at most), and whether every rule holds
// for them, without a static_assert: for code that enumerates combinations (strategy/dispatch.hpp).
template <class... Ps>
using rule_values_of = rule_values<typename pick<slot::architecture, Ps...>::type, typename pick<slot::topology, Ps...>::type,
                                   typename pick<slot::fusion, Ps...>::type>;
template <class... Ps>
inline constexpr bool rules_hold_for = rules::for_each_failure(rule_values_of<Ps...>{}, [](auto) {}) == 0;

// The result of a pack with an argument that is not a policy: no further checks run on it, so
// the one message above is the only error.
struct not_a_strategy {};

template <bool AllPolicies, class SlotList, class... Ps>
struct normalize_checked {
  using type = not_a_strategy;
};
template <class SlotList, class... Ps>
struct normalize_checked<true, SlotList, Ps...> {
  using n = normalize_policies<SlotList, Ps...>;
  using type = std::conditional_t<n::rules_hold, typename n::type, not_a_strategy>;
};

template <class SlotList, class... Ps>
struct normalize {
  static constexpr bool all_policies = (Policy<Ps> && ...);
  static_assert(all_policies,
                "autosync::strategy: an argument is not a policy (needs `using slot`, `static constexpr name` and `value`)");
  using type = typename normalize_checked<all_policies, SlotList, Ps...>::type;
};

}  // namespace detail

// The compile-time form of one group's strategy. Any order; missing slots take defaults.
template <class... Policies>
using strategy = typename detail::normalize<slot_list, Policies...>::type;

template <class S>
concept StrategyType = detail::is_basic_strategy<S>::value;

}  // namespace autosync
