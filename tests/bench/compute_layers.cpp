// The compute model (cost/compute.hpp) layer by layer: each zoo layer's predicted forward and
// backward time on a device (cost::time_of), and, given the per-layer measurements of
// tests/bench/compute_measure.py --per-layer (JSON lines), the measured time beside it, grouped by
// layer kind with totals per kind, and the layers the model misses most. Deterministic: no timing
// is taken here.
//
//   ninja -C build -j1 bench_compute_layers
//   build/tests/bench/bench_compute_layers --model resnet50 --precision bf16 --device h200   # predicted
//   build/tests/bench/bench_compute_layers tests/data/compute/h200-layers.jsonl            # vs measured
//
// Options: --model NAME and --precision P pick the rows of the file (default: every model,
// precision and batch in it, each at the lines' "batch"; without a file vgg16, pytorch-fp32);
// --device h200|h100 (default: the "device" of the file's pass lines, else h200); --top N (the N
// layers of largest error, default 5); --totals (kinds and largest errors only, no per-layer rows).
//
// The measured modules are the zoo's layers by name (compute_measure.py runs torchvision's
// modules under the zoo's names: features.N, layerX.Y.convZ, relu1..3, residual, ...; the loss is
// the module "loss"). A container's own remainder goes to its "<name>.residual" layer where the
// zoo has one (a Bottleneck's backward sums the gradients meeting at the fork there, which the
// zoo charges to the residual add); other remainders, and modules with no zoo layer, are listed
// as unmapped, zoo layers with no module as not measured.
#include "../common/compute_measurements.hpp"

#include <autosync/cost/compute.hpp>
#include <autosync/error.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace autosync;

namespace {

struct options {
  std::string file, model, precision, device;
  int top = 5;
  bool totals = false;
};

struct times {
  double fwd = 0.0, bwd = 0.0;  // ms
};

// One (model, precision) of the file: its module rows and the summary of each pass.
struct measured_run {
  std::string model, precision, device;
  std::int64_t batch = 0;  // the lines' "batch" (0: the zoo's)
  std::map<std::string, times> leaves, containers;
  times total, busy, unattributed;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw error(a, "needs a value");
      return argv[++i];
    };
    if (a == "--model") o.model = value();
    else if (a == "--precision") o.precision = value();
    else if (a == "--device") o.device = value();
    else if (a == "--top") o.top = std::max(0, std::atoi(value().c_str()));
    else if (a == "--totals") o.totals = true;
    else if (!a.empty() && a[0] == '-') throw error(a, "unknown option (--model, --precision, --device, --top, --totals)");
    else o.file = a;
  }
  return o;
}

std::optional<device_compute> device_of(const std::string& name) {
  auto has = [&](const char* s) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return n.find(s) != std::string::npos;
  };
  if (has("h200")) return zoo::hw::h200_sxm;
  if (has("h100")) return zoo::hw::h100_sxm;
  return std::nullopt;
}

std::vector<measured_run> read_runs(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw error(path, "cannot be read");
  std::vector<measured_run> runs;
  auto run_of = [&](const std::string& model, const std::string& prec, std::int64_t batch) -> measured_run& {
    for (auto& r : runs)
      if (r.model == model && r.precision == prec && r.batch == batch) return r;
    runs.push_back({model, prec, {}, batch, {}, {}, {}, {}, {}});
    return runs.back();
  };
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw error(path + ":" + std::to_string(n), "is not a JSON object");
    if (!j.contains("model") || !j.contains("precision") || j.contains("error")) continue;
    auto& r = run_of(j.at("model").get<std::string>(), j.at("precision").get<std::string>(), j.value("batch", std::int64_t{0}));
    if (j.contains("layer")) {
      const times t{j.value("fwd_ms", 0.0), j.value("bwd_ms", 0.0)};
      (j.value("leaf", true) ? r.leaves : r.containers)[j.at("layer").get<std::string>()] = t;
    } else if (j.contains("pass")) {
      const bool fwd = j.at("pass").get<std::string>() == "forward";
      (fwd ? r.total.fwd : r.total.bwd) = j.value("total_ms", 0.0);
      (fwd ? r.busy.fwd : r.busy.bwd) = j.value("busy_ms", 0.0);
      (fwd ? r.unattributed.fwd : r.unattributed.bwd) = j.value("unattributed_ms", 0.0);
      r.device = j.value("device", r.device);
    }
  }
  return runs;
}

// The GEMM (m n k) of a matrix layer, the elements of a memory-bound one.
std::string shape_of(const layer& l) {
  char buf[64];
  if (l.kind == layer_kind::conv || l.kind == layer_kind::linear || l.kind == layer_kind::matmul)
    std::snprintf(buf, sizeof buf, "%lld %lld %lld", static_cast<long long>(l.m), static_cast<long long>(l.n),
                  static_cast<long long>(l.k));
  else if (l.outputs > 0)
    std::snprintf(buf, sizeof buf, "E %.2fM -> %.2fM", double(l.elements) / 1e6, double(l.outputs) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "E %.2fM", double(l.elements) / 1e6);
  return buf;
}

double ratio(double pred, double meas) { return meas > 0.0 ? pred / meas : 0.0; }

struct row {
  const layer* l;
  times pred, meas;
  bool measured = false;
};

void print_header(const char* first) {
  std::printf("%-24s %-10s %-22s | %8s %8s %5s | %8s %8s %5s\n", first, "kind", "m n k / elements", "pred fwd", "meas fwd",
              "p/m", "pred bwd", "meas bwd", "p/m");
}

void print_row(const char* name, const char* kind, const std::string& shape, times p, times m, bool measured) {
  if (measured)
    std::printf("%-24s %-10s %-22s | %8.3f %8.3f %5.2f | %8.3f %8.3f %5.2f\n", name, kind, shape.c_str(), p.fwd, m.fwd,
                ratio(p.fwd, m.fwd), p.bwd, m.bwd, ratio(p.bwd, m.bwd));
  else
    std::printf("%-24s %-10s %-22s | %8.3f %8s %5s | %8.3f %8s %5s\n", name, kind, shape.c_str(), p.fwd, "-", "", p.bwd, "-", "");
}

void report(const model_spec& m, const device_compute& d, const char* device_name, const measured_run* run, const options& o) {
  std::printf("== %s, %s, %s, batch %lld%s\n", m.name.c_str(), std::string(name_of(m.training_precision)).c_str(), device_name,
              static_cast<long long>(m.batch_per_device), run ? "" : " (predicted only)");
  std::vector<row> rows;
  std::map<std::string, std::size_t> index;
  for (const auto& l : m.layers) {
    const bool sparse = l.tensor >= 0 && m.tensors[static_cast<std::size_t>(l.tensor)].sparse;
    const auto t = cost::time_of(l, m.training_precision, d, sparse);
    index[l.name] = rows.size();
    rows.push_back({&l, {t.forward * 1e3, t.backward * 1e3}, {}, false});
  }
  std::vector<std::pair<std::string, times>> unmapped, folded;
  if (run) {
    for (const auto& [name, t] : run->leaves) {
      const auto it = index.find(name);
      if (it == index.end()) {
        unmapped.emplace_back(name, t);
        continue;
      }
      rows[it->second].meas.fwd += t.fwd;
      rows[it->second].meas.bwd += t.bwd;
      rows[it->second].measured = true;
    }
    for (const auto& [name, t] : run->containers) {
      if (t.fwd + t.bwd <= 0.0) continue;
      const auto it = index.find(name + ".residual");
      if (it == index.end()) {
        unmapped.emplace_back(name + " (container)", t);
        continue;
      }
      rows[it->second].meas.fwd += t.fwd;
      rows[it->second].meas.bwd += t.bwd;
      folded.emplace_back(name, t);
    }
  }
  // per kind: the rows in forward order, then the kind's total
  std::map<layer_kind, std::pair<times, times>> kinds;
  std::map<layer_kind, int> counts;
  times pred_all, meas_all;
  for (const auto& r : rows) {
    auto& k = kinds[r.l->kind];
    k.first.fwd += r.pred.fwd;
    k.first.bwd += r.pred.bwd;
    k.second.fwd += r.meas.fwd;
    k.second.bwd += r.meas.bwd;
    ++counts[r.l->kind];
    pred_all.fwd += r.pred.fwd;
    pred_all.bwd += r.pred.bwd;
    meas_all.fwd += r.meas.fwd;
    meas_all.bwd += r.meas.bwd;
  }
  if (!o.totals) {
    print_header("layer");
    for (layer_kind kind : all_layer_kinds) {
      if (!kinds.contains(kind)) continue;
      for (const auto& r : rows)
        if (r.l->kind == kind)
          print_row(r.l->name.c_str(), std::string(name_of(kind)).c_str(), shape_of(*r.l), r.pred, r.meas, r.measured);
      const auto& [p, ms] = kinds[kind];
      const std::string label = "  total " + std::string(name_of(kind));
      print_row(label.c_str(), "", std::to_string(counts[kind]) + " layers", p, ms, run != nullptr);
      std::printf("\n");
    }
  }
  std::printf("per kind (ms)\n");
  print_header("kind");
  for (layer_kind kind : all_layer_kinds) {
    if (!kinds.contains(kind)) continue;
    const auto& [p, ms] = kinds[kind];
    print_row(std::string(name_of(kind)).c_str(), "", std::to_string(counts[kind]) + " layers", p, ms, run != nullptr);
  }
  print_row("all layers", "", std::to_string(rows.size()) + " layers", pred_all, meas_all, run != nullptr);
  if (!run) return;
  times rest;
  for (const auto& [name, t] : unmapped) {
    rest.fwd += t.fwd;
    rest.bwd += t.bwd;
  }
  std::printf("measured pass: total %.3f / %.3f ms (busy %.3f / %.3f), in no module %.3f / %.3f, unmapped %.3f / %.3f; "
              "predicted / measured pass %.2f / %.2f\n",
              run->total.fwd, run->total.bwd, run->busy.fwd, run->busy.bwd, run->unattributed.fwd, run->unattributed.bwd,
              rest.fwd, rest.bwd, ratio(pred_all.fwd, run->busy.fwd), ratio(pred_all.bwd, run->busy.bwd));
  for (const auto& [name, t] : folded)
    if (t.fwd + t.bwd >= 0.001)
      std::printf("  folded into %s.residual: %s's remainder %.3f / %.3f ms\n", name.c_str(), name.c_str(), t.fwd, t.bwd);
  for (const auto& [name, t] : unmapped) std::printf("  unmapped module %s: %.3f / %.3f ms\n", name.c_str(), t.fwd, t.bwd);
  for (const auto& r : rows)
    if (!r.measured) std::printf("  not measured: zoo layer %s (%s)\n", r.l->name.c_str(), std::string(name_of(r.l->kind)).c_str());
  std::vector<const row*> worst;
  for (const auto& r : rows) worst.push_back(&r);
  auto err = [](const row* r) { return std::abs(r->pred.fwd - r->meas.fwd) + std::abs(r->pred.bwd - r->meas.bwd); };
  std::stable_sort(worst.begin(), worst.end(), [&](const row* a, const row* b) { return err(a) > err(b); });
  if (worst.size() > static_cast<std::size_t>(o.top)) worst.resize(static_cast<std::size_t>(o.top));
  std::printf("largest errors, |pred - meas| of forward + backward (ms)\n");
  print_header("layer");
  for (const row* r : worst)
    print_row(r->l->name.c_str(), std::string(name_of(r->l->kind)).c_str(), shape_of(*r->l), r->pred, r->meas, r->measured);
  std::printf("\n");
}

int run(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (o.file.empty()) {
    model_spec m = zoo::make_model(o.model.empty() ? "vgg16" : o.model);
    const auto p = parse_precision(o.precision.empty() ? "pytorch-fp32" : o.precision);
    if (!p) throw error("--precision", "unknown precision '" + o.precision + "'");
    m.training_precision = *p;
    const std::string dev = o.device.empty() ? "h200" : o.device;
    const auto d = device_of(dev);
    if (!d) throw error("--device", "unknown device '" + dev + "' (h200, h100)");
    report(m, *d, dev.c_str(), nullptr, o);
    return 0;
  }
  int shown = 0;
  for (const auto& r : read_runs(o.file)) {
    if (!o.model.empty() && r.model != o.model) continue;
    if (!o.precision.empty() && r.precision != o.precision) continue;
    const auto p = parse_precision(r.precision);
    if (!p) throw error(o.file, "unknown precision '" + r.precision + "'");
    // --device, else the file's pass lines' "device", else the H200 (a file of module lines only)
    const std::string dev = !o.device.empty() ? o.device : !r.device.empty() ? r.device : std::string("h200");
    const auto d = device_of(dev);
    if (!d) throw error("--device", "no compute description for device '" + dev + "' (h200, h100)");
    model_spec m = test::cnn_at(r.model, r.batch);
    if (r.batch > 0 && m.batch_per_device != r.batch)
      throw error(o.file, "no zoo builder for " + r.model + " at batch " + std::to_string(r.batch));
    m.training_precision = *p;
    report(m, *d, dev.c_str(), &r, o);
    ++shown;
  }
  if (shown == 0) throw error(o.file, "holds no per-layer rows for the chosen model and precision");
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  return run(argc, argv);
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_compute_layers: %s\n", e.what());
  return 1;
}
