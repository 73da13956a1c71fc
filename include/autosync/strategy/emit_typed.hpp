// autosync/strategy/emit_typed.hpp — the typed section of a header written by emit_header
// (strategy/emit.hpp): the whole strategy as one type.
//
//   // The whole strategy as one type ...
//   using strategy_t = autosync::static_strategy<group_0, group_1, group_2>;
//
// With it, a trainer runs the searched strategy with every bucket's collective and codec chosen
// at compile time (exec/typed_executor.hpp):
//
//   auto pl = autosync::exec::compile_plan<ns::strategy_t>(model, cluster, ns::assignments, layout);
//   autosync::exec::typed_executor<ns::strategy_t, autosync::exec::mpi_backend> ex(comms, model, pl);
#pragma once

#include <cstddef>
#include <string>

namespace autosync::detail::emit {

// The section for a strategy of `groups` groups named group_0 .. group_{groups-1}.
[[nodiscard]] inline std::string typed_section(std::size_t groups) {
  std::string h;
  h += "// The whole strategy as one type: autosync::exec::compile_plan<strategy_t>(model, cluster, assignments, layout)\n";
  h += "// and autosync::exec::typed_executor<strategy_t, Backend> run every group's buckets with the collective and\n";
  h += "// codec of its policies, chosen at compile time (exec/typed_executor.hpp).\n";
  h += "using strategy_t = autosync::static_strategy<";
  for (std::size_t i = 0; i < groups; ++i) h += (i ? ", group_" : "group_") + std::to_string(i);
  h += ">;\n\n";
  return h;
}

}  // namespace autosync::detail::emit
