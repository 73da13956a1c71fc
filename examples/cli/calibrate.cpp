// `autosync calibrate` (under mpirun): exec::calibrate on the MPI ranks, then rank 0 prints the
// measurements next to the fit and the local-<N> preset, and writes the cluster JSON that
// `optimize` and `run` take with --cluster.
//
// `autosync calibrate --nccl-tests LOG --nodes N --devices-per-node G [--sizes B1,B2,...]`: a GPU
// machine from an nccl-tests log the user already has (no MPI, no GPU needed): the text output
// or the JSON report of -J (io/nccl_tests_json.hpp; its devices give --nodes and
// --devices-per-node when they are not set). The data-sheet
// cluster (--cluster, default dgx-h100-x1: its first node, replicated to N nodes of G devices;
// --transport sets the network's kind) is fitted to the log's rows (cost/nccl_calibrate.hpp):
// to the rows of --sizes, or to --points of them spread over the log's range (default 4). Prints
// every row measured / predicted and writes the calibrated cluster (backend nccl).
#include "cli.hpp"

#include <autosync/cost/nccl_calibrate.hpp>
#include <autosync/cost/nccl_tests_log.hpp>
#include <autosync/io/nccl_tests_json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#ifdef AUTOSYNC_HAS_MPI
#include "mpi.hpp"

#include <autosync/exec/calibrate.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/job.hpp>
#include <autosync/io/report.hpp>
#include <autosync/learn/run_record.hpp>

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#endif

namespace autosync_cli {
namespace {

struct calibrate_opts {
  std::string out;
  std::uint64_t max_bytes = std::uint64_t{16} << 20;
  double budget_s = 1.5;
  // from an nccl-tests log
  std::string nccl_tests;
  int nodes = 0, devices_per_node = 0;
  std::vector<std::string> sizes;
  int points = 4;
  std::string cluster = "dgx-h100-x1";
  std::string transport;
  std::string op = "all_reduce";
  std::string algorithm = "nccl_default";
  std::string section;
};

int run_calibrate_log(calibrate_opts co) {
  if (co.out.empty()) throw error("--out", "needs a file name for the cluster JSON");
  // the log's rows (a JSON report also says the machine's shape: the defaults of --nodes and
  // --devices-per-node)
  io::nccl_tests_shape shape;
  const auto log = io::load_nccl_tests(co.nccl_tests, &shape);
  std::string inferred;
  if (co.nodes == 0 && shape.hosts > 0) {
    co.nodes = shape.hosts;
    inferred += " --nodes " + std::to_string(co.nodes);
  }
  if (co.devices_per_node == 0 && co.nodes > 0 && shape.ranks > 0 && shape.ranks % co.nodes == 0) {
    co.devices_per_node = shape.ranks / co.nodes;  // the report's ranks over the nodes (given or its hosts)
    inferred += " --devices-per-node " + std::to_string(co.devices_per_node);
  }
  if (!inferred.empty()) std::cout << "autosync calibrate: from the report's devices:" << inferred << "\n";
  const std::string why = shape.ranks > 0 ? " (the report's " + std::to_string(shape.ranks) + " ranks do not divide evenly over " +
                                                std::to_string(co.nodes) + " node(s))"
                                          : " (the log does not list its devices: only a JSON report of nccl-tests -J does)";
  if (co.nodes == 0) throw error("--nodes", "is required, a whole number in [1, 65536]" + why);
  if (co.devices_per_node == 0) throw error("--devices-per-node", "is required, a whole number in [1, 1024]" + why);
  if (co.nodes < 1 || co.nodes > 65536) throw error("--nodes", "must be in [1, 65536]");
  if (co.devices_per_node < 1 || co.devices_per_node > 1024) throw error("--devices-per-node", "must be in [1, 1024]");
  if (co.nodes * co.devices_per_node < 2) throw error("--nodes", "a collective needs at least 2 ranks (nodes x devices-per-node)");
  cost::calibration_target t;
  if (!parse_enum(co.op, t.op)) throw error("--op", "unknown operation '" + co.op + "' (valid: " + std::string(valid_names_list<cost::collective_op>()) + ")");
  if (!parse_enum(co.algorithm, t.algorithm))
    throw error("--algorithm", "unknown algorithm '" + co.algorithm + "' (valid: " + std::string(valid_names_list<cost::collective_algorithm>()) + ")");
  // the data-sheet machine: the base cluster's first worker node, N x G
  const cluster_spec base = load_cluster(co.cluster);
  cluster_spec c;
  try {
    c = cost::datasheet_machine(base, co.nodes, co.devices_per_node);
  } catch (const error& e) {
    if (e.field() == "cluster") throw error("--cluster", "'" + co.cluster + "' has no worker node to take the data sheet from");
    throw;
  }
  const bool any_transport = co.transport == "auto";
  if (!co.transport.empty() && !any_transport) {
    transport_kind kind{};
    if (!parse_enum(co.transport, kind))
      throw error("--transport",
                  "unknown transport '" + co.transport + "' (valid: " + std::string(valid_names_list<transport_kind>()) + ", auto)");
    if (kind != c.transport.kind) {  // that kind with its sourced defaults, as --transport auto tries it
      c.transport = network_transport{};
      c.transport.kind = kind;
    }
  }
  const cost::nccl_tests::section* sec = nullptr;
  for (const auto& s : log.sections)
    if (co.section.empty() ? !s.rows.empty() : s.title.starts_with(co.section)) {
      sec = &s;
      break;
    }
  if (!sec || sec->rows.empty())
    throw error("--nccl-tests", "'" + co.nccl_tests + "' has no rows" + (co.section.empty() ? std::string() : " in section '" + co.section + "'"));
  // one data type and reduction: the rows of the section's first (type, redop); a log of several
  // (nccl-tests -d all, -o all) measures each size once per pair
  std::vector<cost::calibration_point> all;
  std::size_t other = 0;
  for (const auto& r : sec->rows) {
    if (r.type != sec->rows.front().type || r.redop != sec->rows.front().redop) {
      ++other;
      continue;
    }
    if (r.bytes > 0) all.push_back({static_cast<double>(r.bytes), r.seconds()});
  }
  if (other > 0)
    std::cout << "autosync calibrate: fitting the rows of " << sec->rows.front().type << " " << sec->rows.front().redop << "; " << other
              << " row(s) of other data types or reductions left out\n";
  // the log's reduction says which kind of collective it timed ("none": all_gather, broadcast, ...)
  if (const auto& redop = sec->rows.front().redop; !redop.empty()) {
    const bool reduces = t.op != cost::collective_op::all_gather;
    if (reduces != (redop != "none"))
      throw error("--op", "'" + co.op + "' " + (reduces ? "reduces" : "does not reduce") + ", but the log's rows have redop '" + redop +
                              "': a log of " + (reduces ? "all_gather" : "all_reduce or reduce_scatter") + "?");
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  for (std::size_t i = 1; i < all.size(); ++i)
    if (all[i].bytes == all[i - 1].bytes)
      throw error("--nccl-tests", "'" + co.nccl_tests + "' times " + std::to_string(static_cast<std::int64_t>(all[i].bytes)) +
                                      " bytes twice (one run per log: fit each run from a log of its own)");
  if (all.empty()) throw error("--nccl-tests", "'" + co.nccl_tests + "' has no rows with a positive size");
  std::vector<cost::calibration_point> fit;
  const auto sizes = split_items(co.sizes, "--sizes");  // (not CLI11's split: "1,,2" is an error)
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string f = "--sizes[" + std::to_string(i) + "]";
    std::size_t used = 0;
    double b = -1;
    try {
      b = std::stod(sizes[i], &used);
    } catch (const std::exception&) {
      throw error(f, "not a byte count: '" + sizes[i] + "'");
    }
    if (used != sizes[i].size() || !(b > 0.0)) throw error(f, "must be a positive byte count, got '" + sizes[i] + "'");
    const auto it = std::find_if(all.begin(), all.end(), [b](const auto& p) { return p.bytes == b; });
    if (it == all.end()) throw error(f, "the log has no row of " + sizes[i] + " bytes");
    for (std::size_t k = 0; k < i; ++k)
      if (fit[k].bytes == b) throw error(f, sizes[i] + " bytes is already --sizes[" + std::to_string(k) + "]");
    fit.push_back(*it);
  }
  if (fit.empty())
    for (auto i : cost::pick_sizes(all.size(), static_cast<std::size_t>(co.points))) fit.push_back(all[i]);
  check_writable(co.out, "--out");  // fail now, not after the fit
  const auto sheet = cost::make_fabric(c);
  const auto r = any_transport ? cost::calibrate_transport(c, fit, t) : cost::calibrate(c, fit, t);
  const auto fitted = cost::make_fabric(r.cluster);
  std::cout << "autosync calibrate: " << co.nccl_tests << " (" << all.size() << " rows; fitted to " << fit.size() << "), "
            << co.nodes << " x " << co.devices_per_node << " " << base.device << ", " << name_of(r.cluster.transport.kind)
            << (any_transport ? (cost::transport_fittable(c, fit.size()) ? " (the best fit of every transport)"
                                                                         : " (auto needs 4 sizes on 2 nodes or more: the data sheet's)")
                              : "")
            << "\n";
  std::cout << "         bytes   measured_us  data_sheet_us  calibrated_us  rel_err\n";
  std::vector<double> e0, e1;
  char line[200];
  for (const auto& p : all) {
    const double a = cost::predict(sheet, t, p.bytes), b = cost::predict(fitted, t, p.bytes);
    e0.push_back(std::abs(a - p.seconds) / p.seconds);
    e1.push_back(std::abs(b - p.seconds) / p.seconds);
    const bool used = std::any_of(fit.begin(), fit.end(), [&](const auto& q) { return q.bytes == p.bytes; });
    std::snprintf(line, sizeof line, "  %12.0f %12.1f %14.1f %14.1f %8.3f%s\n", p.bytes, p.seconds * 1e6, a * 1e6, b * 1e6, e1.back(),
                  used ? "  (fitted)" : "");
    std::cout << line;
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  std::snprintf(line, sizeof line,
                "  fitted %d constant(s): bandwidth x %.3f, latency x %.3f, message overhead x %.3f (%.2f us)\n"
                "  median relative error over all rows: data sheet %.3f, calibrated %.3f\n",
                r.fitted, r.bandwidth_scale, r.latency_scale, r.overhead_scale, r.cluster.transport.message_overhead * 1e6, med(e0), med(e1));
  std::cout << line;
  if (c.nvls && !r.cluster.nvls) std::cout << "  NVLink SHARP (nvls): off, which fits the points better than the data sheet's on\n";
  cluster_spec out = r.cluster;
  out.source = "calibrated by autosync from " + std::filesystem::path(co.nccl_tests).filename().string() + " (" + std::to_string(fit.size()) +
               " sizes); data sheet: " + base.name;
  io::save_cluster_file(co.out, out);
  std::cout << "wrote cluster '" << out.name << "' to " << co.out << " (use: --cluster " << co.out << ")\n";
  return 0;
}

#ifdef AUTOSYNC_HAS_MPI

using exec::mpi_backend;

int run_calibrate(const calibrate_opts& co, program& prog) {
  exec::mpi_session session(prog.argc, prog.argv);
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
    if (rank == 0) check_writable(co.out, "--out");  // fail now, not after the measurement
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
  const auto env = learn::host_environment(p, exec::mpi_library_version(), exec::thread_level_name(session.thread_level()), AUTOSYNC_VERSION);
  const cluster_spec c = exec::calibrated_cluster(k, "host " + env.hostname + ", " + env.timestamp);
  const cluster_spec preset = zoo::local(p);
  const auto& pn = preset.nodes[0];
  char line[200];
  std::cout << "autosync calibrate: " << p << " ranks on " << env.hostname << " (" << env.mpi_library.substr(0, env.mpi_library.find(',')) << ")\n";
  std::snprintf(line, sizeof line, "  reduction (sum_into f32, every rank at once): %.2f GB/s per rank\n", k.reduce_bandwidth / 1e9);
  std::cout << line;
  if (k.codec_flops > 0.0) {
    std::snprintf(line, sizeof line, "  fp16 codec (encode with error feedback + decode, every rank at once): %.2f ns per element, codec_flops %.3g (default %.3g)\n",
                  2.0 / k.codec_flops * 1e9, k.codec_flops, cost::host_codec_flops);
    std::cout << line;
  }
  std::cout << "  ring all-reduce (exec::all_reduce, f32)      measured      fitted   fit/measured\n";
  for (const auto& x : k.samples) {
    std::snprintf(line, sizeof line, "    %12s  %5d reps              %10s  %10s   %6.2f\n", io::human_bytes(double(x.bytes)).c_str(), x.reps,
                  io::format_ms(x.measured).c_str(), io::format_ms(x.fitted).c_str(), x.fitted / x.measured);
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

int run_calibrate(const calibrate_opts&, program&) {
  throw error("`autosync calibrate` needs MPI: this autosync was built without it (install OpenMPI, e.g. Debian's libopenmpi-dev, "
              "and rebuild)");
}

#endif

}  // namespace

subcommand add_calibrate(CLI::App& app) {
  auto co = std::make_shared<calibrate_opts>();
  auto* sub = app.add_subcommand("calibrate", "measure this host's MPI transport (under mpirun), or fit a GPU machine to an nccl-tests log "
                                               "(--nccl-tests), and write a cluster JSON");
  sub->add_option("--out", co->out, "cluster JSON file to write")->required();
  sub->add_option("--nccl-tests", co->nccl_tests, "fit to this nccl-tests log (all_reduce_perf etc.: the text output or the JSON report of -J) instead of measuring");
  sub->add_option("--nodes", co->nodes, "with --nccl-tests: nodes the log ran on (default: a JSON report's hosts)")->check(whole_number(1, 65536));
  sub->add_option("--devices-per-node", co->devices_per_node, "with --nccl-tests: GPUs (ranks) per node (default: a JSON report's ranks per host)")
      ->check(whole_number(1, 1024));
  sub->add_option("--sizes", co->sizes, "with --nccl-tests: fit to these rows only (bytes, comma separated)");
  sub->add_option("--points", co->points, "with --nccl-tests and no --sizes: rows to fit, spread over the log's range")
      ->check(whole_number(1, 64))
      ->capture_default_str();
  sub->add_option("--cluster", co->cluster, "with --nccl-tests: data-sheet cluster (preset or JSON) whose first node is the machine's")
      ->capture_default_str();
  sub->add_option("--transport", co->transport, "with --nccl-tests: rdma, efa, slingshot, gpudirect_tcp or tcp with that kind's defaults (default: the cluster's); auto: fit each, keep the best (4 sizes or more, 2 nodes or more)");
  sub->add_option("--op", co->op, "with --nccl-tests: the log's operation")->capture_default_str();
  sub->add_option("--algorithm", co->algorithm, "with --nccl-tests: how NCCL ran it (nccl_default, ring, tree, pat)")->capture_default_str();
  sub->add_option("--section", co->section, "with --nccl-tests: the log section whose title starts with this (default: the first)");
  sub->add_option("--max-bytes", co->max_bytes, "largest ring all-reduce measured (sizes 4 KiB x4 up to this)")->capture_default_str();
  sub->add_option("--budget-s", co->budget_s, "seconds of repetitions per size")->capture_default_str();
  return {sub, [co](program& prog) { return co->nccl_tests.empty() ? run_calibrate(*co, prog) : run_calibrate_log(*co); }};
}

}  // namespace autosync_cli
