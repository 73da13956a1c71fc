// Batch norm in the compute model (cost/compute.hpp, "batch norm"): the kernels' launch shapes by
// hand on a round device, the fallbacks to bytes, the layer's validation, and the model against
// the measured kernels (tests/data/compute: the H200 sweep of 259 shapes per precision, and the
// batch norms inside ResNet-50 on the H200 at batch 16, 32, 64 and 128 and on an H100 at batch 32).
#include "../common/tiny_specs.hpp"

#include <autosync/cost/compute.hpp>
#include <autosync/error.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace autosync;

namespace {

const std::string data_dir = std::string(AUTOSYNC_SOURCE_DIR) + "/tests/data/compute/";

using testing::round_device;  // 10 SMs, 1 TB/s fully reached, 1 us per kernel, no L2 figure

layer bn(std::int64_t n, std::int64_t c, std::int64_t hw) {
  layer l;
  l.kind = layer_kind::batch_norm;
  l.m = n;
  l.n = c;
  l.elements = n * c * hw;
  return l;
}

std::vector<nlohmann::json> lines(const std::string& file) {
  std::ifstream in(data_dir + file);
  REQUIRE(in.good());
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TEST_CASE("batch norm, bf16: PyTorch's statistics, transform and backward kernels by their launch shapes") {
  const auto d = round_device();
  // N 8, C 64, 56 x 56: 512 threads along H x W, 8 x 7 = 56 steps; 64 blocks on 10 SMs: 4 per SM,
  // 2 waves; no L2 figure, so every load from memory (0.44 us), below 4 x 0.12 us of issue
  const auto t = cost::time_of(bn(8, 64, 3136), precision::bf16, d);
  const double E = 8.0 * 64 * 3136;
  const double stats = 1e-6 + 2 * (0.5e-6 + 4 * 0.6e-6 + 56 * 0.48e-6);
  const double transform = 1e-6 + (64.0 * 8 * 0.06e-6 + E * 0.24e-9) / 10;  // 512 blocks of (channel, image)
  CHECK(t.forward == doctest::Approx(stats + transform + 2e-6).epsilon(1e-12));
  CHECK(t.backward == doctest::Approx(1e-6 + 2 * (0.5e-6 + 4 * 0.6e-6 + 56 * 1.0e-6)).epsilon(1e-12));
  // 8 channels: one block per SM, latency-bound; the L2 decides the latency of a 401,408-byte input
  auto stats_of = [&](double l2) {
    auto dl = d;
    dl.l2_bytes = l2;
    const auto& l = bn(8, 8, 3136);
    const auto tt = cost::time_of(l, precision::bf16, dl);
    const double rest = 1e-6 + (8.0 * 8 * 0.06e-6 + 8.0 * 8 * 3136 * 0.24e-9) / 10 + 2e-6;
    return tt.forward - rest;
  };
  CHECK(stats_of(0.0) == doctest::Approx(1e-6 + 1.1e-6 + 56 * 0.44e-6).epsilon(1e-9));   // unknown: memory
  CHECK(stats_of(100e6) == doctest::Approx(1e-6 + 1.1e-6 + 56 * 0.23e-6).epsilon(1e-9));  // fits: cached
  const double share = (0.67e6 - 401408.0) / 0.44e6;                                       // between the two
  CHECK(stats_of(1e6) == doctest::Approx(1e-6 + 1.1e-6 + 56 * (share * 0.23e-6 + (1 - share) * 0.44e-6)).epsilon(1e-9));
  // 7 x 7: 64 threads along H x W and 8 images a block, so N 32 is 4 steps
  const auto small = cost::time_of(bn(32, 8, 49), precision::bf16, d);
  CHECK(small.backward == doctest::Approx(1e-6 + (0.5e-6 + 0.6e-6 + 4 * 1.0e-6)).epsilon(1e-12));
}

TEST_CASE("batch norm, fp32 and fp16: cuDNN's kernels, a channel read once or walked, bounded by bytes") {
  auto d = round_device();
  // fp32, N 8, C 64, 56 x 56: a channel is 25,088 values = 100,352 bytes, read once in forward
  // (2 blocks per SM: 4 waves of 2 us + 0.075 ns a byte); num_batches_tracked += 1 a floor
  const auto t = cost::time_of(bn(8, 64, 3136), precision::pytorch_fp32, d);
  CHECK(t.forward == doctest::Approx(1e-6 + 4 * (2e-6 + 100352 * 0.075e-9) + 1e-6).epsilon(1e-12));
  // walked in backward: 4 blocks per SM, 2 waves of 2 us + 25,088 values x (1.5 ns from memory, no
  // L2 figure, + 0.25 ns for each of the 3 other blocks on the SM)
  CHECK(t.backward == doctest::Approx(1e-6 + 2 * (2e-6 + 25088 * (1.5e-9 + 3 * 0.25e-9))).epsilon(1e-12));
  CHECK(cost::time_of(bn(8, 64, 3136), precision::fp32, d).backward == t.backward);
  {  // x and dy (12.8 MB) within a quarter of a 100 MB L2: 0.6 ns a value
    auto dl = d;
    dl.l2_bytes = 100e6;
    CHECK(cost::time_of(bn(8, 64, 3136), precision::pytorch_fp32, dl).backward ==
          doctest::Approx(1e-6 + 2 * (2e-6 + 25088 * (0.6e-9 + 3 * 0.25e-9))).epsilon(1e-12));
  }
  // fp16 halves the bytes: the backward's channel (50,176 bytes) is read once (1 block per SM)
  const auto h = cost::time_of(bn(8, 64, 3136), precision::fp16, d);
  CHECK(h.backward == doctest::Approx(1e-6 + 7 * (1e-6 + 50176 * 0.125e-9)).epsilon(1e-12));
  // with SMs enough for one wave of one block each, the bytes at 0.8 of the memory rate bind:
  // x and dy twice, dx
  d.multiprocessors = 1000;
  const double E640 = 8.0 * 640 * 3136;
  CHECK(cost::time_of(bn(8, 640, 3136), precision::pytorch_fp32, d).backward ==
        doctest::Approx(1e-6 + 5 * E640 * 4 / 0.8e12).epsilon(1e-12));
  CHECK(cost::time_of(bn(8, 640, 3136), precision::pytorch_fp32, d).forward ==
        doctest::Approx(1e-6 + 2 * E640 * 4 / 0.6e12 + 1e-6).epsilon(1e-12));  // read once: x, y at 0.6
}

TEST_CASE("batch norm: without its batch and channels, channels_last or without SMs, bytes as before") {
  auto d = round_device();
  const double E = 8.0 * 64 * 3136;
  const double fwd = 1e-6 + E * 4 / 1e12 + 1e-6 + 2 * E * 4 / 1e12;  // statistics r E; normalize r E w E
  layer l = bn(8, 64, 3136);
  l.channels_last = true;
  CHECK(cost::time_of(l, precision::pytorch_fp32, d).forward == doctest::Approx(fwd).epsilon(1e-12));
  l.channels_last = false;
  l.m = l.n = 0;
  CHECK(cost::time_of(l, precision::pytorch_fp32, d).forward == doctest::Approx(fwd).epsilon(1e-12));
  d.multiprocessors = 0;
  CHECK(cost::time_of(bn(8, 64, 3136), precision::pytorch_fp32, d).forward == doctest::Approx(fwd).epsilon(1e-12));
}

TEST_CASE("batch norm: a layer states both its batch and channels, and its elements are their multiple") {
  auto m = zoo::resnet50(16);
  std::size_t norms = 0;
  for (const auto& l : m.layers)
    if (l.kind == layer_kind::batch_norm) {
      CHECK(l.m == 16);
      CHECK(l.n > 0);
      CHECK(l.elements % (l.m * l.n) == 0);
      ++norms;
    }
  CHECK(norms == 53);
  auto err = [&](auto mutate) {
    auto bad = zoo::resnet50();
    std::size_t i = 0;
    while (bad.layers[i].kind != layer_kind::batch_norm) ++i;
    mutate(bad.layers[i]);
    try {
      bad.validate();
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err([](layer& l) { l.m = 0; }).find("layers[1].m") != std::string::npos);
  CHECK(err([](layer& l) { l.n = 0; }).find("layers[1].n") != std::string::npos);
  CHECK(err([](layer& l) { l.n = 63; }).find("layers[1].elements") != std::string::npos);
  CHECK(err([](layer& l) { l.m = l.n = 0; }).empty());  // neither: bytes only
}

TEST_CASE("batch norm against the H200's kernels: 259 shapes per precision") {
  // the kernels' own durations (the profiler's), so the floor is what the shortest kernels take
  auto d = zoo::hw::h200_sxm;
  d.kernel_floor = 1e-6;
  std::vector<double> err[3][2];  // bf16, fp16, pytorch-fp32 x forward, backward
  std::vector<double> before[3][2];
  for (const auto& j : lines("h200-batchnorm.jsonl")) {
    const std::string p = j.at("precision");
    const int i = p == "bf16" ? 0 : p == "fp16" ? 1 : 2;
    const auto prec = *parse_precision(p);
    layer l = bn(j.at("n"), j.at("c"), j.at("h").get<std::int64_t>() * j.at("w").get<std::int64_t>());
    const auto t = cost::time_of(l, prec, d);
    const double f = j.at("fwd_us").get<double>() * 1e-6, b = j.at("bwd_us").get<double>() * 1e-6;
    err[i][0].push_back(std::abs(t.forward / f - 1));
    err[i][1].push_back(std::abs(t.backward / b - 1));
    l.m = l.n = 0;  // bytes alone: the model before
    const auto o = cost::time_of(l, prec, d);
    before[i][0].push_back(std::abs(o.forward / f - 1));
    before[i][1].push_back(std::abs(o.backward / b - 1));
  }
  const char* names[3] = {"bf16", "fp16", "pytorch-fp32"};
  // median relative error, forward / backward: bf16 (PyTorch's kernels) 0.06 / 0.07, cuDNN's
  // 0.08-0.11 / 0.09-0.10; bytes alone 0.33-0.77
  const double bound[3][2] = {{0.08, 0.10}, {0.15, 0.15}, {0.15, 0.15}};
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 2; ++k) {
      CAPTURE(names[i]);
      CAPTURE(k);
      REQUIRE(err[i][k].size() == 259);
      const double now = median(err[i][k]), old = median(before[i][k]);
      MESSAGE(std::string(names[i]) << std::string(k ? " backward" : " forward") << ": median error " << now << ", bytes alone " << old);
      CHECK(now <= bound[i][k]);
      CHECK(old > 0.3);
    }
}

TEST_CASE("batch norm inside ResNet-50: the 53 layers' totals on the H200 (batch 16 to 128) and an H100") {
  struct file {
    const char* name;
    device_compute device;
  };
  for (const file& f : {file{"h200-layers.jsonl", zoo::hw::h200_sxm}, file{"h200-layers-batches.jsonl", zoo::hw::h200_sxm},
                        file{"h100-layers.jsonl", zoo::hw::h100_sxm}}) {
    auto d = f.device;
    d.kernel_floor = 1e-6;  // the kernels' own durations, as measured per module
    struct sums {
      double pf = 0, pb = 0, mf = 0, mb = 0;
      int layers = 0;
    };
    std::map<std::pair<std::string, std::int64_t>, sums> runs;  // (precision, batch)
    for (const auto& j : lines(f.name)) {
      if (j.value("type", "") != "BatchNorm2d" || j.value("model", "") != "resnet50") continue;
      const std::string p = j.at("precision");
      const auto& in = j.at("in");
      const auto t = cost::time_of(bn(in[0], in[1], in[2].get<std::int64_t>() * in[3].get<std::int64_t>()), *parse_precision(p), d);
      auto& s = runs[{p, j.at("batch").get<std::int64_t>()}];
      s.pf += t.forward;
      s.pb += t.backward;
      s.mf += j.at("fwd_ms").get<double>() * 1e-3;
      s.mb += j.at("bwd_ms").get<double>() * 1e-3;
      ++s.layers;
    }
    CHECK(runs.size() == (std::string(f.name) == "h200-layers-batches.jsonl" ? 6u : 2u));
    for (const auto& [key, s] : runs) {
      const auto& [p, batch] = key;
      CAPTURE(std::string(f.name));
      CAPTURE(p);
      CAPTURE(batch);
      REQUIRE(s.layers == 53);
      MESSAGE(std::string(f.name) << " " << p << " batch " << batch << ": predicted / measured forward " << s.pf / s.mf
                                  << ", backward " << s.pb / s.mb);
      // PyTorch's kernels (bf16) 0.97-1.02 forward, 0.93-1.03 backward; cuDNN's (fp32) forward
      // 0.95-1.08, backward 0.91-0.99
      if (p == "bf16") {
        CHECK(std::abs(s.pf / s.mf - 1) <= 0.10);
        CHECK(std::abs(s.pb / s.mb - 1) <= 0.10);
      } else {
        CHECK(std::abs(s.pf / s.mf - 1) <= 0.15);
        CHECK(std::abs(s.pb / s.mb - 1) <= 0.15);
      }
    }
  }
}
