// Replays the seed corpus of the line-based fuzzers (tests/fuzz/corpus/{nccl_tests_log,trial_records}/)
// through the loaders with the fuzzers' own property checks (tests/fuzz/text_targets.hpp), so builds
// without clang/libFuzzer exercise them too. Files named ok_* must be accepted, bad_* rejected.
#include "../fuzz/text_targets.hpp"

#include "../common/corpus_replay.hpp"

#include <doctest/doctest.h>

#include <string>

using autosync::testing::replay_corpus;

TEST_CASE("text fuzz corpus: nccl_tests_log") { CHECK(replay_corpus("nccl_tests_log", autosync::fuzz::nccl_tests_log) >= 10); }
TEST_CASE("text fuzz corpus: trial_records") { CHECK(replay_corpus("trial_records", autosync::fuzz::trial_records) >= 10); }

TEST_CASE("text fuzz properties: the checks can fail") {
  using autosync::fuzz::check_log_error;
  using autosync::fuzz::violation;
  CHECK_NOTHROW(check_log_error("a\nb", autosync::error("line 2", "x")));
  CHECK_THROWS_AS(check_log_error("a\nb", autosync::error("line 3", "x")), violation);
  CHECK_THROWS_AS(check_log_error("a\nb", autosync::error("line 0", "x")), violation);
  CHECK_THROWS_AS(check_log_error("a\nb", autosync::error("x")), violation);
  // from_chars reads "inf" and "nan": a log row with them is rejected, naming the line and column
  const std::string row = "     1048576        262144     float     sum      -1    inf   13.31   23.29      0    81.31   12.90   22.57      0\n";
  try {
    (void)autosync::cost::nccl_tests::parse("# header\n" + row);
    FAIL("an infinite time was accepted");
  } catch (const autosync::error& e) {
    CHECK(e.field() == "line 2");
    CHECK(std::string(e.what()).find("column 6 is not a finite non-negative number: 'inf'") != std::string::npos);
  }
  // A truncated last record is an error of the strict read, skipped by the tolerant one.
  CHECK_FALSE(autosync::fuzz::trial_records("{\"version\":1,\"mod"));
}
