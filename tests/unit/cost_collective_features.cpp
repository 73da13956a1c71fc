// The collective-level correction without training: the feature row by hand, the corrected time
// and its errors, the embedded default, and the manifest of nccl-tests logs (its errors name the
// field). Training and held-out figures: learn_collectives.cpp.
#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/default_collective_correction.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/gbt/default_collective_model.hpp>
#include <autosync/gbt/evidence_box.hpp>
#include <autosync/io/json.hpp>
#include <autosync/learn/collectives.hpp>

#include "../common/tiny_specs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

using namespace autosync;
using doctest::Approx;

namespace {

const std::string manifest = std::string(AUTOSYNC_SOURCE_DIR) + "/tests/data/collectives/cases.json";

// 2 nodes x 2 devices: NVLink-ish 100 GB/s, 2 us; one 10 GB/s NIC, 5 us; reduce at 100 GB/s.
cluster_spec two_by_two() { return testing::replicated("2x2", 2, testing::node(2, {1e11, 2e-6}, {1e10, 5e-6}, 1e13, 1e11)); }

std::size_t at(std::string_view name) { return testing::index_of(cost::collective_feature_names, name); }

// A correction that predicts one value, of any width.
struct constant_correction {
  float value = 0.0f;
  std::size_t width = cost::collective_feature_count;
  [[nodiscard]] float predict(std::span<const float>) const { return value; }
  [[nodiscard]] std::size_t num_features() const { return width; }
};

}  // namespace

TEST_CASE("collective features: one all-reduce row by hand") {
  const auto f = cost::make_fabric(two_by_two());
  const double n = 1048576.0;  // 1 MiB, p = 4, N = 2, g = 2
  // ring across nodes: the slowest link of a step, alpha = max(2, 5) us, beta = max(1e-11, 1e-10)
  //   2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma = 30 us + 157.2864 us + 7.86432 us
  const double ring = 3e-5 + 1.5 * n * 1e-10 + 0.75 * n * 1e-11;
  // NCCL's tree: 2((g-1) 2 us + ceil(lg 2) 5 us) + max(chain 2 n 1e-11, net 1.0 n 1e-10) + n gamma
  const double tree_lat = 2.0 * (2e-6 + 5e-6), tree = tree_lat + n * 1e-10 + n * 1e-11;
  CHECK(cost::all_reduce(f, topology_value{topology_kind::ring}, n) == Approx(ring).epsilon(1e-12));
  CHECK(cost::nccl_tree_all_reduce(f, n) == Approx(tree).epsilon(1e-12));
  CHECK(cost::collective_time(f, cost::collective_op::all_reduce, topology_kind::tree, n) == Approx(tree).epsilon(1e-12));
  const double bound = 2.0 * 0.5 * n * 1e-10;  // the node cut: 2(N-1)/N n beta_nic
  const double floor = tree_lat + 8.0 * 1e-10 + 8.0 * 1e-11;  // the tree of 8 bytes
  const double bdp = (n / bound) * floor;                     // 10 GB/s x the floor

  // NCCL's default = the faster: the tree
  const auto e = cost::collective_features(f, {cost::collective_op::all_reduce, cost::collective_algorithm::nccl_default, n});
  CHECK(e.topology == topology_kind::tree);
  CHECK(e.analytical == Approx(tree).epsilon(1e-12));
  CHECK(e.floor == Approx(floor).epsilon(1e-12));
  CHECK(e.bound == Approx(bound).epsilon(1e-12));
  const std::vector<std::pair<std::string_view, double>> want{
      {"log2_size_over_bdp", std::log2(n / bdp)},
      {"latency_share", floor / tree},
      {"bound_share", bound / tree},
      {"log2_ranks", 2.0},
      {"log2_nodes", 1.0},
      {"ranks_per_node", 2.0},
      {"operation", 0.0},
      {"algorithm", 0.0},  // nccl::algorithm::tree
      {"protocol", 2.0},   // Simple off NCCL
      {"channel_share", 1.0},
      {"log2_intra_over_net", std::log2(2.0 * 1e11 / 1e10)},  // a node's 2 GPU links over its one NIC
      {"log2_ring_over_model", std::log2(ring / tree)},
  };
  REQUIRE(want.size() == cost::collective_feature_count);
  for (const auto& [name, v] : want) {
    CAPTURE(name);
    CHECK(e.row[at(name)] == Approx(v).epsilon(1e-6));
  }

  // the ring row: the ring's terms
  const auto r = cost::collective_features(f, {cost::collective_op::all_reduce, cost::collective_algorithm::ring, n});
  CHECK(r.topology == topology_kind::ring);
  CHECK(r.analytical == Approx(ring).epsilon(1e-12));
  CHECK(r.row[at("algorithm")] == 1.0f);
  CHECK(r.row[at("log2_ring_over_model")] == 0.0f);
  CHECK(r.row[at("bound_share")] == Approx(bound / ring).epsilon(1e-6));
  // a forced tree costs the tree: the same row as the default that picks it
  const auto t = cost::collective_features(f, {cost::collective_op::all_reduce, cost::collective_algorithm::tree, n});
  CHECK(t.row == e.row);
  // deterministic
  CHECK(cost::collective_features(f, {cost::collective_op::all_reduce, cost::collective_algorithm::nccl_default, n}).row == e.row);
}

TEST_CASE("collective features: machine-relative, a machine twice as fast and twice as slow to start reads the same row") {
  // every bandwidth x2 and every latency x2: the bandwidth-delay product x4, every time x2, so the
  // row of 4n bytes on it is the row of n on the original (no absolute unit in the row)
  auto a = two_by_two(), b = two_by_two();
  for (auto& nd : b.nodes) {
    nd.intra.bandwidth *= 2.0;
    nd.intra.latency *= 2.0;
    nd.nic.bandwidth *= 2.0;
    nd.nic.latency *= 2.0;
    nd.reduce_bandwidth *= 2.0;
  }
  const auto fa = cost::make_fabric(a), fb = cost::make_fabric(b);
  for (double n = 1024; n < 1e10; n *= 9.0) {
    CAPTURE(n);
    const auto ra = cost::collective_features(fa, {cost::collective_op::all_reduce, cost::collective_algorithm::nccl_default, n});
    const auto rb = cost::collective_features(fb, {cost::collective_op::all_reduce, cost::collective_algorithm::nccl_default, 4.0 * n});
    CHECK(rb.analytical == Approx(2.0 * ra.analytical).epsilon(1e-9));
    for (std::size_t i = 0; i < cost::collective_feature_count; ++i) {
      CAPTURE(cost::collective_feature_names[i]);
      // the floor is the time of 8 bytes on both: its bandwidth part (16 of 60,000 ppm) does not scale
      CHECK(rb.row[i] == Approx(ra.row[i]).epsilon(2e-3));
    }
  }
}

TEST_CASE("collective features: floor <= time, bound <= time, finite rows, for every operation and algorithm, MPI and NCCL") {
  const auto f2 = cost::make_fabric(two_by_two());
  auto one = two_by_two();
  one.nodes.resize(1);
  one.nodes[0].devices = 8;
  const auto f1 = cost::make_fabric(one);
  auto nccl2 = two_by_two();
  nccl2.backend = collective_backend::nccl;
  const auto f3 = cost::make_fabric(nccl2);
  one.backend = collective_backend::nccl;
  const auto f4 = cost::make_fabric(one);
  using cost::collective_algorithm;
  using cost::collective_op;
  const std::pair<collective_op, collective_algorithm> kinds[] = {
      {collective_op::all_reduce, collective_algorithm::ring},         {collective_op::all_reduce, collective_algorithm::tree},
      {collective_op::all_reduce, collective_algorithm::nccl_default}, {collective_op::reduce_scatter, collective_algorithm::ring},
      {collective_op::reduce_scatter, collective_algorithm::pat},      {collective_op::all_gather, collective_algorithm::nccl_default}};
  for (const auto* f : {&f1, &f2, &f3, &f4})
    for (const auto& [op, alg] : kinds)
      for (double n = 8; n < 1e10; n *= 7.3) {
        const auto e = cost::collective_features(*f, {op, alg, n});
        CAPTURE(n);
        CHECK(e.floor <= e.analytical * (1.0 + 1e-12));
        CHECK(e.bound <= e.analytical * (1.0 + 1e-12));
        CHECK(e.analytical == cost::analytical_time(*f, {op, alg, n}));
        CHECK(e.row[at("operation")] == static_cast<float>(op));
        if (f->nccl) {
          const auto ch = cost::nccl_choice(*f, {op, alg, n});
          CHECK(e.row[at("algorithm")] == static_cast<float>(ch.algo));
          CHECK(e.row[at("protocol")] == static_cast<float>(ch.proto));
          CHECK(e.row[at("channel_share")] > 0.0f);
          CHECK(e.row[at("channel_share")] <= 1.0f);
        }
        for (float v : e.row) CHECK(std::isfinite(v));
      }
  // pat is halving-doubling; the default of reduce-scatter picks the faster of ring and pat
  const double n = 4096;
  CHECK(cost::analytical_time(f2, {collective_op::reduce_scatter, collective_algorithm::pat, n}) ==
        cost::reduce_scatter(f2, topology_value{topology_kind::halving_doubling}, n));
  CHECK(cost::analytical_time(f2, {collective_op::reduce_scatter, collective_algorithm::nccl_default, n}) ==
        std::min(cost::reduce_scatter(f2, topology_value{topology_kind::halving_doubling}, n),
                 cost::reduce_scatter(f2, topology_value{topology_kind::ring}, n)));
}

TEST_CASE("collective features: an algorithm NCCL does not have, or a bad size, names the field") {
  const auto f = cost::make_fabric(two_by_two());
  using cost::collective_algorithm;
  using cost::collective_op;
  auto field_of = [&](cost::collective c) {
    try {
      (void)cost::collective_features(f, c);
    } catch (const error& e) {
      return e.field();
    }
    return std::string("(no error)");
  };
  CHECK(field_of({collective_op::all_gather, collective_algorithm::tree, 1024}) == "algorithm");
  CHECK(field_of({collective_op::reduce_scatter, collective_algorithm::tree, 1024}) == "algorithm");
  CHECK(field_of({collective_op::all_reduce, collective_algorithm::pat, 1024}) == "algorithm");
  CHECK(field_of({collective_op::all_reduce, collective_algorithm::ring, -1.0}) == "bytes");
  CHECK(field_of({collective_op::all_reduce, collective_algorithm::ring, NAN}) == "bytes");
  CHECK(field_of({collective_op::all_reduce, collective_algorithm::ring, INFINITY}) == "bytes");
  CHECK(field_of({collective_op::all_reduce, collective_algorithm::ring, 0.0}) == "(no error)");
  CHECK(field_of({collective_op::all_gather, collective_algorithm::pat, 1024}) == "(no error)");
  cost::fabric empty;
  empty.p = 0;
  CHECK_THROWS_AS((void)cost::collective_features(empty, {}), error);
}

TEST_CASE("collective correction: analytical x exp(prediction); width and non-finite errors name the correction") {
  const auto f = cost::make_fabric(two_by_two());
  const cost::collective c{cost::collective_op::all_reduce, cost::collective_algorithm::ring, 65536};
  const double t = cost::analytical_time(f, c);

  const auto r = cost::corrected_collective_time(f, c, constant_correction{0.5f});
  CHECK(r.estimate.analytical == t);
  CHECK(r.log_factor == 0.5);
  CHECK(r.time == Approx(t * std::exp(0.5)).epsilon(1e-12));

  // the type-erased form: without a correction it is the analytical model
  const cost::collective_correction none;
  CHECK_FALSE(none.corrected());
  CHECK(none(f, c).time == t);
  CHECK(none(f, c).log_factor == 0.0);
  const cost::collective_correction half{constant_correction{0.5f}};
  CHECK(half.corrected());
  CHECK(half(f, c).time == r.time);

  // the all-reduce of the cost API: ring and tree, other topologies are an error
  CHECK(cost::corrected_all_reduce(f, topology_value{topology_kind::ring}, 65536, constant_correction{0.5f}).time == r.time);
  CHECK(cost::corrected_all_reduce(f, topology_value{topology_kind::tree}, 65536, half).estimate.topology == topology_kind::tree);
  CHECK(cost::corrected_all_reduce(f, topology_value{topology_kind::tree}, 65536, none).time ==
        cost::collective_time(f, cost::collective_op::all_reduce, topology_kind::tree, 65536));

  auto field_of = [](auto&& fn) {
    try {
      fn();
    } catch (const error& e) {
      return e.field() + ": " + e.what();
    }
    return std::string("(no error)");
  };
  const auto wide = field_of([&] { (void)cost::corrected_collective_time(f, c, constant_correction{0.5f, 17}); });
  CHECK(wide.starts_with("correction: "));
  CHECK(wide.find("reads 17 features") != std::string::npos);
  CHECK(field_of([] { (void)cost::collective_correction(constant_correction{0.5f, 3}); }).starts_with("correction: "));
  const auto nan = field_of([&] { (void)cost::corrected_collective_time(f, c, constant_correction{NAN}); });
  CHECK(nan.starts_with("correction: "));
  CHECK(nan.find("non-finite") != std::string::npos);
  CHECK(nan.find("all_reduce of 65536 B (ring)") != std::string::npos);
  CHECK(field_of([&] { (void)cost::collective_correction(constant_correction{INFINITY})(f, c); }).starts_with("correction: "));
  CHECK(field_of([&] { (void)cost::corrected_all_reduce(f, topology_value{topology_kind::halving_doubling}, 1, none); })
            .starts_with("topology: "));
}

TEST_CASE("collective correction: the embedded default is the forest of gbt/default_collective_model.hpp, bounded by its box") {
  static_assert(cost::Correction<cost::default_collective_correction>);
  static_assert(cost::default_collective_correction::num_features() == cost::collective_feature_count);
  static_assert(cost::default_collective_correction::num_trees() > 0);
  const auto& box = gbt::default_collective_model_box;
  auto nccl = two_by_two();
  nccl.backend = collective_backend::nccl;
  for (const auto& cl : {two_by_two(), nccl}) {
    const auto f = cost::make_fabric(cl);
    for (double n = 1024; n < 1e10; n *= 16) {
      const cost::collective c{cost::collective_op::all_reduce, cost::collective_algorithm::nccl_default, n};
      const auto e = cost::collective_features(f, c);
      const float forest = gbt::default_collective_model.predict(e.row);
      const auto r = cost::corrected_collective_time(f, c, cost::default_collective_correction{});
      CHECK(r.log_factor == static_cast<double>(box.bound(forest, e.row)));
      CHECK(r.log_factor >= box.y_lo);
      CHECK(r.log_factor <= box.y_hi);
      CHECK(r.time == Approx(e.analytical * std::exp(r.log_factor)).epsilon(1e-12));
    }
  }
  const std::vector<float> short_row(cost::collective_feature_count - 1, 0.0f);
  CHECK_THROWS_AS((void)cost::default_collective_correction{}.predict(short_row), error);
}

TEST_CASE("evidence box: clamps to the targets' range, shrinks linearly to 0 one box width outside") {
  gbt::evidence_box<2> b{.lo = {0.0f, 10.0f}, .hi = {4.0f, 10.0f}, .y_lo = -0.5f, .y_hi = 0.25f};
  const float in[] = {2.0f, 10.0f};
  CHECK(b.weight(in) == 1.0);
  CHECK(b.bound(0.1f, in) == 0.1f);
  CHECK(b.bound(3.0f, in) == 0.25f);   // clamped
  CHECK(b.bound(-3.0f, in) == -0.5f);
  const float half_out[] = {6.0f, 10.0f};  // 2 past hi, width 4
  CHECK(b.weight(half_out) == Approx(0.5));
  const float narrow[] = {2.0f, 10.25f};  // a feature of zero width: one unit is the width
  CHECK(b.weight(narrow) == Approx(0.75));
  const float far[] = {2.0f, 40.0f};
  CHECK(b.weight(far) == 0.0);
  CHECK(b.bound(0.2f, far) == 0.0f);
  const float nan[] = {NAN, 10.0f};
  CHECK(b.weight(nan) == 0.0);
  // the box of rows: their ranges
  const float rows[] = {1.0f, 2.0f, -1.0f, 5.0f};
  const float y[] = {0.3f, -0.1f};
  const auto c = gbt::evidence_box<2>::of(rows, y);
  CHECK(c.lo == std::array<float, 2>{-1.0f, 2.0f});
  CHECK(c.hi == std::array<float, 2>{1.0f, 5.0f});
  CHECK(c.y_lo == -0.1f);
  CHECK(c.y_hi == 0.3f);
}

TEST_CASE("collective manifest: the shipped cases.json") {
  const auto m = learn::load_collective_cases(manifest);
  REQUIRE(m.cases.size() == 5);
  CHECK(m.cases[0].label == "A100 x8, 1 node (ring)");
  CHECK(m.cases[0].file == "a100_1node_8gpu_allreduce.txt");
  CHECK(m.cases[0].section.empty());
  CHECK(m.cases[0].cluster.world_size() == 8);
  CHECK(m.cases[0].cluster.nodes[0].intra.bandwidth == 300e9);
  CHECK(m.cases[1].algorithm == cost::collective_algorithm::nccl_default);
  CHECK(m.cases[1].cluster.worker_nodes() == 2);
  CHECK(m.cases[3].cluster_name == "h100x2");
  CHECK(m.cases[4].cluster_name == "h100x2");
  CHECK(m.cases[4].section == "(C)");
  CHECK(m.cases[4].cluster.world_size() == 16);
  CHECK(m.cases[4].cluster.nodes[0].nic_bandwidth() == 8 * 50e9);
  const auto rows = learn::load_collective_samples(m, {.calibration_sizes = 0});  // the data sheet's constants
  CHECK(rows.size() == 64);
  std::vector<std::size_t> per_case(m.cases.size(), 0);
  for (const auto& s : rows) {
    ++per_case[s.case_index];
    CHECK(s.measured > 0.0);
    CHECK(s.analytical == cost::analytical_time(cost::make_fabric(m.cases[s.case_index].cluster), s.what));
    CHECK(s.target() == Approx(std::log(s.measured / s.analytical)));
  }
  CHECK(per_case == std::vector<std::size_t>{11, 25, 6, 11, 11});
  CHECK(rows.front().what.bytes == 1048576.0);
  CHECK(rows.front().measured == Approx(78.77e-6));

  // written and read back: the same cases, named clusters stay named
  const auto back = learn::parse_collective_cases(learn::to_json_text(m), "written.json");
  REQUIRE(back.cases.size() == m.cases.size());
  for (std::size_t i = 0; i < m.cases.size(); ++i) {
    CHECK(back.cases[i].label == m.cases[i].label);
    CHECK(back.cases[i].cluster_name == m.cases[i].cluster_name);
    CHECK(io::to_json_text(back.cases[i].cluster) == io::to_json_text(m.cases[i].cluster));
  }
  CHECK(learn::to_json_text(back) == learn::to_json_text(m));
}

TEST_CASE("collective manifest: malformed manifests name the field and the line") {
  const std::string node = R"({"devices": 2, "nic": {"bandwidth": 1e10}, "intra": {"bandwidth": 1e11}, "device_flops": 1e12, "reduce_bandwidth": 1e11})";
  const std::string cl = R"({"nodes": [)" + node + "]}";
  auto one_case = [&](const std::string& body) { return "{\"cases\": [\n" + body + "\n]}"; };
  const std::string ok = R"({"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": )" + cl + "}";
  CHECK_NOTHROW((void)learn::parse_collective_cases(one_case(ok)));
  struct bad {
    std::string text, field, says;
  };
  const std::vector<bad> cases{
      {"{}", "cases", "required field is missing"},
      {R"({"cases": []})", "cases", "at least one case"},
      {R"({"cases": {}})", "cases", "must be an array"},
      {R"({"cases": [], "extra": 1})", "extra", "unknown key"},
      {one_case(R"({"file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": )" + cl + "}"), "cases[0].label",
       "required field is missing"},
      {one_case(R"({"label": "a", "operation": "all_reduce", "algorithm": "ring", "cluster": )" + cl + "}"), "cases[0].file",
       "required field is missing"},
      {one_case(R"({"label": "a", "file": "", "operation": "all_reduce", "algorithm": "ring", "cluster": )" + cl + "}"), "cases[0].file",
       "must name"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "fastest", "cluster": )" + cl + "}"),
       "cases[0].algorithm", "unknown algorithm 'fastest' (valid: ring, tree, pat, nccl_default)"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "broadcast", "algorithm": "ring", "cluster": )" + cl + "}"),
       "cases[0].operation", "unknown operation 'broadcast'"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "all_gather", "algorithm": "tree", "cluster": )" + cl + "}"),
       "cases[0].algorithm", "NCCL has no 'tree' algorithm for all_gather"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": "x"})"), "cases[0].cluster",
       "no cluster 'x' in \"clusters\" (there are none)"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": 3})"), "cases[0].cluster",
       "must be the name of a cluster"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": {"nodes": [{"devices": 0}]}})"),
       "cases[0].cluster.nodes[0].devices", "must be in [1, 1024]"},
      {one_case(ok + ",\n" + ok), "cases[1].label", "duplicate label 'a'"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": )" + cl +
                R"(, "colour": "red"})"),
       "cases[0].colour", "unknown key 'colour'"},
      {R"({"clusters": {"c": {"nodes": [{"devices": 2}]}}, "cases": [)" + ok + "]}", "clusters.c.nodes[0].intra.bandwidth", "must be bytes/s in [1e3, 1e16]"},
      {R"({"clusters": {"c": )" + cl + R"(}, "cases": [{"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": "d"}]})",
       "cases[0].cluster", "(defined: c)"},
      {one_case(R"({"label": "a", "file": "a.txt", "operation": "all_reduce", "algorithm": "ring", "cluster": {"nodes": [)" + node +
                R"(, {"server_only": true, "devices": 0, "nic": {"bandwidth": 1e10}}]}})"),
       "cases[0].cluster", "no parameter servers"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.text);
    try {
      (void)learn::parse_collective_cases(b.text, "cases.json");
      FAIL("accepted");
    } catch (const file_error& e) {
      CHECK(e.field() == b.field);
      CHECK(e.message().find(b.says) != std::string::npos);
      CHECK(e.file() == "cases.json");
      CHECK(e.line() >= 1);
      CHECK(std::string(e.what()).starts_with("cases.json:"));
    }
  }
  // the line points at the value: the second case's label is on line 3
  try {
    (void)learn::parse_collective_cases(one_case(ok + ",\n" + ok), "cases.json");
  } catch (const file_error& e) {
    CHECK(e.line() == 3);
  }
}

TEST_CASE("collective manifest: a missing log or section names the case") {
  auto m = learn::load_collective_cases(manifest);
  m.cases.resize(2);
  auto field_of = [&](const learn::collective_manifest& x) {
    try {
      (void)learn::load_collective_samples(x);
    } catch (const error& e) {
      return e.field();
    }
    return std::string("(no error)");
  };
  CHECK(field_of(m) == "(no error)");
  m.cases[1].section = "(Z)";
  CHECK(field_of(m) == "cases[1].section");
  m.cases[1].section.clear();
  m.cases[1].file = "no_such_log.txt";
  CHECK(field_of(m) == "cases[1].file");
  // a log without nccl-tests rows
  m.cases[1].file = "ddp_v100_dgx1_resnet_bucket_sweep.txt";
  CHECK(field_of(m) == "cases[1].section");
}
