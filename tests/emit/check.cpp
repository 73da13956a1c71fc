// tests/emit/check.cpp — compiled against the header emit_generate wrote (emitted_strategy.hpp):
// the types must stand for exactly the sample strategy, at compile time and at run time.
#include "emitted_strategy.hpp"
#include "sample.hpp"

#include <cstdio>
#include <type_traits>

namespace s = emitted::sample;
using namespace autosync;

// The aliases are the policy packs themselves (normalized), so code can be instantiated on them.
static_assert(std::is_same_v<s::group_0, strategy<topo::hierarchical<topo::ring, topo::tree>, comp::fp16,
                                                  fuse::bucket_cap<26214400, 1048576>, sched::priority>>);
static_assert(std::is_same_v<s::group_1::partitioner, part::even<4, 1>>);
static_assert(std::is_same_v<s::group_1::placement, place::pinned<1>>);
static_assert(std::is_same_v<s::group_3::fusion, fuse::unbounded>);
static_assert(describe<s::group_0>() == emit_sample::group0);
static_assert(describe<s::group_1>() == emit_sample::group1);
static_assert(describe<s::group_2>() == emit_sample::group2);
static_assert(describe<s::group_3>() == emit_sample::group3);
static_assert(s::groups::size == 4);
static_assert(std::is_same_v<s::strategy_t, static_strategy<s::group_0, s::group_1, s::group_2, s::group_3>>);
static_assert(std::is_same_v<s::strategy_t::group<3>, s::group_3> && s::strategy_t::size == 4);
static_assert(s::assignments.size() == 5);
static_assert(s::assignments[2].shard_groups.size() == 2 && s::assignments[2].shard_groups[1] == 3);
static_assert(s::assignments[4].split_axis == 1);

int main() {
  const strategy_desc rebuilt = to_descriptor<s::groups>(s::assignments, s::name);
  if (!(to_descriptor<s::strategy_t>(s::assignments, s::name) == rebuilt)) {
    std::fprintf(stderr, "emit round trip: to_descriptor<strategy_t> differs from to_descriptor<groups>\n");
    return 1;
  }
  const strategy_desc expected = emit_sample::make();
  if (!(rebuilt == expected)) {
    std::fprintf(stderr, "emit round trip: the descriptor rebuilt from the emitted types differs from the strategy\n");
    std::fprintf(stderr, "  name: '%s' vs '%s'; groups %zu vs %zu; assignments %zu vs %zu\n", rebuilt.name.c_str(), expected.name.c_str(),
                 rebuilt.groups.size(), expected.groups.size(), rebuilt.assignments.size(), expected.assignments.size());
    return 1;
  }
  std::printf("emit round trip: %zu groups, %zu assignments rebuilt from types\n", rebuilt.groups.size(), rebuilt.assignments.size());
  return 0;
}
