// Trial records (learn/records.hpp): the JSON Lines format round-trips exactly (zoo and inline
// models), the writer appends whole lines, the reader reports malformed lines with their line
// numbers and bad fields with their paths, and a truncated last line is an error unless the
// caller asks to skip it.
#include <autosync/learn/records.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace autosync;
using namespace autosync::learn;

namespace {

model_spec tiny_model() {
  model_spec m;
  m.name = "tiny";
  m.forward_flops = 1e6;
  m.tensors = {tensor{"a", {4, 3}, dtype::f32, false, 1.0, 2e5, -1}, tensor{"b", {5}, dtype::f64, false, 1.0, 1e5, -1}};
  return m;
}

trial_record sample(model_source ms, int ranks = 2) {
  trial_record r;
  r.model = std::move(ms);
  r.cluster = zoo::make_cluster("local-" + std::to_string(ranks));
  r.ranks_per_node = ranks;
  r.strategy = baselines::ddp(r.model.spec);
  r.settings = run_settings{2, 0.5, 7};
  for (int i = 0; i < 3; ++i) {
    std::vector<double> s, e, t;
    for (int k = 0; k < ranks; ++k) {
      s.push_back(1e-3 * (i + 1) + 1e-4 * k);
      e.push_back(2e-4 * (k + 1) + 1e-5 * i);
      t.push_back(0.1 + 0.01 * i - 0.001 * k);
    }
    r.iterations.push_back(iteration_sample::from_ranks(s, e, t));
  }
  r.predicted_iteration = 0.125;
  r.predicted_exposed = 0.0625;
  r.environment = {"host-a", "Open MPI v4.1.4, package: Debian", ranks, "MPI_THREAD_MULTIPLE", "GCC 12.2.0", "0.1.0",
                   "2024-05-01T12:00:00Z"};
  return r;
}

// Field-by-field equality through the canonical JSON of each piece.
void check_same(const trial_record& a, const trial_record& b) {
  CHECK(a.model.zoo == b.model.zoo);
  CHECK(a.model.scale == b.model.scale);
  CHECK(io::to_json(a.model.spec) == io::to_json(b.model.spec));
  CHECK(io::to_json(a.cluster) == io::to_json(b.cluster));
  CHECK(a.ranks_per_node == b.ranks_per_node);
  CHECK(a.strategy == b.strategy);
  CHECK(a.settings.warmup == b.settings.warmup);
  CHECK(a.settings.compute_scale == b.settings.compute_scale);
  CHECK(a.settings.seed == b.settings.seed);
  CHECK(a.settings.pack == b.settings.pack);
  REQUIRE(a.iterations.size() == b.iterations.size());
  for (std::size_t i = 0; i < a.iterations.size(); ++i) {
    CHECK(a.iterations[i].sync == b.iterations[i].sync);  // exact: JSON keeps 17 digits
    CHECK(a.iterations[i].exposed == b.iterations[i].exposed);
    CHECK(a.iterations[i].iteration == b.iterations[i].iteration);
    CHECK(a.iterations[i].rank_sync == b.iterations[i].rank_sync);
    CHECK(a.iterations[i].rank_exposed == b.iterations[i].rank_exposed);
    CHECK(a.iterations[i].rank_iteration == b.iterations[i].rank_iteration);
  }
  CHECK(a.predicted_iteration == b.predicted_iteration);
  CHECK(a.predicted_exposed == b.predicted_exposed);
  CHECK(a.environment.hostname == b.environment.hostname);
  CHECK(a.environment.mpi_library == b.environment.mpi_library);
  CHECK(a.environment.ranks == b.environment.ranks);
  CHECK(a.environment.thread_level == b.environment.thread_level);
  CHECK(a.environment.compiler == b.environment.compiler);
  CHECK(a.environment.autosync_version == b.environment.autosync_version);
  CHECK(a.environment.timestamp == b.environment.timestamp);
}

std::string error_of(std::string_view text, read_options opt = {}) {
  try {
    (void)parse_records(text, "t.jsonl", opt);
  } catch (const error& e) {
    return e.what();
  }
  return "(no error)";
}

// The line of a sample record with its JSON edited by `f`.
template <class F>
std::string edited(F f) {
  auto j = to_json(sample(model_source::inline_model(tiny_model())));
  f(j);
  return j.dump() + "\n";
}

struct temp_file {
  std::filesystem::path path;
  temp_file() : path(std::filesystem::temp_directory_path() / ("autosync_records_" + std::to_string(::getpid()) + ".jsonl")) {
    std::filesystem::remove(path);
  }
  ~temp_file() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("iteration_sample::from_ranks takes the maxima over the ranks") {
  const auto s = iteration_sample::from_ranks({1.0, 3.0, 2.0}, {0.5, 0.25, 0.75}, {4.0, 4.5, 4.25});
  CHECK(s.sync == 3.0);
  CHECK(s.exposed == 0.75);
  CHECK(s.iteration == 4.5);
  CHECK(s.rank_sync.size() == 3);
}

TEST_CASE("a record is one compact line in the documented layout") {
  const auto r = sample(model_source::from_zoo("resnet50"));
  const auto line = to_line(r);
  CHECK(line.back() == '\n');
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  const auto j = nlohmann::json::parse(line);
  CHECK(j["version"] == 1);
  CHECK(j["model"] == nlohmann::json{{"zoo", "resnet50"}, {"scale", 1.0}});
  CHECK(j["cluster"]["ranks_per_node"] == 2);
  CHECK(j["cluster"]["name"] == "local-2");
  CHECK(j["strategy"]["assignments"].size() == r.model.spec.tensors.size());
  CHECK(j["settings"] == nlohmann::json{{"warmup", 2}, {"compute_scale", 0.5}, {"seed", 7}});
  REQUIRE(j["iterations"].size() == 3);
  // iteration 1: sync per rank 2e-3, 2.1e-3; exposed 2.1e-4, 4.1e-4; iteration 0.11, 0.109
  CHECK(j["iterations"][1]["sync_s"].get<double>() == doctest::Approx(2.1e-3).epsilon(1e-15));
  CHECK(j["iterations"][1]["exposed_s"].get<double>() == doctest::Approx(4.1e-4).epsilon(1e-15));
  CHECK(j["iterations"][1]["iteration_s"].get<double>() == doctest::Approx(0.11).epsilon(1e-15));
  CHECK(j["iterations"][1]["ranks"]["sync_s"].size() == 2);
  CHECK(j["predicted"] == nlohmann::json{{"iteration_s", 0.125}, {"exposed_s", 0.0625}});
  CHECK(j["environment"]["thread_level"] == "MPI_THREAD_MULTIPLE");
  CHECK(j["environment"]["ranks"] == 2);
}

TEST_CASE("records round-trip exactly: zoo model, scaled zoo model, inline model") {
  for (auto ms : {model_source::from_zoo("resnet50"), model_source::from_zoo("bert-base", 0.25),
                  model_source::inline_model(tiny_model())}) {
    CAPTURE(ms.spec.name);
    const auto r = sample(ms, 3);
    const auto back = parse_record(to_line(r));
    check_same(r, back);
    CHECK(to_line(back) == to_line(r));
  }
  // the zoo form is rebuilt from the zoo on reading
  const auto back = parse_record(to_line(sample(model_source::from_zoo("bert-base", 0.25))));
  CHECK(back.model.spec.name == "bert-base@0.25");
  CHECK(io::to_json(back.model.spec) == io::to_json(zoo::make_model_scaled("bert-base", 0.25)));
}

TEST_CASE("settings.pack: absent for the default packing, written and read back when a run overrode it") {
  static_assert(exec::packing_from_name("never") == exec::packing::never);  // the names, both ways, at compile time
  static_assert(exec::packing_from_name(exec::packing_name(exec::packing::always)) == exec::packing::always);
  static_assert(!exec::packing_from_name("Never") && !exec::packing_from_name(""));
  auto r = sample(model_source::from_zoo("resnet50"));
  CHECK(r.settings.pack == exec::packing::automatic);
  CHECK(!nlohmann::json::parse(to_line(r))["settings"].contains("pack"));  // the layout of every earlier record
  for (auto p : {exec::packing::always, exec::packing::never}) {
    r.settings.pack = p;
    const auto line = to_line(r);
    CHECK(nlohmann::json::parse(line)["settings"]["pack"] == std::string(exec::packing_name(p)));
    const auto back = parse_record(line);
    check_same(r, back);
    CHECK(to_line(back) == line);
  }
  // "automatic" spelt out reads as the default (and is written back without the key)
  r.settings.pack = exec::packing::automatic;
  auto j = nlohmann::ordered_json::parse(to_line(r));
  j["settings"]["pack"] = "automatic";
  CHECK(parse_record(j.dump()).settings.pack == exec::packing::automatic);
  CHECK(!nlohmann::json::parse(to_line(parse_record(j.dump())))["settings"].contains("pack"));
}

TEST_CASE("append_record appends whole lines; read_records reads them back in order") {
  temp_file f;
  auto a = sample(model_source::from_zoo("resnet50"));
  auto b = sample(model_source::inline_model(tiny_model()), 4);
  b.settings.seed = 99;
  append_record(f.path, a);
  append_record(f.path, b);
  append_record(f.path, a);
  const auto r = read_records(f.path);
  REQUIRE(r.records.size() == 3);
  CHECK(r.skipped.empty());
  check_same(r.records[0], a);
  check_same(r.records[1], b);
  check_same(r.records[2], a);
  CHECK(std::filesystem::file_size(f.path) == 2 * to_line(a).size() + to_line(b).size());

  // a crash mid-append: the file ends with half a line
  {
    std::ofstream out(f.path, std::ios::app | std::ios::binary);
    const auto l = to_line(b);
    out << l.substr(0, l.size() / 2);
  }
  try {
    (void)read_records(f.path);
    FAIL("a truncated last line must be an error by default");
  } catch (const file_error& e) {
    CHECK(e.line() == 4);
    CHECK(std::string(e.what()).find(":4: ") != std::string::npos);
    CHECK(std::string(e.what()).find("truncated") != std::string::npos);
  }
  const auto skipped = read_records(f.path, read_options{true});
  CHECK(skipped.records.size() == 3);
  CHECK(skipped.lines == std::vector<int>{1, 2, 3});  // where each record was read
  REQUIRE(skipped.skipped.size() == 1);
  CHECK(skipped.skipped[0].line == 4);
  CHECK(skipped.skipped[0].message.find("syntax error") != std::string::npos);

  // a later append lands on the half line: that line is now malformed and complete, so it is
  // an error even when skipping a truncated tail (the reader never guesses where a record starts)
  append_record(f.path, a);
  try {
    (void)read_records(f.path, read_options{true});
    FAIL("a half line followed by a record must be an error");
  } catch (const file_error& e) {
    CHECK(e.line() == 4);
    CHECK(std::string(e.what()).find("truncated") == std::string::npos);
  }
}

TEST_CASE("malformed lines are reported with their line numbers") {
  const auto good = to_line(sample(model_source::inline_model(tiny_model())));
  // a syntax error on line 3 (line 2 blank is skipped but counted)
  auto e = error_of(good + "\n" + "{\"version\": 1,,}\n" + good);
  CHECK(e.find("t.jsonl:3:") == 0);
  CHECK(e.find("syntax error") != std::string::npos);
  // a line that is not an object
  e = error_of(good + "[1, 2]\n");
  CHECK(e.find("t.jsonl:2: ") == 0);
  CHECK(e.find("must be a trial record") != std::string::npos);
  // a truncated line in the middle (it has its newline): always an error, even when skipping the tail
  e = error_of(good + good.substr(0, 40) + "\n" + good, read_options{true});
  CHECK(e.find("t.jsonl:2:") == 0);
  CHECK(e.find("truncated") == std::string::npos);
  // an unterminated but valid last line is a record
  const auto r = parse_records(good + good.substr(0, good.size() - 1), "t.jsonl");
  CHECK(r.records.size() == 2);
  // CRLF line ends are accepted
  auto crlf = good;
  crlf.insert(crlf.size() - 1, "\r");
  CHECK(parse_records(crlf + crlf).records.size() == 2);
  CHECK(parse_records("").records.empty());
}

TEST_CASE("bad fields are errors naming the field and the line") {
  using J = nlohmann::ordered_json;
  auto field = [](std::string_view text) {
    try {
      (void)parse_records(std::string(to_line(sample(model_source::inline_model(tiny_model())))) + std::string(text), "t.jsonl");
    } catch (const file_error& e) {
      CHECK(e.line() == 2);
      return e.field() + " | " + e.message();
    }
    return std::string("(no error)");
  };
  auto has = [](const std::string& s, std::string_view head, std::string_view text) {
    CAPTURE(s);
    CHECK(s.rfind(head, 0) == 0);
    CHECK(s.find(text) != std::string::npos);
  };
  has(field(edited([](J& j) { j["version"] = 2; })), "version |", "unsupported record version 2");
  has(field(edited([](J& j) { j.erase("strategy"); })), "strategy |", "required field is missing");
  has(field(edited([](J& j) { j["colour"] = 1; })), "colour |", "unknown key 'colour'");
  has(field(edited([](J& j) { j["model"] = J{{"zoo", "resnet5"}}; })), "model.zoo |", "unknown model 'resnet5'");
  has(field(edited([](J& j) { j["model"] = J{{"zoo", "resnet50"}, {"scale", 0}}; })), "model.scale |", "must be > 0");
  has(field(edited([](J& j) { j["model"] = J{{"zoo", "resnet50"}, {"size", 1}}; })), "model.size |", "unknown key 'size'");
  has(field(edited([](J& j) { j["model"]["tensors"][1]["shape"][0] = -2; })), "model.tensors[1].shape[0] |", "must be positive");
  has(field(edited([](J& j) { j["cluster"].erase("ranks_per_node"); })), "cluster.ranks_per_node |", "required field is missing");
  has(field(edited([](J& j) { j["cluster"]["ranks_per_node"] = 3; })), "cluster.ranks_per_node |", "divide environment.ranks 2");
  has(field(edited([](J& j) { j["cluster"]["nodes"][0]["devices"] = "two"; })), "cluster.nodes[0].devices |", "must be an integer");
  has(field(edited([](J& j) { j["strategy"]["assignments"][1]["tensor"] = "zz"; })), "strategy.assignments[1]", "zz");
  has(field(edited([](J& j) { j["strategy"]["groups"][0]["topology"] = "mesh"; })), "strategy.groups[0].topology |", "mesh");
  has(field(edited([](J& j) { j["settings"]["warmup"] = -1; })), "settings.warmup |", "must be an integer in [0");
  has(field(edited([](J& j) { j["settings"]["pack"] = "sometimes"; })), "settings.pack |", "\"automatic\", \"always\" or \"never\", got \"sometimes\"");
  has(field(edited([](J& j) { j["settings"]["pack"] = 1; })), "settings.pack |", "got 1");
  has(field(edited([](J& j) { j["iterations"] = J::array(); })), "iterations |", "at least one measured iteration");
  has(field(edited([](J& j) { j["iterations"][2]["ranks"]["exposed_s"].push_back(0.5); })), "iterations[2].ranks.exposed_s |",
      "has 3 entries, environment.ranks is 2");
  has(field(edited([](J& j) { j["iterations"][1]["sync_s"] = 1.0; })), "iterations[1].sync_s |", "must be the maximum");
  has(field(edited([](J& j) { j["iterations"][0]["ranks"]["sync_s"][1] = -1.0; })), "iterations[0].ranks.sync_s[1] |", ">= 0");
  has(field(edited([](J& j) { j["iterations"][0]["ranks"]["iteration_s"][0] = "fast"; })), "iterations[0].ranks.iteration_s[0] |",
      "must be a number");
  // times outside [1e-12, 1e6) s (0 aside): a median of two near DBL_MAX overflowed, 1e-320 made a target of -734
  has(field(edited([](J& j) { j["predicted"]["iteration_s"] = 1e308; })), "predicted.iteration_s |", "must be 0 or seconds in [1e-12, 1e6), got 1e+308");
  has(field(edited([](J& j) { j["predicted"]["exposed_s"] = 1e-320; })), "predicted.exposed_s |", "got 1e-320");
  has(field(edited([](J& j) { j["predicted"].erase("exposed_s"); })), "predicted.exposed_s |", "required field is missing");
  has(field(edited([](J& j) { j["environment"]["ranks"] = 0; })), "environment.ranks |", "must be an integer in [1");
  has(field(edited([](J& j) { j["environment"]["hostname"] = 5; })), "environment.hostname |", "must be a string");
  CHECK(field(edited([](J&) {})) == "(no error)");
}

TEST_CASE("the writer refuses an invalid record, naming the field") {
  auto r = sample(model_source::inline_model(tiny_model()));
  r.iterations[1].rank_exposed.pop_back();
  CHECK_THROWS_WITH_AS((void)to_line(r), "'iterations[1].ranks.exposed_s': has 1 entries, environment.ranks is 2", error);
  r = sample(model_source::inline_model(tiny_model()));
  r.settings.compute_scale = -1;
  CHECK_THROWS_WITH_AS((void)to_line(r), "'settings.compute_scale': must be a finite number >= 0", error);
  r = sample(model_source::inline_model(tiny_model()));
  r.strategy.assignments.pop_back();
  try {
    (void)to_line(r);
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.field().rfind("strategy", 0) == 0);
  }
  temp_file f;
  CHECK_THROWS_AS(append_record(f.path, r), error);
  CHECK(!std::filesystem::exists(f.path));  // nothing written, not even a file
  CHECK_THROWS_WITH_AS(append_record("/nonexistent-dir/x.jsonl", sample(model_source::inline_model(tiny_model()))),
                       doctest::Contains("cannot open '/nonexistent-dir/x.jsonl'"), error);
}
