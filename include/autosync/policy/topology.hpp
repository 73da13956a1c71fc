// autosync/policy/topology.hpp — slot `topology`: the communication pattern of a collective.
//
//   ring               p-1 reduce-scatter steps then p-1 all-gather steps, n/p bytes each
//   tree               double binary tree (NCCL's shape): reduce up, broadcast down, pipelined
//                      (on MPI the executor's trees run one after the other, blocking chunks)
//   halving_doubling   Rabenseifner: recursive halving reduce-scatter + doubling all-gather
//   hierarchical<I,O>  intra-node reduce-scatter with I, inter-node all-reduce of 1/g with O
//                      between nodes, intra-node all-gather with I (Horovod/NCCL style)
//
//   hierarchical, 2 nodes x 2 ranks, S bytes:
//     node0: r0 r1 --RS(I)--> r0 owns S/2[0], r1 owns S/2[1]
//     node1: r2 r3 --RS(I)--> r2 owns S/2[0], r3 owns S/2[1]
//     inter: r0<->r2 AR(O) on S/2[0];  r1<->r3 AR(O) on S/2[1]
//     node0/node1: --AG(I)--> everyone holds S
// Read by all_reduce and sharded groups.
#pragma once

#include <autosync/policy/slots.hpp>

#include <array>
#include <cstdint>

namespace autosync {

enum class topology_kind : std::uint8_t { ring, tree, halving_doubling, hierarchical };
template <>
struct enum_names<topology_kind> {
  static constexpr std::array<std::string_view, 4> names{"ring", "tree", "halving_doubling", "hierarchical"};
};

struct topology_value {
  topology_kind kind = topology_kind::ring;
  topology_kind intra = topology_kind::ring;  // hierarchical only (flat kinds keep ring)
  topology_kind inter = topology_kind::ring;  // hierarchical only
  friend constexpr bool operator==(const topology_value&, const topology_value&) = default;
};

namespace topo {
struct ring {
  using slot = slot::topology;
  static constexpr std::string_view name = "ring";
  static constexpr topology_value value{topology_kind::ring};
};
struct tree {
  using slot = slot::topology;
  static constexpr std::string_view name = "tree";
  static constexpr topology_value value{topology_kind::tree};
};
struct halving_doubling {
  using slot = slot::topology;
  static constexpr std::string_view name = "halving_doubling";
  static constexpr topology_value value{topology_kind::halving_doubling};
};

template <class P>
concept FlatTopology = TopologyPolicy<P> && (P::value.kind != topology_kind::hierarchical);

template <class Intra, class Inter>
struct hierarchical {
  static_assert(FlatTopology<Intra>, "autosync: topology hierarchical<Intra, Inter>: Intra must be ring, tree or halving_doubling");
  static_assert(FlatTopology<Inter>, "autosync: topology hierarchical<Intra, Inter>: Inter must be ring, tree or halving_doubling");
  using slot = slot::topology;
  using intra = Intra;
  using inter = Inter;
  static constexpr std::string_view name = "hierarchical";
  static constexpr topology_value value{topology_kind::hierarchical, Intra::value.kind, Inter::value.kind};
};

using flat = type_list<ring, tree, halving_doubling>;
// Every topology policy: the flat ones, then hierarchical<I, O> for every flat I and O.
using all = type_list<ring, tree, halving_doubling,                                                            //
                      hierarchical<ring, ring>, hierarchical<ring, tree>, hierarchical<ring, halving_doubling>,  //
                      hierarchical<tree, ring>, hierarchical<tree, tree>, hierarchical<tree, halving_doubling>,  //
                      hierarchical<halving_doubling, ring>, hierarchical<halving_doubling, tree>,
                      hierarchical<halving_doubling, halving_doubling>>;
}  // namespace topo

template <>
struct default_policy<slot::topology> { using type = topo::ring; };


// JSON: "ring" | "tree" | "halving_doubling" | {"kind": "hierarchical", "intra": ..., "inter": ...}
template <>
struct slot_traits<slot::topology> {
  using value_type = topology_value;
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.topology; }
  template <class W>
  static void write(W& w, const topology_value& t) {
    if (t.kind != topology_kind::hierarchical) return w.name(name_of(t.kind));
    w.kind("hierarchical");
    w.set("intra", name_of(t.intra));
    w.set("inter", name_of(t.inter));
  }
  template <class R>
  static topology_value read(R& r) {
    topology_value t;
    if (r.bare()) {
      t.kind = r.template enum_name<topology_kind>("topology");
      if (t.kind == topology_kind::hierarchical)
        r.fail("'hierarchical' needs its parts: {\"kind\": \"hierarchical\", \"intra\": \"ring\", \"inter\": \"tree\"}");
      return t;
    }
    r.expect_object("a topology: a name or {\"kind\": \"hierarchical\", \"intra\": ..., \"inter\": ...}");
    t.kind = r.template kind_enum<topology_kind>("topology");
    if (t.kind == topology_kind::hierarchical) {
      r.keys({"kind", "intra", "inter"}, "for topology 'hierarchical'");
      if (r.has("intra")) t.intra = r.template enum_at<topology_kind>("intra", "topology");
      if (r.has("inter")) t.inter = r.template enum_at<topology_kind>("inter", "topology");
    } else {
      r.keys({"kind"}, "for topology '" + std::string(name_of(t.kind)) + "'");
    }
    return t;
  }
  template <class H>
  static constexpr void hash(H& h, const topology_value& t) noexcept {
    h.u64(static_cast<std::uint64_t>(t.kind)).u64(static_cast<std::uint64_t>(t.intra)).u64(static_cast<std::uint64_t>(t.inter));
  }
  [[nodiscard]] static std::string cpp_type(const topology_value& t) {
    auto q = [](topology_kind k) { return "autosync::topo::" + std::string(name_of(k)); };
    if (t.kind == topology_kind::hierarchical) return q(t.kind) + "<" + q(t.intra) + ", " + q(t.inter) + ">";
    return q(t.kind);
  }
  static void validate(const topology_value& t, const std::string& f) {
    const auto nt = enum_names<topology_kind>::names.size();
    if (static_cast<std::size_t>(t.kind) >= nt || static_cast<std::size_t>(t.intra) >= nt || static_cast<std::size_t>(t.inter) >= nt)
      throw error(f, "unknown value");
    if (t.kind == topology_kind::hierarchical) {
      if (t.intra == topology_kind::hierarchical) throw error(f + ".intra", "must be ring, tree or halving_doubling");
      if (t.inter == topology_kind::hierarchical) throw error(f + ".inter", "must be ring, tree or halving_doubling");
    } else if (t.intra != topology_kind::ring || t.inter != topology_kind::ring) {
      throw error(f, "intra/inter are only for hierarchical");
    }
  }
  static constexpr int search_order = 1;
  using closed_set = topo::all;  // every value is one of these policies (strategy/dispatch.hpp)
};

}  // namespace autosync
