// autosync/registry/core.hpp — iterating the core slots.
//
// The core slots are slot_list (policy/slots.hpp); each defines its slot_traits next to its
// policies (policy/<slot>.hpp, registry/compression_slot.hpp for compression). Code that reads
// or writes a whole group goes through these helpers, so a core slot is added by its tag, its
// place in slot_list, its header and its group_desc member — nothing that walks a group names it:
//
//   for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {
//     using T = slot_traits<Slot>;
//     T::hash(h, T::field(g));
//   });
#pragma once

#include <autosync/policy/architecture.hpp>
#include <autosync/policy/fusion.hpp>
#include <autosync/policy/partitioner.hpp>
#include <autosync/policy/placement.hpp>
#include <autosync/policy/replication.hpp>
#include <autosync/policy/schedule.hpp>
#include <autosync/policy/slots.hpp>
#include <autosync/policy/topology.hpp>
#include <autosync/registry/compression_slot.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

namespace autosync {

// What a core slot's traits provide (policy/slots.hpp has the contract in words).
template <class Slot>
concept CoreSlot = requires {
  typename slot_traits<Slot>::value_type;
  { slot_traits<Slot>::search_order } -> std::convertible_to<int>;
  { slot_traits<Slot>::cpp_type(std::declval<const typename slot_traits<Slot>::value_type&>()) } -> std::convertible_to<std::string>;
  slot_traits<Slot>::validate(std::declval<const typename slot_traits<Slot>::value_type&>(), std::declval<const std::string&>());
};

namespace detail {
template <class... Slots>
consteval bool check_core_slots(type_list<Slots...>) {
  return (Slots::template has_traits<CoreSlot<Slots>>() && ...);
}
static_assert(check_core_slots(slot_list{}));

template <class... Slots>
consteval auto names_of(type_list<Slots...>) {
  return std::array<std::string_view, sizeof...(Slots)>{Slots::name...};
}
template <class... Slots>
consteval auto search_orders_of(type_list<Slots...>) {
  return std::array<int, sizeof...(Slots)>{slot_traits<Slots>::search_order...};
}
template <class Slot, class... Slots>
consteval std::size_t index_in(type_list<Slots...>) {
  std::size_t i = 0;
  static_cast<void>(((std::is_same_v<Slot, Slots> ? false : (++i, true)) && ...));
  return i;
}
template <class F, class... Slots>
constexpr void for_each_of(F& f, type_list<Slots...>) {
  (f(std::type_identity<Slots>{}), ...);
}
template <class F, class R, class... Slots>
constexpr R visit_one_of(std::size_t i, F& f, type_list<Slots...>) {
  R r{};
  std::size_t k = 0;
  static_cast<void>(((k++ == i ? (r = f(std::type_identity<Slots>{}), true) : false) || ...));
  return r;
}
}  // namespace detail

inline constexpr std::size_t core_slot_count = slot_list::size;
// The core slots' names (their JSON keys), in slot_list order.
inline constexpr auto core_slot_names = detail::names_of(slot_list{});
// A core slot's index in slot_list.
template <class Slot>
inline constexpr std::size_t core_slot_index = detail::index_in<Slot>(slot_list{});

// f(std::type_identity<Slot>{}) for every core slot, in slot_list order.
template <class F>
constexpr void for_each_core_slot(F&& f) {
  detail::for_each_of(f, slot_list{});
}
// f(std::type_identity<Slot>{}) for the core slot at index i (R{} when i is out of range).
template <class R, class F>
constexpr R visit_core_slot(std::size_t i, F&& f) {
  return detail::visit_one_of<F, R>(i, f, slot_list{});
}

// The core slots' indices in the order of their search_order (the search's aspects).
inline constexpr auto core_slots_by_search_order = [] {
  constexpr auto order = detail::search_orders_of(slot_list{});
  std::array<std::size_t, core_slot_count> idx{};
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return order[a] < order[b]; });
  return idx;
}();

}  // namespace autosync
