// Replays the GBT fuzzers' seed corpus (tests/fuzz/corpus/{xgboost_json,lightgbm_text}/) through the
// loaders with the fuzzers' own property checks (tests/fuzz/gbt_targets.hpp), so builds without
// clang/libFuzzer exercise them too. Files named ok_* must be accepted, bad_* rejected.
#include "../fuzz/gbt_targets.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

namespace {

void replay(const std::string& target, const std::function<bool(std::string_view)>& check) {
  const auto dir = std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / target;
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir), dir.string());
  std::size_t n_ok = 0, n_bad = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    INFO(target, "/", name);
    bool accepted = false;
    try {
      accepted = check(ss.str());
    } catch (const std::exception& e) {
      FAIL_CHECK(e.what());
      continue;
    }
    if (name.rfind("ok_", 0) == 0) {
      CHECK(accepted);
      ++n_ok;
    } else if (name.rfind("bad_", 0) == 0) {
      CHECK_FALSE(accepted);
      ++n_bad;
    }
  }
  CHECK(n_ok >= 2);
  CHECK(n_bad >= 5);
}

}  // namespace

TEST_CASE("gbt fuzz corpus: xgboost_json") { replay("xgboost_json", autosync::fuzz::xgboost_json); }
TEST_CASE("gbt fuzz corpus: lightgbm_text") { replay("lightgbm_text", autosync::fuzz::lightgbm_text); }

TEST_CASE("gbt fuzz properties: the checks can fail") {
  // An error must name the source and, for LightGBM, a line inside the text.
  CHECK_THROWS_AS(autosync::fuzz::gbt_check_error("a\nb", autosync::gbt::model_error("other.txt", 1, "", "x"), "fuzz.txt", true),
                  autosync::fuzz::gbt_violation);
  CHECK_THROWS_AS(autosync::fuzz::gbt_check_error("a\nb", autosync::gbt::model_error("fuzz.txt", 3, "", "x"), "fuzz.txt", true),
                  autosync::fuzz::gbt_violation);
  CHECK_NOTHROW(autosync::fuzz::gbt_check_error("a\nb", autosync::gbt::model_error("fuzz.txt", 2, "", "x"), "fuzz.txt", true));
  // Anything but a model_error out of a loader is a violation.
  CHECK_THROWS_AS(autosync::fuzz::gbt_check("", "fuzz.txt", true,
                                            [](std::string_view, std::string_view) -> autosync::gbt::forest { throw std::out_of_range("x"); }),
                  autosync::fuzz::gbt_violation);
}
