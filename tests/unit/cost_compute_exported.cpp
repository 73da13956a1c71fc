// The compute model on models it was not written for: torchvision and HuggingFace modules
// exported with their layers by examples/export_pytorch_model.py (tests/bench/export_heldout.py;
// tests/data/compute/exported/<model>-<precision>.json) against the same modules measured on one
// H200 by tests/bench/compute_measure.py (measured.jsonl there: the device's busy time of forward
// and backward, PyTorch 2.11, batch 32 for the CNNs and ViTs). The documented figures
// (README.md, "Models outside the zoo"): backward within 25 % in 34 of the 42 rows, none off by
// more than 0.45-1.10x; PyTorch's depthwise kernels (cost/compute.hpp depthwise_*) were fitted on
// EfficientNet-B0 and MobileNetV3-Large, and every model of that family is within 25 %; the
// exporter's descriptions of zoo models cost what the zoo's own do.
#include "../common/exported_measurements.hpp"

#include <autosync/cost/compute.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace autosync;

struct row {
  test::exported_measurement m;
  double f = 0, b = 0;  // predicted from the exported layers, ms
};

std::vector<row> rows() {
  std::vector<row> out;
  for (auto& m : test::exported_measurements(std::filesystem::path(AUTOSYNC_SOURCE_DIR) / "tests/data/compute/exported")) {
    REQUIRE(m.compute == &zoo::hw::h200_sxm);
    CHECK(m.spec.training_precision == *parse_precision(m.precision));
    CHECK(m.spec.batch_per_device == m.batch);
    const auto c = cost::compute(m.spec, *m.compute, 0.0);
    out.push_back(row{std::move(m), c.forward * 1e3, c.backward_total() * 1e3});
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
    const double ratio = r.b / r.m.backward_ms;
    INFO(r.m.model, " ", r.m.precision, ": backward ", r.b, " / ", r.m.backward_ms, " ms");
    CHECK(ratio >= 0.44);
    CHECK(ratio <= 1.15);
    within += std::abs(ratio - 1.0) <= 0.25 ? 1 : 0;
    if (depthwise_family(r.m.model)) CHECK(std::abs(ratio - 1.0) <= 0.25);
    // the layers, not FLOPs alone: every exported file carries them
    CHECK(r.m.spec.layers.size() > r.m.spec.tensors.size() / 2);
  }
  CHECK(within >= 34);
}

TEST_CASE("compute, exported models: the exporter's descriptions of zoo models cost what the zoo's do") {
  int compared = 0;
  for (const auto& r : rows()) {
    const auto& name = r.m.model;
    if (name != "resnet50" && name != "vgg16" && name != "gpt2" && name != "bert-base") continue;
    INFO(name, " ", r.m.precision);
    auto zm = zoo::make_model(name);
    zm.training_precision = r.m.spec.training_precision;
    const auto z = cost::compute(zm, zoo::hw::h200_sxm, 0.0);
    // the torchvision CNNs within 0.5 %; the HuggingFace transformers within 10 % (BERT-base's bf16
    // forward 8 % under the zoo's, whose dropouts after softmax and the embeddings run in fp32)
    const double tol = name == "resnet50" || name == "vgg16" ? 0.005 : 0.10;
    CHECK(std::abs(r.f / (z.forward * 1e3) - 1.0) <= tol);
    CHECK(std::abs(r.b / (z.backward_total() * 1e3) - 1.0) <= tol);
    ++compared;
  }
  CHECK(compared == 8);
}
