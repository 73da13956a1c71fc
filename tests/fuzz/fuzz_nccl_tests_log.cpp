// libFuzzer target: arbitrary bytes through cost::nccl_tests::parse (the output of nccl-tests' *_perf programs). See text_targets.hpp for the properties checked;
// only autosync::error may come out of the loader, and it is caught there.
#include "text_targets.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)autosync::fuzz::nccl_tests_log(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
