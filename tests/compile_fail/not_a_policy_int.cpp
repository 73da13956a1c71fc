// A non-policy argument such as int gives one short error (no cascade from the other checks).
// expect-error: autosync::strategy: an argument is not a policy
// max-errors: 1
#include <autosync/policy/pack.hpp>
using bad = autosync::strategy<autosync::topo::ring, int>;
bad* p = nullptr;
