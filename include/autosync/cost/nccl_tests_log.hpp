// autosync/cost/nccl_tests_log.hpp — read the output of NVIDIA's nccl-tests (*_perf programs).
//
// nccl-tests print one row per message size:
//
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//        1048576        262144     float     sum      -1    78.77   13.31   23.29      0    81.31   12.90   22.57      0
//                                                           |--- out-of-place ---|           |---- in-place ----|
//
// `parse` keeps the data rows and the comment lines that matter for calibration:
//   "# SOURCE: ..."  where the log was published      "# HW: ..."  the hardware
//   "# (X) title"    starts a new section (several runs in one file, as in
//                    tests/data/collectives/h100_1node_nvls_and_2node_ndr400_allreduce.txt)
// Every other line (banners, device lists, shell prompts, averages) is skipped. A line that
// starts with a number but is not a well-formed row is an error naming its line number.
// #wrong may be "N/A" (validation off). Older nccl-tests (before 2.10) print 12 columns, without
// `root`, and an "error" column in place of #wrong; both layouts are read. Lines prefixed by
// mpirun's --tag-output ("[1,0]<stdout>:") are read without the prefix. Used by the calibration test and benchmark, and by
// the learner that fits NCCL-style constants.
#pragma once

#include <autosync/error.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::cost::nccl_tests {

struct row {
  std::int64_t bytes = 0;     // size (B)
  std::int64_t count = 0;     // elements
  std::string type, redop;
  std::int64_t root = -1;
  double time_us = 0.0, algbw = 0.0, busbw = 0.0;                         // out-of-place
  double in_place_time_us = 0.0, in_place_algbw = 0.0, in_place_busbw = 0.0;
  [[nodiscard]] double seconds() const noexcept { return time_us * 1e-6; }
};

struct section {
  std::string title;          // "" for the rows before any "# (X)" line
  std::vector<row> rows;
};

struct log {
  std::string source;         // the "# SOURCE:" text (first line of it)
  std::string hw;             // the "# HW:" text
  std::vector<section> sections;  // only sections with rows
  [[nodiscard]] std::size_t rows() const noexcept {
    std::size_t n = 0;
    for (const auto& s : sections) n += s.rows.size();
    return n;
  }
};

namespace detail {
[[nodiscard]] inline std::vector<std::string_view> split_ws(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}
template <class T>
[[nodiscard]] inline bool parse_num(std::string_view s, T& v) {
  const auto* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), e, v);
  return ec == std::errc{} && p == e;
}
[[nodiscard]] inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
}  // namespace detail

// Parses the text of a log. Throws autosync::error("line N", ...) on a malformed data row.
[[nodiscard]] inline log parse(std::string_view text) {
  log out;
  section cur;
  auto flush = [&] {
    if (!cur.rows.empty()) out.sections.push_back(std::move(cur));
    cur = section{};
  };
  std::size_t lineno = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = nl == std::string_view::npos ? text : text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineno;
    auto t = detail::trim(line);
    if (t.size() > 1 && t.front() == '[') {  // mpirun --tag-output: "[job,rank]<stdout>:"
      const auto tag = t.find("]<std");
      const auto colon = tag == std::string_view::npos ? tag : t.find(':', tag);
      if (colon != std::string_view::npos) t = detail::trim(t.substr(colon + 1));
    }
    if (t.empty()) continue;
    if (t.front() == '#') {
      const auto body = detail::trim(t.substr(1));
      if (body.starts_with("SOURCE:") && out.source.empty()) out.source = std::string(detail::trim(body.substr(7)));
      else if (body.starts_with("HW:") && out.hw.empty()) out.hw = std::string(detail::trim(body.substr(3)));
      else if (body.size() >= 3 && body[0] == '(' && body[2] == ')') {
        flush();
        cur.title = std::string(body);
      }
      continue;
    }
    if (!(t.front() >= '0' && t.front() <= '9')) continue;  // banners, prompts
    const auto f = detail::split_ws(t);
    const std::string where = "line " + std::to_string(lineno);
    if (f.size() != 13 && f.size() != 12)
      throw error(where, "expected 13 columns of nccl-tests output (12 without root), got " + std::to_string(f.size()));
    const std::size_t o = f.size() == 13 ? 1 : 0;  // the root column
    row r;
    if (!detail::parse_num(f[0], r.bytes) || r.bytes < 0) throw error(where, "size is not a byte count: '" + std::string(f[0]) + "'");
    if (!detail::parse_num(f[1], r.count) || r.count < 0) throw error(where, "count is not an element count: '" + std::string(f[1]) + "'");
    r.type = std::string(f[2]);
    r.redop = std::string(f[3]);
    if (o == 1 && !detail::parse_num(f[4], r.root)) throw error(where, "root is not an integer: '" + std::string(f[4]) + "'");
    double* outs[6] = {&r.time_us, &r.algbw, &r.busbw, &r.in_place_time_us, &r.in_place_algbw, &r.in_place_busbw};
    const std::size_t cols[6] = {4 + o, 5 + o, 6 + o, 8 + o, 9 + o, 10 + o};
    for (int k = 0; k < 6; ++k)
      if (!detail::parse_num(f[cols[k]], *outs[k]) || !std::isfinite(*outs[k]) || *outs[k] < 0.0)  // from_chars takes "inf", "nan"
        throw error(where, "column " + std::to_string(cols[k] + 1) + " is not a finite non-negative number: '" + std::string(f[cols[k]]) + "'");
    if (!(r.time_us > 0.0)) throw error(where, "time must be positive");
    cur.rows.push_back(std::move(r));
  }
  flush();
  return out;
}

// Reads and parses a file. Throws autosync::error naming the path when it cannot be read.
[[nodiscard]] inline log load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(path, "cannot open nccl-tests log");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  try {
    return parse(text);
  } catch (const error& e) {
    throw error(path, e.what());  // "'path': 'line N': what"
  }
}

}  // namespace autosync::cost::nccl_tests
