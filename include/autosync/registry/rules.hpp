// autosync/registry/rules.hpp — the rules between slots, one table for compile time and run time.
//
// A rule is a predicate over a group's slot values (`G` is group_desc at run time, and at
// compile time the values of a strategy<...>'s policies, which have the same field names).
// strategy<...> (policy/pack.hpp) checks every rule with one static_assert whose message names
// both slots and both policies:
//
//   strategy<arch::parameter_server, topo::tree>
//     error: static assertion failed: autosync::strategy: slot 'topology' = tree is not valid
//            with slot 'architecture' = parameter_server: ...
//
// and validate_group (strategy/descriptor.hpp) runs the same predicates on descriptors, so the
// two never disagree. A rule that fails names the field validate_group reports.
//
//   rule                       slots                      holds when
//   collective_topology        topology / architecture    parameter_server and all_gather
//                                                         groups keep topology ring (unused)
//   sharded_reduce_scatter     topology / architecture    sharded groups: no tree (flat, or
//                                                         as hierarchical's intra)
//   first_bucket_cap           fusion / fusion            first_cap_bytes <= cap_bytes (cap 0:
//                                                         no fusion, the first cap is unused)
// Extension slots add their run-time rules with their registry entry (registry/extensions.hpp).
#pragma once

#include <autosync/policy/architecture.hpp>
#include <autosync/policy/fusion.hpp>
#include <autosync/policy/topology.hpp>

#include <string>
#include <string_view>

namespace autosync::rules {

[[nodiscard]] constexpr bool is_collective_architecture(architecture_kind a) noexcept {
  return a == architecture_kind::all_reduce || a == architecture_kind::sharded;
}

struct collective_topology {
  static constexpr std::string_view slot = "topology", other = "architecture";
  template <class G>
  [[nodiscard]] static constexpr bool holds(const G& g) noexcept {
    return is_collective_architecture(g.architecture) || g.topology == topology_value{};
  }
  template <class G>
  [[nodiscard]] static std::string why(const G& g) {
    return std::string(name_of(g.architecture)) + " groups use no collective topology (leave it ring)";
  }
};

struct sharded_reduce_scatter {
  static constexpr std::string_view slot = "topology", other = "architecture";
  template <class G>
  [[nodiscard]] static constexpr bool holds(const G& g) noexcept {
    const auto& t = g.topology;
    return g.architecture != architecture_kind::sharded ||
           !(t.kind == topology_kind::tree || (t.kind == topology_kind::hierarchical && t.intra == topology_kind::tree));
  }
  template <class G>
  [[nodiscard]] static std::string why(const G&) {
    return "sharded groups need a reduce-scatter: ring, halving_doubling or hierarchical with a non-tree intra";
  }
};

struct first_bucket_cap {
  static constexpr std::string_view slot = "fusion", other = "fusion";
  template <class G>
  [[nodiscard]] static constexpr bool holds(const G& g) noexcept {
    return g.fusion.cap_bytes == 0 || g.fusion.first_cap_bytes <= g.fusion.cap_bytes;
  }
  template <class G>
  [[nodiscard]] static std::string why(const G&) {
    return "must not exceed cap_bytes";
  }
};

// The field a failed rule is reported on, relative to the group ("topology", "fusion.first_cap_bytes").
template <class Rule>
[[nodiscard]] constexpr std::string_view field() noexcept {
  if constexpr (Rule::slot == "fusion") return "fusion.first_cap_bytes";
  else return Rule::slot;
}

template <class... Rules>
struct rule_list {};
using core = rule_list<collective_topology, sharded_reduce_scatter, first_bucket_cap>;

// Calls f(Rule{}) for each failing rule of g in table order; returns the number that failed.
template <class G, class F, class... Rules>
constexpr int for_each_failure_in(const G& g, F&& f, rule_list<Rules...>) {
  int n = 0;
  auto one = [&](auto r) {
    if (!decltype(r)::holds(g)) {
      ++n;
      f(r);
    }
  };
  (one(Rules{}), ...);
  return n;
}
template <class G, class F>
constexpr int for_each_failure(const G& g, F&& f) {
  return for_each_failure_in(g, f, core{});
}

// ---- compile time ------------------------------------------------------------------------------
// One static_assert per rule and offending pair, each with its literal message; a pair that no
// literal covers falls to the rule's generic message. The asserts are ordered so that exactly
// one fires for a strategy that breaks one rule.
namespace detail {
#define AUTOSYNC_RULE_TOPO(A, T)                                                                            \
  "autosync::strategy: slot 'topology' = " #T " is not valid with slot 'architecture' = " #A              \
  ": a " #A " group runs no collective, so it has no topology (leave topology ring)"

template <class V>
constexpr bool check_collective_topology() {
  constexpr bool ok = collective_topology::holds(V{});
  constexpr auto a = V{}.architecture;
  constexpr auto k = V{}.topology.kind;
  constexpr bool ps = a == architecture_kind::parameter_server, ag = a == architecture_kind::all_gather;
  static_assert(ok || !(ps && k == topology_kind::tree), AUTOSYNC_RULE_TOPO(parameter_server, tree));
  static_assert(ok || !(ps && k == topology_kind::halving_doubling), AUTOSYNC_RULE_TOPO(parameter_server, halving_doubling));
  static_assert(ok || !(ps && k == topology_kind::hierarchical), AUTOSYNC_RULE_TOPO(parameter_server, hierarchical<...>));
  static_assert(ok || !(ag && k == topology_kind::tree), AUTOSYNC_RULE_TOPO(all_gather, tree));
  static_assert(ok || !(ag && k == topology_kind::halving_doubling), AUTOSYNC_RULE_TOPO(all_gather, halving_doubling));
  static_assert(ok || !(ag && k == topology_kind::hierarchical), AUTOSYNC_RULE_TOPO(all_gather, hierarchical<...>));
  static_assert(ok || ps || ag || k == topology_kind::ring,
                "autosync::strategy: slot 'topology' is not valid with slot 'architecture': only all_reduce and sharded "
                "groups have a topology");
  return ok;
}
#undef AUTOSYNC_RULE_TOPO

template <class V>
constexpr bool check_sharded_reduce_scatter() {
  constexpr bool ok = sharded_reduce_scatter::holds(V{});
  constexpr auto k = V{}.topology.kind;
  static_assert(ok || k != topology_kind::tree,
                "autosync::strategy: slot 'topology' = tree is not valid with slot 'architecture' = sharded: a sharded "
                "group needs a reduce-scatter (ring, halving_doubling, or hierarchical with a non-tree intra)");
  static_assert(ok || k != topology_kind::hierarchical,
                "autosync::strategy: slot 'topology' = hierarchical<tree, ...> is not valid with slot 'architecture' = "
                "sharded: a sharded group needs a reduce-scatter (the intra-node level must not be tree)");
  return ok;
}

template <class V>
constexpr bool check_first_bucket_cap() {
  constexpr bool ok = first_bucket_cap::holds(V{});
  static_assert(ok,
                "autosync::strategy: slot 'fusion' = bucket_cap<Cap, First> with First > Cap is not valid with slot "
                "'fusion' (its own cap): the first bucket's cap must not exceed the cap (fuse::bucket_cap<Cap, First>, "
                "First <= Cap, or Cap = 0)");
  return ok;
}
}  // namespace detail

// Every core rule on the values V{} of a strategy's policies (at most one static_assert fires:
// the checks stop at the first rule that fails).
template <class V>
constexpr bool check_all() {
  if constexpr (!detail::check_collective_topology<V>()) return false;
  else if constexpr (!detail::check_sharded_reduce_scatter<V>()) return false;
  else return detail::check_first_bucket_cap<V>();
}

}  // namespace autosync::rules
