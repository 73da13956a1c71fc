// libFuzzer target: arbitrary bytes through learn::parse_collective_cases (the manifest that pairs
// nccl-tests logs with clusters). See json_targets.hpp for the properties checked; only
// autosync::error may come out of the parser, and it is caught there.
#include "json_targets.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)autosync::fuzz::collective_cases_json(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
