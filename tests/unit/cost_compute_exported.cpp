// The compute model on models it was not written for: torchvision and HuggingFace modules
// exported with their layers by examples/export_pytorch_model.py (tests/bench/export_heldout.py;
// tests/data/compute/exported/<model>-<precision>.json) against the same modules measured on one
// H200 by tests/bench/compute_measure.py (measured.jsonl there: the device's busy time of forward
// and backward, PyTorch 2.11, batch 32 for the CNNs and ViTs). The documented figures
// (README.md, "Models outside the zoo"): backward within 25 % in 34 of the 42 rows, none off by
// more than 0.45-1.10x; PyTorch's depthwise kernels (cost/compute.hpp depthwise_*) were fitted on
// EfficientNet-B0 and MobileNetV3-Large, and every model of that family is within 25 %; the
// exporter's descriptions of zoo models cost what the zoo's own do.
#include <autosync/cost/compute.hpp>
#include <autosync/io/json.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace autosync;

struct row {
  std::string model, precision;
  double forward_ms = 0, backward_ms = 0;  // measured
  double f = 0, b = 0;                     // predicted from the exported layers, ms
  model_spec spec;
};

std::vector<row> rows() {
  const std::filesystem::path dir = std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests/data/compute/exported";
  std::ifstream in(dir / "measured.jsonl");
  REQUIRE(in);
  std::vector<row> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    row r;
    r.model = j.at("model").get<std::string>();
    if (r.model.rfind("tv:", 0) == 0) r.model = r.model.substr(3);
    r.precision = j.at("precision").get<std::string>();
    REQUIRE(j.at("device").get<std::string>().find("H200") != std::string::npos);
    const auto file = dir / (r.model + "-" + r.precision + ".json");
    if (!std::filesystem::exists(file)) continue;  // measured, not exported (MNASNet: see README.md)
    r.forward_ms = j.at("kernel_forward_ms").get<double>();
    r.backward_ms = j.at("kernel_backward_ms").get<double>();
    r.spec = io::load_model_file(file);
    CHECK(r.spec.training_precision == *parse_precision(r.precision));
    CHECK(r.spec.batch_per_device == j.at("batch").get<std::int64_t>());
    const auto c = cost::compute(r.spec, zoo::hw::h200_sxm, 0.0);
    r.f = c.forward * 1e3;
    r.b = c.backward_total() * 1e3;
    out.push_back(std::move(r));
  }
  return out;
}

bool depthwise_family(const std::string& m) {
  for (const char* f : {"mobilenet", "efficientnet", "shufflenet", "mnasnet"})
    if (m.find(f) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("compute, exported models: backward within 25 % in 34 of 42 held-out rows, depthwise networks in all") {
  const auto all = rows();
  REQUIRE(all.size() == 42);
  int within = 0;
  for (const auto& r : all) {
    const double ratio = r.b / r.backward_ms;
    INFO(r.model, " ", r.precision, ": backward ", r.b, " / ", r.backward_ms, " ms");
    CHECK(ratio >= 0.44);
    CHECK(ratio <= 1.15);
    within += std::abs(ratio - 1.0) <= 0.25 ? 1 : 0;
    if (depthwise_family(r.model)) CHECK(std::abs(ratio - 1.0) <= 0.25);
    // the layers, not FLOPs alone: every exported file carries them
    CHECK(r.spec.layers.size() > r.spec.tensors.size() / 2);
  }
  CHECK(within >= 34);
}

TEST_CASE("compute, exported models: the exporter's descriptions of zoo models cost what the zoo's do") {
  int compared = 0;
  for (const auto& r : rows()) {
    if (r.model != "resnet50" && r.model != "vgg16" && r.model != "gpt2" && r.model != "bert-base") continue;
    INFO(r.model, " ", r.precision);
    auto zm = zoo::make_model(r.model);
    zm.training_precision = r.spec.training_precision;
    const auto z = cost::compute(zm, zoo::hw::h200_sxm, 0.0);
    // the torchvision CNNs within 0.5 %; the HuggingFace transformers within 10 % (BERT-base's bf16
    // forward 8 % under the zoo's, whose dropouts after softmax and the embeddings run in fp32)
    const double tol = r.model == "resnet50" || r.model == "vgg16" ? 0.005 : 0.10;
    CHECK(std::abs(r.f / (z.forward * 1e3) - 1.0) <= tol);
    CHECK(std::abs(r.b / (z.backward_total() * 1e3) - 1.0) <= tol);
    ++compared;
  }
  CHECK(compared == 8);
}
