// autosync/policy/schedule.hpp — slot `schedule`: the order in which ready buckets go out.
//
//   fifo      in the order they become ready (back layers first)
//   priority  among ready buckets, the one holding the front-most layer first
//             (ByteScheduler: the next forward pass needs front layers first)
#pragma once

#include <autosync/policy/slots.hpp>

#include <array>
#include <cstdint>

namespace autosync {

enum class schedule_kind : std::uint8_t { fifo, priority };
template <>
struct enum_names<schedule_kind> {
  static constexpr std::array<std::string_view, 2> names{"fifo", "priority"};
};

namespace sched {
struct fifo {
  using slot = slot::schedule;
  static constexpr std::string_view name = "fifo";
  static constexpr schedule_kind value = schedule_kind::fifo;
};
struct priority {
  using slot = slot::schedule;
  static constexpr std::string_view name = "priority";
  static constexpr schedule_kind value = schedule_kind::priority;
};
using all = type_list<fifo, priority>;
}  // namespace sched

template <>
struct default_policy<slot::schedule> { using type = sched::fifo; };


template <>
struct slot_traits<slot::schedule> : enum_slot_traits<schedule_kind, slot::schedule> {
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.schedule; }
  [[nodiscard]] static std::string cpp_type(schedule_kind v) { return policy_in("sched", v); }
  using closed_set = sched::all;  // every value is one of these policies (strategy/dispatch.hpp)
  static constexpr int search_order = 4;
};

}  // namespace autosync
