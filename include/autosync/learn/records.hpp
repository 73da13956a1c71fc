// autosync/learn/records.hpp — trial records: what one real run of a strategy measured.
//
// `autosync run` (examples/cli/run.cpp) executes a strategy on MPI ranks and appends one
// record to a JSON Lines file; the learned correction trains on such files.
//
//   autosync run ──> rank 0 ──append_record()──> trials.jsonl ──read_records()──> learn
//                                                 one compact JSON object per line
//
// A record (one line; shown here wrapped):
//
//   {"version": 1,
//    "model":    {"zoo": "resnet50", "scale": 1}          a zoo model (make_model_scaled), or
//              | {"name": ..., "tensors": [...]}            the model JSON of io/json.hpp
//    "cluster":  {<cluster JSON of io/json.hpp>, "ranks_per_node": 2}
//                                                           the cluster given, plus the layout that ran
//    "strategy": {<strategy JSON of io/json.hpp>},
//    "settings": {"warmup": 2, "compute_scale": 0, "seed": 1},      plus "pack": "always" | "never"
//                                                           when the run overrode the default packing
//    "iterations": [                                        the measured iterations (warm-up excluded)
//       {"sync_s": 1.2e-3, "exposed_s": 4e-4, "iteration_s": 2e-3,     max over the ranks
//        "ranks": {"sync_s": [...], "exposed_s": [...], "iteration_s": [...]}},  one entry per rank
//       ...],
//    "predicted": {"iteration_s": 2.1e-3, "exposed_s": 3e-4},           cost::estimate's figures
//    "environment": {"hostname": "h", "mpi_library": "Open MPI v4.1.4, ...", "ranks": 2,
//                    "thread_level": "MPI_THREAD_MULTIPLE", "compiler": "GCC 12.2.0",
//                    "autosync_version": "0.1.0", "timestamp": "2024-05-01T12:00:00Z"},
//    "exchange_notes": [{"bucket": 3, "iteration": 99, "key": "accordion.level", "value": 1}, ...]}
//                                                           optional: what compressors' exchanges
//                                                           decided (exec/exchange_note.hpp)
//
// Times are seconds. Per iteration and rank (exec::iteration_timing): sync_s is the time the
// communication thread ran buckets, exposed_s the time from the last ready() until the last
// bucket finished, iteration_s the wall time of the whole iteration (simulated forward and
// backward compute included). The top-level figures of an iteration are the maxima over the
// ranks (the slowest rank bounds a synchronous step); reading checks that they are.
//
// Every key is required except "settings" (defaults: 0, 0, 0, and "pack" absent: the executor's
// default, exec::packing::automatic; `autosync run --pack` writes the others). Unknown keys are errors, like
// everywhere in io/json.hpp, so a misspelt field is never silently ignored.
//
// Appending is crash-safe in the JSON Lines sense: append_record() formats the whole line first
// and hands it to the kernel with one write() on a file opened with O_APPEND, so concurrent
// writers interleave whole lines and a crash leaves at most one truncated last line.
//
// Reading (parse_records / read_records) reports problems like a compiler:
//
//   trials.jsonl:3: 'iterations[1].ranks.sync_s': has 3 entries, environment.ranks is 2
//   trials.jsonl:7:41: syntax error while parsing object - unexpected end of input; ...
//
// A last line without its newline that does not parse is a truncated write: an error by
// default (naming its line), skipped and listed in read_result::skipped when the caller sets
// read_options::skip_truncated_tail. Blank lines are ignored.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/exchange_note.hpp>
#include <autosync/exec/executor_options.hpp>
#include <autosync/io/json.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/zoo/models.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace autosync::learn {

inline constexpr int record_version = 1;

// The model that ran: a zoo name and scale (compact), or the whole model inline.
struct model_source {
  std::string zoo;     // zoo model name; empty: the record carries `spec` inline
  double scale = 1.0;  // zoo::make_model_scaled factor (zoo form only)
  model_spec spec;     // the model itself (built from the zoo when a record is read)

  [[nodiscard]] static model_source from_zoo(std::string name, double scale = 1.0) {
    model_source m;
    m.spec = zoo::make_model_scaled(name, scale);
    m.zoo = std::move(name);
    m.scale = scale;
    return m;
  }
  [[nodiscard]] static model_source inline_model(model_spec spec) {
    model_source m;
    m.spec = std::move(spec);
    return m;
  }
};

// One measured iteration: the maxima over the ranks, and each rank's figures.
struct iteration_sample {
  double sync = 0.0, exposed = 0.0, iteration = 0.0;
  std::vector<double> rank_sync, rank_exposed, rank_iteration;

  // The sample of per-rank figures (equal lengths), with the maxima filled in.
  [[nodiscard]] static iteration_sample from_ranks(std::vector<double> sync_s, std::vector<double> exposed_s,
                                                   std::vector<double> iteration_s) {
    iteration_sample s;
    s.rank_sync = std::move(sync_s);
    s.rank_exposed = std::move(exposed_s);
    s.rank_iteration = std::move(iteration_s);
    auto mx = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
    s.sync = mx(s.rank_sync);
    s.exposed = mx(s.rank_exposed);
    s.iteration = mx(s.rank_iteration);
    return s;
  }
};

struct run_settings {
  int warmup = 0;             // iterations run before the measured ones
  double compute_scale = 0.0; // simulated backward compute = backward_flops / device_flops x this
  std::uint64_t seed = 0;     // seed of the synthetic gradients
  exec::packing pack = exec::packing::automatic;  // how fused buckets reached the wire (`run --pack`)
};

struct environment_info {
  std::string hostname;
  std::string mpi_library;       // MPI_Get_library_version
  int ranks = 0;                 // MPI world size
  std::string thread_level;      // "MPI_THREAD_MULTIPLE", ...
  std::string compiler;
  std::string autosync_version;
  std::string timestamp;         // UTC, ISO 8601: 2024-05-01T12:00:00Z
};

struct trial_record {
  model_source model;
  cluster_spec cluster;
  int ranks_per_node = 1;
  strategy_desc strategy;
  run_settings settings;
  std::vector<iteration_sample> iterations;
  double predicted_iteration = 0.0, predicted_exposed = 0.0;
  environment_info environment;
  std::vector<exec::exchange_note> exchange_notes;  // e.g. Accordion's decisions; written when not empty

  // Throws autosync::error naming the first bad field (the JSON path of the record format).
  void validate() const;
};

namespace detail {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace jio = autosync::detail::jio;

using jio::nested;

// A recorded time: 0 (nothing to time) or seconds in [1e-12, 1e6), the model's own range: a
// median of two times near DBL_MAX overflowed, and 1e-320 s made a training target of -734.
inline void check_time(double v, const std::string& f) {
  if (!std::isfinite(v) || v < 0.0) throw error(f, "must be a finite number of seconds >= 0");
  if (v != 0.0 && !(v >= 1e-12 && v < 1e6))
    throw error(f, "must be 0 or seconds in [1e-12, 1e6), got " + number_text(v));
}

}  // namespace detail

inline void trial_record::validate() const {
  using detail::nested;
  if (!model.zoo.empty()) {
    if (!(model.scale > 0.0) || !std::isfinite(model.scale)) throw error("model.scale", "must be a finite number > 0");
  }
  nested("model", [&] { model.spec.validate(); });
  nested("cluster", [&] { cluster.validate(); });
  const int p = environment.ranks;
  if (p < 1) throw error("environment.ranks", "must be >= 1, got " + std::to_string(p));
  if (ranks_per_node < 1 || p % ranks_per_node != 0)
    throw error("cluster.ranks_per_node", "must be >= 1 and divide environment.ranks " + std::to_string(p) + ", got " +
                                              std::to_string(ranks_per_node));
  nested("strategy", [&] { strategy.validate(model.spec, cluster); });
  if (settings.warmup < 0) throw error("settings.warmup", "must be >= 0");
  if (!std::isfinite(settings.compute_scale) || settings.compute_scale < 0.0)
    throw error("settings.compute_scale", "must be a finite number >= 0");
  if (iterations.empty()) throw error("iterations", "a record needs at least one measured iteration");
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const auto& it = iterations[i];
    const std::string f = "iterations[" + std::to_string(i) + "]";
    const std::pair<const char*, const std::vector<double>*> arrays[] = {
        {"sync_s", &it.rank_sync}, {"exposed_s", &it.rank_exposed}, {"iteration_s", &it.rank_iteration}};
    const double maxima[] = {it.sync, it.exposed, it.iteration};
    for (std::size_t k = 0; k < 3; ++k) {
      const auto& [key, v] = arrays[k];
      const std::string af = f + ".ranks." + key;
      if (v->size() != static_cast<std::size_t>(p))
        throw error(af, "has " + std::to_string(v->size()) + " entries, environment.ranks is " + std::to_string(p));
      for (std::size_t r = 0; r < v->size(); ++r) detail::check_time((*v)[r], af + "[" + std::to_string(r) + "]");
      detail::check_time(maxima[k], f + "." + key);
      if (maxima[k] != *std::max_element(v->begin(), v->end()))
        throw error(f + "." + key, "must be the maximum of " + af);
    }
  }
  detail::check_time(predicted_iteration, "predicted.iteration_s");
  detail::check_time(predicted_exposed, "predicted.exposed_s");
  for (std::size_t i = 0; i < exchange_notes.size(); ++i) {
    const auto& n = exchange_notes[i];
    const std::string f = "exchange_notes[" + std::to_string(i) + "]";
    if (n.iteration < 0) throw error(f + ".iteration", "must be >= 0");
    if (n.key.empty()) throw error(f + ".key", "must not be empty");
    if (std::isnan(n.value)) throw error(f + ".value", "must be a number (infinity is allowed, NaN is not)");
  }
}

// --- writing ---------------------------------------------------------------------------------

// The JSON value of a record (keys in the documented order). Validates first.
[[nodiscard]] inline nlohmann::ordered_json to_json(const trial_record& r) {
  r.validate();
  using detail::ojson;
  ojson j;
  j["version"] = record_version;
  if (!r.model.zoo.empty()) j["model"] = ojson{{"zoo", r.model.zoo}, {"scale", r.model.scale}};
  else j["model"] = io::to_json(r.model.spec);
  auto c = io::to_json(r.cluster);
  c["ranks_per_node"] = r.ranks_per_node;
  j["cluster"] = std::move(c);
  j["strategy"] = io::to_json(r.strategy);
  j["settings"] = ojson{{"warmup", r.settings.warmup}, {"compute_scale", r.settings.compute_scale}, {"seed", r.settings.seed}};
  if (r.settings.pack != exec::packing::automatic) j["settings"]["pack"] = std::string(exec::packing_name(r.settings.pack));
  auto& its = j["iterations"] = ojson::array();
  for (const auto& it : r.iterations)
    its.push_back(ojson{{"sync_s", it.sync}, {"exposed_s", it.exposed}, {"iteration_s", it.iteration},
                        {"ranks", ojson{{"sync_s", it.rank_sync}, {"exposed_s", it.rank_exposed}, {"iteration_s", it.rank_iteration}}}});
  j["predicted"] = ojson{{"iteration_s", r.predicted_iteration}, {"exposed_s", r.predicted_exposed}};
  const auto& e = r.environment;
  j["environment"] = ojson{{"hostname", e.hostname},       {"mpi_library", e.mpi_library}, {"ranks", e.ranks},
                           {"thread_level", e.thread_level}, {"compiler", e.compiler},      {"autosync_version", e.autosync_version},
                           {"timestamp", e.timestamp}};
  if (!r.exchange_notes.empty()) {
    auto& ns = j["exchange_notes"] = ojson::array();
    for (const auto& n : r.exchange_notes) {  // JSON has no infinity: +inf is written as the string "inf"
      ojson v = std::isinf(n.value) ? ojson(n.value > 0 ? "inf" : "-inf") : ojson(n.value);
      ns.push_back(ojson{{"bucket", n.bucket}, {"iteration", n.iteration}, {"key", n.key}, {"value", std::move(v)}});
    }
  }
  return j;
}

// One line of a records file: compact JSON and a newline. Invalid UTF-8 in strings (a host
// name, say) is written as U+FFFD rather than failing the run.
[[nodiscard]] inline std::string to_line(const trial_record& r) {
  return to_json(r).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// Appends one record to `path` (created when missing) with a single write() in O_APPEND mode.
inline void append_record(const std::filesystem::path& path, const trial_record& r) {
  const std::string line = to_line(r);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw error("cannot open '" + path.string() + "' to append a record: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < line.size()) {
    // one call writes the whole line on a regular file; the loop only finishes a short write
    const ::ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw error("cannot append a record to '" + path.string() + "': " + std::strerror(n < 0 ? err : ENOSPC));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw error("cannot append a record to '" + path.string() + "': " + std::strerror(errno));
}

// --- reading ---------------------------------------------------------------------------------
namespace detail {

[[nodiscard]] inline std::vector<double> read_times(const json& j, const std::string& f) {
  jio::expect_array(j, f);
  std::vector<double> v;
  v.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) v.push_back(jio::read_double(j[i], jio::element(f, i)));
  return v;
}

[[nodiscard]] inline model_source read_model_source(const json& j) {
  jio::expect_object(j, "model", "a model or {\"zoo\": name, \"scale\": s}");
  if (jio::find(j, "zoo") != nullptr) {
    jio::check_keys(j, "model", {"zoo", "scale"}, "in a zoo model reference");
    const auto name = jio::read_string(j["zoo"], "model.zoo");
    double scale = 1.0;
    if (const auto* s = jio::find(j, "scale")) scale = jio::read_double(*s, "model.scale");
    if (!(scale > 0.0)) throw error("model.scale", "must be > 0, got " + jio::shown(j["scale"]));
    try {
      return model_source::from_zoo(name, scale);
    } catch (const error& e) {
      throw error("model.zoo", e.message());
    }
  }
  return model_source::inline_model(nested("model", [&] { return jio::read_model(j); }));
}

[[nodiscard]] inline trial_record read_record(const json& j) {
  jio::expect_object(j, "", "a trial record");
  jio::check_keys(j, "", {"version", "model", "cluster", "strategy", "settings", "iterations", "predicted", "environment", "exchange_notes"});
  const auto version = jio::read_int(jio::require(j, "", "version"), "version", 0, 1000000);
  if (version != record_version)
    throw error("version", "unsupported record version " + std::to_string(version) + " (this autosync reads version " +
                               std::to_string(record_version) + ")");
  trial_record r;
  r.model = read_model_source(jio::require(j, "", "model"));

  auto c = jio::require(j, "", "cluster");
  jio::expect_object(c, "cluster", "a cluster");
  r.ranks_per_node = static_cast<int>(jio::read_int(jio::require(c, "cluster", "ranks_per_node"), "cluster.ranks_per_node", 1, 1 << 20));
  c.erase("ranks_per_node");
  r.cluster = nested("cluster", [&] { return jio::read_cluster(c); });
  const auto& sj = jio::require(j, "", "strategy");
  r.strategy = nested("strategy", [&] { return jio::read_strategy(sj); });

  if (const auto* s = jio::find(j, "settings")) {
    jio::expect_object(*s, "settings", "the run settings");
    jio::check_keys(*s, "settings", {"warmup", "compute_scale", "seed", "pack"});
    if (const auto* w = jio::find(*s, "warmup")) r.settings.warmup = static_cast<int>(jio::read_int(*w, "settings.warmup", 0, 1 << 30));
    if (const auto* x = jio::find(*s, "compute_scale")) r.settings.compute_scale = jio::read_double(*x, "settings.compute_scale");
    if (const auto* x = jio::find(*s, "seed")) r.settings.seed = jio::read_uint64(*x, "settings.seed");
    if (const auto* x = jio::find(*s, "pack")) {
      const auto p = x->is_string() ? exec::packing_from_name(x->get<std::string>()) : std::nullopt;
      if (!p) throw error("settings.pack", "must be \"automatic\", \"always\" or \"never\", got " + jio::shown(*x));
      r.settings.pack = *p;
    }
  }

  const auto& its = jio::require(j, "", "iterations");
  jio::expect_array(its, "iterations");
  for (std::size_t i = 0; i < its.size(); ++i) {
    const std::string f = jio::element("iterations", i);
    const auto& it = its[i];
    jio::expect_object(it, f, "an iteration");
    jio::check_keys(it, f, {"sync_s", "exposed_s", "iteration_s", "ranks"});
    iteration_sample s;
    s.sync = jio::read_double(jio::require(it, f, "sync_s"), f + ".sync_s");
    s.exposed = jio::read_double(jio::require(it, f, "exposed_s"), f + ".exposed_s");
    s.iteration = jio::read_double(jio::require(it, f, "iteration_s"), f + ".iteration_s");
    const auto& rk = jio::require(it, f, "ranks");
    const std::string rf = f + ".ranks";
    jio::expect_object(rk, rf, "the per-rank figures");
    jio::check_keys(rk, rf, {"sync_s", "exposed_s", "iteration_s"});
    s.rank_sync = read_times(jio::require(rk, rf, "sync_s"), rf + ".sync_s");
    s.rank_exposed = read_times(jio::require(rk, rf, "exposed_s"), rf + ".exposed_s");
    s.rank_iteration = read_times(jio::require(rk, rf, "iteration_s"), rf + ".iteration_s");
    r.iterations.push_back(std::move(s));
  }

  const auto& p = jio::require(j, "", "predicted");
  jio::expect_object(p, "predicted", "the predicted times");
  jio::check_keys(p, "predicted", {"iteration_s", "exposed_s"});
  r.predicted_iteration = jio::read_double(jio::require(p, "predicted", "iteration_s"), "predicted.iteration_s");
  r.predicted_exposed = jio::read_double(jio::require(p, "predicted", "exposed_s"), "predicted.exposed_s");

  const auto& e = jio::require(j, "", "environment");
  const std::string ef = "environment";
  jio::expect_object(e, ef, "the environment");
  jio::check_keys(e, ef, {"hostname", "mpi_library", "ranks", "thread_level", "compiler", "autosync_version", "timestamp"});
  auto str = [&](std::string_view k) { return jio::read_string(jio::require(e, ef, k), jio::member(ef, k)); };
  r.environment.hostname = str("hostname");
  r.environment.mpi_library = str("mpi_library");
  r.environment.ranks = static_cast<int>(jio::read_int(jio::require(e, ef, "ranks"), "environment.ranks", 1, 1 << 24));
  r.environment.thread_level = str("thread_level");
  r.environment.compiler = str("compiler");
  r.environment.autosync_version = str("autosync_version");
  r.environment.timestamp = str("timestamp");

  if (const json* ns = jio::find(j, "exchange_notes")) {
    jio::expect_array(*ns, "exchange_notes");
    for (std::size_t i = 0; i < ns->size(); ++i) {
      const std::string f = jio::element("exchange_notes", i);
      const json& o = (*ns)[i];
      jio::expect_object(o, f, "an exchange note: {\"bucket\": B, \"iteration\": I, \"key\": K, \"value\": V}");
      jio::check_keys(o, f, {"bucket", "iteration", "key", "value"});
      exec::exchange_note n;
      n.bucket = static_cast<std::uint32_t>(jio::read_int(jio::require(o, f, "bucket"), jio::member(f, "bucket"), 0, 0xffffffffll));
      n.iteration = jio::read_int(jio::require(o, f, "iteration"), jio::member(f, "iteration"), 0, std::numeric_limits<std::int64_t>::max());
      n.key = jio::read_string(jio::require(o, f, "key"), jio::member(f, "key"));
      const json& v = jio::require(o, f, "value");
      if (v.is_string() && (v.get<std::string>() == "inf" || v.get<std::string>() == "-inf"))
        n.value = v.get<std::string>() == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
      else
        n.value = jio::read_double(v, jio::member(f, "value"));
      r.exchange_notes.push_back(std::move(n));
    }
  }

  r.validate();
  return r;
}

}  // namespace detail

// A record from its JSON value; throws autosync::error naming the field.
[[nodiscard]] inline trial_record record_from_json(const nlohmann::json& j) { return detail::read_record(j); }

// One line of a records file. Errors are file_errors at `file`:`line` (syntax errors add the
// column).
[[nodiscard]] inline trial_record parse_record(std::string_view text, const std::string& file = "<record>", int line = 1) {
  nlohmann::json j;
  try {
    j = autosync::detail::jio::parse_text(text, file, [](const nlohmann::json& v) { return v; });
  } catch (const file_error& e) {
    throw file_error(file, line + e.line() - 1, e.column(), e.field(), e.message(), true);
  }
  try {
    return detail::read_record(j);
  } catch (const error& e) {
    throw file_error(file, line, 1, e.field(), e.message());
  }
}

struct read_options {
  bool skip_truncated_tail = false;  // a last line without newline that does not parse is skipped
};

struct skipped_line {
  int line = 0;         // 1-based
  std::string message;  // why it was skipped (the parse error, with file and line)
};

struct read_result {
  std::vector<trial_record> records;
  std::vector<skipped_line> skipped;
  std::vector<int> lines;  // the 1-based line of each record (records[i] at lines[i])
};

// Every record of a JSON Lines text. Throws file_error at the first bad line (see the header
// comment for the truncated last line).
[[nodiscard]] inline read_result parse_records(std::string_view text, const std::string& file = "<records>", read_options opt = {}) {
  read_result out;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    const std::size_t nl = text.find('\n', pos);
    const bool complete = nl != std::string_view::npos;
    std::string_view line = text.substr(pos, complete ? nl - pos : std::string_view::npos);
    pos = complete ? nl + 1 : text.size();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (complete) {
      out.records.push_back(parse_record(line, file, line_no));
      out.lines.push_back(line_no);
      continue;
    }
    // the last line has no newline: a crash mid-append when it does not parse
    bool parses = true;
    try {
      (void)autosync::detail::jio::parse_text(line, file, [](const nlohmann::json& v) { return v; });
    } catch (const file_error&) {
      parses = false;
    }
    if (parses) {
      out.records.push_back(parse_record(line, file, line_no));
      out.lines.push_back(line_no);
      continue;
    }
    std::string why;
    try {
      (void)parse_record(line, file, line_no);
    } catch (const file_error& e) {
      why = e.what();
    }
    if (!opt.skip_truncated_tail)
      throw file_error(file, line_no, 1, "",
                       "the last line is truncated (no newline, not valid JSON: a writer stopped mid-record); "
                       "read with skip_truncated_tail to skip it [" + why + "]");
    out.skipped.push_back(skipped_line{line_no, why});
  }
  return out;
}

[[nodiscard]] inline read_result read_records(const std::filesystem::path& path, read_options opt = {}) {
  return parse_records(autosync::detail::jio::read_file(path), path.string(), opt);
}

}  // namespace autosync::learn
