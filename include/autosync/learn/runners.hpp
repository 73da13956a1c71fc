// autosync/learn/runners.hpp — how learn::autotune gets a strategy run.
//
// * command_runner   any command line that runs one trial and appends its record. The template's
//                    placeholders are replaced (paths single-quoted for the shell):
//                      {autosync}  the autosync program       {strategy}  the strategy JSON
//                      {records}   a fresh records file        {model}     zoo name or model JSON
//                      {scale}     zoo scale                   {cluster}   the cluster JSON
//                      {np}        ranks                       {rpn}       ranks per node
//                      {iters} {warmup} {compute_scale} {seed}  the run settings
//                    The command's output goes to <work>/trial.log; a non-zero exit or no new
//                    record is an error quoting the log's tail.
// * local_runner     `mpirun --oversubscribe --allow-run-as-root -np {np} {autosync} run ...`
//                    (OpenMPI) on this machine.
// * testbed_runner   tests/testbed/testbed.sh run --name T -- {autosync} run ...: the ranks in
//                    network namespaces with shaped links (the testbed must be up; its cluster
//                    JSON is the target's cluster).
// * replay_runner    a recorded dataset: run() returns the record of the same strategy for the
//                    same ranking group, pool() offers those strategies (a PoolRunner), so the
//                    loop is AutoSync's pool-based active learning over measured trials.
#pragma once

#include <autosync/error.hpp>
#include <autosync/io/json.hpp>
#include <autosync/learn/autotune.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/records.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>

namespace autosync::learn {

namespace detail {

[[nodiscard]] inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) {
    if (ch == '\'') q += "'\\''";
    else q += ch;
  }
  return q + "'";
}

[[nodiscard]] inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

[[nodiscard]] inline std::string num(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

[[nodiscard]] inline std::string tail_of(const std::filesystem::path& p, std::size_t n = 2000) {
  std::ifstream f(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s.size() > n ? "..." + s.substr(s.size() - n) : s;
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw error("cannot write '" + p.string() + "'");
}

}  // namespace detail

class command_runner {
 public:
  // `work`: a directory for the trial's files (created).
  command_runner(std::string command_template, std::filesystem::path work, std::string autosync_program = "autosync")
      : tmpl_(std::move(command_template)), work_(std::move(work)), prog_(std::move(autosync_program)) {
    if (tmpl_.find("{records}") == std::string::npos)
      throw error("runner", "the command template must contain {records} (where the trial appends its record)");
    std::filesystem::create_directories(work_);
  }

  // The command line for one trial (files are written by run()).
  [[nodiscard]] std::string command(const tune_target& t) const {
    std::string c = tmpl_;
    const bool zoo = !t.model.zoo.empty();
    c = detail::replace_all(c, "{autosync}", detail::shell_quote(prog_));
    c = detail::replace_all(c, "{strategy}", detail::shell_quote((work_ / "strategy.json").string()));
    c = detail::replace_all(c, "{records}", detail::shell_quote((work_ / "trial.jsonl").string()));
    c = detail::replace_all(c, "{model}", zoo ? detail::shell_quote(t.model.zoo) : detail::shell_quote((work_ / "model.json").string()));
    c = detail::replace_all(c, "{scale}", detail::num(zoo ? t.model.scale : 1.0));
    c = detail::replace_all(c, "{cluster}", detail::shell_quote((work_ / "cluster.json").string()));
    c = detail::replace_all(c, "{np}", std::to_string(t.ranks));
    c = detail::replace_all(c, "{rpn}", std::to_string(t.ranks_per_node));
    c = detail::replace_all(c, "{iters}", std::to_string(t.iterations));
    c = detail::replace_all(c, "{warmup}", std::to_string(t.settings.warmup));
    c = detail::replace_all(c, "{compute_scale}", detail::num(t.settings.compute_scale));
    c = detail::replace_all(c, "{seed}", std::to_string(t.settings.seed));
    return c;
  }

  trial_record run(const tune_target& t, const strategy_desc& s) {
    detail::write_text(work_ / "strategy.json", io::to_json(s).dump(1) + "\n");
    detail::write_text(work_ / "cluster.json", io::to_json(t.cluster).dump(1) + "\n");
    if (t.model.zoo.empty()) detail::write_text(work_ / "model.json", io::to_json(t.model.spec).dump(1) + "\n");
    const auto rec_path = work_ / "trial.jsonl";
    const auto log = work_ / "trial.log";
    std::filesystem::remove(rec_path);
    // a subshell, so the redirections apply to the whole template (a trailing comment included)
    const std::string cmd = "(" + command(t) + "\n) > " + detail::shell_quote(log.string()) + " 2>&1 < /dev/null";
    const int rc = std::system(cmd.c_str());
    const int code = rc == -1 ? -1 : (WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc));
    if (code != 0)
      throw error("runner", "the trial of strategy '" + s.name + "' failed (exit " + std::to_string(code) + "): " + command(t) +
                                "\n" + detail::tail_of(log));
    if (!std::filesystem::exists(rec_path))
      throw error("runner", "the trial of strategy '" + s.name + "' wrote no record to " + rec_path.string() + "\n" + detail::tail_of(log));
    auto rr = read_records(rec_path);
    if (rr.records.size() != 1)
      throw error("runner", "the trial of strategy '" + s.name + "' wrote " + std::to_string(rr.records.size()) + " records, expected 1");
    return std::move(rr.records.front());
  }

 private:
  std::string tmpl_;
  std::filesystem::path work_;
  std::string prog_;
};

inline constexpr const char* local_template =
    "mpirun --oversubscribe --allow-run-as-root -np {np} {autosync} run --strategy {strategy} --model {model} --scale {scale} "
    "--cluster {cluster} --ranks-per-node {rpn} --iters {iters} --warmup {warmup} --compute-scale {compute_scale} --seed {seed} "
    "--records {records}";

[[nodiscard]] inline command_runner local_runner(std::filesystem::path work, std::string autosync_program) {
  return command_runner(local_template, std::move(work), std::move(autosync_program));
}

// `script`: tests/testbed/testbed.sh; `name`: the testbed brought up with `testbed.sh up --name`.
[[nodiscard]] inline command_runner testbed_runner(const std::filesystem::path& script, const std::string& name,
                                                   std::filesystem::path work, std::string autosync_program) {
  return command_runner(detail::shell_quote(script.string()) + " run --name " + detail::shell_quote(name) +
                            " -- -np {np} {autosync} run --strategy {strategy} --model {model} --scale {scale} --cluster {cluster} "
                            "--ranks-per-node {rpn} --iters {iters} --warmup {warmup} --compute-scale {compute_scale} --seed {seed} "
                            "--records {records}",
                        std::move(work), std::move(autosync_program));
}

class replay_runner {
 public:
  explicit replay_runner(std::vector<trial_record> records) : recs_(std::move(records)) {
    for (std::size_t i = 0; i < recs_.size(); ++i) index_.emplace(group_of(recs_[i]) + "\n" + strategy_key(recs_[i].strategy), i);
  }
  trial_record run(const tune_target& t, const strategy_desc& s) {
    const auto it = index_.find(t.group() + "\n" + strategy_key(s));
    if (it == index_.end()) throw error("runner", "the recorded dataset has no trial of strategy '" + s.name + "' for " + t.group());
    ++runs_;
    return recs_[it->second];
  }
  [[nodiscard]] std::vector<strategy_desc> pool(const tune_target& t) const {
    std::vector<strategy_desc> out;
    std::set<std::string> seen;
    const auto g = t.group();
    for (const auto& r : recs_)
      if (group_of(r) == g && seen.insert(strategy_key(r.strategy)).second) out.push_back(r.strategy);
    return out;
  }
  [[nodiscard]] std::size_t runs() const noexcept { return runs_; }

 private:
  std::vector<trial_record> recs_;
  std::multimap<std::string, std::size_t> index_;
  std::size_t runs_ = 0;
};

}  // namespace autosync::learn
