// autosync/io/nccl_tests_json.hpp — the JSON report of nccl-tests (`-J FILE.json`, nccl-tests
// 2.17 and later), read into the same cost::nccl_tests::log as the text output; and
// load_nccl_tests, which reads either.
//
// The report (JSON_FILE_VERSION 3) is one object:
//
//   {"version": 3, "nccl_version": 22809, "args": [...], "env": [...],
//    "config": {"nthreads": 1, "ngpus": 1, ..., "devices": [{"rank": 0, "hostname": "node-a",
//               "device_info": "NVIDIA H100 80GB HBM3", ...}, ...]},
//    "results": [{"size": 1048576, "count": 262144, "type": "float", "redop": "sum",
//                 "root": "    -1", "out_of_place": {"time": 78.77, "alg_bw": 13.31,
//                 "bus_bw": 23.29, "nwrong": 0}, "in_place": {...}, ...}, ...], ...}
//
// Each result is a row: `time` (or `cpu_time`, with -C 1) in µs; an `out_of_place` of null (trace
// replay) takes the in-place figures. Keys this reader does not use (the per-iteration
// statistics, the environment) are ignored. `config.devices` gives the log's hardware (the first
// device_info) and its shape: hosts (distinct hostnames) and ranks (processes x threads x GPUs
// per thread). Errors name the file, the line and the field ("results[3].in_place.time").
#pragma once

#include <autosync/cost/nccl_tests_log.hpp>
#include <autosync/error.hpp>
#include <autosync/io/json/fields.hpp>
#include <autosync/io/json/text.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace autosync::io {

// The shape of the machine a JSON report ran on (0 when the report does not say).
struct nccl_tests_shape {
  int hosts = 0;  // distinct hostnames of config.devices
  int ranks = 0;  // processes x threads x GPUs per thread
};

}  // namespace autosync::io

// (in autosync::detail, beside jio: an autosync::io::detail would hide autosync::detail from the
// io/json readers' unqualified detail::jio)
namespace autosync::detail::nccl_json {

using json = nlohmann::json;

[[nodiscard]] inline double figure(const json& o, const std::string& f, std::string_view key) {
  const std::string fk = jio::member(f, key);
  const json& v = jio::require(o, f, std::string(key));
  if (!v.is_number()) throw error(fk, "must be a number, got " + jio::shown(v));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0.0) throw error(fk, "must be a finite non-negative number, got " + jio::shown(v));
  return x;
}

// One placement's figures: time (or cpu_time), alg_bw, bus_bw.
inline void placement(const json& o, const std::string& f, double& time_us, double& algbw, double& busbw) {
  jio::expect_object(o, f, "the figures of one placement");
  const std::string_view key = jio::find(o, "time") || !jio::find(o, "cpu_time") ? "time" : "cpu_time";
  time_us = figure(o, f, key);
  algbw = figure(o, f, "alg_bw");
  busbw = figure(o, f, "bus_bw");
  if (!(time_us > 0.0)) throw error(jio::member(f, key), "must be positive");
  if (time_us >= autosync::cost::nccl_tests::max_time_us) throw error(jio::member(f, key), "is 1000 s or more: not a collective's time");
  if (time_us < autosync::cost::nccl_tests::min_time_us) throw error(jio::member(f, key), "is under 1 ns: not a collective's time");
  if (const json* w = jio::find(o, "nwrong"); w && w->is_number() && w->get<double>() != 0.0)  // (-1, "N/A": not checked)
    if (!(w->is_number_integer() && w->get<std::int64_t>() < 0))
      throw error(jio::member(f, "nwrong"), "is " + jio::shown(*w) + ": nccl-tests found wrong results, not a timing to fit");
}

[[nodiscard]] inline std::int64_t count_of(const json& r, const std::string& f, std::string_view key) {
  const json& v = jio::require(r, f, std::string(key));
  if (!v.is_number_integer() && !v.is_number_unsigned()) throw error(jio::member(f, key), "must be a non-negative integer, got " + jio::shown(v));
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX) : v.get<std::int64_t>() < 0)
    throw error(jio::member(f, key), "must be a non-negative integer below 2^63, got " + jio::shown(v));
  return v.is_number_unsigned() ? static_cast<std::int64_t>(v.get<std::uint64_t>()) : v.get<std::int64_t>();
}

[[nodiscard]] inline autosync::cost::nccl_tests::log read(const json& j, io::nccl_tests_shape* shape) {
  jio::expect_object(j, "", "an nccl-tests JSON report");
  autosync::cost::nccl_tests::log out;
  autosync::cost::nccl_tests::section sec;
  const json& results = jio::require(j, "", "results");
  jio::expect_array(results, "results");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto f = jio::element("results", i);
    const json& r = results[i];
    jio::expect_object(r, f, "a result (one size)");
    autosync::cost::nccl_tests::row row;
    row.bytes = count_of(r, f, "size");
    if (row.bytes > autosync::cost::nccl_tests::max_bytes) throw error(jio::member(f, "size"), "is over 1 TiB: not a collective's size");
    row.count = count_of(r, f, "count");
    if (const json* v = jio::find(r, "type")) row.type = jio::read_string(*v, jio::member(f, "type"));
    if (const json* v = jio::find(r, "redop")) row.redop = jio::read_string(*v, jio::member(f, "redop"));
    if (const json* v = jio::find(r, "root")) {  // printed as "%6i": a padded string
      const auto fr = jio::member(f, "root");
      if (v->is_number_integer()) {
        row.root = v->get<std::int64_t>();
      } else {
        const std::string text = jio::read_string(*v, fr);  // trim views it: it must outlive the view
        if (!autosync::cost::nccl_tests::detail::parse_num(autosync::cost::nccl_tests::detail::trim(text), row.root))
          throw error(fr, "is not an integer: " + jio::shown(*v));
      }
    }
    const json* oop = jio::find(r, "out_of_place");
    const json* ip = jio::find(r, "in_place");
    const bool has_oop = oop && !oop->is_null(), has_ip = ip && !ip->is_null();
    if (!has_oop && !has_ip) throw error(f, "has neither out_of_place nor in_place figures");
    if (has_oop) placement(*oop, jio::member(f, "out_of_place"), row.time_us, row.algbw, row.busbw);
    if (has_ip) placement(*ip, jio::member(f, "in_place"), row.in_place_time_us, row.in_place_algbw, row.in_place_busbw);
    if (!has_oop) row.in_place_only();  // trace replay
    sec.rows.push_back(std::move(row));
  }
  if (!sec.rows.empty()) out.sections.push_back(std::move(sec));
  io::nccl_tests_shape sh;
  if (const json* c = jio::find(j, "config"); c && c->is_object()) {
    std::int64_t per_process = 1;  // ranks per process: threads x GPUs per thread
    for (const char* k : {"nthreads", "ngpus"})
      if (const json* v = jio::find(*c, k); v && v->is_number_integer() && v->get<std::int64_t>() > 0 && v->get<std::int64_t>() <= 1024)
        per_process *= v->get<std::int64_t>();
    const json* d = jio::find(*c, "devices");
    if (d && !d->is_array() && !d->is_null()) throw error(jio::member("config", "devices"), "must be an array of the ranks' devices");
    if (d && d->is_array() && !d->empty() && d->size() <= 1'000'000) {
      std::set<std::string> hosts;
      for (std::size_t k = 0; k < d->size(); ++k) {
        const json& e = (*d)[k];
        if (!e.is_object()) throw error(jio::member("config", jio::element("devices", k)), "must be an object (rank, hostname, device_info)");
        if (const json* h = jio::find(e, "hostname"); h && h->is_string()) hosts.insert(h->get<std::string>());
        if (const json* di = jio::find(e, "device_info"); di && di->is_string() && out.hw.empty()) out.hw = di->get<std::string>();
      }
      const auto ranks = static_cast<std::int64_t>(d->size()) * per_process;  // <= 1e6 x 2^20: no overflow
      if (ranks <= (std::int64_t{1} << 24) && !hosts.empty()) {  // else the shape stays unknown
        sh.hosts = static_cast<int>(hosts.size());
        sh.ranks = static_cast<int>(ranks);
      }
    }
  }
  if (const json* v = jio::find(j, "nccl_version"); v && v->is_number_integer())
    out.source = "nccl-tests JSON report, NCCL " + std::to_string(v->get<std::int64_t>());
  if (shape) *shape = sh;
  return out;
}

}  // namespace autosync::detail::nccl_json

namespace autosync::io {

// Parses the text of a JSON report; `file` names it in errors ("file:line: 'results[3].size': ...").
[[nodiscard]] inline cost::nccl_tests::log parse_nccl_tests_json(std::string_view text, const std::string& file = "<nccl-tests json>",
                                                                 nccl_tests_shape* shape = nullptr) {
  return autosync::detail::jio::parse_text(text, file, [&](const nlohmann::json& j) { return autosync::detail::nccl_json::read(j, shape); });
}

// Reads an nccl-tests log: the JSON report of -J (its first non-blank character is '{') or the
// text output (cost::nccl_tests::parse). Errors name the path. `shape`, when given, receives the
// JSON report's machine (zeros for a text log, which does not say it reliably).
[[nodiscard]] inline cost::nccl_tests::log load_nccl_tests(const std::string& path, nccl_tests_shape* shape = nullptr) {
  const std::string text = cost::nccl_tests::detail::read_file(path);
  if (cost::nccl_tests::is_json_report(text)) return parse_nccl_tests_json(text, path, shape);
  if (shape) *shape = {};
  return cost::nccl_tests::detail::parse_file_text(text, path);
}

}  // namespace autosync::io
