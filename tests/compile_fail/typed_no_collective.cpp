// A collective is selected by the group's architecture policy; anything else names the slot.
// expect-error: autosync::exec::collective<Arch, Topo>: no collective for this architecture policy
#include <autosync/exec/collective.hpp>
using bad = autosync::exec::collective<autosync::comp::fp16, autosync::topo::ring>;
constexpr bool s = bad::segmented;
