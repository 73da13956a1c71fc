// A rule within the fusion slot (registry/rules.hpp): the first bucket's cap must not exceed the cap.
// expect-error: autosync::strategy: slot 'fusion' = bucket_cap<Cap, First> with First > Cap is not valid
// max-errors: 1
#include <autosync/policy/pack.hpp>
using bad = autosync::strategy<autosync::fuse::bucket_cap<1024, 4096>>;
bad* p = nullptr;
