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
// #wrong may be "N/A" (validation off). The columns of a row follow the table's header line
// ("#  size  count  type  redop  root  time ..."), which the versions print differently:
//   - before 2.13: "error" in place of #wrong, and only the leading columns the collective has
//     (all_reduce: size count type redop; all_gather: size count type; broadcast: ... type root);
//   - `-I 1` (2.19, per-iteration timing): i_min i_max i_p99 i_cv% after each #wrong;
//   - `-S 1` (timestamps): the date and time of the row after the in-place columns;
//   - `-C 1`: "cputime" in place of "time" (read as the row's time);
//   - a row whose out-of-place columns are blank (trace replay: 30 or more blanks after the
//     root column) has the in-place figures only, and takes them for both.
// A section title ("# (B) ...") or a header this reader does not know resets the layout to the
// default: without a header line a row has 13 columns, or 12 without root. Lines prefixed by
// mpirun's --tag-output ("[1,0]<stdout>:"), MPICH's -prepend-rank ("[0] ") or Slurm's srun
// --label ("0: ") are read without the prefix. The JSON report of `-J` is read by io/nccl_tests_json.hpp (io::load_nccl_tests reads
// either). Used by the calibration test and benchmark, and by the learner that fits NCCL-style
// constants.
#pragma once

#include <autosync/error.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace autosync::cost::nccl_tests {

// What a row may hold and still be a measurement: a size of at most 1 TiB per rank, a time below
// 1000 s, and (where the log counts them) no wrong results. Beyond them a row is an error that
// names its line or field, not a point to fit.
inline constexpr std::int64_t max_bytes = std::int64_t{1} << 40;
inline constexpr double max_time_us = 1e9;
inline constexpr double min_time_us = 1e-3;  // 1 ns: nccl-tests' own floor is about a microsecond

struct row {
  std::int64_t bytes = 0;     // size (B)
  std::int64_t count = 0;     // elements
  std::string type, redop;
  std::int64_t root = -1;
  double time_us = 0.0, algbw = 0.0, busbw = 0.0;                         // out-of-place
  double in_place_time_us = 0.0, in_place_algbw = 0.0, in_place_busbw = 0.0;
  [[nodiscard]] double seconds() const noexcept { return time_us * 1e-6; }
  // A row with the in-place figures only (trace replay): they stand for the row's.
  void in_place_only() noexcept {
    time_us = in_place_time_us;
    algbw = in_place_algbw;
    busbw = in_place_busbw;
  }
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

// Where a data row's figures are, as the table's header line says (or the defaults without one).
struct layout {
  int redop_at = 3;     // the redop column (-1: none; before 2.13, all_gather, broadcast, ... had none)
  int root_at = 4;      // the root column (-1: none)
  std::size_t lead = 5; // size count type [redop] [root]
  int per_iter = 0;     // columns after each #wrong (-I 1: i_min i_max i_p99 i_cv%)
  int trailing = 0;     // tokens after the in-place columns (-S 1: date and time)
  bool wrong_count = true;      // the #wrong columns count wrong results (before 2.13: "error", the largest error)
  std::size_t header_line = 0;  // the header line it was read from (0: the defaults)
  [[nodiscard]] std::size_t block() const noexcept { return 4 + static_cast<std::size_t>(per_iter); }  // time algbw busbw #wrong [...]
  [[nodiscard]] std::size_t columns() const noexcept { return lead + 2 * block() + static_cast<std::size_t>(trailing); }
};

// Whether a comment line's tokens (after '#') start the column header: "size count type ...".
[[nodiscard]] inline bool is_header(const std::vector<std::string_view>& h) {
  return h.size() >= 3 && h[0] == "size" && h[1] == "count" && h[2] == "type";
}

// The layout a column header's tokens describe (false: not one this reader knows). The leading
// columns are read by name: 2.13 and later print all five, earlier versions only those their
// collective has (all_gather: size count type; broadcast: ... type root).
[[nodiscard]] inline bool header_layout(const std::vector<std::string_view>& h, layout& out) {
  if (!is_header(h)) return false;
  auto is_time = [](std::string_view t) { return t == "time" || t == "cputime"; };
  auto is_wrong = [](std::string_view t) { return t == "#wrong" || t == "error"; };
  layout l;
  l.redop_at = l.root_at = -1;
  std::size_t i = 3;
  if (i < h.size() && h[i] == "redop") l.redop_at = static_cast<int>(i++);
  if (i < h.size() && h[i] == "root") l.root_at = static_cast<int>(i++);
  l.lead = i;
  if (i + 4 > h.size() || !is_time(h[i]) || h[i + 1] != "algbw" || h[i + 2] != "busbw" || !is_wrong(h[i + 3])) return false;
  std::size_t j = i + 4;
  while (j < h.size() && !is_time(h[j])) ++j;  // the per-iteration columns, up to the in-place time
  if (j + 4 > h.size() || h[j + 1] != "algbw" || h[j + 2] != "busbw" || !is_wrong(h[j + 3])) return false;
  l.per_iter = static_cast<int>(j - i - 4);
  l.wrong_count = h[i + 3] == "#wrong";
  const std::size_t end = j + 4 + static_cast<std::size_t>(l.per_iter);
  if (end > h.size()) return false;
  if (end < h.size()) {
    if (end + 1 != h.size() || h[end] != "timestamp") return false;
    l.trailing = 2;  // "%Y-%m-%d %H:%M:%S"
  }
  out = l;
  return true;
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
  detail::layout lay;  // the defaults until a header line says otherwise
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = nl == std::string_view::npos ? text : text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineno;
    auto t = detail::trim(line);
    if (t.size() > 1 && t.front() == '[') {  // mpirun --tag-output: "[job,rank]<stdout>:"; MPICH -prepend-rank: "[rank] "
      const auto tag = t.find("]<std");
      const auto colon = tag == std::string_view::npos ? tag : t.find(':', tag);
      if (colon != std::string_view::npos) {
        t = detail::trim(t.substr(colon + 1));
      } else if (const auto close = t.find(']'); close != std::string_view::npos && close > 1 && close < 16 &&
                                                  t.find_first_not_of("0123456789,", 1) == close) {
        t = detail::trim(t.substr(close + 1));
      }
    } else if (!t.empty() && t.front() >= '0' && t.front() <= '9') {  // srun --label: "12: "
      std::size_t d = 0;
      while (d < t.size() && t[d] >= '0' && t[d] <= '9') ++d;
      if (d < t.size() && t[d] == ':') t = detail::trim(t.substr(d + 1));
    }
    if (t.empty()) continue;
    if (t.front() == '#') {
      const auto body = detail::trim(t.substr(1));
      const auto tokens = detail::split_ws(body);
      if (detail::is_header(tokens)) {  // a header this reader does not know leaves the defaults
        lay = detail::layout{};
        if (detail::header_layout(tokens, lay)) lay.header_line = lineno;
        continue;
      }
      if (tokens.size() >= 2 && tokens[1] == "(elements)") continue;  // the header's units: "(B) (elements) (us) ...
      if (body.starts_with("SOURCE:") && out.source.empty()) out.source = std::string(detail::trim(body.substr(7)));
      else if (body.starts_with("HW:") && out.hw.empty()) out.hw = std::string(detail::trim(body.substr(3)));
      else if (body.size() >= 3 && body[0] == '(' && body[2] == ')') {
        flush();
        cur.title = std::string(body);
        lay = detail::layout{};  // a new section: its own header, if any, says its columns
      }
      continue;
    }
    if (!(t.front() >= '0' && t.front() <= '9')) continue;  // banners, prompts
    const auto f = detail::split_ws(t);
    const std::string where = "line " + std::to_string(lineno);
    detail::layout l = lay;
    if (l.header_line == 0) {
      if (f.size() != 13 && f.size() != 12)
        throw error(where, "expected 13 columns of nccl-tests output (12 without root), got " + std::to_string(f.size()));
      l.root_at = f.size() == 13 ? 4 : -1;
      l.lead = f.size() == 13 ? 5 : 4;
    }
    // the columns the header describes, or the in-place ones alone: a trace-replay row prints
    // its out-of-place block as 32 blanks
    const std::size_t lead = l.lead;
    const bool both = f.size() == l.columns();
    const bool blank_block = !both && f.size() == l.columns() - l.block() && f.size() > lead &&
                             f[lead].data() - (f[lead - 1].data() + f[lead - 1].size()) >= 30;
    if (!both && !blank_block)
      throw error(where, "expected " + std::to_string(l.columns()) + " columns, as the header on line " + std::to_string(l.header_line) +
                             " says, got " + std::to_string(f.size()));
    row r;
    if (!detail::parse_num(f[0], r.bytes) || r.bytes < 0) throw error(where, "size is not a byte count: '" + std::string(f[0]) + "'");
    if (!detail::parse_num(f[1], r.count) || r.count < 0) throw error(where, "count is not an element count: '" + std::string(f[1]) + "'");
    r.type = std::string(f[2]);
    if (l.redop_at >= 0) r.redop = std::string(f[static_cast<std::size_t>(l.redop_at)]);
    if (l.root_at >= 0 && !detail::parse_num(f[static_cast<std::size_t>(l.root_at)], r.root))
      throw error(where, "root is not an integer: '" + std::string(f[static_cast<std::size_t>(l.root_at)]) + "'");
    const std::size_t in_place = both ? lead + l.block() : lead;  // the in-place block's first column
    double* outs[6] = {&r.time_us, &r.algbw, &r.busbw, &r.in_place_time_us, &r.in_place_algbw, &r.in_place_busbw};
    const std::size_t cols[6] = {lead, lead + 1, lead + 2, in_place, in_place + 1, in_place + 2};
    for (int k = both ? 0 : 3; k < 6; ++k)
      if (!detail::parse_num(f[cols[k]], *outs[k]) || !std::isfinite(*outs[k]) || *outs[k] < 0.0)  // from_chars takes "inf", "nan"
        throw error(where, "column " + std::to_string(cols[k] + 1) + " is not a finite non-negative number: '" + std::string(f[cols[k]]) + "'");
    if (!both) r.in_place_only();
    if (!(r.time_us > 0.0)) throw error(where, "time must be positive");
    if (!(r.in_place_time_us > 0.0)) throw error(where, "the in-place time must be positive");  // as a JSON report's
    if (r.bytes > max_bytes) throw error(where, "size " + std::string(f[0]) + " bytes is over 1 TiB: not a collective's size");
    if (r.time_us >= max_time_us || r.in_place_time_us >= max_time_us)
      throw error(where, "a time of " + std::string(f[r.time_us >= max_time_us ? cols[0] : cols[3]]) + " us is 1000 s or more: not a collective's time");
    if (r.time_us < min_time_us || r.in_place_time_us < min_time_us)
      throw error(where, "a time of " + std::string(f[r.time_us < min_time_us ? cols[0] : cols[3]]) + " us is under 1 ns: not a collective's time");
    if (l.wrong_count)  // "N/A" when nccl-tests did not check
      for (const std::size_t w : {both ? lead + 3 : std::size_t{0}, in_place + 3}) {
        std::int64_t wrong = 0;
        if (w != 0 && detail::parse_num(f[w], wrong) && wrong != 0)
          throw error(where, "#wrong is " + std::string(f[w]) + ": nccl-tests found wrong results, not a timing to fit");
      }
    cur.rows.push_back(std::move(r));
  }
  flush();
  return out;
}

// Whether a log's text is the JSON report of nccl-tests -J (its first non-blank character is '{').
[[nodiscard]] inline bool is_json_report(std::string_view text) noexcept {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

namespace detail {
// A log file's text. Throws autosync::error naming the path when it cannot be read.
[[nodiscard]] inline std::string read_file(const std::string& path) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec)) throw error(path, "is a directory, not an nccl-tests log");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(path, "cannot open nccl-tests log");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// parse() of a file's text, its errors naming the path: "'path': 'line N': what".
[[nodiscard]] inline log parse_file_text(const std::string& text, const std::string& path) {
  try {
    return parse(text);
  } catch (const error& e) {
    throw error(path, e.what());
  }
}
}  // namespace detail

// Reads and parses a text log. Throws autosync::error naming the path when it cannot be read, or
// when it is a JSON report (io::load_nccl_tests reads both).
[[nodiscard]] inline log load(const std::string& path) {
  const std::string text = detail::read_file(path);
  if (is_json_report(text))
    throw error(path, "is a JSON report (nccl-tests -J): read it with io::load_nccl_tests (autosync/io/nccl_tests_json.hpp)");
  return detail::parse_file_text(text, path);
}

}  // namespace autosync::cost::nccl_tests
