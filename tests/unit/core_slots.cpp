// registry/core.hpp: every core slot's slot_traits, exercised through the generic iteration the
// library uses (describe, JSON, hashing, emit, validation, the search's aspects). The loops run
// over slot_list, so a core slot added later is covered by the same assertions.
#include <autosync/exec/hash.hpp>
#include <autosync/io/json.hpp>
#include <autosync/registry/core.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/dispatch.hpp>
#include <autosync/strategy/emit.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

using namespace autosync;

namespace {

// One group per policy of every slot with a closed set, plus hand-picked values of the slots
// that carry numbers: each differs from the default group in exactly one slot.
std::vector<std::pair<std::string, group_desc>> one_slot_changes() {
  std::vector<std::pair<std::string, group_desc>> r;
  for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {
    using T = slot_traits<Slot>;
    if constexpr (requires { typename T::closed_set; }) {
      []<class... Ps>(type_list<Ps...>, auto& out) {
        auto one = [&]<class P>(std::type_identity<P>) {
          group_desc g;
          T::field(g) = P::value;
          out.emplace_back(std::string(Slot::name) + "=" + T::cpp_type(T::field(g)), g);
        };
        (one(std::type_identity<Ps>{}), ...);
      }(typename T::closed_set{}, r);
    }
  });
  auto add = [&](std::string what, auto set) {
    group_desc g;
    set(g);
    r.emplace_back(std::move(what), g);
  };
  add("partitioner=even<3,1>", [](group_desc& g) { g.partitioner = part::even<3, 1>::value; });
  add("partitioner=by_bytes", [](group_desc& g) { g.partitioner = part::by_bytes<4096000>::value; });
  add("placement=pinned<2>", [](group_desc& g) { g.placement = place::pinned<2>::value; });
  add("fusion=25MiB/1MiB", [](group_desc& g) { g.fusion = fuse::bucket_cap<26214400, 1048576>::value; });
  add("fusion=unbounded", [](group_desc& g) { g.fusion = fuse::unbounded::value; });
  return r;
}

}  // namespace

TEST_CASE("core slots: names, indices and the search order come from slot_list") {
  CHECK(core_slot_count == slot_list::size);
  CHECK(core_slot_names[core_slot_index<slot::architecture>] == "architecture");
  CHECK(core_slot_names[core_slot_index<slot::schedule>] == "schedule");
  // every slot exactly once among the search's aspects, architecture first (its moves also pick
  // the aspects only the new architecture reads)
  std::set<std::size_t> seen(core_slots_by_search_order.begin(), core_slots_by_search_order.end());
  CHECK(seen.size() == core_slot_count);
  CHECK(search::all_aspects[0] == search::aspect_of<slot::architecture>);
  CHECK(search::aspect_name(search::aspect_of<slot::topology>) == "topology");
  // the structural slots are those with a closed set, in slot_list order
  CHECK(std::is_same_v<structural_slots, type_list<slot::architecture, slot::replication, slot::topology, slot::compression, slot::schedule>>);
}

TEST_CASE("core slots: JSON, hash, emit and validation round-trip every one-slot change") {
  const auto base_hash = [] {
    exec::hasher h;
    exec::hash_into(h, group_desc{});
    return h.value();
  }();
  std::set<std::uint64_t> hashes{base_hash};
  std::size_t changed = 0;
  for (const auto& [what, g] : one_slot_changes()) {
    CAPTURE(what);
    validate_group(g, "g");
    // JSON: the written group reads back equal, and only its slots' keys are written
    const auto j = io::to_json(g);
    CHECK(j.size() == core_slot_count);
    CHECK(io::group_from_json(nlohmann::json::parse(j.dump())) == g);
    // hash: a value other than the default changes the fingerprint, and no two collide
    exec::hasher h;
    exec::hash_into(h, g);
    if (!(g == group_desc{})) {
      ++changed;
      CHECK(hashes.insert(h.value()).second);
    } else {
      CHECK(h.value() == base_hash);
    }
    // emit: one policy per core slot, in slot order, and the JSON key of a slot names its value
    const auto ps = detail::emit::policies(g);
    REQUIRE(ps.size() == core_slot_count);
    for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {
      CHECK(ps[core_slot_index<Slot>] == slot_traits<Slot>::cpp_type(slot_traits<Slot>::field(g)));
    });
  }
  CHECK(changed >= 20);
}

TEST_CASE("core slots: describe<S>() and visit<>() agree with the traits") {
  using S = strategy<arch::sharded, topo::hierarchical<topo::halving_doubling, topo::ring>, comp::bf16, sched::priority, part::even<2, 0>,
                     fuse::bucket_cap<1 << 20>>;
  constexpr group_desc g = describe<S>();
  static_assert(g.architecture == architecture_kind::sharded && g.schedule == schedule_kind::priority);
  static_assert(g.topology == topology_value{topology_kind::hierarchical, topology_kind::halving_doubling, topology_kind::ring});
  static_assert(g.partitioner.shards == 2 && g.fusion.cap_bytes == (1u << 20));
  // the runtime dispatch finds the same policies again for the structural slots
  const bool same = visit<>(g, [](auto t) {
    using V = typename decltype(t)::type;
    return std::is_same_v<typename V::topology, S::topology> && std::is_same_v<typename V::compression, S::compression> &&
           std::is_same_v<typename V::architecture, S::architecture> && std::is_same_v<typename V::schedule, S::schedule>;
  });
  CHECK(same);
}

TEST_CASE("core slots: a bad value names its slot's field") {
  group_desc g;
  g.partitioner = partitioner_value{partitioner_kind::even, 0, 0, 0};
  CHECK_THROWS_WITH(validate_group(g, "groups[1]"), "'groups[1].partitioner.shards': must be >= 1");
  g = group_desc{};
  g.placement = placement_value{placement_kind::pinned, -1};
  CHECK_THROWS_WITH(validate_group(g, "groups[0]"), "'groups[0].placement.server': must be >= 0");
  g = group_desc{};
  g.schedule = static_cast<schedule_kind>(7);
  CHECK_THROWS_WITH(validate_group(g, "groups[0]"), "'groups[0].schedule': unknown value");
  g = group_desc{};
  g.compression = compression_value{200};
  CHECK_THROWS_AS(validate_group(g, "groups[0]"), error);
  // JSON errors locate the slot's key and the part inside it
  CHECK_THROWS_WITH(static_cast<void>(io::group_from_json(nlohmann::json::parse(R"({"topology": {"kind": "hierarchical", "intra": "mesh"}})"))),
                    doctest::Contains("'topology.intra': unknown topology 'mesh'"));
  CHECK_THROWS_WITH(static_cast<void>(io::group_from_json(nlohmann::json::parse(R"({"fusion": {"cap_bytes": -1}})"))),
                    doctest::Contains("'fusion.cap_bytes'"));
}

TEST_CASE("core slots: every aspect's variants stay in its slot") {
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("local-4");
  const search::space sp(m, c);
  const group_desc g{};
  for (const auto a : sp.aspects()) {
    const auto i = static_cast<std::size_t>(a);
    if (i >= core_slot_count || a == search::aspect_of<slot::architecture>) continue;  // architecture moves also pick its dependents
    std::vector<group_desc> out;
    sp.variants(g, a, nullptr, out);
    for (const auto& v : out) {
      // only slot i differs from g
      std::size_t differing = 0, k = 0;
      for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) {
        if (!(slot_traits<Slot>::field(v) == slot_traits<Slot>::field(g))) differing += (k == i ? 0 : 1);
        ++k;
      });
      CHECK(differing == 0);
    }
  }
}
