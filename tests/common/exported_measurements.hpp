// Models exported with their layers by examples/export_pytorch_model.py (tests/bench/
// export_heldout.py: <dir>/<model>-<precision>.json) and the same modules measured on a GPU by
// tests/bench/compute_measure.py (<dir>/measured.jsonl: the device's busy time of forward and
// backward). tests/data/compute/exported/ holds the shipped set; tests/bench/compute_table.cpp
// (--exported) prints the compute model against it, tests/unit/cost_compute_exported.cpp holds
// its documented bounds.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/io/json.hpp>
#include <autosync/model.hpp>
#include <autosync/zoo/clusters.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace autosync::test {

struct exported_measurement {
  std::string model;      // without compute_measure.py's "tv:" prefix
  std::string precision;  // as the file's name and the line say it
  std::string device;     // the line's device name ("NVIDIA H200")
  std::int64_t batch = 0;
  double forward_ms = 0.0, backward_ms = 0.0;  // measured
  const device_compute* compute = nullptr;     // the device's description (H100 or H200)
  model_spec spec;                             // the exported file
};

// The lines of dir/measured.jsonl that have an exported file and a described device (H100 or
// H200), in the file's order. Throws when dir/measured.jsonl cannot be read.
inline std::vector<exported_measurement> exported_measurements(const std::filesystem::path& dir) {
  std::ifstream in(dir / "measured.jsonl");
  if (!in) throw error("exported", "cannot read " + (dir / "measured.jsonl").string());
  std::vector<exported_measurement> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("model") || !j.contains("kernel_backward_ms")) continue;
    exported_measurement r;
    r.model = j["model"].get<std::string>();
    if (r.model.rfind("tv:", 0) == 0) r.model = r.model.substr(3);
    r.precision = j["precision"].get<std::string>();
    r.device = j.value("device", "");
    r.compute = r.device.find("H200") != std::string::npos   ? &zoo::hw::h200_sxm
                : r.device.find("H100") != std::string::npos ? &zoo::hw::h100_sxm
                                                             : nullptr;
    const auto file = dir / (r.model + "-" + r.precision + ".json");
    if (r.compute == nullptr || !std::filesystem::exists(file)) continue;
    r.batch = j.value("batch", std::int64_t{0});
    r.forward_ms = j["kernel_forward_ms"].get<double>();
    r.backward_ms = j["kernel_backward_ms"].get<double>();
    r.spec = io::load_model_file(file);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace autosync::test
