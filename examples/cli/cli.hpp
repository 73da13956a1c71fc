// The `autosync` command's shared parts: how a subcommand registers itself, and the option
// conventions every subcommand follows (a zoo name or a JSON file for --model and --cluster,
// files written with an error that names them). Each subcommand is one file of this folder;
// main.cpp registers them and runs the one given.
//
// Exit codes: 0 success, 1 bad input (unknown name, malformed file: the message names the file,
// line and field), 2 usage error.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/compressors/all.hpp>  // the registered compression family: strategy files and the search may name it
#include <autosync/error.hpp>
#include <autosync/io/json.hpp>
#include <autosync/model.hpp>
#include <autosync/search/constraints.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#ifndef AUTOSYNC_VERSION
#define AUTOSYNC_VERSION "unknown"  // examples/CMakeLists.txt passes the project version
#endif

namespace autosync_cli {

using namespace autosync;

// What the subcommands may need of the process: MPI_Init takes argc/argv.
struct program {
  int& argc;
  char**& argv;
};

// A registered subcommand: CLI11's node (true once parsed) and what runs it. The options live
// in the closure.
struct subcommand {
  CLI::App* app = nullptr;
  std::function<int(program&)> run;
};

// One per file of this folder, in the order `autosync --help` lists them.
subcommand add_optimize(CLI::App& app);
subcommand add_models(CLI::App& app);
subcommand add_clusters(CLI::App& app);
subcommand add_explain(CLI::App& app);
subcommand add_run(CLI::App& app);
subcommand add_calibrate(CLI::App& app);
subcommand add_collective(CLI::App& app);
subcommand add_learn(CLI::App& app);
subcommand add_tune(CLI::App& app);
subcommand add_sample(CLI::App& app);

// A whole number in [min, max], for options read into integers: CLI11 reads "-1" into an
// unsigned as 2^64 - 1 and clamps a number too large for the type; this refuses both (and a
// sign, a fraction, an exponent), and CLI11 names the option in the message.
inline CLI::Validator whole_number(std::uint64_t min = 0, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  return CLI::Validator(
      [min, max](std::string& s) -> std::string {
        const std::string range = "a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return "must be " + range + ", got '" + s + "'";
        const auto first = s.find_first_not_of('0');
        const std::string v = first == std::string::npos ? "0" : s.substr(first);
        auto below = [&](std::uint64_t lim) {  // v < lim, as numbers
          const std::string l = std::to_string(lim);
          return v.size() != l.size() ? v.size() < l.size() : v < l;
        };
        auto above = [&](std::uint64_t lim) {  // v > lim
          const std::string l = std::to_string(lim);
          return v.size() != l.size() ? v.size() > l.size() : v > l;
        };
        if (below(min) || above(max)) return "must be " + range + ", got '" + s + "'";
        return "";
      },
      "", "whole_number");
}

// --model / --cluster: a path (has a '/', ends in .json, or exists) is a JSON file, anything
// else a zoo name.
inline bool looks_like_file(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".json") || std::filesystem::exists(s);
}
inline model_spec load_model(const std::string& s) { return looks_like_file(s) ? io::load_model_file(s) : zoo::make_model(s); }
inline cluster_spec load_cluster(const std::string& s) { return looks_like_file(s) ? io::load_cluster_file(s) : zoo::make_cluster(s); }
// The embedded learned correction re-ranks the search's best candidates by default only on the
// kind of cluster it was trained on: MPI (alpha-beta-gamma) clusters. `optimize` and `sample
// --search` share this rule, so the strategy `sample` writes is `optimize`'s default pick.
inline bool corrects_by_default(const cluster_spec& c) { return c.backend == collective_backend::mpi; }

// The items of a comma-separated option, split here: CLI11's delimiter drops an empty item, so
// "a,,b" would pass for "a,b". An empty item is an error naming the option and its place.
inline std::vector<std::string> split_items(const std::vector<std::string>& given, const std::string& option) {
  std::vector<std::string> out;
  for (const auto& text : given)
    for (std::size_t at = 0;;) {
      const auto comma = text.find(',', at);
      auto item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      if (item.empty()) throw error(option + "[" + std::to_string(out.size()) + "]", "is empty (in '" + text + "')");
      out.push_back(std::move(item));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  return out;
}

// --max-compression-ratio and --compressors of `optimize` and `tune`: the budget of lossy
// compression, given only with --allow-lossy.
// (c: the cluster the budget is for; a registered compressor named for an NCCL cluster, whose
// executor refuses it and whose search never proposes it, is an error.)
inline search::lossy_budget lossy_budget_of(bool allow_lossy, double max_ratio, const std::vector<std::string>& given, const cluster_spec& c) {
  const auto compressors = split_items(given, "--compressors");
  if ((max_ratio != 0.0 || !compressors.empty()) && !allow_lossy)
    throw error(compressors.empty() ? "--max-compression-ratio" : "--compressors", "is a budget for lossy compression: give it with --allow-lossy");
  if (!(max_ratio >= 0.0) || !std::isfinite(max_ratio)) throw error("--max-compression-ratio", "must be a finite number >= 1 (0: no limit)");
  if (max_ratio != 0.0 && max_ratio < 1.0) throw error("--max-compression-ratio", "must be >= 1 (0: no limit)");
  search::lossy_budget b;
  b.max_ratio = max_ratio;
  for (const auto& n : compressors) {
    if (!b.allow(n))
      throw error("--compressors", "'" + n + "' is not a compressor (known: " + all_compression_names() + ")" +
                                       (b.only_count == search::lossy_budget::max_listed ? " or the list is full" : ""));
    if (c.backend == collective_backend::nccl && registry::find_compression(n) != nullptr)
      throw error("--compressors", "'" + n + "' runs on host-memory backends (MPI) only: cluster '" + c.name +
                                       "' is an NCCL cluster, whose executor refuses registered compressors (fp16 and bf16 run there)");
  }
  return b;
}

// Adds --max-compression-ratio and --compressors to a subcommand.
inline void add_lossy_budget(CLI::App* sub, double& max_ratio, std::vector<std::string>& compressors, const char* who) {
  sub->add_option("--max-compression-ratio", max_ratio,
                  std::string("with --allow-lossy: the largest compression ratio a lossy compressor ") + who +
                      " may reach (32 / its bits per element; 0: no limit)");
  sub->add_option("--compressors", compressors, std::string("with --allow-lossy: the lossy compressors ") + who + " may use (comma-separated)");
}

// An output file of `option` that the command will write at its end: opened for appending now,
// so that a path that cannot be written fails before the work, not after it.
inline void check_writable(const std::string& path, const std::string& option) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec)) throw error(option, "'" + path + "' is a directory");
  std::ofstream f(path, std::ios::app);
  if (!f) throw error(option, "cannot open '" + path + "' to write");
}

inline void write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw error(std::string("cannot open '") + path + "' to write the " + what);
  f << text;
  if (!f) throw error(std::string("cannot write the ") + what + " to '" + path + "'");
}

// --model, --cluster and --timeline of `optimize` and `explain` (default: the main job, bert-large
// on 4 x p3.16xlarge).
// --precision overrides the model's training precision (cost/compute.hpp: which units run the
// matrix work, how many bytes the activations have).
struct model_cluster_opts {
  std::string model = "bert-large";
  std::string cluster = "p3.16xlarge-x4";
  std::string timeline;
  std::string precision;  // empty: the model's own (pytorch-fp32 unless its JSON says otherwise)
  std::vector<std::string> recompute;  // layer-name prefixes checkpointed (model_spec::recompute_layers)
};
inline void add_model_cluster(CLI::App* sub, model_cluster_opts& o) {
  sub->add_option("--model", o.model, "zoo model name or model JSON file")->capture_default_str();
  sub->add_option("--cluster", o.cluster, "cluster preset name or cluster JSON file")->capture_default_str();
  sub->add_option("--timeline", o.timeline, "write the predicted iteration timeline as SVG");
  std::vector<std::string> names;
  for (precision p : all_precisions) names.emplace_back(name_of(p));
  sub->add_option("--precision", o.precision,
                  "training precision: pytorch-fp32 (PyTorch's default: TF32 convolutions, fp32 matmuls), fp32, tf32, "
                  "bf16 or fp16 (autocast); default: the model's own")
      ->check(CLI::IsMember(names));
  sub->add_option("--recompute", o.recompute,
                  "activation checkpointing: the layers whose names start with one of these prefixes (comma separated; "
                  "h. for GPT-2's blocks, encoder.layer. for BERT's) run their forward again in backward, as under "
                  "torch.utils.checkpoint")
      ->delimiter(',');
}
// The model of --model with --precision and --recompute applied.
inline model_spec load_model(const model_cluster_opts& o) {
  model_spec m = load_model(o.model);
  if (!o.precision.empty() && m.has_profile())
    throw error("--precision", "model '" + m.name + "' has a measured profile, whose times are taken as they are "
                               "(profile it in that precision instead)");
  if (!o.precision.empty()) m.training_precision = *parse_precision(o.precision);
  if (!o.recompute.empty() && m.has_profile())
    throw error("--recompute", "model '" + m.name + "' has a measured profile, whose times are taken as they are "
                               "(profile it with its blocks checkpointed instead)");
  if (!o.recompute.empty() && m.layers.empty())
    throw error("--recompute", "model '" + m.name + "' has no layers to recompute (it is priced from its FLOPs)");
  for (const auto& p : o.recompute)
    if (p.empty() || m.recompute_layers(p) == 0)
      throw error("--recompute", "no layer of model '" + m.name + "' starts with '" + p + "' (its first layer is '" +
                                     m.layers.front().name + "', its last '" + m.layers.back().name + "')");
  return m;
}

}  // namespace autosync_cli
