// Cluster presets: every one validates, has the documented shape, and its constants equal
// the sources named in zoo/clusters.hpp.
#include <autosync/zoo/clusters.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace autosync;
using namespace autosync::zoo;

TEST_CASE("zoo clusters: every listed preset builds, validates, and carries its name") {
  const auto names = cluster_names();
  CHECK(names.size() == 14);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  for (const auto& n : names) {
    CAPTURE(n);
    const auto c = make_cluster(n);
    CHECK_NOTHROW(c.validate());
    CHECK(c.name == n);
    CHECK_FALSE(c.device.empty());
    CHECK_FALSE(c.source.empty());
    for (const auto& nd : c.nodes) {
      CHECK(nd.nic.latency > 0.0);
      if (!nd.server_only) {
        CHECK(nd.intra.bandwidth > 0.0);  // even one-device nodes: their PCIe link to the host
        CHECK(nd.intra.latency > 0.0);
      }
    }
  }
}

TEST_CASE("zoo clusters: world sizes and shapes") {
  CHECK(make_cluster("autosync-a").world_size() == 11);
  CHECK(make_cluster("autosync-a").worker_nodes() == 11);
  CHECK(make_cluster("autosync-b").world_size() == 16);
  CHECK(make_cluster("autosync-b-ps").world_size() == 16);
  CHECK(make_cluster("autosync-b-ps").nodes.size() == 6);
  CHECK(make_cluster("p3.16xlarge-x4").world_size() == 32);
  CHECK(make_cluster("dgx-a100-x2").world_size() == 16);
  CHECK(make_cluster("dgx-a100-x4").world_size() == 32);
  CHECK(make_cluster("dgx-a100-x16").world_size() == 128);
  CHECK(make_cluster("dgx-h100-x2").world_size() == 16);
  CHECK(make_cluster("dgx-h100-x16").world_size() == 128);
  CHECK(make_cluster("dgx-h100-x32").world_size() == 256);
  CHECK(make_cluster("commodity-10gbe-x8").world_size() == 32);
  CHECK(make_cluster("commodity-10gbe-x8").max_devices_per_node() == 4);
  for (int n : {2, 4, 8}) {
    const auto c = make_cluster("local-" + std::to_string(n));
    CHECK(c.nodes.size() == 1);
    CHECK(c.world_size() == n);
    CHECK(c.nodes[0].nics == 1);
  }
  CHECK(dgx_h100(16).nodes[0].nics == 8);
  CHECK(dgx_a100(16).nodes[0].nics == 8);
  CHECK(p3_16xlarge_x4().nodes[3].devices == 8);
  CHECK(p3_16xlarge_x4().uniform());
  CHECK(p3_16xlarge_x4().node_of_rank(31) == 3);
  // node names are unique (validate() would reject duplicates) and predictable
  CHECK(dgx_h100(2).nodes[1].name == "n1");
}

TEST_CASE("zoo clusters: parameter servers, dedicated vs co-located") {
  const auto b = autosync_b();
  CHECK_FALSE(b.has_dedicated_servers());
  CHECK(b.server_nodes() == std::vector<int>{0, 1, 2, 3});  // co-located on the 4 workers
  CHECK(b.server_count() == 4);
  const auto ps = autosync_b_ps();
  CHECK(ps.has_dedicated_servers());
  CHECK(ps.server_nodes() == std::vector<int>{4, 5});
  CHECK(ps.server_count() == 2);
  CHECK(ps.worker_nodes() == 4);
  for (int i : {4, 5}) {
    const auto& s = ps.nodes[static_cast<std::size_t>(i)];
    CHECK(s.server_only);
    CHECK(s.devices == 0);
    CHECK(s.nic.bandwidth == 6.25e9);  // c5n.9xlarge: 50 Gb/s, the workers' rate
    CHECK(s.reduce_bandwidth > 0.0);
  }
  // the workers are cluster B's, unchanged
  CHECK(ps.nodes[0].nic.bandwidth == b.nodes[0].nic.bandwidth);
  CHECK(ps.nodes[0].device_flops == b.nodes[0].device_flops);
}

TEST_CASE("zoo clusters: parametric names") {
  CHECK(make_cluster("dgx-a100-x1").world_size() == 8);
  CHECK(make_cluster("dgx-a100-x7").world_size() == 56);
  CHECK(make_cluster("dgx-h100-x512").world_size() == 4096);
  CHECK(make_cluster("local-1").world_size() == 1);
  CHECK(make_cluster("local-3").name == "local-3");
  CHECK(make_cluster("local-256").world_size() == 256);
  CHECK_THROWS_WITH_AS((void)make_cluster("dgx-h100-x513"), "'cluster': cluster 'dgx-h100-x513': N must be in [1, 512]",
                       autosync::error);
  CHECK_THROWS_WITH_AS((void)make_cluster("local-257"), "'cluster': cluster 'local-257': N must be in [1, 256]", autosync::error);
  CHECK_THROWS_WITH_AS((void)make_cluster("local-99999999999999999999999"),
                       "'cluster': cluster 'local-99999999999999999999999': N must be in [1, 256]", autosync::error);
  CHECK_THROWS_WITH_AS((void)dgx_a100(0), "'cluster': dgx-a100-x<N> needs N in [1, 512], got 0", autosync::error);
  CHECK_THROWS_WITH_AS((void)local(-1), "'cluster': local-<N> needs N in [1, 256], got -1", autosync::error);
  // not of the form: zero, leading zero, sign, trailing junk, empty N
  for (const char* bad : {"dgx-a100-x0", "dgx-a100-x08", "dgx-a100-x+8", "dgx-a100-x8a", "dgx-a100-x", "local-", "local--2"}) {
    CAPTURE(bad);
    try {
      (void)make_cluster(bad);
      FAIL("expected an error");
    } catch (const autosync::error& e) {
      CHECK(e.field() == "cluster");
      CHECK(std::string(e.what()).find("unknown cluster '" + std::string(bad) + "'") != std::string::npos);
    }
  }
}

TEST_CASE("zoo clusters: unknown names list the valid ones") {
  try {
    (void)make_cluster("x");
    FAIL("expected an error");
  } catch (const autosync::error& e) {
    const std::string what = e.what();
    CHECK(e.field() == "cluster");
    CHECK(what.rfind("'cluster': unknown cluster 'x' (valid: autosync-a, autosync-b, autosync-b-ps, p3.16xlarge-x4, ", 0) == 0);
    CHECK(what.find("local-8, dgx-a100-x<N>, dgx-h100-x<N> (N in [1, 512]), local-<N> (N in [1, 256]))") != std::string::npos);
    for (const auto& n : cluster_names()) CHECK(what.find(n) != std::string::npos);
  }
  CHECK_THROWS_AS((void)make_cluster(""), autosync::error);
  CHECK_THROWS_AS((void)make_cluster("DGX-A100-X2"), autosync::error);  // names are case-sensitive
}

TEST_CASE("zoo clusters: constants equal their documented sources") {
  // Ethernet line rates: Gb/s / 8
  CHECK(hw::gbe40 == 5e9);
  CHECK(hw::gbe10 == 1.25e9);
  CHECK(hw::gbe25 == 3.125e9);
  CHECK(hw::gbe50 == 6.25e9);
  CHECK(autosync_a().nodes[0].nic.bandwidth == 5e9);
  CHECK(autosync_b().nodes[0].nic.bandwidth == 6.25e9);
  CHECK(p3_16xlarge_x4().nodes[0].nic.bandwidth == 3.125e9);
  CHECK(commodity_10gbe_x8().nodes[0].nic.bandwidth == 1.25e9);
  // NDR 400: 46-48 GB/s per NIC (nccl-tests issue 290) -> 47; HDR 200 at the same 94 %
  CHECK(dgx_h100(2).nodes[0].nic.bandwidth == 47e9);
  CHECK(dgx_h100(2).nodes[0].nic.bandwidth >= 46e9);
  CHECK(dgx_h100(2).nodes[0].nic.bandwidth <= 48e9);
  CHECK(dgx_a100(2).nodes[0].nic.bandwidth == doctest::Approx(23.5e9));
  CHECK(dgx_a100(2).nodes[0].nic_bandwidth() == doctest::Approx(8 * 23.5e9));
  // A100 intra = nccl-tests busbw at 1 GiB in a100_1node_8gpu_allreduce.txt
  CHECK(dgx_a100(1).nodes[0].intra.bandwidth == 230.84e9);
  CHECK(dgx_h100(1).nodes[0].intra.bandwidth == 370e9);
  CHECK(hw::v100_nvlink == doctest::Approx(150e9 * 230.84 / 300.0));
  // latencies reproduce the small-message floors they were fitted to:
  //   8 ranks in one A100 node, ring 2(p-1) steps: ~10 us
  CHECK(14 * dgx_a100(1).nodes[0].intra.latency == doctest::Approx(10e-6));
  //   2 nodes x 4 ranks: 12 intra steps + 2 network steps: ~19 us
  CHECK(12 * hw::nvlink_latency + 2 * dgx_h100(2).nodes[0].nic.latency == doctest::Approx(19e-6));
  CHECK(hw::rdma_latency == doctest::Approx(5.214e-6).epsilon(1e-3));
  CHECK(hw::pcie_latency == doctest::Approx(hw::nvlink_latency / 0.47));
  // effective device throughput: Megatron-LM measurements
  CHECK(p3_16xlarge_x4().nodes[0].device_flops == 39e12);
  CHECK(dgx_a100(1).nodes[0].device_flops == 137e12);
  CHECK(dgx_h100(1).nodes[0].device_flops == doctest::Approx(989e12 * 137.0 / 312.0));
  CHECK(autosync_a().nodes[0].device_flops == doctest::Approx(10.97e12 / 2));
  // gamma: memory bandwidth / 3
  CHECK(dgx_a100(1).nodes[0].reduce_bandwidth == doctest::Approx(1555e9 / 3));
  CHECK(p3_16xlarge_x4().nodes[0].reduce_bandwidth == doctest::Approx(300e9));
  CHECK(autosync_b().nodes[0].reduce_bandwidth == doctest::Approx(320e9 / 3));
  // the newer cluster is faster where it should be
  CHECK(dgx_h100(1).nodes[0].nic_bandwidth() > dgx_a100(1).nodes[0].nic_bandwidth());
  CHECK(dgx_h100(1).nodes[0].device_flops > dgx_a100(1).nodes[0].device_flops);
  // local-N: a CPU core and loopback
  const auto l = local(4);
  CHECK(l.device == "CPU core");
  CHECK(l.nodes[0].device_flops == doctest::Approx(96e9 * 0.3));
  CHECK(l.nodes[0].intra.bandwidth == 8e9);
}
