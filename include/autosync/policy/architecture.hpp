// autosync/policy/architecture.hpp — slot `architecture`: how a gradient is aggregated.
//
//   all_reduce        every rank ends with the sum (collective on one communicator)
//   parameter_server  push to the shard's server, server sums, pull back (AutoDist, BytePS)
//   sharded           reduce-scatter, each rank owns 1/p of the sum, then all-gather (ZeRO-2)
//   all_gather        every rank gathers every rank's touched rows of a sparse gradient and sums
//                     them locally (Horovod's path for sparse/IndexedSlices gradients)
#pragma once

#include <autosync/policy/slots.hpp>

#include <array>
#include <cstdint>

namespace autosync {

enum class architecture_kind : std::uint8_t { all_reduce, parameter_server, sharded, all_gather };
template <>
struct enum_names<architecture_kind> {
  static constexpr std::array<std::string_view, 4> names{"all_reduce", "parameter_server", "sharded", "all_gather"};
};

namespace arch {
struct all_reduce {
  using slot = slot::architecture;
  static constexpr std::string_view name = "all_reduce";
  static constexpr architecture_kind value = architecture_kind::all_reduce;
};
struct parameter_server {
  using slot = slot::architecture;
  static constexpr std::string_view name = "parameter_server";
  static constexpr architecture_kind value = architecture_kind::parameter_server;
};
struct sharded {
  using slot = slot::architecture;
  static constexpr std::string_view name = "sharded";
  static constexpr architecture_kind value = architecture_kind::sharded;
};
struct all_gather {
  using slot = slot::architecture;
  static constexpr std::string_view name = "all_gather";
  static constexpr architecture_kind value = architecture_kind::all_gather;
};
using all = type_list<all_reduce, parameter_server, sharded, all_gather>;
}  // namespace arch

template <>
struct default_policy<slot::architecture> { using type = arch::all_reduce; };


template <>
struct slot_traits<slot::architecture> : enum_slot_traits<architecture_kind, slot::architecture> {
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.architecture; }
  [[nodiscard]] static std::string cpp_type(architecture_kind v) { return policy_in("arch", v); }
  using closed_set = arch::all;  // every value is one of these policies (strategy/dispatch.hpp)
  static constexpr int search_order = 0;
};

}  // namespace autosync
