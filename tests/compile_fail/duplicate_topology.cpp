// A slot named twice is rejected with a message that names the slot.
// expect-error: autosync::strategy: two policies for slot 'topology'
#include <autosync/policy/pack.hpp>
using bad = autosync::strategy<autosync::topo::ring, autosync::arch::all_reduce, autosync::topo::tree>;
bad::topology* p = nullptr;
