// A type that is not a policy is rejected at the entry point, with one error and nothing after it.
// expect-error: autosync::strategy: an argument is not a policy
// max-errors: 1
#include <autosync/policy/pack.hpp>
struct not_a_policy {};
using bad = autosync::strategy<autosync::topo::ring, not_a_policy>;
bad* p = nullptr;
