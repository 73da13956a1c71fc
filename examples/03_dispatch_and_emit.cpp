// 03 — from a searched descriptor to types: run-time dispatch and an emitted header.
//
// The policy types select the code that runs a group's buckets: exec::collective<Arch, Topo>
// (exec/collective.hpp: ring, tree, halving-doubling, hierarchical<I, O>, sharded, parameter
// server, sparse all-gather) and exec::codec<Comp> (exec/codec.hpp: none, fp16, bf16).
// exec::executor visits each group's descriptor once (visit<Slots...>, Boost.Hana: one template
// instantiation per combination, no virtual calls) and runs host_bucket_runner::run_as<Arch,
// Topo, Comp> for its buckets; emit_header writes the whole strategy as type aliases plus
// `strategy_t`, which exec::typed_executor<strategy_t, Backend> runs with no dispatch at all.
#include <autosync/exec/codec.hpp>
#include <autosync/exec/collective.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/strategy/dispatch.hpp>
#include <autosync/strategy/emit.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <cstdio>
#include <string>

using namespace autosync;

// What the executor instantiates per group, read from the same selection: the collective and the
// codec its run_as<Arch, Topo, Comp> calls (exec/host_buckets.hpp).
template <StrategyType S>
std::string describe_kernel() {
  using coll = exec::collective<typename S::architecture, typename S::topology>;
  using cod = exec::codec_of<typename S::compression>;
  std::string r = "collective<" + std::string(S::architecture::name) + ", " + std::string(S::topology::name);
  if constexpr (S::topology::value.kind == topology_kind::hierarchical)
    r += "<" + std::string(S::topology::intra::name) + ", " + std::string(S::topology::inter::name) + ">";
  r += ">";
  if constexpr (coll::segmented) r += " (runs on the tensors where they lie)";
  r += ", codec<" + std::string(S::compression::name) + ">";
  if constexpr (cod::compresses) r += " (wire " + std::string(name_of(cod::wire)) + ")";
  return r;
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
  const auto at = header.find("using strategy_t");
  std::printf("\nemit_header wrote %zu bytes; its first lines:\n%.*s...\n", header.size(), 600, header.c_str());
  if (at != std::string::npos)
    std::printf("\nand the typed plan (exec::typed_executor<resnet50_on_dgx_a100_x2::strategy_t, exec::mpi_backend>):\n%s\n",
                header.substr(at, header.find('\n', at) - at).c_str());
}
