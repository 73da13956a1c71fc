// Low-shot calibration held against every real log (tests/unit/nccl_lowshot.hpp): fitted from 4
// of the machine's own sizes, the model predicts all of its sizes within 15 % (median) on every
// log; the unseen GPUDirect-TCPXO machine is predicted from data sheets alone.
#include "nccl_lowshot.hpp"

#include <autosync/zoo/clusters.hpp>

#include <cmath>
#include <string_view>

#include <doctest/doctest.h>

using namespace autosync;

namespace {
// The documented bound: k = 3 or 4 measured sizes, median relative error <= 0.15 on every log.
constexpr std::size_t documented_k = 4;
constexpr double documented_bound = 0.15;

// The manifest's case whose label contains `part` (a test fails, not crashes, without one).
const learn::collective_case* case_with(const learn::collective_manifest& m, std::string_view part) {
  for (const auto& c : m.cases)
    if (c.label.find(part) != std::string::npos) return &c;
  return nullptr;
}
}  // namespace

TEST_CASE("low-shot calibration: 3 or 4 sizes fit every log within 15 % (leave-one-machine-out)") {
  const auto m = learn::load_collective_cases(lowshot::data_dir() + "nccl_cases.json");
  REQUIRE(m.cases.size() >= 8);
  std::vector<double> sheet, fitted;
  for (const auto& c : m.cases) {
    CAPTURE(c.label);
    const double e0 = lowshot::lowshot_error(c, 0), e3 = lowshot::lowshot_error(c, documented_k - 1),
                 e4 = lowshot::lowshot_error(c, documented_k);
    MESSAGE(c.label << ": data sheet " << e0 << ", k = 3 " << e3 << ", k = 4 " << e4);
    CHECK(e3 <= documented_bound);
    CHECK(e4 <= documented_bound);
    sheet.push_back(e0);
    fitted.push_back(e4);
  }
  CHECK(lowshot::median(fitted) < 0.5 * lowshot::median(sheet));
}

TEST_CASE("low-shot calibration: the unseen GPUDirect-TCPXO machine from data sheets alone") {
  // 2 x 8 H100, 8 x 200 Gb/s TCP-based GPUDirect per node: the alpha-beta forms are 0.73 off
  // (median); the NCCL model with the transport's sourced defaults, nothing fitted, within 0.25.
  const auto m = learn::load_collective_cases(lowshot::data_dir() + "nccl_cases.json");
  const auto* tcpxo = case_with(m, "TCPXO");
  REQUIRE(tcpxo != nullptr);
  CHECK(lowshot::alpha_beta_error(*tcpxo) > 0.6);
  CHECK(lowshot::lowshot_error(*tcpxo, 0) < 0.25);
  // the floor comes from the transport: the 8-byte all-reduce is within 35 % of the measured 136 us
  const auto pts = lowshot::points(*tcpxo);
  const auto f = cost::make_fabric(tcpxo->cluster);
  const double t8 = cost::predict(f, lowshot::target_of(*tcpxo), pts.front().bytes);
  CHECK(t8 == doctest::Approx(pts.front().seconds).epsilon(0.35));
}

TEST_CASE("low-shot calibration: whether NVLS is in use is fitted from more points than constants, kept below") {
  // the single-node H100 log measured with NCCL's default selection, its data sheet with NVLink
  // SHARP: from 4 sizes the fit without NVLS is the better one (the lower loss) and predicts all 6
  // sizes better (0.027 against 0.044 with the data sheet's NVLS); from 2 sizes nothing but
  // bandwidth and floor is fitted and the data sheet's NVLS stays
  const auto m = learn::load_collective_cases(lowshot::data_dir() + "nccl_cases.json");
  const auto* nvls = case_with(m, "H100 x8, 1 node, NVLS (default)");
  REQUIRE(nvls != nullptr);
  REQUIRE(nvls->cluster.nvls);
  const auto pts = lowshot::points(*nvls);
  const auto t = lowshot::target_of(*nvls);
  std::vector<cost::calibration_point> four, two;
  for (auto i : cost::pick_sizes(pts.size(), 4)) four.push_back(pts[i]);
  for (auto i : cost::pick_sizes(pts.size(), 2)) two.push_back(pts[i]);
  const auto r4 = cost::calibrate(nvls->cluster, four, t);
  CHECK_FALSE(r4.cluster.nvls);
  const auto on = cost::detail::cal::fit(nvls->cluster, four, t, r4.fitted);
  cluster_spec off_sheet = nvls->cluster;
  off_sheet.nvls = false;
  const auto off = cost::detail::cal::fit(off_sheet, four, t, r4.fitted);
  CHECK(off.second < on.second);
  const double with_nvls = lowshot::error_on(cost::scaled_cluster(nvls->cluster, std::exp(on.first[0]), std::exp(on.first[1]), std::exp(on.first[2])), t, pts);
  const double fitted = lowshot::error_on(r4.cluster, t, pts);
  MESSAGE("all sizes: fitted without NVLS " << fitted << ", with the data sheet's NVLS " << with_nvls);
  CHECK(fitted < with_nvls);
  CHECK(cost::calibrate(nvls->cluster, two, t).cluster.nvls);
  // a data sheet without NVLS is never given it
  CHECK_FALSE(cost::calibrate(off_sheet, four, t).cluster.nvls);
}

TEST_CASE("calibrate_transport: the TCPXO machine on the default data sheet finds its network from 4 sizes") {
  // the CLI's default data sheet (dgx-h100-x1's node: RDMA) for the 2 x 8 GPUDirect-TCPXO log:
  // fitted as RDMA from 4 sizes it is 0.153 off over the log's 31 sizes; every transport fitted,
  // the best is GPUDirect-TCPXO's structure and 0.082 off. Fewer than 4 sizes, or one node: the
  // data sheet's transport, as calibrate()
  const auto m = learn::load_collective_cases(lowshot::data_dir() + "nccl_cases.json");
  const auto* tcpxo = case_with(m, "TCPXO");
  REQUIRE(tcpxo != nullptr);
  const auto pts = lowshot::points(*tcpxo);
  const auto t = lowshot::target_of(*tcpxo);
  const cluster_spec sheet = cost::datasheet_machine(zoo::dgx_h100(1), 2, 8);
  REQUIRE(sheet.transport.kind == transport_kind::rdma);
  std::vector<cost::calibration_point> four, three;
  for (auto i : cost::pick_sizes(pts.size(), 4)) four.push_back(pts[i]);
  for (auto i : cost::pick_sizes(pts.size(), 3)) three.push_back(pts[i]);
  const auto rdma = cost::calibrate(sheet, four, t);
  const auto any = cost::calibrate_transport(sheet, four, t);
  CHECK(any.cluster.transport.kind == transport_kind::gpudirect_tcp);
  CHECK(any.loss < rdma.loss);
  const double e_rdma = lowshot::error_on(rdma.cluster, t, pts), e_any = lowshot::error_on(any.cluster, t, pts);
  MESSAGE("all 31 sizes: as RDMA " << e_rdma << ", transport fitted " << e_any);
  CHECK(e_any < 0.10);
  CHECK(e_rdma > 0.14);
  const auto three_fit = cost::calibrate_transport(sheet, three, t);
  CHECK(three_fit.cluster.transport.kind == transport_kind::rdma);
  CHECK(three_fit.cluster.nvls);  // 3 sizes on 2 nodes fit 3 constants: no more points to choose NVLS by
  CHECK(three_fit.loss == cost::calibrate(sheet, three, t).loss);
  const cluster_spec one_node = cost::datasheet_machine(zoo::dgx_h100(1), 1, 8);
  CHECK(cost::calibrate_transport(one_node, four, t).cluster.transport.kind == transport_kind::rdma);
}

TEST_CASE("datasheet_machine: the base's worker node, N x G, NCCL; bad arguments name the field") {
  const auto c = cost::datasheet_machine(zoo::make_cluster("dgx-h100-x1"), 2, 4, "gpudirect_tcp");
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.world_size() == 8);
  CHECK(c.backend == collective_backend::nccl);
  CHECK(c.transport.kind == transport_kind::gpudirect_tcp);
  CHECK(c.nodes[1].nic.bandwidth == zoo::make_cluster("dgx-h100-x1").nodes[0].nic.bandwidth);
  CHECK_THROWS_WITH_AS((void)cost::datasheet_machine(c, 0, 4), "'nodes': must be in [1, 65536], got 0", autosync::error);
  CHECK_THROWS_WITH_AS((void)cost::datasheet_machine(c, 1, 2000), "'devices_per_node': must be in [1, 1024], got 2000", autosync::error);
  try {
    (void)cost::datasheet_machine(c, 1, 8, "carrier-pigeon");
    FAIL("expected an error");
  } catch (const autosync::error& e) {
    CHECK(e.field() == "transport");
  }
  cluster_spec servers_only = c;
  for (auto& n : servers_only.nodes) {
    n.server_only = true;
    n.devices = 0;
  }
  CHECK_THROWS_AS((void)cost::datasheet_machine(servers_only, 1, 8), autosync::error);
}
