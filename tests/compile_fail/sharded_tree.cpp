// A cross-slot rule (registry/rules.hpp): a sharded group needs a reduce-scatter, which tree is not.
// expect-error: autosync::strategy: slot 'topology' = tree is not valid with slot 'architecture' = sharded
// max-errors: 1
#include <autosync/policy/pack.hpp>
using bad = autosync::strategy<autosync::topo::tree, autosync::arch::sharded>;
bad* p = nullptr;
