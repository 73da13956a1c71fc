// Replays a fuzzer's seed corpus (tests/fuzz/corpus/<target>/) through a property check in the
// unit suite, so builds without clang/libFuzzer exercise the loaders too. Files named ok_* must
// be accepted, bad_* rejected; every corpus holds both kinds. Returns the number of seeds checked.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>

#ifndef AUTOSYNC_SOURCE_DIR
#define AUTOSYNC_SOURCE_DIR "."
#endif

namespace autosync::testing {

inline std::size_t replay_corpus(const std::string& target, const std::function<bool(std::string_view)>& check) {
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
  CHECK(n_ok >= 2);
  CHECK(n_bad >= 5);
  return n_ok + n_bad;
}

}  // namespace autosync::testing
