// `autosync collective`: the model's predicted time of one collective at each given size, so
// anyone can hold the model against a measurement (an nccl-tests log, a profiler trace):
//
//   autosync collective --cluster NAME|FILE [--op all_reduce] [--algorithm nccl_default]
//                       --bytes B1,B2,... [--json]
//
// One line per size: bytes, then microseconds (with --json: an object per size, with the
// algorithm and protocol NCCL's selection picks on an NCCL-backend cluster).
#include "cli.hpp"

#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/nccl_model.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace autosync_cli {
namespace {

struct collective_opts {
  std::string cluster;
  std::string op = "all_reduce";
  std::string algorithm = "nccl_default";
  std::vector<std::string> bytes;
  bool json = false;
};

constexpr const char* algorithm_name(cost::nccl::algorithm a) {
  constexpr const char* n[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  return n[static_cast<int>(a)];
}
constexpr const char* protocol_name(cost::nccl::protocol p) {
  constexpr const char* n[] = {"LL", "LL128", "Simple"};
  return n[static_cast<int>(p)];
}

int run_collective(const collective_opts& o) {
  const cluster_spec c = load_cluster(o.cluster);
  cost::collective_op op{};
  if (!parse_enum(o.op, op)) throw error("--op", "unknown operation '" + o.op + "' (valid: " + std::string(valid_names_list<cost::collective_op>()) + ")");
  cost::collective_algorithm alg{};
  if (!parse_enum(o.algorithm, alg))
    throw error("--algorithm", "unknown algorithm '" + o.algorithm + "' (valid: " + std::string(valid_names_list<cost::collective_algorithm>()) + ")");
  try {  // an algorithm NCCL does not have for the operation (tree for all_gather) would be priced as another one
    cost::validate(cost::collective{op, alg, 0.0});
  } catch (const error& e) {
    throw error("--algorithm", e.message());
  }
  const auto parts = split_items(o.bytes, "--bytes");  // (not CLI11's split: "1,,2" is an error)
  std::vector<double> sizes;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& s = parts[i];
    const std::string f = "--bytes[" + std::to_string(i) + "]";
    if (s.find_first_not_of("0123456789") != std::string::npos)  // digits only: no sign, no 0x, no exponent
      throw error(f, "must be a whole number of bytes in [0, 1e15], got '" + s + "'");
    std::size_t used = 0;
    double v = -1;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      throw error(f, "not a byte count: '" + s + "'");
    }
    if (used != s.size() || !std::isfinite(v) || v < 0.0 || v > 1e15 || v != std::floor(v))
      throw error(f, "must be a whole number of bytes in [0, 1e15], got '" + s + "'");
    sizes.push_back(v);
  }
  if (sizes.empty()) throw error("--bytes", "needs at least one size");
  const auto f = cost::make_fabric(c);
  if (o.json)  // the name as a JSON string (a cluster file's name may hold quotes or backslashes)
    std::cout << "{\"cluster\": " << nlohmann::json(c.name).dump() << ", \"op\": \"" << o.op << "\", \"algorithm\": \"" << o.algorithm
              << "\", \"sizes\": [";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const cost::collective col{op, alg, sizes[i]};
    const double t = cost::analytical_time(f, col);
    char line[256];
    if (o.json) {
      std::string pick;
      if (f.nccl && f.p > 1) {
        const auto ch = cost::nccl_choice(f, col);
        pick = std::string(", \"nccl_algorithm\": \"") + algorithm_name(ch.algo) + "\", \"protocol\": \"" + protocol_name(ch.proto) + "\"";
      }
      std::snprintf(line, sizeof line, "%s{\"bytes\": %.0f, \"us\": %.6g%s}", i ? ", " : "", sizes[i], t * 1e6, pick.c_str());
    } else {
      std::snprintf(line, sizeof line, "%.0f %.3f\n", sizes[i], t * 1e6);
    }
    std::cout << line;
  }
  if (o.json) std::cout << "]}\n";
  return 0;
}

}  // namespace

subcommand add_collective(CLI::App& app) {
  auto o = std::make_shared<collective_opts>();
  auto* sub = app.add_subcommand("collective", "print the model's time of one collective per size (bytes, then microseconds)");
  sub->add_option("--cluster", o->cluster, "cluster preset name or cluster JSON file (e.g. from `calibrate --nccl-tests`)")->required();
  sub->add_option("--op", o->op, "all_reduce, reduce_scatter or all_gather")->capture_default_str();
  sub->add_option("--algorithm", o->algorithm, "ring, tree, pat or nccl_default (NCCL's own selection)")->capture_default_str();
  sub->add_option("--bytes", o->bytes, "sizes in bytes, comma separated")->required();
  sub->add_flag("--json", o->json, "one JSON object with every size, NCCL's algorithm and protocol");
  return {sub, [o](program&) { return run_collective(*o); }};
}

}  // namespace autosync_cli
