// The analytical all-reduce model against real nccl-tests logs (tests/data/collectives/).
// Bounds per file were set after measuring (bench_cost_calibration prints the table); the
// cases and their constants are tests/data/collectives/cases.json, the bounds and the measured
// medians cost_calibration_cases.hpp.
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/nccl_tests_log.hpp>
#include <autosync/io/nccl_tests_json.hpp>
#include <autosync/learn/collectives.hpp>

#include "cost_calibration_cases.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace autosync;

namespace {
const std::string data_dir = std::string(AUTOSYNC_SOURCE_DIR) + "/tests/data/collectives/";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct medians { double raw, shape; };
using predictor = std::function<double(const calibration::calibration_case&, const cost::fabric&, double)>;

medians evaluate(const calibration::calibration_case& c, const predictor& predict) {
  const auto log = io::load_nccl_tests(data_dir + c.data.file);
  const auto& sec = learn::find_section(log, c.data.section);
  const auto f = cost::make_fabric(c.data.cluster);
  std::vector<double> raw, ratio, pred, meas;
  for (const auto& r : sec.rows) {
    const double m = r.seconds(), p = predict(c, f, static_cast<double>(r.bytes));
    raw.push_back(std::abs(p - m) / m);
    ratio.push_back(m / p);
    pred.push_back(p);
    meas.push_back(m);
  }
  const double k = median(ratio);
  std::vector<double> shape;
  for (std::size_t i = 0; i < pred.size(); ++i) shape.push_back(std::abs(k * pred[i] - meas[i]) / meas[i]);
  return {median(raw), median(shape)};
}
}  // namespace

TEST_CASE("nccl-tests parser: the shipped logs") {
  const auto a100 = cost::nccl_tests::load(data_dir + "a100_1node_8gpu_allreduce.txt");
  REQUIRE(a100.sections.size() == 1);
  REQUIRE(a100.rows() == 11);
  const auto& r0 = a100.sections[0].rows[0];
  CHECK(r0.bytes == 1048576);
  CHECK(r0.count == 262144);
  CHECK(r0.type == "float");
  CHECK(r0.redop == "sum");
  CHECK(r0.root == -1);
  CHECK(r0.time_us == doctest::Approx(78.77));
  CHECK(r0.algbw == doctest::Approx(13.31));
  CHECK(r0.busbw == doctest::Approx(23.29));
  CHECK(r0.in_place_time_us == doctest::Approx(81.31));
  CHECK(a100.sections[0].rows.back().bytes == 1073741824);
  CHECK(a100.hw.starts_with("1 node x 8 NVIDIA A100"));
  CHECK(a100.source.starts_with("github.com/AFDWang/Hetu-Galvatron"));

  // banner lines, a shell prompt and device lists are skipped
  const auto gh = cost::nccl_tests::load(data_dir + "gh200_2node_8gpu_slingshot_allreduce.txt");
  REQUIRE(gh.rows() == 25);
  CHECK(gh.sections[0].rows.front().bytes == 8);
  CHECK(gh.sections[0].rows.back().time_us == doctest::Approx(1773.7));

  // three sections, #wrong = N/A
  const auto h = cost::nccl_tests::load(data_dir + "h100_1node_nvls_and_2node_ndr400_allreduce.txt");
  REQUIRE(h.sections.size() == 3);
  CHECK(h.sections[0].title.starts_with("(A)"));
  CHECK(h.sections[0].rows.size() == 6);
  CHECK(h.sections[1].rows.size() == 11);
  CHECK(h.sections[2].title.starts_with("(C)"));
  CHECK(h.sections[2].rows.back().bytes == 8589934592LL);
  CHECK(h.sections[2].rows.back().time_us == doctest::Approx(179148));

  // the DDP end-to-end table has no nccl-tests rows
  CHECK(cost::nccl_tests::load(data_dir + "ddp_v100_dgx1_resnet_bucket_sweep.txt").rows() == 0);
}

TEST_CASE("nccl-tests parser: malformed rows name their line") {
  const std::string bad = "# HW: x\n# header\n  1024  256 float sum -1  12.5  0.08  0.14  0  12.0  0.08  0.14  0\n"
                          "  2048  512 float sum -1  oops  0.08  0.14  0  12.0  0.08  0.14  0\n";
  try {
    (void)cost::nccl_tests::parse(bad);
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.field() == "line 4");
    CHECK(std::string(e.what()).find("column 6") != std::string::npos);
  }
  CHECK_THROWS_AS((void)cost::nccl_tests::parse("1024 256 float sum -1 1 2 3\n"), error);
  CHECK_THROWS_AS((void)cost::nccl_tests::load(data_dir + "no_such_file.txt"), error);
  const auto ok = cost::nccl_tests::parse("1024 256 float sum -1 10 0.1 0.2 N/A 11 0.1 0.2 N/A");
  REQUIRE(ok.rows() == 1);
  CHECK(ok.sections[0].rows[0].seconds() == doctest::Approx(10e-6));
}

TEST_CASE("calibration: median relative error per file stays within its documented bound") {
  const predictor model = [](const auto& c, const auto& f, double n) { return calibration::predict(c, f, n); };
  for (const auto& c : calibration::cases()) {
    CAPTURE(c.data.label);
    const auto m = evaluate(c, model);
    MESSAGE(c.data.label << ": raw " << m.raw << ", shape " << m.shape);
    CHECK(m.raw <= c.raw_bound);
    CHECK(m.shape <= c.shape_bound);
  }
}

TEST_CASE("calibration: the bounds reject broken formulas") {
  // Each mutant of the model must break at least one file's bound.
  auto with = [](auto mutate) -> predictor {
    return [mutate](const calibration::calibration_case& c, const cost::fabric& f0, double n) {
      auto f = f0;
      mutate(f);
      return calibration::predict(c, f, n);
    };
  };
  auto broken = [](const predictor& p) {
    int fails = 0;
    for (const auto& c : calibration::cases()) {
      const auto m = evaluate(c, p);
      if (m.raw > c.raw_bound || m.shape > c.shape_bound) ++fails;
    }
    return fails;
  };
  CHECK(broken(with([](cost::fabric& f) { f.intra.beta *= 2; f.inter.beta *= 2; })) > 0);      // half the bandwidth
  CHECK(broken(with([](cost::fabric& f) { f.intra.beta *= 0.5; f.inter.beta *= 0.5; })) > 0);  // bandwidth term halved
  CHECK(broken(with([](cost::fabric& f) { f.intra.alpha = 0; f.inter.alpha = 0; })) > 0);      // latency dropped
  CHECK(broken(with([](cost::fabric& f) { f.intra.alpha *= 8; f.inter.alpha *= 8; })) > 0);    // latency 8x too large
  // ring where the default picks tree and vice versa: the 2-node default files notice
  const predictor ring_only = [](const calibration::calibration_case& c, const cost::fabric& f, double n) {
    (void)c;
    return cost::all_reduce(f, topology_value{topology_kind::ring}, n);
  };
  CHECK(broken(ring_only) > 0);
}
