// autosync/io/json/cluster.hpp — a cluster as JSON (every field not marked "required" may be
// omitted and takes the C++ default):
//
//   cluster:  {"name": "...", "device": "V100", "source": "...",
//              "nodes": [                                                            <- required
//                {"name": "n", "count": 4, "devices": 8,
//                 "intra": {"bandwidth": 1.3e11, "latency": 5e-6},
//                 "nic": {"bandwidth": "25Gb/s", "latency": "20us"},
//                 "nics": 1, "server_only": false, "device_flops": 1.2e14, "reduce_bandwidth": 4e11,
//                 "compute": {"fp32": 6.7e13, "tf32": 4.945e14, "bf16": 9.895e14, "fp16": 9.895e14,
//                             "matmul_efficiency": 0.8, "memory_bandwidth": "3350GB/s",
//                             "memory_efficiency": 0.9, "multiprocessors": 132, "kernel_floor": "4us",
//                             "l2_bytes": 52428800}}]}
//              "compute": the device's roofline (cluster.hpp device_compute, cost/compute.hpp);
//              omitted: the cost model uses device_flops for FLOPs alone.
//              "codec_flops": the executor's compression work per second on the node (fp16: 2
//              per element); omitted: the backend's default (cost/fabric.hpp, codec_rate).
//              "count": N replicates the entry N times, names suffixed -0 .. -(N-1).
//              Optional network side (cluster.hpp, cost/transport.hpp; absent: backend "mpi"):
//              "backend": "mpi" | "nccl", "transport": {"kind": "rdma" | "efa" | "slingshot" |
//              "gpudirect_tcp" | "tcp", "message_latency": "40us", "message_overhead": "10us",
//              "efficiency": 0.9, "gpu_direct": true, "ll128": false} (absent fields: the kind's
//              defaults), "nvls": bool, "collnet": bool, "gpu_generation": "hopper",
//              "latency_scale": 1.0, "channels": 0 (calibration writes the last two).
//              Bandwidths: bytes/s as a number, or a string with a unit: B/s KB/s MB/s GB/s TB/s,
//              KiB/s MiB/s GiB/s TiB/s (bytes), b/s Kb/s Mb/s Gb/s Tb/s (bits), also written
//
// Writing folds runs of identical nodes named base-0, base-1, ... back into one entry with
// "count"; from_json(to_json(c)) == c.
// Part of io/json.hpp (io/json/text.hpp: how errors are located).
#pragma once

#include <autosync/error.hpp>
#include <autosync/io/json/fields.hpp>
#include <autosync/io/json/pretty.hpp>
#include <autosync/io/json/text.hpp>
#include <autosync/cluster.hpp>
#include <autosync/cost/transport.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autosync {
namespace detail::jio {

inline constexpr std::int64_t max_nodes = 65536;

[[nodiscard]] inline link read_link(const json& j, const std::string& f) {
  expect_object(j, f, "a link");
  check_keys(j, f, {"bandwidth", "latency"});
  link l;
  if (const json* v = find(j, "bandwidth")) l.bandwidth = read_quantity(*v, member(f, "bandwidth"), quantity::bandwidth);
  if (const json* v = find(j, "latency")) l.latency = read_quantity(*v, member(f, "latency"), quantity::time);
  return l;
}

// A device's compute roofline (cluster.hpp device_compute); cluster_spec::validate checks the values.
[[nodiscard]] inline device_compute read_device_compute(const json& j, const std::string& f) {
  expect_object(j, f, "a device compute description");
  check_keys(j, f, {"fp32", "tf32", "bf16", "fp16", "matmul_efficiency", "memory_bandwidth", "memory_efficiency",
                    "multiprocessors", "kernel_floor", "l2_bytes"});
  device_compute d;
  for (auto [key, dst] : {std::pair<const char*, double*>{"fp32", &d.fp32}, {"tf32", &d.tf32}, {"bf16", &d.bf16},
                          {"fp16", &d.fp16}, {"matmul_efficiency", &d.matmul_efficiency},
                          {"memory_efficiency", &d.memory_efficiency}, {"l2_bytes", &d.l2_bytes}})
    if (const json* v = find(j, key)) *dst = read_double(*v, member(f, key));
  if (const json* v = find(j, "memory_bandwidth"))
    d.memory_bandwidth = read_quantity(*v, member(f, "memory_bandwidth"), quantity::bandwidth);
  if (const json* v = find(j, "kernel_floor")) d.kernel_floor = read_quantity(*v, member(f, "kernel_floor"), quantity::time);
  if (const json* v = find(j, "multiprocessors")) d.multiprocessors = read_int32(*v, member(f, "multiprocessors"));
  return d;
}

[[nodiscard]] inline cluster_spec read_cluster(const json& j) {
  expect_object(j, "", "a cluster");
  check_keys(j, "", {"name", "device", "source", "nodes", "backend", "transport", "nvls", "collnet", "gpu_generation", "latency_scale",
                     "channels"});
  cluster_spec c;
  if (const json* v = find(j, "name")) c.name = read_string(*v, "name");
  if (const json* v = find(j, "backend")) c.backend = read_enum<collective_backend>(*v, "backend", "backend");
  if (const json* t = find(j, "transport")) {
    expect_object(*t, "transport", "a transport");
    check_keys(*t, "transport", {"kind", "message_latency", "message_overhead", "efficiency", "gpu_direct", "ll128"});
    if (const json* v = find(*t, "kind")) c.transport.kind = read_enum<transport_kind>(*v, "transport.kind", "transport");
    if (const json* v = find(*t, "message_latency")) c.transport.message_latency = read_quantity(*v, "transport.message_latency", quantity::time);
    if (const json* v = find(*t, "message_overhead"))
      c.transport.message_overhead = read_quantity(*v, "transport.message_overhead", quantity::time);
    if (const json* v = find(*t, "efficiency")) c.transport.efficiency = read_double(*v, "transport.efficiency");
    if (const json* v = find(*t, "gpu_direct")) c.transport.gpu_direct = read_bool(*v, "transport.gpu_direct") ? 1 : 0;
    if (const json* v = find(*t, "ll128")) c.transport.ll128 = read_bool(*v, "transport.ll128") ? 1 : 0;
  }
  if (const json* v = find(j, "nvls")) c.nvls = read_bool(*v, "nvls");
  if (const json* v = find(j, "collnet")) c.collnet = read_bool(*v, "collnet");
  if (const json* v = find(j, "gpu_generation")) c.generation = read_enum<gpu_generation>(*v, "gpu_generation", "GPU generation");
  if (const json* v = find(j, "latency_scale")) c.latency_scale = read_double(*v, "latency_scale");
  if (const json* v = find(j, "channels")) c.channels = read_int32(*v, "channels");
  if (const json* v = find(j, "device")) c.device = read_string(*v, "device");
  if (const json* v = find(j, "source")) c.source = read_string(*v, "source");
  const json& ns = require(j, "", "nodes");
  expect_array(ns, "nodes");
  std::vector<std::size_t> from;  // from[k]: the JSON entry node k came from ("count" expands)
  std::vector<bool> replicated(ns.size(), false);
  for (std::size_t i = 0; i < ns.size(); ++i) {
    const auto f = element("nodes", i);
    const json& e = ns[i];
    expect_object(e, f, "a node");
    check_keys(e, f, {"name", "count", "devices", "intra", "nic", "nics", "server_only", "device_flops", "reduce_bandwidth", "compute",
                      "codec_flops"});
    node_spec n;
    if (const json* v = find(e, "name")) n.name = read_string(*v, member(f, "name"));
    if (const json* v = find(e, "devices")) n.devices = read_int32(*v, member(f, "devices"));
    if (const json* v = find(e, "intra")) n.intra = read_link(*v, member(f, "intra"));
    if (const json* v = find(e, "nic")) n.nic = read_link(*v, member(f, "nic"));
    if (const json* v = find(e, "nics")) n.nics = read_int32(*v, member(f, "nics"));
    if (const json* v = find(e, "server_only")) n.server_only = read_bool(*v, member(f, "server_only"));
    if (const json* v = find(e, "device_flops")) n.device_flops = read_double(*v, member(f, "device_flops"));
    if (const json* v = find(e, "reduce_bandwidth"))
      n.reduce_bandwidth = read_quantity(*v, member(f, "reduce_bandwidth"), quantity::bandwidth);
    if (const json* v = find(e, "compute")) n.compute = read_device_compute(*v, member(f, "compute"));
    if (const json* v = find(e, "codec_flops")) n.codec_flops = read_double(*v, member(f, "codec_flops"));
    if (const json* v = find(e, "count")) {
      const auto k = read_int(*v, member(f, "count"), 1, max_nodes);
      if (static_cast<std::int64_t>(c.nodes.size()) + k > max_nodes)
        throw error(member(f, "count"), "the cluster would have more than " + std::to_string(max_nodes) + " nodes");
      replicated[i] = true;
      const std::string base = n.name;
      for (std::int64_t r = 0; r < k; ++r) {
        if (!base.empty()) n.name = base + "-" + std::to_string(r);
        c.nodes.push_back(n);
        from.push_back(i);
      }
    } else {
      if (static_cast<std::int64_t>(c.nodes.size()) + 1 > max_nodes)
        throw error(f, "the cluster would have more than " + std::to_string(max_nodes) + " nodes");
      c.nodes.push_back(std::move(n));
      from.push_back(i);
    }
  }
  try {
    c.validate();
  } catch (const error& e) {
    // validate() speaks of expanded nodes; point at the JSON entry they came from.
    const auto& fld = e.field();
    if (fld.rfind("nodes[", 0) != 0) throw;
    const auto close = fld.find(']');
    std::size_t k = 0;
    const auto r = std::from_chars(fld.data() + 6, fld.data() + close, k);
    if (r.ec != std::errc{} || k >= from.size()) throw;
    std::string msg = e.message();
    const std::string note = c.nodes[k].name.empty() ? "" : " '" + c.nodes[k].name + "'";
    if (replicated[from[k]]) msg += " (in node " + std::to_string(k) + note + ", a replica of this entry)";
    throw error("nodes[" + std::to_string(from[k]) + "]" + fld.substr(close + 1), msg);
  }
  return c;
}

[[nodiscard]] inline bool same_except_name(const node_spec& a, const node_spec& b) noexcept {
  return a.devices == b.devices && a.intra.bandwidth == b.intra.bandwidth && a.intra.latency == b.intra.latency &&
         a.nic.bandwidth == b.nic.bandwidth && a.nic.latency == b.nic.latency && a.nics == b.nics &&
         a.server_only == b.server_only && a.device_flops == b.device_flops && a.reduce_bandwidth == b.reduce_bandwidth &&
         a.compute == b.compute && a.codec_flops == b.codec_flops;
}

[[nodiscard]] inline ojson write_cluster(const cluster_spec& c) {
  ojson j;
  j["name"] = c.name;
  j["device"] = c.device;
  j["source"] = c.source;
  ojson ns = ojson::array();
  const node_spec def{};
  for (std::size_t i = 0; i < c.nodes.size();) {
    const auto& n = c.nodes[i];
    // A run of identical nodes named base-0, base-1, ... (or all unnamed) becomes one entry with "count".
    std::size_t run = 1;
    std::string base;
    const bool unnamed = n.name.empty();
    if (!unnamed && n.name.size() > 2 && n.name.compare(n.name.size() - 2, 2, "-0") == 0) base = n.name.substr(0, n.name.size() - 2);
    if (unnamed || !base.empty())
      while (i + run < c.nodes.size() && same_except_name(n, c.nodes[i + run]) &&
             c.nodes[i + run].name == (unnamed ? std::string() : base + "-" + std::to_string(run)))
        ++run;
    ojson o;
    if (run > 1) {
      if (!unnamed) o["name"] = base;
      o["count"] = run;
    } else if (!unnamed) {
      o["name"] = n.name;
    }
    o["devices"] = n.devices;
    o["intra"] = {{"bandwidth", n.intra.bandwidth}, {"latency", n.intra.latency}};
    o["nic"] = {{"bandwidth", n.nic.bandwidth}, {"latency", n.nic.latency}};
    o["nics"] = n.nics;
    if (n.server_only != def.server_only) o["server_only"] = n.server_only;
    o["device_flops"] = n.device_flops;
    o["reduce_bandwidth"] = n.reduce_bandwidth;
    if (n.compute != device_compute{}) {
      const auto& d = n.compute;
      o["compute"] = {{"fp32", d.fp32}, {"tf32", d.tf32}, {"bf16", d.bf16}, {"fp16", d.fp16},
                      {"matmul_efficiency", d.matmul_efficiency}, {"memory_bandwidth", d.memory_bandwidth},
                      {"memory_efficiency", d.memory_efficiency}, {"multiprocessors", d.multiprocessors},
                      {"kernel_floor", d.kernel_floor}};
      if (d.l2_bytes > 0.0) o["compute"]["l2_bytes"] = d.l2_bytes;
    }
    if (n.codec_flops != def.codec_flops) o["codec_flops"] = n.codec_flops;
    ns.push_back(std::move(o));
    i += run;
  }
  j["nodes"] = std::move(ns);
  if (c.backend != collective_backend::mpi) {
    j["backend"] = std::string(name_of(c.backend));
    ojson t;
    t["kind"] = std::string(name_of(c.transport.kind));
    if (c.transport.message_latency > 0.0) t["message_latency"] = c.transport.message_latency;
    if (c.transport.message_overhead > 0.0) t["message_overhead"] = c.transport.message_overhead;
    if (c.transport.efficiency > 0.0) t["efficiency"] = c.transport.efficiency;
    if (c.transport.gpu_direct >= 0) t["gpu_direct"] = c.transport.gpu_direct == 1;
    if (c.transport.ll128 >= 0) t["ll128"] = c.transport.ll128 == 1;
    j["transport"] = std::move(t);
    if (c.nvls) j["nvls"] = true;
    if (c.collnet) j["collnet"] = true;
    if (c.generation != gpu_generation::automatic) j["gpu_generation"] = std::string(name_of(c.generation));
    if (c.latency_scale != 1.0) j["latency_scale"] = c.latency_scale;
    if (c.channels != 0) j["channels"] = c.channels;
  }
  return j;
}

}  // namespace detail::jio

// nlohmann ADL hooks: `nlohmann::json j = c; j.get<cluster_spec>()` (validated).
template <detail::jio::basic_json_type J>
void to_json(J& j, const cluster_spec& c) { j = J(detail::jio::write_cluster(c)); }
template <detail::jio::basic_json_type J>
void from_json(const J& j, cluster_spec& c) { c = detail::jio::read_cluster(detail::jio::as_json(j)); }

namespace io {

// The JSON value of a cluster (keys in the documented order), and back (validated; errors carry the
// field path: a value has no lines).
[[nodiscard]] inline nlohmann::ordered_json to_json(const cluster_spec& c) { return detail::jio::write_cluster(c); }
[[nodiscard]] inline cluster_spec cluster_from_json(const nlohmann::json& j) { return j.get<cluster_spec>(); }

// Text and files; `file` names the source in messages ("cluster.json:14: 'field': ...").
[[nodiscard]] inline cluster_spec parse_cluster(std::string_view text, const std::string& file = "<cluster>") {
  return detail::jio::parse_text(text, file, [](const nlohmann::json& j) { return detail::jio::read_cluster(j); });
}
[[nodiscard]] inline std::string to_json_text(const cluster_spec& c) { return detail::jio::to_text(detail::jio::write_cluster(c)); }
[[nodiscard]] inline cluster_spec load_cluster_file(const std::filesystem::path& path) {
  return parse_cluster(detail::jio::read_file(path), path.string());
}
inline void save_cluster_file(const std::filesystem::path& path, const cluster_spec& c) { detail::jio::write_file(path, to_json_text(c)); }

}  // namespace io
}  // namespace autosync
