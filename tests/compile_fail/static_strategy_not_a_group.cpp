// A static strategy holds group policy packs (strategy<...>), not policies.
// expect-error: autosync::static_strategy<Groups...>: every group must be an autosync::strategy<...>
#include <autosync/strategy/static_strategy.hpp>
using bad = autosync::static_strategy<autosync::strategy<autosync::topo::tree>, autosync::topo::ring>;
constexpr auto n = bad::size;
