// strategy/dispatch.hpp: runtime descriptors reach the instantiated policy types.
#include <autosync/strategy/dispatch.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {
using namespace autosync;

// Every valid value of each structural slot, built from the runtime enums (not from the type
// lists dispatch.hpp enumerates), so a policy missing from a closed set is caught here.
std::vector<topology_value> every_topology() {
  std::vector<topology_value> v;
  const topology_kind flat[] = {topology_kind::ring, topology_kind::tree, topology_kind::halving_doubling};
  for (auto k : flat) v.push_back({k});
  for (auto i : flat)
    for (auto o : flat) v.push_back({topology_kind::hierarchical, i, o});
  return v;
}
template <class E>
std::vector<E> every_enum() {
  std::vector<E> v;
  for (std::size_t i = 0; i < enum_names<E>::names.size(); ++i) v.push_back(static_cast<E>(i));
  return v;
}
std::vector<compression_id> every_compression() {
  std::vector<compression_id> v;
  for (std::size_t i = 0; i < compression_registry.size(); ++i) v.push_back(static_cast<compression_id>(i));
  return v;
}

}  // namespace

TEST_CASE("dispatch: closed set sizes") {
  CHECK(closed_set_size<slot::architecture> == 4);
  CHECK(closed_set_size<slot::replication> == 2);
  CHECK(closed_set_size<slot::topology> == 12);  // 3 flat + 3 x 3 hierarchical
  CHECK(closed_set_size<slot::compression> == 3);
  CHECK(closed_set_size<slot::schedule> == 2);
  CHECK(every_topology().size() == closed_set_size<slot::topology>);
}

TEST_CASE("dispatch: visit_slot picks the instantiated type") {
  group_desc g;
  g.topology = {topology_kind::hierarchical, topology_kind::ring, topology_kind::tree};
  const bool hit = visit_slot<slot::topology>(g, [](auto t) {
    return std::is_same_v<typename decltype(t)::type, topo::hierarchical<topo::ring, topo::tree>>;
  });
  CHECK(hit);
  g.compression = comp::bf16::value;
  int calls = 0;
  visit_slot<slot::compression>(g, [&](auto t) {  // void visitors work too
    ++calls;
    CHECK(std::is_same_v<typename decltype(t)::type, comp::bf16>);
  });
  CHECK(calls == 1);
  // A visitor returning a reference gets the reference back.
  std::string names[2] = {"fifo", "priority"};
  g.schedule = schedule_kind::priority;
  std::string& r = visit_slot<slot::schedule>(g, [&](auto t) -> std::string& {
    return names[static_cast<int>(decltype(t)::type::value)];
  });
  CHECK(&r == &names[1]);
}

TEST_CASE("dispatch: every topology maps to a distinct type with the same descriptor") {
  std::set<std::string> seen;
  for (const auto& t : every_topology()) {
    group_desc g;
    g.topology = t;
    const auto back = visit_slot<slot::topology>(g, [](auto ty) {
      using T = typename decltype(ty)::type;
      static_assert(TopologyPolicy<T>);
      return T::value;
    });
    CHECK(back == t);
    seen.insert(std::string(name_of(t.kind)) + std::string(name_of(t.intra)) + std::string(name_of(t.inter)));
  }
  CHECK(seen.size() == 12);
}

TEST_CASE("dispatch: visit over all structural slots reproduces every descriptor") {
  std::size_t n = 0, rejected = 0;
  for (auto a : every_enum<architecture_kind>())
    for (auto r : every_enum<replication_kind>())
      for (const auto& t : every_topology())
        for (auto c : every_compression())
          for (auto s : every_enum<schedule_kind>()) {
            group_desc g;
            g.architecture = a;
            g.replication = r;
            g.topology = t;
            g.compression = c;
            g.schedule = s;
            // numeric slots stay in the descriptor; they do not reach the type
            g.partitioner = {partitioner_kind::even, 4, 1, 0};
            g.fusion = {1024, 512};
            // a combination that breaks a cross-slot rule has no strategy type: an error, as validate_group
            if (rules::for_each_failure(g, [](auto) {}) != 0) {
              CHECK_THROWS_WITH(visit<>(g, [](auto ty) { return describe<typename decltype(ty)::type>(); }),
                                doctest::Contains("'topology'"));
              ++rejected;
              continue;
            }
            const group_desc d = visit<>(g, [](auto ty) {
              using S = typename decltype(ty)::type;
              static_assert(StrategyType<S>);
              return describe<S>();
            });
            CHECK(d.architecture == a);
            CHECK(d.replication == r);
            CHECK(d.topology == t);
            CHECK(d.compression == c);
            CHECK(d.schedule == s);
            // the unnamed slots take their defaults in the type
            CHECK(d.partitioner == partitioner_value{});
            CHECK(d.placement == placement_value{});
            CHECK(d.fusion == fusion_value{});
            ++n;
          }
  // parameter_server / all_gather with the 11 topologies other than ring, sharded with tree or
  // hierarchical<tree, *>: (2 x 11 + 4) x 2 replications x 3 compressors x 2 schedules
  CHECK(rejected == (2 * 11 + 4) * 2 * 3 * 2);
  CHECK(n + rejected == 4 * 2 * 12 * 3 * 2);
}

TEST_CASE("dispatch: visit over chosen slots, any order, builds the normalized strategy") {
  group_desc g;
  g.architecture = architecture_kind::sharded;
  g.topology = {topology_kind::hierarchical, topology_kind::halving_doubling, topology_kind::ring};
  g.compression = comp::fp16::value;
  const bool same = visit<slot::topology, slot::architecture>(g, [](auto ty) {
    using S = typename decltype(ty)::type;
    return std::is_same_v<S, strategy<arch::sharded, topo::hierarchical<topo::halving_doubling, topo::ring>>>;
  });
  CHECK(same);
  // compression was not named: the type keeps comp::none although the descriptor says fp16
  const auto c = visit<slot::architecture>(g, [](auto ty) { return describe<typename decltype(ty)::type>().compression; });
  CHECK(c == comp::none::value);
}

TEST_CASE("dispatch: a value without a policy is an error naming the slot") {
  group_desc g;
  g.topology = {topology_kind::hierarchical, topology_kind::hierarchical, topology_kind::ring};
  try {
    visit_slot<slot::topology>(g, [](auto) {});
    FAIL("no error");
  } catch (const error& e) {
    CHECK(e.field() == "topology");
    CHECK(std::string(e.what()) == "'topology': no topology policy has the value hierarchical<hierarchical, ring>");
  }
  g = group_desc{};
  g.compression = 200;
  CHECK_THROWS_WITH(visit<>(g, [](auto) { return 0; }), "'compression': no compression policy has the value compressor id 200");
  g = group_desc{};
  g.architecture = static_cast<architecture_kind>(9);
  CHECK_THROWS_WITH(visit<slot::architecture>(g, [](auto) { return 0; }), "'architecture': no architecture policy has the value ? (9)");
}
