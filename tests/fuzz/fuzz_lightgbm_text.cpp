// libFuzzer target: arbitrary bytes through the GBT model loader for LightGBM text. See gbt_targets.hpp for
// the properties checked; only gbt::model_error may come out of the loader, and it is caught there.
#include "gbt_targets.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)autosync::fuzz::lightgbm_text(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
