// cost/features.hpp and cost/corrected.hpp on hand-made cases with exact times.
//
// The tiny model and node of tests/common/tiny_specs.hpp: 4 f32 tensors t0..t3 of 1000 elements (4000
// bytes), forward 1 ms, backward 1 ms per tensor (t3 ready at 2 ms ... t0 at 5 ms); 2 devices,
// intra link 1 MB/s with alpha 1 ms, reduce 2 MB/s: a 2-rank ring all-reduce of S bytes costs
// 2 alpha + S beta + S/2 gamma = 0.002 + 1.25e-6 S, 7 ms for one tensor.
#include <autosync/cost/corrected.hpp>
#include <autosync/cost/default_correction.hpp>
#include <autosync/cost/features.hpp>
#include <autosync/learn/dataset.hpp>
#include <autosync/learn/linear.hpp>
#include <autosync/learn/metrics.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include "../common/tiny_specs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace autosync;
using doctest::Approx;
using autosync::testing::one_node;
using autosync::testing::tiny_model;
using autosync::testing::worker;

namespace {

// 2 worker nodes of 1 device, one dedicated server with NIC 1 MB/s and 0.1 ms latency
cluster_spec ps_cluster() {
  cluster_spec c;
  c.name = "ps";
  for (int i = 0; i < 2; ++i) {
    auto n = worker(1);
    n.name = "w" + std::to_string(i);
    c.nodes.push_back(n);
  }
  node_spec s;
  s.name = "s0";
  s.devices = 0;
  s.server_only = true;
  s.nic = autosync::link{1e6, 1e-4};
  c.nodes.push_back(s);
  return c;
}

strategy_desc one_group(const model_spec& m, group_desc g) {
  strategy_desc s;
  s.name = "one";
  s.groups = {g};
  for (const auto& t : m.tensors) {
    assignment a;
    a.tensor = t.name;
    a.group = 0;
    s.assignments.push_back(a);
  }
  return s;
}

std::size_t at(std::string_view name) { return testing::index_of(cost::feature_names, name); }

// A correction that is a fixed linear function of two features.
struct two_feature_correction {
  [[nodiscard]] float predict(std::span<const float> row) const { return 0.5f * row[at("ring_frac")] - 0.25f * row[at("log2_buckets")]; }
  [[nodiscard]] std::size_t num_features() const noexcept { return cost::feature_count; }
};
struct narrow_correction {
  [[nodiscard]] float predict(std::span<const float>) const { return 0.0f; }
  [[nodiscard]] std::size_t num_features() const noexcept { return 3; }
};
static_assert(cost::Correction<two_feature_correction>);
static_assert(!cost::Correction<int>);

}  // namespace

TEST_CASE("features: four unfused ring all-reduces, every term by hand") {
  const auto m = tiny_model();
  const auto c = one_node();
  group_desc g;  // all_reduce, ring, fusion cap 0: one bucket per tensor
  const auto s = one_group(m, g);
  const auto f = cost::compute_features(m, c, s);
  // buckets at 2, 9, 16, 23 ms, 7 ms each: the last ends at 30 ms
  CHECK(f.analytical.iteration == Approx(0.030));
  const auto& a = f.autosync;
  CHECK(a[6] == Approx(0.028));  // ar_transmission_max: the one group's 4 x 7 ms
  CHECK(a[7] == Approx(0.028));  // ar_transmission_sum
  CHECK(a[8] == 0.0);
  CHECK(a[9] == 0.0);
  CHECK(a[10] == Approx(0.004));  // ar_latency: 4 launches x alpha 1 ms
  CHECK(a[11] == Approx(0.004));
  for (std::size_t k = 0; k < 6; ++k) CHECK(a[k] == 0.0);  // no parameter servers

  const auto& r = f.row;
  // one node: the network is the device link (1 MB/s, 1 ms: a bandwidth-delay product of 1000 B)
  CHECK(f.executor == Approx(0.030));  // lane 0 alone: the executor runs it as estimated
  CHECK(r[at("log10_executor_over_estimate")] == Approx(0.0));
  CHECK(r[at("exposed_frac")] == Approx(25.0 / 30.0));
  CHECK(r[at("compute_frac")] == Approx(5.0 / 30.0));
  CHECK(r[at("communication_frac")] == Approx(28.0 / 30.0));
  CHECK(r[at("compression_frac")] == 0.0f);
  // lower bound: forward + max(backward, 4 x 2(p-1)/p S beta) = 1 + max(4, 16) ms
  CHECK(r[at("lower_bound_frac")] == Approx(17.0 / 30.0));
  CHECK(r[at("log2_ranks")] == 1.0f);
  CHECK(r[at("log2_nodes")] == 0.0f);
  CHECK(r[at("ranks_per_node")] == 2.0f);
  CHECK(r[at("servers")] == 1.0f);  // no server_only node: one co-located server per worker node
  CHECK(r[at("dedicated_servers")] == 0.0f);
  CHECK(r[at("log10_intra_over_net_bw")] == Approx(0.0));
  CHECK(r[at("log10_nic_spread")] == Approx(0.0));
  CHECK(r[at("log10_intra_over_net_lat")] == Approx(0.0));
  CHECK(r[at("log10_net_lat_frac")] == Approx(std::log10(1e-3 / 0.030)));
  CHECK(r[at("groups")] == 1.0f);
  CHECK(r[at("log2_buckets")] == Approx(std::log2(5.0)));
  CHECK(r[at("log2_lane0_buckets")] == Approx(std::log2(5.0)));
  CHECK(r[at("log2_ps_transfers")] == 0.0f);
  CHECK(r[at("log10_wire_time_frac")] == Approx(std::log10(16000.0 * 1e-6 / 0.030)));
  CHECK(r[at("log10_wire_over_dense")] == Approx(0.0));
  CHECK(r[at("ring_frac")] == 1.0f);
  CHECK(r[at("tree_frac")] == 0.0f);
  CHECK(r[at("ps_frac")] == 0.0f);
  CHECK(r[at("items_per_tensor")] == 1.0f);
  CHECK(r[at("log10_mean_bucket_over_bdp")] == Approx(std::log10(4.0)));
  CHECK(r[at("log10_max_bucket_over_bdp")] == Approx(std::log10(4.0)));
  CHECK(r[at("log10_min_bucket_over_bdp")] == Approx(std::log10(4.0)));
  CHECK(r[at("log10_mean_item_over_bdp")] == Approx(std::log10(4.0)));
  CHECK(r[at("max_server_time_frac")] == 0.0f);
  CHECK(r[at("log10_tensors")] == Approx(std::log10(4.0)));
  CHECK(r[at("launch_latency_frac")] == Approx(4e-3 / 0.030));
  CHECK(r[at("ar_transmission_sum_frac")] == Approx(28.0 / 30.0));
  CHECK(r[at("ar_latency_max_frac")] == Approx(4.0 / 30.0));

  // one fused bucket of 16000 bytes: 0.002 + 1.25e-6 x 16000 = 22 ms from t0's 5 ms
  group_desc fused;
  fused.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  const auto f2 = cost::compute_features(m, c, one_group(m, fused));
  CHECK(f2.analytical.iteration == Approx(0.027));
  CHECK(f2.autosync[7] == Approx(0.022));
  CHECK(f2.autosync[11] == Approx(0.001));
  CHECK(f2.row[at("log2_buckets")] == Approx(1.0));
}

TEST_CASE("features: a dedicated parameter server, transmission and latency by hand") {
  const auto m = tiny_model();
  const auto c = ps_cluster();
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  const auto f = cost::compute_features(m, c, one_group(m, g));
  // each tensor: 2 pushes flow side by side into the server's NIC (0.1 ms + 2 x 4000 B x 1 us/B,
  // above each worker's own 4000 B x 1 us/B), each added (4000 B x 0.5 us/B), then 2 pulls out
  // the same way: 2 x 8.1 ms + 2 x 2 ms = 20.2 ms; the server takes the tensors one after another
  // from 2 ms on
  const double transfer = 2 * (1e-4 + 2 * 4000 * 1e-6) + 2 * 4000 * 5e-7;
  CHECK(f.analytical.iteration == Approx(0.002 + 4 * transfer));
  CHECK(f.executor == Approx(f.analytical.iteration));  // one server: the executor runs it so too
  CHECK(f.autosync[0] == Approx(4 * transfer));  // ps_transmission_max
  CHECK(f.autosync[1] == Approx(4 * transfer));  // ps_transmission_sum
  CHECK(f.autosync[4] == Approx(4 * 2 * 1e-4));  // ps_latency: 4 transfers x 2 alpha
  CHECK(f.autosync[5] == Approx(4 * 2 * 1e-4));
  for (std::size_t k = 6; k < 12; ++k) CHECK(f.autosync[k] == 0.0);
  CHECK(f.row[at("servers")] == 1.0f);
  CHECK(f.row[at("dedicated_servers")] == 1.0f);
  CHECK(f.row[at("ps_frac")] == 1.0f);
  CHECK(f.row[at("ring_frac")] == 0.0f);
  CHECK(f.row[at("server_imbalance")] == 1.0f);
  CHECK(f.row[at("log2_ps_transfers")] == Approx(std::log2(5.0)));
  CHECK(f.row[at("log2_nodes")] == 1.0f);
  // two nodes: the network is the slowest worker NIC (1 MB/s, latency 0: no bandwidth-delay
  // product, sizes are read against 1 byte); the server takes all 16000 B at 1 us/B
  CHECK(f.row[at("log10_intra_over_net_bw")] == Approx(0.0));
  CHECK(f.row[at("log10_nic_spread")] == Approx(0.0));
  CHECK(f.row[at("max_server_time_frac")] == Approx(16000 * 1e-6 / f.analytical.iteration));
  CHECK(f.row[at("log10_wire_time_frac")] == Approx(std::log10(16000 * 1e-6 / f.analytical.iteration)));
  CHECK(f.row[at("log10_mean_item_over_bdp")] == Approx(std::log10(4000.0)));

  // a worker NIC 4x slower than the other: the spread is read as a ratio, and the network is
  // the slow one (its latency 0.2 ms over the iteration)
  auto slow = c;
  slow.nodes[1].nic = autosync::link{0.25e6, 2e-4};
  const auto fs = cost::compute_features(m, slow, one_group(m, g));
  CHECK(fs.row[at("log10_nic_spread")] == Approx(std::log10(4.0)));
  CHECK(fs.row[at("log10_intra_over_net_bw")] == 0.0f);  // one device per node: no device link to compare
  CHECK(fs.row[at("log10_net_lat_frac")] == Approx(std::log10(2e-4 / fs.analytical.iteration)));
}

TEST_CASE("features: deterministic, bit for bit; an invalid strategy names its field") {
  const auto m = tiny_model();
  const auto c = one_node();
  group_desc g;
  g.topology = topology_value{topology_kind::tree};
  g.fusion = fusion_value{8000, 4000};
  const auto s = one_group(m, g);
  const auto a = cost::compute_features(m, c, s), b = cost::compute_features(m, c, s);
  CHECK(a.row == b.row);
  CHECK(a.autosync == b.autosync);
  CHECK(a.row[at("tree_frac")] == 1.0f);
  auto bad = s;
  bad.assignments[2].group = 7;
  CHECK_THROWS_AS((void)cost::compute_features(m, c, bad), error);
}

TEST_CASE("corrected estimate = analytical x exp(prediction)") {
  const auto m = tiny_model();
  const auto c = one_node();
  const auto s = one_group(m, group_desc{});
  const two_feature_correction corr;
  const auto p = cost::corrected_estimate(m, c, s, corr);
  const double want_log = 0.5 * 1.0 - 0.25 * std::log2(5.0);
  CHECK(p.analytical.iteration == Approx(0.030));
  CHECK(p.log_factor == Approx(want_log).epsilon(1e-6));
  CHECK(p.iteration == Approx(0.030 * std::exp(want_log)).epsilon(1e-6));
  const cost::corrected_evaluator ev(corr);
  CHECK(ev.corrected());
  CHECK(ev(m, c, s).iteration == Approx(p.iteration));
  const cost::corrected_evaluator plain;
  CHECK_FALSE(plain.corrected());
  CHECK(plain(m, c, s).iteration == Approx(0.030));
  CHECK(plain(m, c, s).log_factor == 0.0);
  try {
    (void)cost::corrected_estimate(m, c, s, narrow_correction{});
    FAIL("a correction of the wrong width must be rejected");
  } catch (const error& e) {
    CHECK(e.field() == "correction");
    CHECK(std::string(e.what()).find("reads 3 features") != std::string::npos);
  }
}

namespace {
// A record of the tiny model in one group on one node of 2 ranks, iterations of 50, 10 and 30 ms.
learn::trial_record tiny_record() {
  learn::trial_record r;
  r.model = learn::model_source::inline_model(tiny_model());
  r.cluster = one_node();
  r.ranks_per_node = 2;
  r.strategy = one_group(r.model.spec, group_desc{});
  for (double t : {0.05, 0.01, 0.03}) r.iterations.push_back(learn::iteration_sample::from_ranks({t, t}, {t, t}, {t, t}));
  r.environment.ranks = 2;
  return r;
}
}  // namespace

TEST_CASE("dataset: a record's target is log(median measured / analytical at its compute scale)") {
  auto r = tiny_record();
  r.settings.compute_scale = 0.0;  // no compute: the analytical iteration is 2 ms... of nothing but communication
  const auto s = learn::make_sample(r);
  // zero compute: all 4 tensors ready at 0, four 7 ms all-reduces back to back
  CHECK(s.analytical == Approx(0.028));
  CHECK(s.measured == Approx(0.03));
  CHECK(s.target() == Approx(std::log(0.03 / 0.028)));
  CHECK(s.group == "tiny@1x2|x1|2r/2|cs0");
  // scales as the shortest text that reads back: 0.07337 and 0.073370004 are two runs
  auto r2 = r;
  r2.model = learn::model_source::from_zoo("resnet50", 0.07337);
  r2.settings.compute_scale = 0.0481254;
  CHECK(learn::group_of(r2) == "resnet50@" + r2.cluster.name + "|x0.07337|2r/2|cs0.0481254");
  r2.model.scale = 0.073370004;
  CHECK(learn::group_of(r2) == "resnet50@" + r2.cluster.name + "|x0.073370004|2r/2|cs0.0481254");
  r.settings.compute_scale = 1.0;
  CHECK(learn::make_sample(r).analytical == Approx(0.030));
  r.strategy.name = "renamed";
  CHECK(learn::make_sample(r).key == s.key);
}

TEST_CASE("scaled_compute: the compute `run --compute-scale X` simulates, on any device") {
  // run sleeps forward_flops / device_flops x X, then each tensor's backward_flops / device_flops x X
  // in ready order. GPT-2 has layers and dgx-h100-x2's device is described (roofline, matrix rates):
  // neither may price the scaled model.
  const auto m = zoo::make_model("gpt2");
  REQUIRE_FALSE(m.layers.empty());
  auto c = zoo::make_cluster("dgx-h100-x2");
  REQUIRE(c.nodes[0].compute.described());
  c.nodes[1].device_flops = c.nodes[0].device_flops * 0.5;  // the slower node sets the pace
  const double df = c.nodes[1].device_flops;
  double total = 0.0;
  for (const auto& t : m.tensors) total += t.backward_flops;
  for (const double x : {0.5, 1.0, 3.0}) {
    const auto s = learn::scaled_compute(m, c, x);
    CHECK(s.layers.empty());
    const auto ct = cost::compute(s, c);
    CHECK(ct.from == cost::compute_times::source::profile);
    CHECK(ct.forward == Approx(m.forward_flops * x / df).epsilon(1e-12));
    CHECK(ct.backward_total() == Approx(total * x / df).epsilon(1e-12));
    // each tensor's share of backward is its own FLOPs
    for (std::size_t i = 0; i < m.tensors.size(); ++i) CHECK(ct.backward[i] == Approx(m.tensors[i].backward_flops * x / df).epsilon(1e-9));
  }
  // 0: no compute at all (the layers would have priced some)
  const auto none = cost::compute(learn::scaled_compute(m, c, 0.0), c);
  CHECK(none.forward == 0.0);
  CHECK(none.backward_total() == 0.0);
  // a device not described (the testbed's CPU cores): FLOPs x X, priced at device_flops
  const auto t = one_node();
  REQUIRE_FALSE(t.nodes[0].compute.described());
  const auto tm = learn::scaled_compute(tiny_model(), t, 2.0);
  CHECK_FALSE(tm.has_profile());
  CHECK(tm.forward_flops == 2.0 * tiny_model().forward_flops);
  CHECK(cost::compute(tm, t).forward == Approx(2.0 * tiny_model().forward_flops / t.nodes[0].device_flops));
  // errors name the setting
  CHECK_THROWS_WITH_AS((void)learn::scaled_compute(m, c, -1.0), "'compute_scale': must be a finite number >= 0", error);
  CHECK_THROWS_WITH_AS((void)learn::scaled_compute(m, c, NAN), "'compute_scale': must be a finite number >= 0", error);
  CHECK_THROWS_AS((void)learn::scaled_compute(m, c, 1e20), error);
  auto flopless = c;
  for (auto& n : flopless.nodes) n.device_flops = 0.0;
  CHECK_THROWS_WITH_AS((void)learn::scaled_compute(m, flopless, 1.0),
                       "'compute_scale': cluster 'dgx-h100-x2' states no device_flops: there is no compute to simulate", error);
  CHECK(learn::scaled_compute(m, flopless, 0.0).forward_flops == 0.0);
}

TEST_CASE("dataset: records of runs that overrode the packing are left out and counted") {
  std::vector<learn::trial_record> recs(4, tiny_record());
  recs[1].settings.pack = exec::packing::always;
  recs[3].settings.pack = exec::packing::never;
  recs[2].iterations[1] = learn::iteration_sample::from_ranks({0.2, 0.2}, {0.2, 0.2}, {0.2, 0.2});  // 0.05, 0.2, 0.03: median 0.05
  std::size_t left_out = 99;
  const auto ss = learn::make_samples(recs, &left_out);
  CHECK(left_out == 2);
  REQUIRE(ss.size() == 2);
  CHECK(ss[0].measured == Approx(0.03));  // records 0 and 2, in order
  CHECK(ss[1].measured == Approx(0.05));
  CHECK(learn::default_executor(recs[0]));
  CHECK_FALSE(learn::default_executor(recs[1]));
  CHECK(learn::make_samples(recs).size() == 2);  // without a counter: the same rows
  // a record that makes no row is named by where it was read, when that is known
  for (auto& it : recs[2].iterations) it = learn::iteration_sample::from_ranks({0, 0}, {0, 0}, {0, 0});
  const std::vector<learn::record_origin> origins{{"a.jsonl", 1}, {"a.jsonl", 2}, {"b.jsonl", 7}, {"b.jsonl", 9}};
  CHECK_THROWS_WITH_AS((void)learn::make_samples(recs, nullptr, origins),
                       doctest::Contains("b.jsonl:7: 'iterations': the measured iterations of strategy"), error);
  CHECK_THROWS_WITH_AS((void)learn::make_samples(recs), doctest::Contains("'records[2]'"), error);
}

TEST_CASE("metrics: pairwise accuracy and Spearman by hand") {
  const std::vector<double> meas{1, 2, 3, 4, 10, 20};
  const std::vector<double> pred{1, 3, 2, 4, 5, 5};
  const std::vector<std::string> grp{"a", "a", "a", "a", "b", "b"};
  // group a: 6 pairs, one swapped (2, 3); group b: 1 pair, tied prediction = 1/2
  CHECK(learn::pairwise_accuracy(pred, meas, grp) == Approx((5.0 + 0.5) / 7.0));
  // gaps > 90 %: (1,2) (1,3) (1,4) (2,4) right, the swapped (2,3) left out, (10,20) tied
  CHECK(learn::pairwise_accuracy(pred, meas, grp, 0.9) == Approx(4.5 / 5.0));
  // group a: ranks (1,3,2,4) vs (1,2,3,4): rho = 1 - 6 x 2 / (4 x 15) = 0.8; group b is too small
  CHECK(learn::grouped_spearman(pred, meas, grp) == Approx(0.8));
  CHECK(learn::average_ranks(std::vector<double>{5, 1, 5, 2}) == std::vector<double>{3.5, 1, 3.5, 2});
  CHECK(std::isnan(learn::pairwise_accuracy(std::vector<double>{1}, std::vector<double>{1}, std::vector<std::string>{"a"})));
}

TEST_CASE("linear model: exact least squares recovers a linear law") {
  std::vector<cost::autosync_row> x;
  std::vector<double> y;
  for (int i = 0; i < 40; ++i) {
    cost::autosync_row r{};
    r[1] = 0.01 * i;
    r[7] = 0.003 * ((i * 7) % 11);
    r[11] = 1e-4 * ((i * 5) % 3);
    x.push_back(r);
    y.push_back(0.5 + 2.0 * r[1] + 3.0 * r[7] - 10.0 * r[11]);
  }
  const auto lm = learn::linear_model::fit(x, y, 0.0);
  cost::autosync_row q{};
  q[1] = 0.123;
  q[7] = 0.02;
  q[11] = 2e-4;
  CHECK(lm.predict(q) == Approx(0.5 + 2.0 * 0.123 + 3.0 * 0.02 - 10.0 * 2e-4).epsilon(1e-9));
  CHECK_THROWS_AS((void)learn::linear_model::fit(std::span<const cost::autosync_row>{}, std::span<const double>{}), error);
}

TEST_CASE("the embedded default correction: analytical x exp(the constexpr forest's prediction, bounded by its evidence)") {
  static_assert(cost::Correction<cost::default_correction>);
  static_assert(cost::default_correction::num_features() == cost::feature_count);
  const auto m = tiny_model();
  const auto c = one_node();
  const auto s = one_group(m, group_desc{});
  const auto f = cost::compute_features(m, c, s);
  const float raw = gbt::default_model.predict(f.row);
  const double forest = static_cast<double>(gbt::default_model_box.bound(raw, f.row));
  const auto p = cost::corrected_estimate(m, c, s, cost::default_correction{});
  CHECK(p.log_factor == forest);
  CHECK(cost::default_correction{}.predict_unbounded(f.row) == raw);
  // the box of the training rows: the forest's output stands inside it (clamped to the
  // training targets' range) and fades to 0 one box width outside any feature
  const auto& box = gbt::default_model_box;
  CHECK(box.y_lo < box.y_hi);
  for (std::size_t i = 0; i < cost::feature_count; ++i) CHECK(box.lo[i] <= box.hi[i]);
  std::vector<float> inside(box.lo.begin(), box.lo.end());
  CHECK(box.weight(inside) == 1.0);
  const float y_in = cost::default_correction{}.predict(inside);
  CHECK(y_in >= box.y_lo);
  CHECK(y_in <= box.y_hi);
  auto far = inside;
  const auto r = at("log2_ranks");
  far[r] = box.hi[r] + std::max(box.hi[r] - box.lo[r], 1.0f) * 2.0f;  // two widths past the most ranks trained on
  CHECK(cost::default_correction{}.predict(far) == 0.0f);
  auto half = inside;
  half[r] = box.hi[r] + 0.5f * std::max(box.hi[r] - box.lo[r], 1.0f);
  CHECK(box.weight(half) == Approx(0.5));
  CHECK(cost::default_correction{}.predict(half) ==
        Approx(0.5 * std::clamp(cost::default_correction{}.predict_unbounded(half), box.y_lo, box.y_hi)));
  CHECK(p.iteration == Approx(f.analytical.iteration * std::exp(forest)).epsilon(1e-12));
  CHECK(cost::default_correction::num_trees() > 0);
  const std::vector<float> short_row(3, 0.0f);
  CHECK_THROWS_AS((void)cost::default_correction{}.predict(short_row), error);
}
