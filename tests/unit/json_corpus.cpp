// Replays the fuzzers' seed corpus (tests/fuzz/corpus/<target>/) through the loaders with the
// fuzzers' own property checks (tests/fuzz/json_targets.hpp), so builds without clang/libFuzzer
// exercise them too. Files named ok_* must be accepted, bad_* rejected with a located error.
#include "../fuzz/json_targets.hpp"

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

std::size_t replay(const std::string& target, const std::function<bool(std::string_view)>& check) {
  const auto dir = std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / target;
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir), dir.string());
  std::size_t n_ok = 0, n_bad = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const auto name = entry.path().filename().string();
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    INFO(target, "/", name);
    bool accepted = false;
    try {
      accepted = check(text);
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
  // Every corpus holds both kinds of seed.
  CHECK(n_ok >= 2);
  CHECK(n_bad >= 5);
  return n_ok + n_bad;
}

}  // namespace

TEST_CASE("fuzz corpus: model_json") { CHECK(replay("model_json", autosync::fuzz::model_json) >= 10); }
TEST_CASE("fuzz corpus: cluster_json") { CHECK(replay("cluster_json", autosync::fuzz::cluster_json) >= 10); }
TEST_CASE("fuzz corpus: strategy_json") { CHECK(replay("strategy_json", autosync::fuzz::strategy_json) >= 10); }

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
