// autosync/policy/topology.hpp — slot `topology`: the communication pattern of a collective.
//
//   ring               p-1 reduce-scatter steps then p-1 all-gather steps, n/p bytes each
//   tree               double binary tree (NCCL): reduce up, broadcast down, pipelined
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
}  // namespace topo

template <>
struct default_policy<slot::topology> { using type = topo::ring; };

}  // namespace autosync
