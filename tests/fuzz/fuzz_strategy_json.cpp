// libFuzzer target: arbitrary bytes through autosync::parse_strategy. See json_targets.hpp for the
// properties checked; only autosync::error may come out of the parser, and it is caught there.
#include "json_targets.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)autosync::fuzz::strategy_json(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
