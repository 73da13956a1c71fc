// tests/registry/check.cpp — compiles the header registry_unit --emit wrote (ctest registry.emit):
// the registered types it names exist, and it rebuilds the strategy it was emitted from.
#include "ext.hpp"
#include "emitted_registry.hpp"

#include <autosync/io/json.hpp>

#include <cstdio>

static_assert(std::is_same_v<emitted::registry::group_1::compression, regtest::fixed32<8>>);
static_assert(std::is_same_v<emitted::registry::group_1::get<regtest::prescale>, regtest::prescale_by<4>>);

int main() {
  const auto s = autosync::to_descriptor<emitted::registry::groups>(emitted::registry::assignments, emitted::registry::name);
  const auto back = autosync::io::parse_strategy(autosync::io::to_json_text(s));
  if (!(back == s) || s.groups.size() != 2 || s.groups[1].ext.size() != 1) {
    std::puts("the emitted header does not rebuild the strategy");
    return 1;
  }
  return 0;
}
