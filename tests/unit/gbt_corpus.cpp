// Replays the GBT fuzzers' seed corpus (tests/fuzz/corpus/{xgboost_json,lightgbm_text}/) through the
// loaders with the fuzzers' own property checks (tests/fuzz/gbt_targets.hpp), so builds without
// clang/libFuzzer exercise them too. Files named ok_* must be accepted, bad_* rejected.
#include "../fuzz/gbt_targets.hpp"

#include "../common/corpus_replay.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using autosync::testing::replay_corpus;

TEST_CASE("gbt fuzz corpus: xgboost_json") { replay_corpus("xgboost_json", autosync::fuzz::xgboost_json); }
TEST_CASE("gbt fuzz corpus: lightgbm_text") { replay_corpus("lightgbm_text", autosync::fuzz::lightgbm_text); }

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
