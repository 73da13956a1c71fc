// hierarchical<Intra, Inter> takes flat topologies only.
// expect-error: autosync: topology hierarchical<Intra, Inter>: Intra must be ring, tree or halving_doubling
#include <autosync/policy/pack.hpp>
using namespace autosync;
using inner = topo::hierarchical<topo::ring, topo::ring>;
constexpr auto v = topo::hierarchical<inner, topo::ring>::value;
