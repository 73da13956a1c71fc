// autosync/policy/replication.hpp — slot `replication`: local aggregation before the network.
//
//   none    every rank talks to the servers itself
//   local   ranks of a node first sum inside the node; one copy per node crosses the network
//           (AutoDist's local_replication / a PS reduction destination per host)
// Read by parameter_server groups; collectives get the same effect from topology hierarchical.
#pragma once

#include <autosync/policy/slots.hpp>

#include <array>
#include <cstdint>

namespace autosync {

enum class replication_kind : std::uint8_t { none, local };
template <>
struct enum_names<replication_kind> {
  static constexpr std::array<std::string_view, 2> names{"none", "local"};
};

namespace repl {
struct none {
  using slot = slot::replication;
  static constexpr std::string_view name = "none";
  static constexpr replication_kind value = replication_kind::none;
};
struct local {
  using slot = slot::replication;
  static constexpr std::string_view name = "local";
  static constexpr replication_kind value = replication_kind::local;
};
using all = type_list<none, local>;
}  // namespace repl

template <>
struct default_policy<slot::replication> { using type = repl::none; };


template <>
struct slot_traits<slot::replication> : enum_slot_traits<replication_kind, slot::replication> {
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.replication; }
  [[nodiscard]] static std::string cpp_type(replication_kind v) { return policy_in("repl", v); }
  using closed_set = repl::all;  // every value is one of these policies (strategy/dispatch.hpp)
  static constexpr int search_order = 6;
};

}  // namespace autosync
