// 03 — from a searched descriptor to types: run-time dispatch and an emitted header.
//
// visit<Slots...> turns a group's runtime descriptor into the instantiated policy types (one
// template instantiation per combination, no virtual calls); emit_header writes the whole
// strategy as type aliases so a trainer can instantiate it with no dispatch at all.
#include <autosync/search/optimizer.hpp>
#include <autosync/strategy/dispatch.hpp>
#include <autosync/strategy/emit.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <cstdio>
#include <string>

using namespace autosync;

// A "kernel" templated on the policies: what an executor instantiates per group.
template <StrategyType S>
std::string describe_kernel() {
  std::string r = std::string(S::architecture::name) + " / " + std::string(S::topology::name);
  if constexpr (S::topology::value.kind == topology_kind::hierarchical)
    r += "<" + std::string(S::topology::intra::name) + "," + std::string(S::topology::inter::name) + ">";
  return r + " / " + std::string(S::compression::name);
}

int main() {
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("dgx-a100-x2");
  const auto r = search::optimize(m, c);
  for (std::size_t i = 0; i < r.strategy.groups.size(); ++i) {
    const auto k = visit<slot::architecture, slot::topology, slot::compression>(
        r.strategy.groups[i], [](auto t) { return describe_kernel<typename decltype(t)::type>(); });
    std::printf("group %zu runs %s\n", i, k.c_str());
  }
  const std::string header = emit_header(r.strategy, "resnet50_on_dgx_a100_x2");
  std::printf("\nemit_header wrote %zu bytes; its first lines:\n%.*s...\n", header.size(), 600, header.c_str());
}
