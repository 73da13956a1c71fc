// Replays the fuzzers' seed corpus (tests/fuzz/corpus/<target>/) through the loaders with the
// fuzzers' own property checks (tests/fuzz/json_targets.hpp), so builds without clang/libFuzzer
// exercise them too. Files named ok_* must be accepted, bad_* rejected with a located error.
#include "../fuzz/json_targets.hpp"

#include "../common/corpus_replay.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using autosync::testing::replay_corpus;

TEST_CASE("fuzz corpus: model_json") { CHECK(replay_corpus("model_json", autosync::fuzz::model_json) >= 10); }
TEST_CASE("fuzz corpus: cluster_json") { CHECK(replay_corpus("cluster_json", autosync::fuzz::cluster_json) >= 10); }
TEST_CASE("fuzz corpus: strategy_json") { CHECK(replay_corpus("strategy_json", autosync::fuzz::strategy_json) >= 10); }
TEST_CASE("fuzz corpus: collective_cases_json") {
  CHECK(replay_corpus("collective_cases_json", autosync::fuzz::collective_cases_json) >= 8);
}

TEST_CASE("fuzz properties: a seed valid against the fuzz model passes both strategy checks") {
  const auto& m = autosync::fuzz::strategy_model();
  const auto& c = autosync::fuzz::strategy_cluster();
  const auto dir = std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "strategy_json";
  const auto s = autosync::io::load_strategy_file(dir / "ok_documented.json", m, c);
  CHECK(s.groups.size() == 4);
  CHECK(s.assignments.size() == 4);
  // The checker rejects a message without a location.
  CHECK_THROWS_AS(autosync::fuzz::check_error("{}", autosync::error("x", "no location")), autosync::fuzz::violation);
  CHECK_NOTHROW(autosync::fuzz::check_error("{\n}", autosync::file_error("fuzz.json", 2, 1, "x", "located")));
  CHECK_THROWS_AS(autosync::fuzz::check_error("{}", autosync::file_error("fuzz.json", 2, 1, "x", "past the end")),
                  autosync::fuzz::violation);
}
