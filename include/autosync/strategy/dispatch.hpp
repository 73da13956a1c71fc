// autosync/strategy/dispatch.hpp — runtime descriptor -> compile-time policy types (Boost.Hana).
// Host-only: nothing nvcc compiles may include this header.
//
// The structural slots are the core slots whose slot_traits declare a closed policy set
// (`closed_set`, next to each slot's policies); today:
//
//   slot           policies                                                          count
//   architecture   arch::all                                                            4
//   replication    repl::all                                                            2
//   topology       topo::all: ring, tree, halving_doubling, hierarchical<I, O>        3+9
//   compression    comp::all (the built-in compressors)                                 3
//   schedule       sched::all                                                           2
//
// visit_slot<Slot>(group, f) finds the policy whose `value` equals the descriptor's value for
// that slot and calls f(hana::type_c<Policy>):
//
//   group_desc g;  g.topology = {hierarchical, ring, tree};
//   visit_slot<slot::topology>(g, [](auto t) {
//     using T = typename decltype(t)::type;           // topo::hierarchical<topo::ring, topo::tree>
//     return exec::collective<arch::all_reduce, T>::run(...);   // instantiated for each of the 12
//   });
//
// visit<Slots...>(group, f) nests over several slots and calls
// f(hana::type_c<strategy<P_1, ..., P_k>>) with the selected policies; the slots not named
// take their defaults in the type. visit<>(group, f) (no slots) visits every structural slot.
//
//   descriptor ──visit<arch, topo>──> strategy<arch::all_reduce, topo::hierarchical<ring, tree>>
//        │                                         │
//        └── numbers (shards, server, caps) ───────┴──> read from the descriptor at run time
//
// Why the numeric slots (partitioner, placement, fusion) stay values. Their policies are class
// templates over numbers (even<K, Axis>, pinned<I>, bucket_cap<Cap, First>): the set of types is
// unbounded, so no closed set can be enumerated, and a bounded sample (say K in 1..64) would
// multiply the instantiations of every visit by its size while the search produces other
// numbers anyway. The numbers change only *how much* work a step does, not which code runs; the
// code that reads them (plan compilation, cost model) takes them from the group_desc. The
// structural slots change the code path (which collective, which wire format, which order), so
// that is where a compile-time type pays. For a fully static group, numbers included, see
// emit.hpp: emit_header() writes the searched strategy as type aliases.
//
// The executor uses this: exec/host_buckets.hpp's visit_bucket visits a plan bucket's
// architecture, topology and compression once per group, when a bucket runner is built, and
// keeps the run_as<Arch, Topo, Comp> instantiation (exec::collective, exec::codec) its buckets run.
//
// Combinations that break a cross-slot rule (registry/rules.hpp: e.g. parameter_server with
// tree) are not instantiated; visiting one throws autosync::error naming the field.
// Every branch of f must return the same type. Each visit instantiates f once per policy (the
// product over the named slots for visit<...>: all five slots are 4*2*12*3*2 = 576), so name
// only the slots the code needs.
#pragma once

#include <autosync/error.hpp>
#include <autosync/policy/pack.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <boost/hana/at.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace autosync {

namespace hana = boost::hana;

namespace detail {
template <class... Ts>
constexpr auto hana_types(type_list<Ts...>) {
  return hana::tuple_t<Ts...>;
}
template <class>
inline constexpr bool dependent_false = false;

}  // namespace detail

// The closed policy set of a slot, as a hana::tuple of hana::type: its slot_traits' closed_set
// (policy/slots.hpp). A slot opens to dispatch by declaring one there (or by specializing this).
template <class Slot>
struct closed_policies {
  static_assert(requires { typename slot_traits<Slot>::closed_set; },
                "autosync::visit: this slot has no closed policy set (partitioner, placement and fusion carry numbers and "
                "stay values in group_desc; see dispatch.hpp)");
  static constexpr auto types = detail::hana_types(typename slot_traits<Slot>::closed_set{});
};

namespace detail {
template <class Acc, class... Slots>
struct with_closed_set {
  using type = Acc;
};
template <class... Acc, class S, class... Rest>
struct with_closed_set<type_list<Acc...>, S, Rest...> {
  using type = typename with_closed_set<
      std::conditional_t<requires { typename slot_traits<S>::closed_set; }, type_list<Acc..., S>, type_list<Acc...>>, Rest...>::type;
};
template <class... Slots>
auto structural_of(type_list<Slots...>) -> typename with_closed_set<type_list<>, Slots...>::type;
}  // namespace detail

// The structural slots (those with a closed policy set), in slot_list order: what visit<>() visits.
using structural_slots = decltype(detail::structural_of(slot_list{}));

// A group descriptor's value for one slot, as its policies' `value` compare with it.
template <class Slot>
[[nodiscard]] constexpr auto slot_value(const group_desc& g) noexcept {
  const auto& v = slot_traits<Slot>::field(g);
  if constexpr (requires { slot_traits<Slot>::dispatch_key(v); }) return slot_traits<Slot>::dispatch_key(v);
  else return v;
}

// How many policy types a slot dispatches to.
template <class Slot>
inline constexpr std::size_t closed_set_size = decltype(hana::length(closed_policies<Slot>::types))::value;

namespace detail {
template <class Slot>
[[nodiscard]] std::string describe_value(const group_desc& g) {
  const auto v = slot_value<Slot>(g);
  if constexpr (std::is_same_v<decltype(v), const topology_value>)
    return std::string(name_of(v.kind)) + "<" + std::string(name_of(v.intra)) + ", " + std::string(name_of(v.inter)) + ">";
  else if constexpr (std::is_same_v<decltype(v), const compression_id>)
    return "compressor id " + std::to_string(v);
  else
    return std::string(name_of(v)) + " (" + std::to_string(static_cast<int>(v)) + ")";
}
}  // namespace detail

// Calls f(hana::type_c<P>) for the policy P of `Slot` whose value is the descriptor's, and
// returns what f returns. Throws autosync::error naming the slot when no policy matches (an
// invalid descriptor: validate_group() rejects those first).
template <class Slot, class F>
decltype(auto) visit_slot(const group_desc& g, F&& f) {
  constexpr auto types = closed_policies<Slot>::types;
  using first = typename decltype(+hana::at_c<0>(types))::type;
  using R = decltype(std::forward<F>(f)(hana::type_c<first>));
  const auto v = slot_value<Slot>(g);
  auto no_match = [&]() {
    return error(std::string(Slot::name), "no " + std::string(Slot::name) + " policy has the value " + detail::describe_value<Slot>(g));
  };
  if constexpr (std::is_void_v<R>) {
    bool done = false;
    hana::for_each(types, [&](auto t) {
      using P = typename decltype(t)::type;
      static_assert(std::is_void_v<decltype(std::forward<F>(f)(t))>, "autosync::visit: every branch must return the same type");
      if (!done && P::value == v) {
        done = true;
        std::forward<F>(f)(t);
      }
    });
    if (!done) throw no_match();
  } else if constexpr (std::is_reference_v<R>) {
    std::remove_reference_t<R>* out = nullptr;
    hana::for_each(types, [&](auto t) {
      using P = typename decltype(t)::type;
      static_assert(std::is_same_v<decltype(std::forward<F>(f)(t)), R>, "autosync::visit: every branch must return the same type");
      if (!out && P::value == v) {
        auto&& ref = std::forward<F>(f)(t);
        out = std::addressof(ref);
      }
    });
    if (!out) throw no_match();
    return static_cast<R>(*out);
  } else {
    std::optional<R> out;
    hana::for_each(types, [&](auto t) {
      using P = typename decltype(t)::type;
      static_assert(std::is_same_v<decltype(std::forward<F>(f)(t)), R>, "autosync::visit: every branch must return the same type");
      if (!out && P::value == v) out.emplace(std::forward<F>(f)(t));
    });
    if (!out) throw no_match();
    R result = std::move(*out);  // by value: decltype(auto) of a name is its declared type
    return result;
  }
}

namespace detail {
// A combination that breaks a cross-slot rule (registry/rules.hpp) has no strategy type: it is
// an error at run time naming the rule's field, as validate_group reports it.
template <class... Chosen, class F>
decltype(auto) visit_nested(const group_desc&, F&& f, type_list<Chosen...>, type_list<>) {
  if constexpr (rules_hold_for<Chosen...>) {
    return std::forward<F>(f)(hana::type_c<strategy<Chosen...>>);
  } else {
    const rule_values_of<Chosen...> v{};
    rules::for_each_failure(v, [&](auto r) {
      using R = decltype(r);
      throw error(std::string(rules::field<R>()), R::why(v));
    });
    return std::forward<F>(f)(hana::type_c<strategy<>>);  // not reached: a rule failed above
  }
}
template <class... Chosen, class Slot, class... Rest, class F>
decltype(auto) visit_nested(const group_desc& g, F&& f, type_list<Chosen...>, type_list<Slot, Rest...>) {
  return visit_slot<Slot>(g, [&](auto t) -> decltype(auto) {
    using P = typename decltype(t)::type;
    return visit_nested(g, f, type_list<Chosen..., P>{}, type_list<Rest...>{});
  });
}
template <class... Slots>
struct visit_slots {
  using type = type_list<Slots...>;
};
template <>
struct visit_slots<> {
  using type = structural_slots;
};
}  // namespace detail

// Calls f(hana::type_c<strategy<P_1, ..., P_k>>) with the policies the descriptor selects for
// Slots... (every structural slot when none is named); the other slots keep their defaults in
// the type (their values stay in `g`).
template <class... Slots, class F>
decltype(auto) visit(const group_desc& g, F&& f) {
  return detail::visit_nested(g, std::forward<F>(f), type_list<>{}, typename detail::visit_slots<Slots...>::type{});
}

}  // namespace autosync
