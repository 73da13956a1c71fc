// Every collective formula against numbers computed by hand (alpha = 2, beta = 0.01,
// gamma = 0.001, n = 1000 unless stated), and the fabric that maps them onto a cluster.
#include <autosync/cost/collectives.hpp>
#include <autosync/cost/fabric.hpp>

#include "../common/tiny_specs.hpp"

#include <doctest/doctest.h>

using namespace autosync;
using namespace autosync::cost;
using doctest::Approx;

namespace {
constexpr double a = 2.0, b = 0.01, g = 0.001, n = 1000.0;
}

TEST_CASE("integer helpers") {
  CHECK(ceil_log2(1) == 0);
  CHECK(ceil_log2(2) == 1);
  CHECK(ceil_log2(3) == 2);
  CHECK(ceil_log2(8) == 3);
  CHECK(ceil_log2(9) == 4);
  CHECK(floor_log2(9) == 3);
  CHECK(floor_pow2(6) == 4);
  CHECK(floor_pow2(16) == 16);
  CHECK(is_pow2(16));
  CHECK_FALSE(is_pow2(12));
  CHECK_FALSE(is_pow2(0));
}

TEST_CASE("ring") {
  // p = 4: RS = 3*2 + 3/4*1000*(0.011) = 14.25; AG = 6 + 7.5 = 13.5
  CHECK(ring_reduce_scatter(4, n, a, b, g) == Approx(14.25));
  CHECK(ring_all_gather(4, n, a, b) == Approx(13.5));
  CHECK(ring_all_reduce(4, n, a, b, g) == Approx(27.75));
  CHECK(ring_all_reduce(2, n, a, b, g) == Approx(4 + 10 + 0.5));
  CHECK(ring_all_reduce(8, n, a, b, g) == Approx(28 + 17.5 + 0.875));
  CHECK(ring_all_reduce(16, n, a, b, g) == Approx(60 + 18.75 + 0.9375));
  CHECK(ring_all_reduce(6, n, a, b, g) == Approx(20 + 1000.0 / 60.0 + 5.0 / 6.0));  // 2*5/6*10, 5/6*1
  CHECK(ring_all_reduce(1, n, a, b, g) == 0.0);
}

TEST_CASE("halving-doubling (Rabenseifner), power of two and not") {
  CHECK(halving_doubling_all_reduce(2, n, a, b, g) == Approx(14.5));
  CHECK(halving_doubling_all_reduce(4, n, a, b, g) == Approx(8 + 15 + 0.75));
  CHECK(halving_doubling_all_reduce(8, n, a, b, g) == Approx(12 + 17.5 + 0.875));
  CHECK(halving_doubling_all_reduce(16, n, a, b, g) == Approx(16 + 18.75 + 0.9375));
  CHECK(halving_doubling_reduce_scatter(4, n, a, b, g) == Approx(4 + 8.25));
  CHECK(halving_doubling_all_gather(4, n, a, b) == Approx(4 + 7.5));
  // p = 6: p' = 4; pre 2 + 1000*0.011 = 13, core 23.75, post 2 + 10 = 12
  CHECK(halving_doubling_all_reduce(6, n, a, b, g) == Approx(48.75));
  // p = 5 pays the same extra step around the p' = 4 core
  CHECK(halving_doubling_all_reduce(5, n, a, b, g) == Approx(48.75));
  // RS p = 6: pre 13 + core 12.25 + post (2 + 1000/6*0.01)
  CHECK(halving_doubling_reduce_scatter(6, n, a, b, g) == Approx(13 + 12.25 + 2 + 10.0 / 6.0));
  // AG p = 6: pre (2 + 1000/6*0.01) + core 11.5 + post 12
  CHECK(halving_doubling_all_gather(6, n, a, b) == Approx(2 + 10.0 / 6.0 + 11.5 + 12));
  // beats the ring on latency at p = 16, equal bandwidth term
  CHECK(halving_doubling_all_reduce(16, n, a, b, g) < ring_all_reduce(16, n, a, b, g));
}

TEST_CASE("double binary tree: NCCL's, and the CPU executor's") {
  // NCCL's (what NCCL logs measure; collective_features prices it): 2 ceil(lg p) a + 2 n b + n g
  CHECK(nccl_tree_all_reduce(2, n, a, b, g) == Approx(ring_all_reduce(2, n, a, b, g)));  // degenerate: one exchange
  CHECK(nccl_tree_all_reduce(4, n, a, b, g) == Approx(8 + 20 + 1));
  CHECK(nccl_tree_all_reduce(8, n, a, b, g) == Approx(12 + 20 + 1));
  CHECK(nccl_tree_all_reduce(6, n, a, b, g) == Approx(12 + 20 + 1));  // ceil(lg 6) = 3
  // The executor's (exec/collectives/tree.hpp): per tree a half h = 500 in one chunk; the
  // pipeline takes depth periods (chunks + depth - 1 = depth); p >= 4: the busiest rank does 3
  // operations per chunk (3 (a + h b) = 21) and sums 2 (2 h g = 1) on the way up.
  CHECK(tree_all_reduce(2, n, a, b, g) == Approx(2 * ((2 + 5 + 0.5) + (2 + 5))));  // one op per chunk, one phase each way
  CHECK(tree_all_reduce(2, n, a, b, 0.0) == Approx(2 * ring_all_reduce(2, n, a, b, 0.0)));  // the two trees one after the other
  CHECK(tree_all_reduce(3, n, a, b, g) == Approx(2 * (2 * (2 * 7 + 0.5) + 2 * (2 * 7))));  // depth 2, 2 ops, 1 child
  CHECK(tree_all_reduce(4, n, a, b, g) == Approx(2 * (2 * 22 + 2 * 21)));                // depth 2
  CHECK(tree_all_reduce(8, n, a, b, g) == Approx(2 * (3 * 22 + 3 * 21)));                // depth 3
  CHECK(tree_all_reduce(6, n, a, b, g) == Approx(tree_all_reduce(8, n, a, b, g)));       // ceil(lg 6) = 3
  CHECK(tree_all_reduce(16, n, a, b, g) == Approx(2 * (4 * 22 + 4 * 21)));
  // reduce-scatter: the reduce up, then the scatter down level by level (2 a + 2 (3/4) h b = 11.5)
  CHECK(tree_reduce(4, n, a, b, g) == Approx(2 * (44 + 11.5)));
  CHECK(tree_broadcast(4, n, a, b) == Approx(2 * (11.5 + 42)));
  // long vectors: chunks of tree_chunk_bytes, 6 n b + 2 n g at p >= 4 (three times the ring's 2 n b)
  const double big = 1e9;
  CHECK(tree_all_reduce(8, big, 0.0, 1e-9, 0.0) == Approx(6.0).epsilon(2e-3));
  CHECK(tree_all_reduce(8, big, 0.0, 0.0, 1e-9) == Approx(2.0).epsilon(2e-3));
  // chunks: 3 chunks of 2^17 bytes in a half of 3 x 2^17, plus depth - 1 = 2 periods of fill
  CHECK(tree_all_reduce(4, 6.0 * tree_chunk_bytes, 0.0, 1.0, 0.0) == Approx(2 * 2 * (3 + 1) * 3 * tree_chunk_bytes));
}

TEST_CASE("broadcast and reduce pick the faster classic algorithm") {
  CHECK(binomial_broadcast(8, n, a, b) == Approx(36));              // 3 * (2 + 10)
  CHECK(scatter_allgather_broadcast(8, n, a, b) == Approx(37.5));    // (3 + 7)*2 + 2*7/8*10
  CHECK(broadcast(8, n, a, b) == Approx(36));
  CHECK(broadcast(8, 100000, a, b) == Approx(20 + 1750));            // long: scatter + all-gather
  CHECK(binomial_reduce(8, n, a, b, g) == Approx(39));               // 3 * (2 + 11)
  CHECK(rabenseifner_reduce(8, n, a, b, g) == Approx(12 + 17.5 + 0.875));
  CHECK(reduce(8, n, a, b, g) == Approx(30.375));
  CHECK(broadcast(1, n, a, b) == 0.0);
}

TEST_CASE("hierarchical<intra, inter>") {
  const link_cost intra{1, 0.001}, inter{5, 0.01};
  // g = 4, N = 2: RS_ring(4, 1000) = 3 + 0.75; AR_ring(2, 250) = 10 + 2.5; AG_ring(4) = 3.75
  CHECK(hierarchical_all_reduce(topology_kind::ring, topology_kind::ring, 4, 2, n, intra, inter, 0.0) == Approx(20));
  CHECK(hierarchical<topology_kind::ring, topology_kind::ring>::all_reduce(4, 2, n, intra, inter, 0.0) == Approx(20));
  CHECK(hierarchical<topology_kind::ring, topology_kind::ring>::reduce_scatter(4, 2, n, intra, inter, 0.0) == Approx(3.75 + 5 + 1.25));
  CHECK(hierarchical<topology_kind::ring, topology_kind::ring>::all_gather(4, 2, n, intra, inter) == Approx(5 + 1.25 + 3.75));
  // tree inside: the executor's tree reduce-scatter and all-gather at g = 4, each
  // 2 (2 periods x 3 (1 + 0.5) + level by level 2 + 2 (3/4) 500 0.001) = 23.5
  CHECK(hierarchical_all_reduce(topology_kind::tree, topology_kind::halving_doubling, 4, 2, n, intra, inter, 0.0) ==
        Approx(23.5 + 12.5 + 23.5));
  // one node: only the intra level is left
  CHECK(hierarchical_all_reduce(topology_kind::ring, topology_kind::ring, 4, 1, n, intra, inter, 0.0) ==
        Approx(ring_all_reduce(4, n, 1, 0.001, 0.0)));
}

TEST_CASE("dispatch by kind and the lower bound") {
  const link_cost l{a, b};
  CHECK(all_reduce(topology_kind::ring, 8, n, l, g) == Approx(ring_all_reduce(8, n, a, b, g)));
  CHECK(all_reduce(topology_kind::tree, 8, n, l, g) == Approx(tree_all_reduce(8, n, a, b, g)));
  CHECK(all_reduce(topology_kind::halving_doubling, 8, n, l, g) == Approx(halving_doubling_all_reduce(8, n, a, b, g)));
  CHECK(reduce_scatter(topology_kind::tree, 8, n, l, g) == Approx(tree_reduce(8, n, a, b, g)));
  CHECK(all_gather(topology_kind::halving_doubling, 6, n, l) == Approx(halving_doubling_all_gather(6, n, a, b)));
  CHECK(all_reduce_lower_bound(5, n, b) == Approx(16));   // 2 * 4/5 * 1000 * 0.01
  CHECK(all_reduce_lower_bound(2, n, b) == Approx(10));
  CHECK(all_reduce_lower_bound(1, n, b) == 0.0);
  static_assert(ring_all_reduce(4, 1000.0, 2.0, 0.01, 0.0) == 6 + 6 + 15);  // constexpr
}

namespace {
cluster_spec two_by_four() { return testing::replicated("2x4", 2, testing::node(4, {100e9, 1e-6}, {10e9, 5e-6}, 1e14, 500e9, 2)); }
}  // namespace

TEST_CASE("make_fabric: a uniform cluster") {
  const auto f = make_fabric(two_by_four());
  CHECK(f.p == 8);
  CHECK(f.nodes == 2);
  CHECK(f.g == 4);
  CHECK(f.intra.alpha == Approx(1e-6));
  CHECK(f.intra.beta == Approx(1e-11));
  CHECK(f.inter.alpha == Approx(5e-6));
  CHECK(f.inter.beta == Approx(1.0 / 20e9));  // 2 NICs x 10 GB/s
  CHECK(f.gamma == Approx(1.0 / 500e9));
  CHECK(f.device_flops == Approx(1e14));
  REQUIRE(f.servers.size() == 2);  // co-located: every worker node serves
  CHECK(f.servers[1].colocated);
  CHECK(f.workers.size() == 2);
  CHECK(f.workers[0].ranks == 4);
  // flows: ring 1, halving-doubling g
  CHECK(f.flat(1).beta == Approx(1.0 / 20e9));
  CHECK(f.flat(4).beta == Approx(4.0 / 20e9));
  CHECK(f.flat(1).alpha == Approx(5e-6));
  CHECK(f.inter_flow().beta == Approx(4.0 / 20e9));
}

TEST_CASE("make_fabric: heterogeneous clusters are bounded by the slowest node; dedicated servers") {
  auto c = two_by_four();
  c.nodes[1].nic = autosync::link{5e9, 9e-6};
  c.nodes[1].intra = autosync::link{50e9, 2e-6};
  c.nodes[1].devices = 2;
  c.nodes[0].device_flops = 5e13;
  node_spec s;
  s.name = "ps";
  s.devices = 0;
  s.server_only = true;
  s.nic = autosync::link{25e9, 3e-6};
  c.nodes.push_back(s);
  const auto f = make_fabric(c);
  CHECK(f.p == 6);
  CHECK(f.g == 4);
  CHECK(f.intra.beta == Approx(1.0 / 50e9));
  CHECK(f.intra.alpha == Approx(2e-6));
  CHECK(f.inter.beta == Approx(1.0 / 10e9));
  CHECK(f.inter.alpha == Approx(9e-6));
  CHECK(f.device_flops == Approx(5e13));
  REQUIRE(f.servers.size() == 1);
  CHECK(f.servers[0].node == 2);
  CHECK_FALSE(f.servers[0].colocated);
  CHECK(f.servers[0].nic.beta == Approx(1.0 / 25e9));
  CHECK(f.workers[1].ranks == 2);
}

TEST_CASE("collectives on a fabric") {
  const auto f = make_fabric(two_by_four());
  const double S = 64e6;
  CHECK(all_reduce(f, topology_value{topology_kind::ring}, S) == Approx(ring_all_reduce(8, S, 5e-6, 1.0 / 20e9, f.gamma)));
  CHECK(all_reduce(f, topology_value{topology_kind::halving_doubling}, S) ==
        Approx(halving_doubling_all_reduce(8, S, 5e-6, 4.0 / 20e9, f.gamma)));
  // the executor's tree spans all 8 ranks, each operation on the slowest link (one flow)
  CHECK(all_reduce(f, topology_value{topology_kind::tree}, S) == Approx(tree_all_reduce(8, S, 5e-6, 1.0 / 20e9, f.gamma)));
  // NCCL's tree (collective_features): 2((g-1) a_intra + lg N a_nic) + max(2 S b_intra, 1 * S b_nic) + S gamma
  CHECK(nccl_tree_all_reduce(f, S) == Approx(2 * (3 * 1e-6 + 1 * 5e-6) + std::max(2 * S * 1e-11, S / 20e9) + S * f.gamma));
  const topology_value hier{topology_kind::hierarchical, topology_kind::ring, topology_kind::ring};
  CHECK(all_reduce(f, hier, S) ==
        Approx(ring_reduce_scatter(4, S, 1e-6, 1e-11, f.gamma) + ring_all_reduce(2, S / 4, 5e-6, 4.0 / 20e9, f.gamma) +
               ring_all_gather(4, S, 1e-6, 1e-11)));
  CHECK(reduce_scatter(f, hier, S) + all_gather(f, hier, S) ==
        Approx(ring_reduce_scatter(4, S, 1e-6, 1e-11, f.gamma) + ring_reduce_scatter(2, S / 4, 5e-6, 4.0 / 20e9, f.gamma) +
               ring_all_gather(2, S / 4, 5e-6, 4.0 / 20e9) + ring_all_gather(4, S, 1e-6, 1e-11)));
  CHECK(reduce_scatter(f, topology_value{}, S) + all_gather(f, topology_value{}, S) == Approx(all_reduce(f, topology_value{}, S)));
  // sparse all-gather: the row counts' all-gather (lg 8 = 3 start-ups), the indices' ring (7 start-ups),
  // the rows' ring all-gather of 8 S, plus summing 7 S
  CHECK(sparse_all_gather(f, 1000) == Approx((3 + 7) * 5e-6 + ring_all_gather(8, 8000, 5e-6, 1.0 / 20e9) + 7000 * f.gamma));
  CHECK(sparse_all_gather(f, 0) == Approx((3 + 7 + 7) * 5e-6));
  // the bound: max(2*7/8*S/100e9, 2*1/2*S/20e9)
  CHECK(lower_bound(f, S) == Approx(std::max(1.75 * S * 1e-11, S / 20e9)));
  CHECK(sparse_all_gather_lower_bound(f, 1000) == Approx(7000 * 1e-11));

  // one node: the intra link, every kind
  auto c1 = two_by_four();
  c1.nodes.pop_back();
  const auto f1 = make_fabric(c1);
  CHECK(all_reduce(f1, topology_value{topology_kind::tree}, S) == Approx(tree_all_reduce(4, S, 1e-6, 1e-11, f1.gamma)));
  CHECK(all_reduce(f1, hier, S) == Approx(ring_all_reduce(4, S, 1e-6, 1e-11, f1.gamma)));
}
