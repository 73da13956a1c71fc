// The `autosync` command: search a synchronization strategy for a model on a cluster, and
// explain, save or emit it.
//
//   autosync                                   optimize bert-large on p3.16xlarge-x4 (the default job)
//   autosync optimize [--model NAME|FILE] [--cluster NAME|FILE] [--seed N] [--json]
//                     [--out strategy.json] [--emit-header strategy.hpp] [--timeline timeline.svg]
//   autosync models | clusters
//   autosync explain strategy.json [--model NAME|FILE] [--cluster NAME|FILE] [--timeline t.svg]
//   mpirun -np N autosync calibrate --out cluster.json [--max-bytes B] [--budget-s S]
//   mpirun -np N autosync run --strategy s.json [--model NAME|FILE] [--scale X] [--cluster NAME|FILE]
//                     [--ranks-per-node N] [--iters N] [--warmup K] [--compute-scale X]
//                     [--records trials.jsonl] [--seed N]
//   autosync sample --model NAME|FILE [--scale X] --cluster NAME|FILE --out-dir DIR [--count N] [--seed N]
//                     [--baselines] [--search] [--allow-lossy] [--max-runs N]
//
// `run` executes a strategy for real on the MPI ranks (exec::executor on exec::mpi_backend):
//
//   every rank: load model, cluster (default local-<N>), strategy ─> compile_plan ─> setup()
//     per iteration: synthetic integer gradients; simulated forward; backward in ready order
//       (sleep backward_flops / device_flops x compute-scale, then ready(t)); finish()
//     iteration 1: every rank checks the exact sum of every element (integers: exact in
//       f32/f64/f16/bf16), a wrong sum stops every rank
//   rank 0: gathers sync / exposed / iteration time of every rank and iteration, prints the
//     table and cost::estimate's prediction, appends a trial record (learn/records.hpp)
//
// Any failure on any rank (bad file, strategy that does not fit the model, wrong sum, timeout)
// is agreed on before the ranks go on, so every rank exits with 1 and none hangs. A build
// without MPI answers `run` with an error (exit 1).
//
// Exit codes: 0 success, 1 bad input (unknown name, malformed file: the message names the file,
// line and field), 2 usage error.
#include <autosync/cost/estimate.hpp>
#include <autosync/io/json.hpp>
#include <autosync/io/svg.hpp>
#include <autosync/learn/records.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/strategy/emit.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include "autosync_cli_learn.hpp"  // `autosync learn`, `autosync tune`

#ifdef AUTOSYNC_HAS_MPI
#include <autosync/exec/calibrate.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <mpi.h>
#endif

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <fcntl.h>
#include <unistd.h>

#ifndef AUTOSYNC_VERSION
#define AUTOSYNC_VERSION "unknown"  // examples/CMakeLists.txt passes the project version
#endif

namespace {

using namespace autosync;

bool looks_like_file(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".json") || std::filesystem::exists(s);
}

model_spec load_model(const std::string& s) { return looks_like_file(s) ? io::load_model_file(s) : zoo::make_model(s); }
cluster_spec load_cluster(const std::string& s) { return looks_like_file(s) ? io::load_cluster_file(s) : zoo::make_cluster(s); }

void write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw error(std::string("cannot open '") + path + "' to write the " + what);
  f << text;
  if (!f) throw error(std::string("cannot write the ") + what + " to '" + path + "'");
}

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}
std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  return buf;
}

std::string describe_group(const group_desc& g) {
  std::string r(name_of(g.architecture));
  if (g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded) {
    r += " ";
    r += name_of(g.topology.kind);
    if (g.topology.kind == topology_kind::hierarchical)
      r += "<" + std::string(name_of(g.topology.intra)) + "," + std::string(name_of(g.topology.inter)) + ">";
  }
  if (g.partitioner.kind == partitioner_kind::even)
    r += " even<" + std::to_string(g.partitioner.shards) + "," + std::to_string(g.partitioner.axis) + ">";
  if (g.partitioner.kind == partitioner_kind::by_bytes) r += " by_bytes<" + human_bytes(double(g.partitioner.max_bytes)) + ">";
  if (g.architecture == architecture_kind::parameter_server) {
    r += " ";
    r += name_of(g.placement.kind);
    if (g.placement.kind == placement_kind::pinned) r += "<" + std::to_string(g.placement.server) + ">";
    if (g.replication == replication_kind::local) r += " local-repl";
  }
  if (g.compression != 0) r += " " + std::string(compression_registry[g.compression].name);
  if (g.fusion.cap_bytes == unbounded_bytes) r += " fuse:all";
  else if (g.fusion.cap_bytes > 0) {
    r += " fuse:" + human_bytes(double(g.fusion.cap_bytes));
    if (g.fusion.first_cap_bytes != g.fusion.cap_bytes) r += "/first " + human_bytes(double(g.fusion.first_cap_bytes));
  }
  if (g.schedule == schedule_kind::priority) r += " priority";
  return r;
}

// The group table of a strategy: members, bytes, aspects. Many groups with the same aspects
// (the search splits runs for their fusion boundaries) are shown as one row unless `all`.
void print_groups(std::ostream& os, const model_spec& m, const cluster_spec& c, const strategy_desc& s, bool all = false) {
  const auto items = expand(m, c, s);
  struct row {
    std::string aspects;
    std::vector<std::size_t> groups;
    std::size_t items = 0;
    std::int64_t bytes = 0, wire = 0;
  };
  std::vector<row> rows;
  std::vector<std::size_t> row_of(s.groups.size());
  std::map<std::string, std::size_t> by_aspects;
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    auto a = describe_group(s.groups[g]);
    if (all || !by_aspects.count(a)) {
      by_aspects[a] = rows.size();
      rows.push_back(row{a, {}, 0, 0, 0});
    }
    row_of[g] = by_aspects[a];
    rows[row_of[g]].groups.push_back(g);
  }
  for (const auto& it : items) {
    auto& r = rows[row_of[it.group]];
    r.bytes += it.bytes;
    r.wire += it.wire_bytes;
    ++r.items;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.bytes > b.bytes; });
  os << "  groups  items  gradient bytes  wire bytes   aspects\n";
  for (const auto& r : rows) {
    if (r.items == 0) continue;
    std::string gs = r.groups.size() == 1 ? "#" + std::to_string(r.groups[0]) : std::to_string(r.groups.size()) + "x";
    char line[256];
    std::snprintf(line, sizeof line, "  %6s  %5zu  %14s  %10s   ", gs.c_str(), r.items, human_bytes(double(r.bytes)).c_str(),
                  human_bytes(double(r.wire)).c_str());
    os << line << r.aspects << "\n";
  }
  if (!all && rows.size() < s.groups.size())
    os << "  (" << s.groups.size() << " groups; rows merge groups with the same aspects, \"Nx\" = N groups; "
       << "`autosync explain --all-groups` lists each)\n";
}

struct common_opts {
  bool all_groups = false;
  std::string model = "bert-large";
  std::string cluster = "p3.16xlarge-x4";
  std::string timeline;
};

int cmd_optimize(const common_opts& co, std::uint64_t seed, bool json, const std::string& out, const std::string& header,
                 bool allow_lossy, std::size_t budget) {
  const auto m = load_model(co.model);
  const auto c = load_cluster(co.cluster);
  search::options opt;
  opt.seed = seed;
  opt.allow_lossy = allow_lossy;
  if (budget > 0) opt.max_evaluations = budget;
  const bool tty = isatty(STDERR_FILENO) != 0 && !json;
  if (tty) {
    opt.on_progress = [](const search::progress& p) {
      std::fprintf(stderr, "\r  searching: %7zu strategies evaluated, best %.3f ms   ", p.evaluated, p.best * 1e3);
      std::fflush(stderr);
    };
  }
  if (!json)
    std::cout << "autosync: optimizing " << m.name << " (" << m.tensors.size() << " tensors, "
              << human_bytes(double(m.total_bytes())) << ") on " << c.name << " (" << c.world_size() << " ranks, "
              << c.worker_nodes() << " nodes)\n";
  const auto r = search::optimize(m, c, opt);
  if (tty) std::fprintf(stderr, "\r%80s\r", "");

  if (!out.empty()) write_file(out, io::to_json(r.strategy).dump(2) + "\n", "strategy");
  if (!header.empty()) write_file(header, emit_header(r.strategy, "autosync_strategy"), "header");
  if (!co.timeline.empty()) {
    const auto p = cost::estimate(m, c, r.strategy, cost::options{.timeline = true});
    write_file(co.timeline, io::timeline_svg(m, r.strategy, p, m.name + " on " + c.name + ": " + r.strategy.name), "timeline");
  }

  if (json) {
    nlohmann::json j;
    j["model"] = m.name;
    j["cluster"] = c.name;
    j["strategy"] = io::to_json(r.strategy);
    j["predicted_iteration_s"] = r.prediction.iteration;
    j["predicted_exposed_s"] = r.prediction.exposed;
    j["evaluated"] = r.evaluated;
    j["seconds"] = r.wall_seconds;
    auto& b = j["baselines"] = nlohmann::json::array();
    for (const auto& bl : r.baselines)
      b.push_back({{"name", bl.name}, {"predicted_iteration_s", bl.prediction.iteration},
                   {"speedup", bl.prediction.iteration / r.prediction.iteration}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "\nFound strategy: " << r.strategy.groups.size() << " group(s), predicted iteration " << ms(r.prediction.iteration)
            << " (compute " << ms(r.prediction.forward + r.prediction.backward) << ", exposed communication "
            << ms(r.prediction.exposed) << "); " << r.evaluated << " strategies evaluated in "
            << ms(r.wall_seconds) << "\n";
  print_groups(std::cout, m, c, r.strategy);
  std::cout << "\n  baseline                      predicted    speedup of autosync\n";
  for (const auto& bl : r.baselines) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-28s %10s    %.2fx\n", bl.name.c_str(), ms(bl.prediction.iteration).c_str(),
                  bl.prediction.iteration / r.prediction.iteration);
    std::cout << line;
  }
  if (!out.empty()) std::cout << "\nwrote " << out << "\n";
  if (!header.empty()) std::cout << "wrote " << header << "\n";
  if (!co.timeline.empty()) std::cout << "wrote " << co.timeline << "\n";
  return 0;
}

int cmd_explain(const common_opts& co, const std::string& file) {
  const auto m = load_model(co.model);
  const auto c = load_cluster(co.cluster);
  const auto s = io::load_strategy_file(file);
  s.validate(m, c);
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = !co.timeline.empty()});
  std::cout << "strategy '" << s.name << "' for " << m.name << " on " << c.name << "\n";
  print_groups(std::cout, m, c, s, co.all_groups);
  std::cout << "\npredicted iteration " << ms(p.iteration) << ": forward " << ms(p.forward) << ", backward "
            << ms(p.backward) << ", communication busy " << ms(p.communication) << ", exposed " << ms(p.exposed) << "\n";
  if (!co.timeline.empty()) {
    write_file(co.timeline, io::timeline_svg(m, s, p, m.name + " on " + c.name + ": " + s.name), "timeline");
    std::cout << "wrote " << co.timeline << "\n";
  }
  return 0;
}

// --- autosync sample: strategies to try for real (random draws, baselines, the search's pick) ------
//
// Random draws come from the search's own space (search/space.hpp), so every draw obeys the
// knowledge rules the search obeys and validates against the model and cluster:
//
//   runs:      1..max-runs contiguous runs of the dense tensors in backward order (random cut
//              points; runs whose tiny tensors would go unfused are merged, space::repair_tiny)
//   per run:   architecture drawn first (it chooses the aspects only it reads), then each other
//              aspect redrawn with probability 1/2 (space::randomize: only allowed values)
//   overrides: sparse tensors always own a group (parameter_server or all_gather), each large
//              dense tensor with probability 1/2 (its own partitioner, placement, ...)
//
// A draw that is infeasible (space::feasible) or a duplicate of an earlier one is drawn again.
// `--baselines` adds every baseline of strategy/baselines.hpp and `--search` the strategy
// search::optimize finds (with --seed), all for the same (scaled) model and cluster. Files:
// DIR/random-<seed>-<i>.json, DIR/baseline-<name>.json, DIR/autosync.json; one path per line
// on stdout.
struct sample_opts {
  std::string model, cluster, out_dir;
  double scale = 1.0;
  int count = 10, max_runs = 8;
  std::uint64_t seed = 1;
  bool baselines = false, search = false, allow_lossy = false;
};

void sample_group(const search::space& sp, group_desc& g, search::random& rng, const tensor* t) {
  if (!t || !t->sparse || rng.chance(0.5)) sp.randomize(g, search::aspect::architecture, rng, t);
  for (auto a : search::all_aspects)
    if (a != search::aspect::architecture && rng.chance(0.5)) sp.randomize(g, a, rng, t);
}

search::candidate sample_candidate(const search::space& sp, search::random& rng, int max_runs) {
  const auto& m = sp.model();
  const std::size_t n = sp.dense().size();
  search::candidate c = sp.uniform(group_desc{});
  if (n > 1) {
    const std::size_t runs = 1 + rng.below(std::min<std::size_t>(static_cast<std::size_t>(max_runs), n));
    std::vector<std::uint32_t> cuts;
    while (cuts.size() + 1 < runs) {
      const auto p = static_cast<std::uint32_t>(1 + rng.below(n - 1));
      if (std::find(cuts.begin(), cuts.end(), p) == cuts.end()) cuts.push_back(p);
    }
    std::sort(cuts.begin(), cuts.end());
    c.starts = {0};
    c.starts.insert(c.starts.end(), cuts.begin(), cuts.end());
    c.runs.assign(c.starts.size(), group_desc{});
  }
  for (auto& g : c.runs) sample_group(sp, g, rng, nullptr);
  for (std::size_t s = 0; s < sp.slots().size(); ++s) {
    const tensor& t = m.tensors[sp.slots()[s]];
    if (!sp.slot_sparse(s) && !rng.chance(0.5)) continue;
    c.own[s] = 1;
    c.owned[s] = t.sparse ? search::space::sparse_default() : group_desc{};
    sample_group(sp, c.owned[s], rng, &t);
  }
  sp.repair_tiny(c);
  return c;
}

int cmd_sample(const sample_opts& so) {
  if (so.count < 0) throw error("--count", "must be >= 0, got " + std::to_string(so.count));
  if (so.max_runs < 1) throw error("--max-runs", "must be >= 1, got " + std::to_string(so.max_runs));
  if (so.out_dir.empty()) throw error("--out-dir", "is required");
  if (!(so.scale > 0.0) || !std::isfinite(so.scale)) throw error("--scale", "must be a finite number > 0");
  if (so.scale != 1.0 && looks_like_file(so.model))
    throw error("--scale", "applies to zoo models only; '" + so.model + "' is a file");
  const auto m = looks_like_file(so.model) ? io::load_model_file(so.model) : zoo::make_model_scaled(so.model, so.scale);
  const auto c = load_cluster(so.cluster);
  std::error_code ec;
  std::filesystem::create_directories(so.out_dir, ec);
  if (ec) throw error("--out-dir", "cannot create '" + so.out_dir + "': " + ec.message());
  auto emit = [&](const strategy_desc& s, const std::string& file) {
    const auto path = (std::filesystem::path(so.out_dir) / file).string();
    write_file(path, io::to_json(s).dump() + "\n", "strategy");
    std::cout << path << "\n";
  };

  search::space_options spo;
  spo.allow_lossy = so.allow_lossy;
  const search::space sp(m, c, spo);
  search::random rng(so.seed);
  std::vector<std::string> seen;
  int drawn = 0;
  const long attempts = 200L * so.count + 1000;
  for (long a = 0; a < attempts && drawn < so.count; ++a) {
    const auto cand = sample_candidate(sp, rng, so.max_runs);
    if (!sp.feasible(cand)) continue;
    auto s = sp.materialize(cand);
    s.name = "random-" + std::to_string(so.seed) + "-" + std::to_string(drawn);
    try {
      s.validate(m, c);
    } catch (const error&) {
      continue;  // the space's rules let it through, the descriptor's do not: draw again
    }
    auto text = io::to_json(s).dump();
    text.erase(0, text.find(",\"groups\""));  // compare without the name
    if (std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
    seen.push_back(std::move(text));
    emit(s, s.name + ".json");
    ++drawn;
  }
  if (drawn < so.count)
    throw error("--count", "drew only " + std::to_string(drawn) + " distinct valid strategies of " + std::to_string(so.count) +
                               " for " + m.name + " on " + c.name + " (the space may be too small)");
  if (so.baselines || so.search) {
    search::options opt;
    opt.seed = so.seed;
    opt.allow_lossy = so.allow_lossy;
    const auto r = search::optimize(m, c, opt);
    if (so.baselines)
      for (const auto& bl : r.baselines) emit(bl.strategy, "baseline-" + bl.name + ".json");
    if (so.search) emit(r.strategy, "autosync.json");
  }
  return 0;
}

// --- autosync run: execute a strategy on MPI ranks and record what it measured ---------------------
struct run_opts {
  std::string strategy, records, model = "bert-large", cluster;  // cluster "": local-<world size>
  double scale = 1.0, compute_scale = 0.0;
  int ranks_per_node = 0;  // 0: from the cluster
  int iters = 10, warmup = 2;
  std::uint64_t seed = 1;
};

struct calibrate_opts {
  std::string out;
  std::uint64_t max_bytes = std::uint64_t{16} << 20;
  double budget_s = 1.5;
};

#ifdef AUTOSYNC_HAS_MPI

using exec::mpi_backend;

std::string compiler_name() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown compiler";
#endif
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

learn::environment_info run_environment(int ranks, int thread_level) {
  learn::environment_info e;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) e.hostname = host;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) e.mpi_library.assign(lib, static_cast<std::size_t>(std::max(len, 0)));
  while (!e.mpi_library.empty() && (std::isspace(static_cast<unsigned char>(e.mpi_library.back())) || e.mpi_library.back() == '\0'))
    e.mpi_library.pop_back();
  e.ranks = ranks;
  e.thread_level = exec::mpi_detail::thread_level_name(thread_level);
  e.compiler = compiler_name();
  e.autosync_version = AUTOSYNC_VERSION;
  e.timestamp = utc_timestamp();
  return e;
}

// The synthetic gradients: small integers, so every sum is exact in every wire format (f16
// holds integers up to 2048, bf16 up to 256: |sum| <= 4 x ranks). Sparse tensors touch a
// `sparse_density` fraction of their rows; the others stay zero.
struct synthetic {
  std::uint64_t seed;
  [[nodiscard]] int value(int rank, std::size_t t, std::int64_t e, int it) const {
    const auto h = static_cast<std::uint64_t>(e) * 7 + t * 13 + static_cast<std::uint64_t>(rank) * 5 + static_cast<std::uint64_t>(it) * 3 + seed;
    return static_cast<int>(h % 9) - 4;
  }
  [[nodiscard]] bool touched(const tensor& x, int rank, std::size_t t, std::int64_t row, int it) const {
    if (!x.sparse) return true;
    const auto h = static_cast<std::uint64_t>(row) * 2654435761u + t * 40503u + static_cast<std::uint64_t>(rank) * 9973u +
                   static_cast<std::uint64_t>(it) * 7919u + seed * 104729u;
    return static_cast<double>(h % 1000003u) < x.sparse_density * 1000003.0;
  }
  [[nodiscard]] double element(const tensor& x, int rank, std::size_t t, std::int64_t e, std::int64_t row_len, int it) const {
    return touched(x, rank, t, e / row_len, it) ? value(rank, t, e, it) : 0;
  }
};

void store(void* buf, std::int64_t i, dtype type, double v) {
  switch (type) {
    case dtype::f32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case dtype::f64: static_cast<double*>(buf)[i] = v; break;
    case dtype::f16: static_cast<std::uint16_t*>(buf)[i] = exec::f32_to_f16(static_cast<float>(v)); break;
    case dtype::bf16: static_cast<std::uint16_t*>(buf)[i] = exec::f32_to_bf16(static_cast<float>(v)); break;
    case dtype::i32: static_cast<std::int32_t*>(buf)[i] = static_cast<std::int32_t>(v); break;
    case dtype::i64: static_cast<std::int64_t*>(buf)[i] = static_cast<std::int64_t>(v); break;
  }
}
double load(const void* buf, std::int64_t i, dtype type) {
  switch (type) {
    case dtype::f32: return static_cast<const float*>(buf)[i];
    case dtype::f64: return static_cast<const double*>(buf)[i];
    case dtype::f16: return exec::f16_to_f32(static_cast<const std::uint16_t*>(buf)[i]);
    case dtype::bf16: return exec::bf16_to_f32(static_cast<const std::uint16_t*>(buf)[i]);
    case dtype::i32: return static_cast<const std::int32_t*>(buf)[i];
    case dtype::i64: return static_cast<double>(static_cast<const std::int64_t*>(buf)[i]);
  }
  return 0.0;
}

// Every rank calls this with its own failure ("" for none). Returns true when no rank failed;
// otherwise the lowest failing rank prints its message, and every rank returns false.
bool all_ok(const std::string& failure, int rank) {
  const int mine = failure.empty() ? INT_MAX : rank;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return true;
  if (first == rank)
    std::cerr << ("autosync: error: " + (rank == 0 ? std::string() : "rank " + std::to_string(rank) + ": ") + failure + "\n") << std::flush;
  return false;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cmd_run(const run_opts& ro, int& argc, char**& argv) {
  exec::mpi_session session(argc, argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  // 1. inputs: every rank loads them; any failure stops every rank
  learn::model_source src;
  cluster_spec c;
  strategy_desc s;
  int rpn = 0;
  exec::plan pl;
  std::vector<double> backward_s;  // per tensor: simulated backward compute on this rank
  double forward_s = 0.0;
  std::string failure;
  try {
    if (ro.iters < 1) throw error("--iters", "must be >= 1, got " + std::to_string(ro.iters));
    if (ro.warmup < 0) throw error("--warmup", "must be >= 0, got " + std::to_string(ro.warmup));
    if (!(ro.compute_scale >= 0.0) || !std::isfinite(ro.compute_scale))
      throw error("--compute-scale", "must be a finite number >= 0");
    if (looks_like_file(ro.model)) {
      if (ro.scale != 1.0) throw error("--scale", "applies to zoo models only; '" + ro.model + "' is a file");
      src = learn::model_source::inline_model(io::load_model_file(ro.model));
    } else {
      src = learn::model_source::from_zoo(ro.model, ro.scale);
    }
    c = ro.cluster.empty() ? zoo::make_cluster("local-" + std::to_string(p)) : load_cluster(ro.cluster);
    s = io::load_strategy_file(ro.strategy);
    try {
      s.validate(src.spec, c);
    } catch (const error& e) {
      throw error("strategy '" + ro.strategy + "' does not fit model '" + src.spec.name + "' on cluster '" + c.name + "': " + e.what());
    }
    rpn = ro.ranks_per_node;
    if (rpn == 0) rpn = c.world_size() == p ? c.max_devices_per_node() : p;
    if (rpn < 1 || p % rpn != 0)
      throw error("--ranks-per-node", std::to_string(rpn) + " ranks per node do not divide the " + std::to_string(p) +
                                          " ranks of this run" + (ro.ranks_per_node == 0 ? " (from the cluster; pass --ranks-per-node)" : ""));
    pl = exec::compile_plan(src.spec, c, s, exec::layout{p, rpn});
    // the node this rank stands for: its own when the cluster has exactly these ranks
    const int node = c.world_size() == p ? c.node_of_rank(rank) : c.node_of_rank(0);
    const double flops = c.nodes[static_cast<std::size_t>(node)].device_flops;
    if (ro.compute_scale > 0.0 && !(flops > 0.0))
      throw error("--compute-scale", "cluster '" + c.name + "' states no device_flops: there is no compute to simulate");
    const double per_flop = ro.compute_scale > 0.0 ? ro.compute_scale / flops : 0.0;
    for (const auto& t : src.spec.tensors) backward_s.push_back(t.backward_flops * per_flop);
    forward_s = src.spec.forward_flops * per_flop;
    if (rank == 0 && !ro.records.empty()) {  // fail now, not after the run
      const int fd = ::open(ro.records.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) throw error("--records", "cannot open '" + ro.records + "' to append: " + std::strerror(errno));
      ::close(fd);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;

  // 2. the run
  const auto& m = src.spec;
  const std::size_t T = m.tensors.size();
  const int total = ro.warmup + ro.iters;
  std::vector<double> mine;  // per measured iteration: sync, exposed, iteration
  std::size_t buckets = 0;
  try {
    auto cm = exec::comms<mpi_backend>::make(mpi_backend::world(), rpn);
    exec::executor<mpi_backend> ex(cm, m, pl, {});
    ex.setup();
    buckets = ex.compiled().buckets.size();
    std::vector<std::vector<unsigned char>> bufs(T);
    std::vector<exec::gradient> grads(T);
    std::vector<std::int64_t> row_len(T);
    for (std::size_t t = 0; t < T; ++t) {
      const auto& x = m.tensors[t];
      bufs[t].resize(static_cast<std::size_t>(x.elements()) * size_of(x.type));
      grads[t] = exec::gradient{bufs[t].data(), x.type, x.elements()};
      row_len[t] = x.elements() / x.shape[0];
    }
    const synthetic gen{ro.seed};
    const auto order = m.backward_order();
    using clock = std::chrono::steady_clock;
    auto until = [](clock::time_point tp) {
      if (tp > clock::now()) std::this_thread::sleep_until(tp);
    };
    auto secs = [](double x) { return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(x)); };
    for (int it = 0; it < total; ++it) {
      for (std::size_t t = 0; t < T; ++t)  // fresh gradients every iteration (the last one holds sums)
        for (std::int64_t e = 0; e < grads[t].count; ++e)
          store(bufs[t].data(), e, m.tensors[t].type, gen.element(m.tensors[t], rank, t, e, row_len[t], it));
      const auto t0 = clock::now();
      auto deadline = t0 + secs(forward_s);
      until(deadline);
      ex.begin_iteration(std::span<const exec::gradient>(grads));
      for (auto t : order) {
        deadline += secs(backward_s[t]);
        until(deadline);
        ex.ready(t);
      }
      const auto timing = ex.finish();
      const double iteration = std::chrono::duration<double>(clock::now() - t0).count();
      if (it == 0) {  // every rank checks the exact sums; any mismatch fails every rank
        std::string bad;
        for (std::size_t t = 0; t < T && bad.empty(); ++t)
          for (std::int64_t e = 0; e < grads[t].count; ++e) {
            double want = 0;
            for (int r = 0; r < p; ++r) want += gen.element(m.tensors[t], r, t, e, row_len[t], it);
            const double got = load(bufs[t].data(), e, m.tensors[t].type);
            if (got != want) {
              char v[96];
              std::snprintf(v, sizeof v, ": got %.17g, the exact sum is %.17g", got, want);
              bad = "tensor '" + m.tensors[t].name + "' element " + std::to_string(e) + v;
              break;
            }
          }
        if (!bad.empty())  // one write: the ranks' lines do not interleave
          std::cerr << ("autosync: rank " + std::to_string(rank) + ": wrong sum after the first iteration: " + bad + "\n") << std::flush;
        std::int32_t wrong = bad.empty() ? 0 : 1;
        cm.world.all_reduce(&wrong, 1, dtype::i32);
        if (wrong > 0)
          throw error("the first iteration gave wrong sums on " + std::to_string(wrong) + " rank(s) (see above): strategy '" + s.name +
                      "' did not synchronize the gradients correctly");
      }
      if (it >= ro.warmup) mine.insert(mine.end(), {timing.sync, timing.exposed, iteration});
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;

  // 3. rank 0 gathers, prints, records
  std::vector<double> all(rank == 0 ? mine.size() * static_cast<std::size_t>(p) : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()), MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  if (rank != 0) return 0;
  learn::trial_record rec;
  rec.model = src;
  rec.cluster = c;
  rec.ranks_per_node = rpn;
  rec.strategy = s;
  rec.settings = {ro.warmup, ro.compute_scale, ro.seed};
  for (int i = 0; i < ro.iters; ++i) {
    std::vector<double> sy, xp, itr;
    for (int r = 0; r < p; ++r) {
      const double* row = all.data() + (static_cast<std::size_t>(r) * static_cast<std::size_t>(ro.iters) + static_cast<std::size_t>(i)) * 3;
      sy.push_back(row[0]);
      xp.push_back(row[1]);
      itr.push_back(row[2]);
    }
    rec.iterations.push_back(learn::iteration_sample::from_ranks(std::move(sy), std::move(xp), std::move(itr)));
  }
  const auto pred = cost::estimate(m, c, s);
  rec.predicted_iteration = pred.iteration;
  rec.predicted_exposed = pred.exposed;
  rec.environment = run_environment(p, session.thread_level());

  std::cout << "autosync run: " << m.name << " (" << T << " tensors, " << human_bytes(double(m.total_bytes())) << ") on " << c.name
            << ", " << p << " ranks (" << rpn << " per node); strategy '" << s.name << "': " << s.groups.size() << " group(s), "
            << buckets << " bucket(s)\n"
            << "first iteration: every sum exact on every rank\n"
            << "  iter        sync     exposed   iteration   (max over ranks)\n";
  std::vector<double> sy, xp, itr;
  for (int i = 0; i < ro.iters; ++i) {
    const auto& x = rec.iterations[static_cast<std::size_t>(i)];
    char line[128];
    std::snprintf(line, sizeof line, "  %4d  %10s  %10s  %10s\n", i + 1, ms(x.sync).c_str(), ms(x.exposed).c_str(), ms(x.iteration).c_str());
    std::cout << line;
    sy.push_back(x.sync);
    xp.push_back(x.exposed);
    itr.push_back(x.iteration);
  }
  char line[160];
  std::snprintf(line, sizeof line, "  median %8s  %10s  %10s\n", ms(median(sy)).c_str(), ms(median(xp)).c_str(), ms(median(itr)).c_str());
  std::cout << line << "predicted (cost model on " << c.name << "): iteration " << ms(pred.iteration) << ", exposed "
            << ms(pred.exposed) << (ro.compute_scale == 0.0 ? " (this run simulated no compute: --compute-scale 1 to compare iterations)"
                : ro.compute_scale == 1.0 ? "" : " (this run scaled compute by --compute-scale)")
            << "\n";
  if (!ro.records.empty()) {
    learn::append_record(ro.records, rec);
    std::cout << "appended a record to " << ro.records << "\n";
  }
  return 0;
}

// `autosync calibrate` (under mpirun): exec::calibrate on the MPI ranks, then rank 0 prints the
// measurements next to the fit and the local-<N> preset, and writes the cluster JSON that
// `optimize` and `run` take with --cluster.
int cmd_calibrate(const calibrate_opts& co, int& argc, char**& argv) {
  exec::mpi_session session(argc, argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::string failure;
  exec::calibrate_options o;
  try {
    if (co.out.empty()) throw error("--out", "needs a file name for the cluster JSON");
    if (p < 2) throw error("ranks", "calibrate measures the link between ranks: run it under mpirun with at least 2 ranks");
    if (co.max_bytes < 4096) throw error("--max-bytes", "must be at least 4096");
    if (!(co.budget_s > 0.0) || !std::isfinite(co.budget_s)) throw error("--budget-s", "must be a positive number of seconds");
    o.budget_s = co.budget_s;
    o.sizes.clear();
    for (std::uint64_t b = 4096; b <= co.max_bytes; b *= 4) o.sizes.push_back(static_cast<std::size_t>(b));
    if (o.sizes.size() < 2) throw error("--max-bytes", "must be at least 16384 (two sizes to fit)");
    if (rank == 0) {  // fail now, not after the measurement
      std::ofstream f(co.out, std::ios::app);
      if (!f) throw error("--out", "cannot open '" + co.out + "' to write");
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;
  exec::calibration k;
  try {
    auto cm = exec::comms<mpi_backend>::make(mpi_backend::world(), p);
    k = exec::calibrate(cm, o);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!all_ok(failure, rank)) return 1;
  if (rank != 0) return 0;
  const auto env = run_environment(p, session.thread_level());
  const cluster_spec c = exec::calibrated_cluster(k, "host " + env.hostname + ", " + env.timestamp);
  const cluster_spec preset = zoo::local(p);
  const auto& pn = preset.nodes[0];
  char line[200];
  std::cout << "autosync calibrate: " << p << " ranks on " << env.hostname << " (" << env.mpi_library.substr(0, env.mpi_library.find(',')) << ")\n";
  std::snprintf(line, sizeof line, "  reduction (sum_into f32, every rank at once): %.2f GB/s per rank\n", k.reduce_bandwidth / 1e9);
  std::cout << line << "  ring all-reduce (exec::all_reduce, f32)      measured      fitted   fit/measured\n";
  for (const auto& x : k.samples) {
    std::snprintf(line, sizeof line, "    %12s  %5d reps              %10s  %10s   %6.2f\n", human_bytes(double(x.bytes)).c_str(), x.reps,
                  ms(x.measured).c_str(), ms(x.fitted).c_str(), x.fitted / x.measured);
    std::cout << line;
  }
  std::snprintf(line, sizeof line, "  fitted:  latency %.2f us per ring step, link %.2f GB/s, reduction %.2f GB/s\n", k.latency * 1e6,
                k.bandwidth / 1e9, k.reduce_bandwidth / 1e9);
  std::cout << line;
  std::snprintf(line, sizeof line, "  preset %s: latency %.2f us, link %.2f GB/s, reduction %.2f GB/s\n", preset.name.c_str(),
                pn.intra.latency * 1e6, pn.intra.bandwidth / 1e9, pn.reduce_bandwidth / 1e9);
  std::cout << line;
  io::save_cluster_file(co.out, c);
  std::cout << "wrote cluster '" << c.name << "' to " << co.out << " (use: --cluster " << co.out << ")\n";
  return 0;
}

#else  // no MPI

int cmd_run(const run_opts&, int&, char**&) {
  throw error("`autosync run` needs MPI: this autosync was built without it (install OpenMPI, e.g. Debian's libopenmpi-dev, "
              "and rebuild: the command links autosync::mpi when CMake finds MPI)");
}

int cmd_calibrate(const calibrate_opts&, int&, char**&) {
  throw error("`autosync calibrate` needs MPI: this autosync was built without it (install OpenMPI, e.g. Debian's libopenmpi-dev, "
              "and rebuild)");
}

#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"autosync: find the best way to synchronize gradients for a model on a cluster"};
  app.require_subcommand(0, 1);
  common_opts co;
  std::uint64_t seed = 1;
  bool json = false, allow_lossy = false;
  std::size_t budget = 0;
  std::string out, header, strategy_file;

  auto add_common = [&](CLI::App* sub) {
    sub->add_option("--model", co.model, "zoo model name or model JSON file")->capture_default_str();
    sub->add_option("--cluster", co.cluster, "cluster preset name or cluster JSON file")->capture_default_str();
    sub->add_option("--timeline", co.timeline, "write the predicted iteration timeline as SVG");
  };
  auto* opt = app.add_subcommand("optimize", "search the best strategy (the default command)");
  add_common(opt);
  opt->add_option("--seed", seed, "random seed (the search is deterministic for a seed)")->capture_default_str();
  opt->add_flag("--json", json, "print the result as JSON");
  opt->add_option("--out", out, "write the found strategy as JSON");
  opt->add_option("--emit-header", header, "write the found strategy as a C++ header of policy types");
  opt->add_flag("--allow-lossy", allow_lossy, "let the search use lossy compression (fp16/bf16)");
  opt->add_option("--budget", budget, "maximum number of strategies to evaluate");
  auto* models = app.add_subcommand("models", "list the built-in models");
  auto* clusters = app.add_subcommand("clusters", "list the built-in cluster presets");
  auto* explain = app.add_subcommand("explain", "show and cost a strategy file");
  add_common(explain);
  explain->add_option("strategy", strategy_file, "strategy JSON file")->required();
  explain->add_flag("--all-groups", co.all_groups, "list every group on its own row");
  run_opts ro;
  auto* run = app.add_subcommand("run", "execute a strategy on the MPI ranks (under mpirun) and record the timings");
  run->add_option("--strategy", ro.strategy, "strategy JSON file")->required();
  run->add_option("--model", ro.model, "zoo model name or model JSON file")->capture_default_str();
  run->add_option("--scale", ro.scale, "scale a zoo model's dim 0 (zoo::make_model_scaled) to fit a small machine")->capture_default_str();
  run->add_option("--cluster", ro.cluster, "cluster preset name or cluster JSON file (default: local-<ranks>)");
  run->add_option("--ranks-per-node", ro.ranks_per_node, "ranks per node of the layout (default: from the cluster)");
  run->add_option("--iters", ro.iters, "measured iterations")->capture_default_str();
  run->add_option("--warmup", ro.warmup, "iterations before the measured ones")->capture_default_str();
  run->add_option("--compute-scale", ro.compute_scale, "simulate backward compute: backward_flops / device_flops x this (0: none)")
      ->capture_default_str();
  run->add_option("--records", ro.records, "append a trial record (JSON Lines) to this file");
  run->add_option("--seed", ro.seed, "seed of the synthetic gradients")->capture_default_str();
  calibrate_opts cal;
  auto* calibrate = app.add_subcommand("calibrate", "measure this host's MPI transport (under mpirun) and write a cluster JSON");
  calibrate->add_option("--out", cal.out, "cluster JSON file to write")->required();
  calibrate->add_option("--max-bytes", cal.max_bytes, "largest ring all-reduce measured (sizes 4 KiB x4 up to this)")->capture_default_str();
  calibrate->add_option("--budget-s", cal.budget_s, "seconds of repetitions per size")->capture_default_str();

  autosync_cli_learn::learn_opts lo;
  auto* learn_cmd = app.add_subcommand("learn", "train a learned correction (strategies from trial records, or collectives from "
                                                "nccl-tests logs) and report its held-out accuracy");
  auto* learn_records = learn_cmd->add_option("--records", lo.records, "trial records files (JSON Lines): the strategy-level correction")
                            ->expected(1, -1);
  auto* learn_colls = learn_cmd->add_option("--collectives", lo.collectives,
                                            "a manifest of nccl-tests logs and their clusters (tests/data/collectives/cases.json): "
                                            "the collective-level correction");
  learn_records->excludes(learn_colls);
  learn_cmd->add_option("--holdout", lo.holdout, "--records: fraction of strategies held out for the report")->capture_default_str();
  learn_cmd->add_option("--folds", lo.folds, "--collectives: folds of the k-fold report over rows")->capture_default_str();
  learn_cmd->add_option("--out", lo.out, "write the model trained on every row as XGBoost JSON");
  learn_cmd->add_option("--emit-header", lo.header, "write the model as a C++ header with a constexpr forest");
  learn_cmd->add_option("--name", lo.name, "the forest's name in the header (default: default_model, default_collective_model)");
  learn_cmd->add_option("--rounds", lo.rounds, "boosting rounds (default: 200 for --records, 100 for --collectives)");
  learn_cmd->add_option("--depth", lo.depth, "tree depth (default: 4 for --records, 3 for --collectives)");
  learn_cmd->add_option("--eta", lo.eta, "learning rate (default: 0.1 for --records, 0.15 for --collectives)");
  autosync_cli_learn::tune_opts to;
  auto* tune_cmd = app.add_subcommand("tune", "autotune: propose, trial-run, learn, repeat (AutoSync's loop)");
  tune_cmd->add_option("--model", to.model, "zoo model name or model JSON file")->capture_default_str();
  tune_cmd->add_option("--cluster", to.cluster, "cluster preset name or cluster JSON file (default: local-<np>)");
  tune_cmd->add_option("--records", to.records, "records file: trials are appended to it and resumed from it")->required();
  tune_cmd->add_option("--budget", to.budget, "trials in all")->capture_default_str();
  tune_cmd->add_option("--runner", to.runner, "local | testbed:NAME | cmd:TEMPLATE | replay:FILE")->capture_default_str();
  tune_cmd->add_option("--np", to.np, "ranks per trial")->capture_default_str();
  tune_cmd->add_option("--ranks-per-node", to.ranks_per_node, "ranks per node (default: from the cluster)");
  tune_cmd->add_option("--scale", to.scale, "scale a zoo model (zoo::make_model_scaled)")->capture_default_str();
  tune_cmd->add_option("--iters", to.iters, "measured iterations per trial")->capture_default_str();
  tune_cmd->add_option("--warmup", to.warmup, "warm-up iterations per trial")->capture_default_str();
  tune_cmd->add_option("--compute-scale", to.compute_scale, "simulated compute, as in `autosync run`")->capture_default_str();
  tune_cmd->add_option("--source", to.source, "records of other models/clusters to learn from too (transfer)")->expected(1, -1);
  tune_cmd->add_option("--per-round", to.per_round, "trials per round")->capture_default_str();
  tune_cmd->add_option("--proposals", to.proposals, "sampled candidates per round")->capture_default_str();
  tune_cmd->add_option("--seed", to.seed, "seed of the proposals and of the trials' gradients")->capture_default_str();
  tune_cmd->add_option("--confirm", to.confirm, "run the best N measured strategies and the best baseline once more at the end (0: off)")
      ->capture_default_str();
  tune_cmd->add_flag("--allow-lossy", to.allow_lossy, "let proposals use lossy compression (fp16/bf16), as AutoSync's compressors");
  tune_cmd->add_option("--out", to.out, "write the best measured strategy as JSON");
  sample_opts so;
  auto* sample = app.add_subcommand("sample", "write strategies to try: random draws from the search space, baselines, the search's pick");
  sample->add_option("--model", so.model, "zoo model name or model JSON file")->required();
  sample->add_option("--scale", so.scale, "scale a zoo model's dim 0 (as `run --scale`)")->capture_default_str();
  sample->add_option("--cluster", so.cluster, "cluster preset name or cluster JSON file")->required();
  sample->add_option("--out-dir", so.out_dir, "directory for the strategy JSON files")->required();
  sample->add_option("--count", so.count, "random strategies to draw")->capture_default_str();
  sample->add_option("--seed", so.seed, "random seed (draws and search are deterministic for a seed)")->capture_default_str();
  sample->add_option("--max-runs", so.max_runs, "at most this many runs (groups of consecutive tensors) per draw")->capture_default_str();
  sample->add_flag("--baselines", so.baselines, "also write every baseline strategy");
  sample->add_flag("--search", so.search, "also write the strategy the search finds");
  sample->add_flag("--allow-lossy", so.allow_lossy, "let draws and search use lossy compression (fp16/bf16)");

  // `autosync --model x ...` means `autosync optimize --model x ...`
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0].starts_with("--") && args[0] != "--help") args.insert(args.begin(), "optimize");
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*models) {
      for (auto n : zoo::model_names()) {
        const auto m = zoo::make_model(n);
        std::printf("  %-14s %4zu tensors %14lld parameters  %10s\n", std::string(n).c_str(), m.tensors.size(),
                    static_cast<long long>(m.total_elements()), human_bytes(double(m.total_bytes())).c_str());
      }
      return 0;
    }
    if (*clusters) {
      for (auto n : zoo::cluster_names()) {
        const auto c = zoo::make_cluster(n);
        std::printf("  %-20s %3d nodes %4d ranks  %s\n", std::string(n).c_str(), static_cast<int>(c.nodes.size()), c.world_size(),
                    c.device.c_str());
      }
      return 0;
    }
    if (*explain) return cmd_explain(co, strategy_file);
    if (*calibrate) return cmd_calibrate(cal, argc, argv);
    if (*run) return cmd_run(ro, argc, argv);
    if (*learn_cmd) return autosync_cli_learn::cmd_learn(lo);
    if (*tune_cmd) return autosync_cli_learn::cmd_tune(to, argv[0]);
    if (*sample) return cmd_sample(so);
    return cmd_optimize(co, seed, json, out, header, allow_lossy, budget);
  } catch (const autosync::error& e) {
    std::cerr << "autosync: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "autosync: error: " << e.what() << "\n";
    return 1;
  }
}
