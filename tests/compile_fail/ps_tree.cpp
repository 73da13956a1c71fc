// A cross-slot rule (registry/rules.hpp): a parameter-server group has no collective topology.
// expect-error: autosync::strategy: slot 'topology' = tree is not valid with slot 'architecture' = parameter_server
// max-errors: 1
#include <autosync/policy/pack.hpp>
using bad = autosync::strategy<autosync::arch::parameter_server, autosync::topo::tree>;
bad* p = nullptr;
