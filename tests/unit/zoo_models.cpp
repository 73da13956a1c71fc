// The built-in model zoo against the published parameter counts (torchvision, keras-hub presets):
// tensor counts, parameter totals, fp32 MiB, the largest tensor, PyTorch naming and shapes,
// and hand-computed FLOP values.
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

using autosync::model_spec;
using shape_t = std::vector<std::int64_t>;

struct zoo_fact {
  const char* name;
  std::size_t tensors;
  std::int64_t parameters;
  std::int64_t mib_tenths;  // fp32 MiB x 10, rounded as in the table
  const char* largest;      // "" where the table gives none
  shape_t largest_shape;
};

// The published totals, plus NCF as specified for the zoo
// (users 138,493 x (8+32) + items 26,744 x (8+32) + MLP 2,744 + final 17 = 6,612,241).
const std::vector<zoo_fact> facts{
    {"resnet50", 161, 25'557'032, 975, "layer4.0.conv2.weight", {512, 512, 3, 3}},
    {"resnet101", 314, 44'549'160, 1699, "", {}},
    {"resnet152", 467, 60'192'808, 2296, "", {}},
    {"vgg16", 32, 138'357'544, 5278, "classifier.0.weight", {4096, 25088}},
    {"bert-base", 199, 109'482'240, 4176, "embeddings.word_embeddings.weight", {30522, 768}},
    {"bert-large", 391, 335'141'888, 12785, "embeddings.word_embeddings.weight", {30522, 1024}},
    {"gpt2", 148, 124'439'808, 4747, "wte.weight", {50257, 768}},
    {"gpt2-medium", 292, 354'823'168, 13535, "wte.weight", {50257, 1024}},
    {"gpt2-large", 436, 774'030'080, 29527, "wte.weight", {50257, 1280}},
    {"gpt2-xl", 580, 1'557'611'200, 59418, "wte.weight", {50257, 1600}},
    {"ncf", 12, 6'612'241, 252, "mlp_user_embedding", {138493, 32}},
};

const autosync::tensor& at(const model_spec& m, std::string_view name) {
  const auto i = m.find(name);
  REQUIRE_MESSAGE(i.has_value(), "missing tensor ", std::string(name), " in ", m.name);
  return m.tensors[*i];
}

std::size_t largest(const model_spec& m) {
  std::size_t big = 0;
  for (std::size_t i = 1; i < m.tensors.size(); ++i)
    if (m.tensors[i].elements() > m.tensors[big].elements()) big = i;
  return big;
}

}  // namespace

TEST_CASE("zoo: names list and make_model agree") {
  const auto names = autosync::zoo::model_names();
  REQUIRE(names.size() == 11);
  CHECK(names.front() == "resnet50");
  CHECK(names.back() == "ncf");
  REQUIRE(names.size() == facts.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(names[i] == facts[i].name);
    CHECK(autosync::zoo::make_model(names[i]).name == names[i]);
  }
}

TEST_CASE("zoo: counts, parameters, MiB and largest tensor reproduce model_zoo.md") {
  for (const auto& f : facts) {
    CAPTURE(f.name);
    const model_spec m = autosync::zoo::make_model(f.name);
    CHECK(m.tensors.size() == f.tensors);
    CHECK(m.total_elements() == f.parameters);
    CHECK(m.total_bytes() == 4 * f.parameters);  // every zoo tensor is f32
    CHECK(std::llround(double(m.total_bytes()) / (1024.0 * 1024.0) * 10.0) == f.mib_tenths);
    if (std::string_view(f.largest).empty()) continue;
    const auto& big = m.tensors[largest(m)];
    CHECK(big.name == f.largest);
    CHECK(big.shape == f.largest_shape);
  }
  // VGG16: the table gives classifier.0 = 102.8M parameters.
  CHECK(at(autosync::zoo::vgg16(), "classifier.0.weight").elements() == 102'760'448);
}

TEST_CASE("zoo: every model validates, has unique names, and backward is the reverse of forward") {
  for (auto name : autosync::zoo::model_names()) {
    CAPTURE(name);
    const model_spec m = autosync::zoo::make_model(name);
    CHECK_NOTHROW(m.validate());
    std::set<std::string> seen;
    for (const auto& t : m.tensors) {
      CHECK(seen.insert(t.name).second);
      CHECK(t.type == autosync::dtype::f32);
      CHECK(t.ready_order == -1);
      CHECK(t.backward_flops > 0.0);
    }
    const auto order = m.backward_order();
    REQUIRE(order.size() == m.tensors.size());
    for (std::size_t i = 0; i < order.size(); ++i) CHECK(order[i] == m.tensors.size() - 1 - i);
    CHECK(m.batch_per_device > 0);
    CHECK(m.forward_flops > 0.0);
    CHECK_FALSE(m.source.empty());
  }
}

TEST_CASE("zoo: total backward FLOPs are 2x forward (biases/embeddings count 1x: documented tolerance)") {
  for (auto name : autosync::zoo::model_names()) {
    CAPTURE(name);
    const model_spec m = autosync::zoo::make_model(name);
    const double ratio = m.backward_flops() / m.forward_flops;
    CHECK(ratio <= 2.0);
    // CNNs and transformers: products dominate, within 0.05%. NCF's MLP is tiny next to its
    // embedding lookups (1x): within 1.5%.
    const double tolerance = name == "ncf" ? 0.03 : 1e-3;
    CHECK(ratio >= 2.0 - tolerance);
  }
}

TEST_CASE("zoo: resnet50 naming, order, shapes and hand-computed FLOPs") {
  const model_spec m = autosync::zoo::resnet50();
  REQUIRE(m.batch_per_device == 32);
  const double b = 32;
  CHECK(m.tensors[0].name == "conv1.weight");
  CHECK(m.tensors[1].name == "bn1.weight");
  CHECK(m.tensors[2].name == "bn1.bias");
  CHECK(m.tensors[3].name == "layer1.0.conv1.weight");
  // torchvision registers conv1 bn1 conv2 bn2 conv3 bn3 relu downsample
  const std::vector<std::string> block{
      "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias", "layer1.0.conv2.weight",
      "layer1.0.bn2.weight",   "layer1.0.bn2.bias",   "layer1.0.conv3.weight", "layer1.0.bn3.weight",
      "layer1.0.bn3.bias",     "layer1.0.downsample.0.weight", "layer1.0.downsample.1.weight",
      "layer1.0.downsample.1.bias", "layer1.1.conv1.weight"};
  for (std::size_t i = 0; i < block.size(); ++i) CHECK(m.tensors[3 + i].name == block[i]);
  CHECK(m.tensors[m.tensors.size() - 2].name == "fc.weight");
  CHECK(m.tensors.back().name == "fc.bias");
  CHECK_FALSE(m.find("layer1.1.downsample.0.weight").has_value());  // only the first block of a stage

  CHECK(at(m, "conv1.weight").shape == shape_t{64, 3, 7, 7});
  CHECK(at(m, "layer1.0.downsample.0.weight").shape == shape_t{256, 64, 1, 1});
  CHECK(at(m, "layer2.0.conv1.weight").shape == shape_t{128, 256, 1, 1});
  CHECK(at(m, "layer3.5.conv3.weight").shape == shape_t{1024, 256, 1, 1});
  CHECK(at(m, "fc.weight").shape == shape_t{1000, 2048});
  CHECK(at(m, "fc.bias").shape == shape_t{1000});

  // conv forward = 2*K*K*Cin*Cout*Hout*Wout*batch, backward = 2x forward on the weight.
  const double conv1_fwd = 2.0 * 7 * 7 * 3 * 64 * 112 * 112 * b;
  CHECK(at(m, "conv1.weight").backward_flops == doctest::Approx(2.0 * conv1_fwd).epsilon(1e-12));
  CHECK(at(m, "layer4.0.conv2.weight").backward_flops ==
        doctest::Approx(2.0 * (2.0 * 3 * 3 * 512 * 512 * 7 * 7 * b)).epsilon(1e-12));
  // layer2.0: conv1 still at 56x56, the stride-2 conv2 and the downsample at 28x28.
  CHECK(at(m, "layer2.0.conv1.weight").backward_flops ==
        doctest::Approx(2.0 * (2.0 * 256 * 128 * 56 * 56 * b)).epsilon(1e-12));
  CHECK(at(m, "layer2.0.conv2.weight").backward_flops ==
        doctest::Approx(2.0 * (2.0 * 9 * 128 * 128 * 28 * 28 * b)).epsilon(1e-12));
  CHECK(at(m, "layer2.0.downsample.0.weight").backward_flops ==
        doctest::Approx(2.0 * (2.0 * 256 * 512 * 28 * 28 * b)).epsilon(1e-12));
  // BatchNorm over N elements: weight 9N, bias N.
  CHECK(at(m, "bn1.weight").backward_flops == doctest::Approx(9.0 * 64 * 112 * 112 * b).epsilon(1e-12));
  CHECK(at(m, "bn1.bias").backward_flops == doctest::Approx(64.0 * 112 * 112 * b).epsilon(1e-12));
  CHECK(at(m, "fc.weight").backward_flops == doctest::Approx(2.0 * 2.0 * 2048 * 1000 * b).epsilon(1e-12));
  CHECK(at(m, "fc.bias").backward_flops == doctest::Approx(1000.0 * b).epsilon(1e-12));
  // Published: ~4.1 G multiply-adds per 224x224 image (torchvision: 4.09 GFLOPS as MACs).
  const double macs_per_image = m.forward_flops / 2.0 / b;
  CHECK(macs_per_image > 4.08e9);
  CHECK(macs_per_image < 4.15e9);
}

TEST_CASE("zoo: deeper resnets share the stage layout") {
  const model_spec r101 = autosync::zoo::resnet101();
  const model_spec r152 = autosync::zoo::resnet152();
  CHECK(r101.find("layer3.22.bn3.bias").has_value());
  CHECK_FALSE(r101.find("layer3.23.conv1.weight").has_value());
  CHECK(r152.find("layer2.7.conv3.weight").has_value());
  CHECK(r152.find("layer3.35.conv2.weight").has_value());
  CHECK_FALSE(r152.find("layer3.36.conv2.weight").has_value());
  CHECK(at(r152, "layer3.35.conv2.weight").backward_flops ==
        doctest::Approx(2.0 * (2.0 * 9 * 256 * 256 * 14 * 14 * 32)).epsilon(1e-12));
  CHECK(r101.tensors.back().name == "fc.bias");
}

TEST_CASE("zoo: vgg16 Sequential indices, shapes and FLOPs") {
  const model_spec m = autosync::zoo::vgg16();
  const std::vector<std::string> convs{"0", "2", "5", "7", "10", "12", "14", "17", "19", "21", "24", "26", "28"};
  REQUIRE(m.tensors.size() == 2 * convs.size() + 6);
  for (std::size_t i = 0; i < convs.size(); ++i) {
    CHECK(m.tensors[2 * i].name == "features." + convs[i] + ".weight");
    CHECK(m.tensors[2 * i + 1].name == "features." + convs[i] + ".bias");
  }
  CHECK(m.tensors[26].name == "classifier.0.weight");
  CHECK(m.tensors[28].name == "classifier.3.weight");
  CHECK(m.tensors[30].name == "classifier.6.weight");
  CHECK(m.tensors[31].name == "classifier.6.bias");
  CHECK(at(m, "features.28.weight").shape == shape_t{512, 512, 3, 3});
  CHECK(at(m, "classifier.6.weight").shape == shape_t{1000, 4096});
  const double b = 32;
  CHECK(at(m, "features.0.weight").backward_flops == doctest::Approx(2.0 * (2.0 * 9 * 3 * 64 * 224 * 224 * b)));
  CHECK(at(m, "features.0.bias").backward_flops == doctest::Approx(64.0 * 224 * 224 * b));
  CHECK(at(m, "features.28.weight").backward_flops == doctest::Approx(2.0 * (2.0 * 9 * 512 * 512 * 14 * 14 * b)));
  CHECK(at(m, "classifier.0.weight").backward_flops == doctest::Approx(2.0 * (2.0 * 25088 * 4096 * b)));
  // Published: ~15.5 G multiply-adds per image (torchvision: 15.47).
  const double macs_per_image = m.forward_flops / 2.0 / b;
  CHECK(macs_per_image > 15.4e9);
  CHECK(macs_per_image < 15.6e9);
}

TEST_CASE("zoo: bert naming, shapes and FLOPs at batch 8 x seq 512") {
  const model_spec m = autosync::zoo::bert_base();
  REQUIRE(m.batch_per_device == 8);
  const std::vector<std::string> head{
      "embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
      "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias",
      "encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.self.query.bias",
      "encoder.layer.0.attention.self.key.weight", "encoder.layer.0.attention.self.key.bias",
      "encoder.layer.0.attention.self.value.weight", "encoder.layer.0.attention.self.value.bias",
      "encoder.layer.0.attention.output.dense.weight", "encoder.layer.0.attention.output.dense.bias",
      "encoder.layer.0.attention.output.LayerNorm.weight", "encoder.layer.0.attention.output.LayerNorm.bias",
      "encoder.layer.0.intermediate.dense.weight", "encoder.layer.0.intermediate.dense.bias",
      "encoder.layer.0.output.dense.weight", "encoder.layer.0.output.dense.bias",
      "encoder.layer.0.output.LayerNorm.weight", "encoder.layer.0.output.LayerNorm.bias",
      "encoder.layer.1.attention.self.query.weight"};
  for (std::size_t i = 0; i < head.size(); ++i) CHECK(m.tensors[i].name == head[i]);
  CHECK(m.tensors[m.tensors.size() - 3].name == "encoder.layer.11.output.LayerNorm.bias");
  CHECK(m.tensors[m.tensors.size() - 2].name == "pooler.dense.weight");
  CHECK(m.tensors.back().name == "pooler.dense.bias");
  CHECK(at(m, "embeddings.position_embeddings.weight").shape == shape_t{512, 768});
  CHECK(at(m, "embeddings.token_type_embeddings.weight").shape == shape_t{2, 768});
  CHECK(at(m, "encoder.layer.3.intermediate.dense.weight").shape == shape_t{3072, 768});  // Linear (out, in)
  CHECK(at(m, "encoder.layer.3.output.dense.weight").shape == shape_t{768, 3072});

  const double tokens = 8.0 * 512, h = 768;
  CHECK(at(m, "encoder.layer.0.attention.self.query.weight").backward_flops ==
        doctest::Approx(2.0 * (2.0 * h * h * tokens)).epsilon(1e-12));
  CHECK(at(m, "encoder.layer.0.intermediate.dense.weight").backward_flops ==
        doctest::Approx(2.0 * (2.0 * h * 4 * h * tokens)).epsilon(1e-12));
  // value.bias: its own dY sum plus the backward of QK^T and AV (2 x 2 x 2*B*S*S*H).
  CHECK(at(m, "encoder.layer.0.attention.self.value.bias").backward_flops ==
        doctest::Approx(tokens * h + 2.0 * (2.0 * 2.0 * 8 * 512 * 512 * h)).epsilon(1e-12));
  CHECK(at(m, "encoder.layer.0.attention.self.key.bias").backward_flops == doctest::Approx(tokens * h).epsilon(1e-12));
  // The pooler sees one token per sequence.
  CHECK(at(m, "pooler.dense.weight").backward_flops == doctest::Approx(2.0 * (2.0 * h * h * 8)).epsilon(1e-12));
  CHECK(at(m, "embeddings.word_embeddings.weight").backward_flops == doctest::Approx(tokens * h).epsilon(1e-12));

  const model_spec l = autosync::zoo::bert_large();
  CHECK(at(l, "encoder.layer.23.attention.self.key.weight").shape == shape_t{1024, 1024});
  CHECK_FALSE(l.find("encoder.layer.24.attention.self.key.weight").has_value());
}

TEST_CASE("zoo: gpt2 naming, Conv1D shapes and the forward FLOPs in closed form") {
  const model_spec m = autosync::zoo::gpt2();
  REQUIRE(m.batch_per_device == 4);
  const std::vector<std::string> head{"wte.weight",           "wpe.weight",           "h.0.ln_1.weight",
                                      "h.0.ln_1.bias",        "h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias",
                                      "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias", "h.0.ln_2.weight",
                                      "h.0.ln_2.bias",        "h.0.mlp.c_fc.weight",  "h.0.mlp.c_fc.bias",
                                      "h.0.mlp.c_proj.weight", "h.0.mlp.c_proj.bias", "h.1.ln_1.weight"};
  for (std::size_t i = 0; i < head.size(); ++i) CHECK(m.tensors[i].name == head[i]);
  CHECK(m.tensors[m.tensors.size() - 2].name == "ln_f.weight");
  CHECK(m.tensors.back().name == "ln_f.bias");
  CHECK_FALSE(m.find("lm_head.weight").has_value());  // tied to wte
  CHECK(at(m, "wpe.weight").shape == shape_t{1024, 768});
  CHECK(at(m, "h.0.attn.c_attn.weight").shape == shape_t{768, 2304});  // Conv1D (in, out)
  CHECK(at(m, "h.0.attn.c_attn.bias").shape == shape_t{2304});
  CHECK(at(m, "h.0.mlp.c_proj.weight").shape == shape_t{3072, 768});

  const double b = 4, s = 1024, t = b * s, v = 50257;
  struct variant {
    model_spec model;
    double layers, hidden;
  };
  for (const auto& c : {variant{autosync::zoo::gpt2(), 12, 768}, variant{autosync::zoo::gpt2_xl(), 48, 1600}}) {
    const model_spec& model = c.model;
    CAPTURE(model.name);
    const double h = c.hidden, layers = c.layers;
    // per layer: products 24*T*H^2, biases 9*T*H, two LayerNorms 2*5*T*H, attention 4*B*S^2*H;
    // plus embeddings 2*T*H, ln_f 5*T*H, tied LM head 2*T*H*V.
    const double expect = layers * (24 * t * h * h + 9 * t * h + 10 * t * h + 4 * b * s * s * h) + 2 * t * h +
                          5 * t * h + 2 * t * h * v;
    CHECK(model.forward_flops == doctest::Approx(expect).epsilon(1e-12));
    CHECK(at(model, "h.0.attn.c_attn.weight").backward_flops ==
          doctest::Approx(2.0 * (2.0 * h * 3 * h * t)).epsilon(1e-12));
    // ln_f.bias carries the tied LM head's backward (first work of the backward pass).
    CHECK(at(model, "ln_f.bias").backward_flops == doctest::Approx(t * h + 2.0 * (2.0 * t * h * v)).epsilon(1e-12));
  }
}

TEST_CASE("zoo: ncf embeddings are sparse with density min(1, batch/rows)") {
  const model_spec m = autosync::zoo::ncf();
  REQUIRE(m.batch_per_device == 65536);
  const std::vector<std::string> names{"mf_user_embedding", "mf_item_embedding", "mlp_user_embedding",
                                       "mlp_item_embedding", "mlp.0.weight", "mlp.0.bias", "mlp.1.weight",
                                       "mlp.1.bias", "mlp.2.weight", "mlp.2.bias", "final.weight", "final.bias"};
  REQUIRE(m.tensors.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(m.tensors[i].name == names[i]);
  CHECK(at(m, "mf_user_embedding").shape == shape_t{138493, 8});
  CHECK(at(m, "mf_item_embedding").shape == shape_t{26744, 8});
  CHECK(at(m, "mlp_user_embedding").shape == shape_t{138493, 32});
  CHECK(at(m, "mlp_item_embedding").shape == shape_t{26744, 32});
  CHECK(at(m, "mlp.0.weight").shape == shape_t{32, 64});
  CHECK(at(m, "mlp.1.weight").shape == shape_t{16, 32});
  CHECK(at(m, "mlp.2.weight").shape == shape_t{8, 16});
  CHECK(at(m, "final.weight").shape == shape_t{1, 16});
  CHECK(at(m, "final.bias").shape == shape_t{1});
  CHECK(m.tensors[largest(m)].name == "mlp_user_embedding");
  for (std::size_t i = 0; i < m.tensors.size(); ++i) CHECK(m.tensors[i].sparse == (i < 4));
  const double user_density = 65536.0 / 138493.0;
  CHECK(at(m, "mf_user_embedding").sparse_density == doctest::Approx(user_density).epsilon(1e-15));
  CHECK(at(m, "mlp_user_embedding").sparse_density == doctest::Approx(user_density).epsilon(1e-15));
  CHECK(at(m, "mf_item_embedding").sparse_density == 1.0);  // 65536 > 26744 rows
  CHECK(at(m, "mlp_item_embedding").sparse_density == 1.0);
  CHECK(at(m, "mlp.0.weight").sparse_density == 1.0);
  // forward: lookups 80B, GMF product 8B, products 2*(64*32+32*16+16*8+16*1)B, biases (32+16+8+1)B
  const double b = 65536;
  CHECK(m.forward_flops == doctest::Approx((80.0 + 8.0 + 5408.0 + 57.0) * b).epsilon(1e-12));
  CHECK(at(m, "mlp_user_embedding").backward_flops == doctest::Approx(32.0 * b).epsilon(1e-12));
  CHECK(at(m, "mf_item_embedding").backward_flops == doctest::Approx(8.0 * b + 2.0 * 8.0 * b).epsilon(1e-12));

  // A larger batch than the user table: every row may be touched.
  CHECK(at(autosync::zoo::ncf(200000), "mf_user_embedding").sparse_density == 1.0);
}

TEST_CASE("zoo: batch arguments scale the compute, bad arguments name their field") {
  const model_spec r32 = autosync::zoo::resnet50();
  const model_spec r64 = autosync::zoo::resnet50(64);
  CHECK(r64.batch_per_device == 64);
  CHECK(r64.forward_flops == doctest::Approx(2.0 * r32.forward_flops).epsilon(1e-12));
  CHECK(r64.backward_flops() == doctest::Approx(2.0 * r32.backward_flops()).epsilon(1e-12));
  CHECK(r64.total_elements() == r32.total_elements());

  auto field_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const autosync::error& e) {
      return e.field();
    }
    return "<no error>";
  };
  CHECK(field_of([] { (void)autosync::zoo::resnet50(0); }) == "batch_per_device");
  CHECK(field_of([] { (void)autosync::zoo::gpt2(-1); }) == "batch_per_device");
  CHECK(field_of([] { (void)autosync::zoo::bert_base(8, 513); }) == "seq_len");
  CHECK(field_of([] { (void)autosync::zoo::gpt2(4, 1025); }) == "seq_len");
  CHECK(field_of([] { (void)autosync::zoo::ncf(65536, 0); }) == "users");
  CHECK(field_of([] { (void)autosync::zoo::make_model_scaled("gpt2", 0.0); }) == "scale");
  CHECK(field_of([] { (void)autosync::zoo::make_model_scaled("gpt2", -1.0); }) == "scale");
  CHECK(field_of([] { (void)autosync::zoo::make_model_scaled("gpt2", std::nan("")); }) == "scale");
  CHECK(field_of([] { (void)autosync::zoo::make_model_scaled("gpt2", INFINITY); }) == "scale");
  CHECK(field_of([] { (void)autosync::zoo::make_model_scaled("gpt3", 0.5); }) == "model");
}

TEST_CASE("zoo: unknown model names list the valid ones") {
  try {
    (void)autosync::zoo::make_model("resnet18");
    FAIL("make_model accepted an unknown name");
  } catch (const autosync::error& e) {
    CHECK(e.field() == "model");
    CHECK(std::string(e.what()) ==
          "'model': unknown model 'resnet18' (valid: resnet50, resnet101, resnet152, vgg16, bert-base, bert-large, "
          "gpt2, gpt2-medium, gpt2-large, gpt2-xl, ncf)");
  }
  CHECK_THROWS_AS((void)autosync::zoo::make_model(""), autosync::error);
  CHECK_THROWS_AS((void)autosync::zoo::make_model("GPT2"), autosync::error);  // names are case-sensitive
}

TEST_CASE("zoo: make_model_scaled keeps the tensor list and scales dim 0") {
  for (auto name : autosync::zoo::model_names()) {
    CAPTURE(name);
    const model_spec full = autosync::zoo::make_model(name);
    const model_spec half = autosync::zoo::make_model_scaled(name, 0.5);
    CHECK(half.name == std::string(name) + "@0.5");
    CHECK_NOTHROW(half.validate());
    REQUIRE(half.tensors.size() == full.tensors.size());
    for (std::size_t i = 0; i < full.tensors.size(); ++i) {
      const auto& a = full.tensors[i];
      const auto& b = half.tensors[i];
      CHECK(b.name == a.name);
      REQUIRE(b.shape.size() == a.shape.size());
      CHECK(b.shape[0] == std::max<std::int64_t>(1, std::llround(double(a.shape[0]) * 0.5)));
      for (std::size_t d = 1; d < a.shape.size(); ++d) CHECK(b.shape[d] == a.shape[d]);
      CHECK(b.sparse == a.sparse);
      CHECK(b.backward_flops == doctest::Approx(a.backward_flops * double(b.shape[0]) / double(a.shape[0])));
    }
    // the forward/backward ratio survives scaling
    CHECK(half.backward_flops() / half.forward_flops ==
          doctest::Approx(full.backward_flops() / full.forward_flops).epsilon(1e-12));
    CHECK(half.batch_per_device == full.batch_per_device);
  }
  // Tiny scales clamp every dim 0 at 1; a scale of 1 is the identity.
  const model_spec tiny = autosync::zoo::make_model_scaled("resnet50", 1e-9);
  for (const auto& t : tiny.tensors) CHECK(t.shape[0] == 1);
  CHECK(at(tiny, "conv1.weight").shape == shape_t{1, 3, 7, 7});
  const model_spec same = autosync::zoo::make_model_scaled("bert-base", 1.0);
  CHECK(same.name == "bert-base");
  CHECK(same.total_elements() == 109'482'240);
  // gpt2 at 1/100: wte 50257 -> 503 rows, ln biases 768 -> 8.
  const model_spec g = autosync::zoo::make_model_scaled("gpt2", 0.01);
  CHECK(at(g, "wte.weight").shape == shape_t{503, 768});
  CHECK(at(g, "h.0.ln_1.bias").shape == shape_t{8});
  // Sparse tables keep the rows a step touches: 65536 of 69247 user rows at scale 0.5.
  const model_spec n = autosync::zoo::make_model_scaled("ncf", 0.5);
  CHECK(at(n, "mf_user_embedding").shape == shape_t{69247, 8});
  CHECK(at(n, "mf_user_embedding").sparse_density == doctest::Approx(65536.0 / 69247.0));
  CHECK(at(n, "mf_item_embedding").sparse_density == 1.0);
}
