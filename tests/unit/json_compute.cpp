// The compute description in JSON: a model's precision, layers and measured profile, a node's
// device roofline — round trips, the same predicted times after a round trip, and errors that
// name the field.
#include <autosync/cost/compute.hpp>
#include <autosync/cost/estimate.hpp>
#include <autosync/io/json.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace autosync;

namespace {

void check_same_layers(const model_spec& a, const model_spec& b) {
  CHECK(a.training_precision == b.training_precision);
  CHECK(a.measured_forward == b.measured_forward);
  CHECK(a.measured_backward == b.measured_backward);
  CHECK(a.measured_on == b.measured_on);
  REQUIRE(a.layers.size() == b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    const auto &x = a.layers[i], &y = b.layers[i];
    INFO("layer ", i, " ", x.name);
    CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.tensor == y.tensor);
    CHECK((x.m == y.m && x.n == y.n && x.k == y.k && x.count == y.count && x.groups == y.groups && x.elements == y.elements &&
           x.outputs == y.outputs));
    CHECK((x.bias == y.bias && x.causal == y.causal && x.input_grad == y.input_grad && x.weight_grad == y.weight_grad && x.bias_grad == y.bias_grad && x.recompute == y.recompute && x.channels_last == y.channels_last &&
           x.upcast == y.upcast && x.fp32_input == y.fp32_input));
  }
  for (std::size_t i = 0; i < a.tensors.size(); ++i) CHECK(a.tensors[i].ready_time == b.tensors[i].ready_time);
}

std::string error_text(const std::string& text) {
  try {
    (void)io::parse_model(text);
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("json: layers, precision and the device roofline round-trip and predict the same times") {
  for (auto name : {"resnet50", "gpt2", "ncf"}) {
    INFO(name);
    auto m = zoo::make_model(name);
    m.training_precision = precision::bf16;
    const auto text = io::to_json_text(m);
    // GPT-2's gelu_new is the zoo's one upcast op: written only where it is set
    CHECK((text.find("\"upcast\": true") != std::string::npos) == (std::string(name) == "gpt2"));
    CHECK(text.find("\"upcast\": false") == std::string::npos);
    // the dropout after GPT-2's embeddings runs on their fp32 sum: the zoo's GPT-2 has fp32 inputs
    CHECK((text.find("\"fp32_input\": true") != std::string::npos) == (std::string(name) == "gpt2"));
    CHECK(text.find("\"fp32_input\": false") == std::string::npos);
    const auto back = io::parse_model(text);
    check_same_layers(back, m);
    const auto c = zoo::dgx_h100(2);
    const auto cb = io::parse_cluster(io::to_json_text(c));
    CHECK(cb.nodes[0].compute == zoo::hw::h100_sxm);
    const auto t1 = cost::compute(m, c), t2 = cost::compute(back, cb);
    CHECK(t1.forward == t2.forward);
    CHECK(t1.backward == t2.backward);
  }
}

TEST_CASE("json: a frozen prefix (weight_grad, bias_grad, input_grad false) and a recomputed layer round-trip, written only where set") {
  auto m = zoo::make_model("resnet50");
  CHECK(io::to_json_text(m).find("weight_grad") == std::string::npos);
  const auto c = zoo::dgx_h100(1);
  const auto before = cost::compute(m, c);
  // freeze the stem and the first stage: no weight gradients there, and no input gradients below
  // the first trainable layer (nothing before it needs one)
  std::size_t frozen = 0;
  for (auto& l : m.layers) {
    if (l.name.rfind("layer2", 0) == 0) break;
    if (has_weight(l.kind)) l.weight_grad = false;
    if (has_bias(l.kind)) l.bias_grad = false;
    l.input_grad = false;
    ++frozen;
  }
  REQUIRE(frozen > 10);
  m.layers.back().recompute = true;  // the loss, checkpointed: its forward again in backward
  const auto text = io::to_json_text(m);
  CHECK(text.find("\"recompute\": true") != std::string::npos);
  CHECK(text.find("\"recompute\": false") == std::string::npos);
  CHECK(text.find("\"weight_grad\": false") != std::string::npos);
  CHECK(text.find("\"bias_grad\": false") != std::string::npos);
  CHECK(text.find("\"bias_grad\": true") == std::string::npos);
  CHECK(text.find("\"weight_grad\": true") == std::string::npos);
  const auto back = io::parse_model(text);
  check_same_layers(back, m);
  const auto after = cost::compute(back, c);
  CHECK(after.forward == before.forward);
  CHECK(after.backward_total() < before.backward_total());
  auto plain = m.layers.back();
  plain.recompute = false;
  const auto loss = cost::time_of(back.layers.back(), m.training_precision, c.nodes[0].compute);
  const auto own = cost::time_of(plain, m.training_precision, c.nodes[0].compute);
  CHECK(loss.backward == own.backward + own.forward);  // its own backward and the recomputed forward
  // the frozen layers are attributed to the first stage's tensors: those now take no backward time
  for (std::size_t i = 0; i < frozen; ++i)
    if (const auto t = m.layers[i].tensor; t >= 0) CHECK(after.backward[static_cast<std::size_t>(t)] <= before.backward[static_cast<std::size_t>(t)]);
}

TEST_CASE("json: a measured profile round-trips and the timeline uses it") {
  auto m = zoo::make_model("ncf");
  m.layers.clear();
  double t = 0.0;
  for (auto i : m.backward_order()) m.tensors[i].ready_time = (t += 1e-4);
  m.measured_forward = 5e-4;
  m.measured_backward = t + 1e-4;
  m.measured_on = "NVIDIA H100 80GB HBM3";
  const auto back = io::parse_model(io::to_json_text(m));
  check_same_layers(back, m);
  REQUIRE(back.has_profile());
  const auto x = cost::make_context(back, zoo::dgx_h100(1));
  CHECK(x.forward == 5e-4);
  CHECK(x.ready_at.front() == doctest::Approx(5e-4 + 1e-4));
  CHECK(x.ready_at.back() == doctest::Approx(5e-4 + t));
  CHECK(x.backward == doctest::Approx(t + 1e-4));
}

TEST_CASE("json: bad compute fields name their field") {
  const std::string head = R"({"tensors": [{"name": "w", "shape": [4]}], )";
  CHECK(error_text(head + R"("precision": "fp8"})") ==
        "<model>:1: 'precision': unknown precision 'fp8' (valid: pytorch-fp32, fp32, tf32, bf16, fp16)");
  CHECK(error_text(head + R"("layers": [{"kind": "conv3d"}]})").find("<model>:1: 'layers[0].kind': unknown layer kind 'conv3d' (valid: linear,") == 0);
  CHECK(error_text(head + R"("layers": [{"kind": "linear", "tensor": 0, "m": 4, "n": 4}]})") ==
        "<model>:1: 'layers[0].k': must be in [1, 2^52], got 0");
  CHECK(error_text(head + R"("layers": [{"kind": "relu"}]})").find("<model>:1: 'layers[0].kind'") == 0);
  CHECK(error_text(head + R"("layers": [{"kind": "activation", "elements": 3, "groups": 2}]})") ==
        "<model>:1: 'layers[0].groups': only a conv has groups");
  CHECK(error_text(head + R"("layers": [{"kind": "conv", "m": 4, "n": 6, "k": 9, "groups": 4}]})") ==
        "<model>:1: 'layers[0].groups': must divide the output channels (n = 6), got 4");
  CHECK(error_text(head + R"("layers": [{"kind": "layer_norm", "elements": 12, "m": 4}]})") ==
        "<model>:1: 'layers[0].n': a layer_norm states both its rows (m) and width (n), or neither");
  CHECK(error_text(head + R"("layers": [{"kind": "layer_norm", "elements": 12, "m": 4, "n": 4}]})") ==
        "<model>:1: 'layers[0].elements': a layer_norm's elements must be its rows (m) x width (n), got 12 for m 4, n 4");
  CHECK(error_text(head + R"("layers": [{"kind": "conv", "m": 4, "n": 6, "k": 9, "groups": 0}]})") ==
        "<model>:1: 'layers[0].groups': must be in [1, 2^52], got 0");
  CHECK(error_text(head + R"("layers": [{"kind": "activation", "elements": 3, "weight_grad": false}]})") ==
        "<model>:1: 'layers[0].weight_grad': activation layers have no weight (linear, conv, matmul, batch_norm, layer_norm and embedding do)");
  CHECK(error_text(head + R"("layers": [{"kind": "embedding", "m": 4, "n": 4, "elements": 8, "bias_grad": false}]})") ==
        "<model>:1: 'layers[0].bias_grad': embedding layers have no bias (linear, conv, batch_norm and layer_norm may)");
  CHECK(error_text(head + R"("layers": [{"kind": "linear", "m": 4, "n": 4, "k": 4, "weight_grad": 0}]})").find(
            "<model>:1: 'layers[0].weight_grad'") == 0);
  CHECK(error_text(head + R"("layers": [{"kind": "activation", "elements": -3}]})").find("<model>:1: 'layers[0].elements'") == 0);
  CHECK(error_text(head + R"("layers": [{"kind": "activation", "elements": 3, "speed": 1}]})").find("<model>:1: 'layers[0]") == 0);
  CHECK(error_text(R"({"tensors": [{"name": "w", "shape": [4], "ready_time": 0.5}]})") ==
        "<model>:1: 'measured_backward': a profile (tensors' ready_time) needs the measured backward time (> 0)");
  const std::string node = R"({"nodes": [{"devices": 1, "nic": {"bandwidth": 1e9}, "device_flops": 1e12, "reduce_bandwidth": 1e10, "compute": )";
  auto cluster_error = [](const std::string& text) {
    try {
      (void)io::parse_cluster(text);
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(cluster_error(node + R"({"fp32": 1e13, "memory_bandwidth": "900GB/s", "matmul_efficiency": 2, "memory_efficiency": 0.9}}]})") ==
        "<cluster>:1: 'nodes[0].compute.matmul_efficiency': must be a fraction in (0, 1]");
  CHECK(cluster_error(node + R"({"fp32": 1e13, "flops": 1}}]})").find("<cluster>:1: 'nodes[0].compute") == 0);
  const auto ok = io::parse_cluster(node + R"({"fp32": 1e13, "memory_bandwidth": "900GB/s", "matmul_efficiency": 0.8,
                                               "memory_efficiency": 0.9, "kernel_floor": "4us", "multiprocessors": 80}}]})");
  CHECK(ok.nodes[0].compute.memory_bandwidth == doctest::Approx(900e9));
  CHECK(ok.nodes[0].compute.kernel_floor == doctest::Approx(4e-6));
  CHECK(ok.nodes[0].compute.l2_bytes == 0.0);  // not stated: unknown
  // the L2 cache's bytes: read, validated, written back only when known
  const auto l2 = io::parse_cluster(node + R"({"fp32": 1e13, "memory_bandwidth": "900GB/s", "matmul_efficiency": 0.8,
                                               "memory_efficiency": 0.9, "l2_bytes": 6291456}}]})");
  CHECK(l2.nodes[0].compute.l2_bytes == 6291456.0);
  CHECK(io::parse_cluster(io::to_json_text(l2)).nodes[0].compute == l2.nodes[0].compute);
  CHECK(io::to_json_text(ok).find("l2_bytes") == std::string::npos);
  CHECK(cluster_error(node + R"({"fp32": 1e13, "memory_bandwidth": "900GB/s", "matmul_efficiency": 0.8,
                                 "memory_efficiency": 0.9, "l2_bytes": -1}}]})") ==
        "<cluster>:2: 'nodes[0].compute.l2_bytes': must be bytes in [0, 1e12] (0: unknown)");
}
