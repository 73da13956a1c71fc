// autosync/strategy/static_strategy.hpp — a whole strategy as types: what emit_header() writes.
//
// A header written by emit_header (emit.hpp) holds, in the user's namespace `ns`:
//
//   using group_0 = autosync::strategy<...>;  ...          one policy pack per group
//   using groups = autosync::type_list<group_0, ...>;
//   inline constexpr std::array<autosync::static_assignment, N> assignments{...};
//   inline constexpr std::string_view name = "...";
//
// so a trainer can instantiate its code for ns::group_i with zero runtime dispatch, and
// to_descriptor<ns::groups>(ns::assignments, ns::name) gives back the runtime strategy_desc
// (for the cost model, the plan, or to check that the header matches a strategy.json).
// This header is light (no Hana, no JSON): a generated header includes only it.
#pragma once

#include <autosync/policy/compression.hpp>
#include <autosync/policy/pack.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace autosync {

// One tensor's assignment, as a constant: a whole tensor to `group`, or (shard_groups not
// empty) even shards along split_axis, shard s to shard_groups[s].
struct static_assignment {
  std::string_view tensor;
  std::int32_t group = 0;
  std::int32_t split_axis = 0;
  std::span<const std::int32_t> shard_groups{};
};

namespace detail {
template <std::size_t I, class List>
struct type_at;
template <std::size_t I, class T, class... Ts>
struct type_at<I, type_list<T, Ts...>> : type_at<I - 1, type_list<Ts...>> {};
template <class T, class... Ts>
struct type_at<0, type_list<T, Ts...>> {
  using type = T;
};

template <class... Gs>
constexpr std::vector<group_desc> describe_all(type_list<Gs...>) {
  static_assert((StrategyType<Gs> && ...), "autosync::to_descriptor: every element of the group list must be an autosync::strategy<...>");
  return {describe<Gs>()...};
}
}  // namespace detail

// The compressor whose runtime id is I (its index in comp::all). Generated headers name
// compressors this way so that any registered compressor works, wherever its type lives.
template <std::size_t I>
using compression_at = typename detail::type_at<I, comp::all>::type;

// A whole strategy's group policies as one type: what an emitted header names `strategy_t`
// (using strategy_t = autosync::static_strategy<group_0, group_1, ...>). Group i is group<i>;
// exec::typed_executor<strategy_t, Backend> runs each group's buckets with the collective and
// codec of group<i>'s policies, with no runtime dispatch.
template <class... Groups>
struct static_strategy {
  static_assert((StrategyType<Groups> && ...),
                "autosync::static_strategy<Groups...>: every group must be an autosync::strategy<...> (a group's policy pack)");
  using groups = type_list<Groups...>;
  static constexpr std::size_t size = sizeof...(Groups);
  template <std::size_t I>
  using group = typename detail::type_at<I, groups>::type;
};

namespace detail {
template <class T>
struct is_static_strategy : std::false_type {};
template <class... Gs>
struct is_static_strategy<static_strategy<Gs...>> : std::true_type {};
}  // namespace detail

template <class S>
concept StaticStrategy = detail::is_static_strategy<S>::value;

// The runtime strategy a list of group types and a table of assignments stand for.
// Groups: a type_list of group types, or a static_strategy.
template <class Groups, std::size_t N>
[[nodiscard]] constexpr strategy_desc to_descriptor(const std::array<static_assignment, N>& assignments, std::string_view name = {}) {
  strategy_desc s;
  s.name = std::string(name);
  if constexpr (StaticStrategy<Groups>) s.groups = detail::describe_all(typename Groups::groups{});
  else s.groups = detail::describe_all(Groups{});
  s.assignments.reserve(N);
  for (const auto& a : assignments)
    s.assignments.push_back(assignment{std::string(a.tensor), a.group, a.split_axis,
                                       std::vector<std::int32_t>(a.shard_groups.begin(), a.shard_groups.end())});
  return s;
}

}  // namespace autosync
