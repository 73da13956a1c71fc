// tests/fuzz/gbt_targets.hpp — the properties the GBT model-loader fuzzers check, shared with the
// unit test that replays their seed corpus (tests/unit/gbt_corpus.cpp).
//
// For any bytes:
//   1. gbt::parse_xgboost_json / parse_lightgbm_text either return a forest or throw
//      gbt::model_error; anything else escaping (nlohmann exceptions, std::out_of_range,
//      bad_alloc from a declared count, a sanitizer report, a hang in a cyclic tree) is a bug.
//   2. The error names the source: "fuzz.json: ..." or, for the line-based LightGBM format,
//      "fuzz.txt:<line>: ..." with 1 <= line <= lines of the input.
//   3. An accepted forest evaluates every row without reading out of bounds (ASan checks), the
//      batch prediction equals the row-by-row one bit for bit, and emit_header writes it.
// A violated property throws fuzz::violation, which libFuzzer reports as a crash and doctest as a
// failure.
#pragma once

#include <autosync/gbt/emit.hpp>
#include <autosync/gbt/lightgbm.hpp>
#include <autosync/gbt/xgboost.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::fuzz {

struct gbt_violation : std::logic_error {
  using std::logic_error::logic_error;
};

inline void gbt_require(bool ok, const std::string& what) {
  if (!ok) throw gbt_violation("fuzz property violated: " + what);
}

// Rows made of the interesting values and of the input's own bytes.
inline void gbt_check_forest(const gbt::forest& f, std::string_view text) {
  const std::size_t m = f.num_features();
  if (m > 4096) return;  // a declared feature count may be huge; rows that long add nothing
  const float special[] = {0.0f, -0.0f, 1e-36f, -1e-35f, 1.0f, -1.0f, 0.5f, 1e30f, -1e30f, std::nanf("")};
  const std::size_t n = 7;
  std::vector<float> rows(n * m);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto b = text.empty() ? 0u : static_cast<unsigned char>(text[i % text.size()]);
    rows[i] = (i % 3 == 0) ? special[(b + i) % std::size(special)] : static_cast<float>(static_cast<int>(b) - 128) / 16.0f;
  }
  // Also every threshold exactly, so the boundaries are walked.
  const auto th = f.threshold();
  for (std::size_t i = 0; i < std::min<std::size_t>(th.size(), rows.size()); ++i) rows[i] = th[i];
  std::vector<float> batch(n), margins(n);
  f.predict(rows, n, batch);
  f.predict_margin(rows, n, margins);
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<const float> row(rows.data() + i * m, m);
    gbt_require(std::bit_cast<std::uint32_t>(f.predict(row)) == std::bit_cast<std::uint32_t>(batch[i]), "batch and single-row predictions differ");
    gbt_require(std::bit_cast<std::uint32_t>(f.predict_margin(row)) == std::bit_cast<std::uint32_t>(margins[i]),
                "batch and single-row margins differ");
  }
  if (f.num_trees() > 0) gbt_require(gbt::emit_header(f, "fuzzed").find("fuzzed{") != std::string::npos, "emit_header wrote no forest");
}

inline void gbt_check_error(std::string_view text, const gbt::model_error& e, std::string_view source, bool lines) {
  const std::string_view w = e.what();
  gbt_require(e.source() == source && w.substr(0, source.size() + 1) == std::string(source) + ":", "error without the source: " + std::string(w));
  if (!lines) return;
  const auto n_lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  gbt_require(e.line() >= 1 && e.line() <= n_lines, "error without a valid line: " + std::string(w));
}

template <class Parse>
bool gbt_check(std::string_view text, std::string_view source, bool lines, Parse&& parse) {
  try {
    const gbt::forest f = parse(text, source);
    gbt_check_forest(f, text);
    return true;
  } catch (const gbt::model_error& e) {
    gbt_check_error(text, e, source, lines);
    return false;
  } catch (const gbt_violation&) {
    throw;
  } catch (const std::exception& e) {
    throw gbt_violation(std::string("fuzz property violated: not a gbt::model_error: ") + e.what());
  }
}

inline bool xgboost_json(std::string_view text) {
  return gbt_check(text, "fuzz.json", false, [](std::string_view t, std::string_view s) { return gbt::parse_xgboost_json(t, s); });
}
inline bool lightgbm_text(std::string_view text) {
  return gbt_check(text, "fuzz.txt", true, [](std::string_view t, std::string_view s) { return gbt::parse_lightgbm_text(t, s); });
}

}  // namespace autosync::fuzz
