// tests/fuzz/text_targets.hpp — the properties the fuzzers of the two line-based inputs check, shared
// with the unit test that replays their seed corpus (tests/unit/text_corpus.cpp):
//
//   nccl_tests_log   cost::nccl_tests::parse, the output of nccl-tests' *_perf programs that the
//                    calibration and the learned collective correction read (a text that opens
//                    with '{': io::parse_nccl_tests_json, the JSON report of -J)
//   trial_records    learn::parse_records, the JSON Lines trial records the learner trains on
//                    (each line holds a model, a cluster and a strategy: the three JSON loaders
//                    once more, under the record's own checks)
//
// For any bytes:
//   1. The loader returns a value or throws autosync::error; anything else escaping (nlohmann
//      exceptions, std::out_of_range, bad_alloc, a sanitizer report) is a bug.
//   2. The error names a line inside the text: "'line N': ..." for a log ("fuzz.json:<line>: ..."
//      for a JSON report); for records
//      "fuzz.json:<line>[:<col>]: ...", 1 <= line <= lines of the input.
//   3. What is accepted is usable: every row of a log has finite, non-negative figures, a
//      positive time, and no more rows than lines; every record is valid, and its written line
//      reads back to the same line (writing is stable). Records parsed with skip_truncated_tail
//      skip at most the last line, and only when the strict read rejects it.
// A violated property throws fuzz::violation, which libFuzzer reports as a crash and doctest as a
// failure.
#pragma once

#include "json_targets.hpp"

#include <autosync/cost/nccl_tests_log.hpp>
#include <autosync/io/nccl_tests_json.hpp>
#include <autosync/learn/records.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

namespace autosync::fuzz {

inline std::size_t line_count(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

// An nccl-tests log error is error("line N", ...): N must be a line of the input.
inline void check_log_error(std::string_view text, const error& e) {
  const std::string& f = e.field();
  require(f.rfind("line ", 0) == 0 && f.size() > 5, "log error without a line: " + std::string(e.what()));
  std::size_t line = 0;
  for (std::size_t i = 5; i < f.size(); ++i) {
    require(f[i] >= '0' && f[i] <= '9' && line < 100000000, "log error with a malformed line: " + std::string(e.what()));
    line = line * 10 + static_cast<std::size_t>(f[i] - '0');
  }
  require(line >= 1 && line <= line_count(text), "log error past the input's lines: " + std::string(e.what()));
}

inline bool nccl_tests_log(std::string_view text) {
  cost::nccl_tests::log lg;
  // a JSON report (-J) where io::load_nccl_tests would read one: errors name the file and line
  const bool report = cost::nccl_tests::is_json_report(text);
  try {
    io::nccl_tests_shape shape;
    lg = report ? io::parse_nccl_tests_json(text, std::string(file_name), &shape) : cost::nccl_tests::parse(text);
    require(shape.hosts >= 0 && shape.ranks >= 0 && (shape.hosts == 0 || shape.ranks > 0), "an impossible shape is accepted");
  } catch (const error& e) {
    if (report) check_error(text, e);
    else check_log_error(text, e);
    return false;
  }
  require(report || lg.rows() <= line_count(text), "more rows than lines");
  for (const auto& s : lg.sections) {
    require(!s.rows.empty(), "an empty section is kept");
    for (const auto& r : s.rows) {
      require(r.bytes >= 0 && r.count >= 0, "a negative size or count is accepted");
      for (const double v : {r.time_us, r.algbw, r.busbw, r.in_place_time_us, r.in_place_algbw, r.in_place_busbw})
        require(std::isfinite(v) && v >= 0.0, "a non-finite or negative figure is accepted: " + std::to_string(v));
      require(r.time_us > 0.0 && std::isfinite(r.seconds()), "a row without a positive time is accepted");
    }
  }
  return true;
}

inline bool trial_records(std::string_view text) {
  const std::string file(file_name);
  bool strict_ok = false;
  std::size_t strict_records = 0;
  try {
    const auto res = learn::parse_records(text, file);
    require(res.skipped.empty(), "a strict read skipped a line");
    for (const auto& r : res.records) {
      const std::string line = learn::to_line(r);
      std::string again;
      try {
        again = learn::to_line(learn::parse_record(line, "written.jsonl"));
      } catch (const error& e) {
        throw violation("fuzz property violated: accepted, but its written line is rejected: " + std::string(e.what()) + "\n" + line);
      }
      require(again == line, "writing a record is not stable:\n" + line + again);
    }
    strict_ok = true;
    strict_records = res.records.size();
  } catch (const error& e) {
    check_error(text, e);
  }
  // The tolerant read: the same records, or one fewer with the unterminated last line skipped.
  try {
    const auto res = learn::parse_records(text, file, learn::read_options{.skip_truncated_tail = true});
    require(res.skipped.size() <= 1, "more than the last line skipped");
    if (strict_ok) require(res.skipped.empty() && res.records.size() == strict_records, "the tolerant read differs from the strict one");
    if (!res.skipped.empty()) {
      require(!text.empty() && text.back() != '\n', "a line with its newline was skipped as truncated");
      require(static_cast<std::size_t>(res.skipped.front().line) == line_count(text), "a line other than the last was skipped");
    }
  } catch (const error& e) {
    require(!strict_ok, "the tolerant read rejects what the strict one accepts");
    check_error(text, e);
  }
  return strict_ok;
}

}  // namespace autosync::fuzz
