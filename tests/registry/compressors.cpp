// tests/registry/compressors.cpp — the built-in family of registered compressors
// (include/autosync/compressors/) as values of the compression slot: policy types, JSON with
// parameters, hashes, emit_header, costs against the hand formulas of their exchanges, the
// search's lossy budget, and each exchange on one rank. (Its own executable: including the
// family registers it process-wide, which the other suites must not see.) The multi-rank
// guarantees are tests/mpi/compressors.cpp.
#include <autosync/compressors/all.hpp>
#include <autosync/compressors/guarantee.hpp>

#include <autosync/cost/estimate.hpp>
#include <autosync/exec/extension_codecs.hpp>
#include <autosync/exec/hash.hpp>
#include <autosync/io/compression_report.hpp>
#include <autosync/io/json.hpp>
#include <autosync/search/constraints.hpp>
#include <autosync/search/optimizer.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/emit.hpp>
#include <autosync/strategy/items.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include "../common/tiny_specs.hpp"

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace autosync;
using doctest::Approx;
namespace cs = autosync::compressors;

namespace {

compression_value named(std::string_view n, param_list p) { return compression_value{stable_id(n), p}; }

group_desc parse_group(const char* text) { return io::group_from_json(nlohmann::json::parse(text)); }

// One tensor of `shape`, f32.
model_spec one_tensor(std::vector<std::int64_t> shape) {
  model_spec m;
  m.name = "one";
  m.forward_flops = 1e6;
  tensor t;
  t.name = "w";
  t.shape = std::move(shape);
  t.backward_flops = 1e6;
  m.tensors.push_back(t);
  return m;
}

std::int64_t wire(const model_spec& m, const cluster_spec& c, compression_value cv) {
  group_desc g;
  g.compression = cv;
  return expand(m, c, uniform_strategy(m, g))[0].wire_bytes;
}

// The collectives of one rank alone: what every exchange must reduce to at p = 1.
struct one_rank final : registry::exchange_comm {
  int reduces = 0, gathers = 0;
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int size() const override { return 1; }
  void all_reduce(float*, std::size_t) override { ++reduces; }
  void all_gather(const void* s, void* r, std::size_t b) override {
    ++gathers;
    std::memcpy(r, s, b);
  }
  void all_to_all(const void* s, void* r, std::size_t b) override { std::memcpy(r, s, b); }
};

registry::bucket_exchange make(std::string_view name, param_list p, registry::exchange_context x) {
  const auto* e = registry::find_compression(name);
  REQUIRE(e != nullptr);
  REQUIRE(e->make_exchange);
  return e->make_exchange(p, x);
}

}  // namespace

TEST_CASE("compressors: every member is registered, lossy, f32-only, with an exchange and its kind") {
  const std::pair<const char*, registry::exchange_kind> family[] = {
      {"int8", registry::exchange_kind::scatter_gather}, {"qsgd", registry::exchange_kind::all_gather},
      {"nuqsgd", registry::exchange_kind::all_gather},   {"topk", registry::exchange_kind::all_gather},
      {"alq", registry::exchange_kind::all_gather},      {"amq", registry::exchange_kind::all_gather},
      {"randomk", registry::exchange_kind::all_reduce},  {"powersgd", registry::exchange_kind::two_all_reduces}};
  for (const auto& [name, kind] : family) {
    CAPTURE(name);
    const auto* e = registry::find_compression(name);
    REQUIRE(e != nullptr);
    CHECK_FALSE(e->lossless);
    CHECK(e->exchange == kind);
    CHECK(static_cast<bool>(e->make_exchange));
    CHECK_FALSE(static_cast<bool>(e->make_codec));
    CHECK(e->applies(dtype::f32));
    CHECK_FALSE(e->applies(dtype::f64));
    CHECK_FALSE(compression_lossless(stable_id(name)));
  }
}

TEST_CASE("compressors: the policy types describe the registered values") {
  CHECK(describe<strategy<cs::int8<512>>>().compression == named("int8", {512, 0, 0}));
  CHECK(describe<strategy<cs::qsgd<3, 4096>>>().compression == named("qsgd", {3, 4096, 0}));
  CHECK(describe<strategy<cs::nuqsgd<7, 8192>>>().compression == named("nuqsgd", {7, 8192, 0}));
  CHECK(describe<strategy<cs::alq<3, 1024, 5>>>().compression == named("alq", {3, 1024, 5}));
  CHECK(describe<strategy<cs::amq<7, 8192, 100>>>().compression == named("amq", {7, 8192, 100}));
  CHECK(describe<strategy<cs::alq<>>>().compression == parse_group(R"({"compression": "alq"})").compression);
  CHECK(describe<strategy<cs::amq<>>>().compression == parse_group(R"({"compression": "amq"})").compression);
  CHECK(describe<strategy<cs::topk<0.05>>>().compression == named("topk", {0.05, 0, 0}));
  CHECK(describe<strategy<cs::randomk<0.25>>>().compression == named("randomk", {0.25, 0, 0}));
  CHECK(describe<strategy<cs::powersgd<4, 10, 2.5>>>().compression == named("powersgd", {4, 10, 2.5}));
  // the defaults of the types are the documented defaults of the JSON names
  CHECK(describe<strategy<cs::powersgd<>>>().compression == parse_group(R"({"compression": "powersgd"})").compression);
  CHECK(describe<strategy<cs::topk<>>>().compression == parse_group(R"({"compression": "topk"})").compression);
  CHECK(describe<strategy<cs::qsgd<>>>().compression == parse_group(R"({"compression": "qsgd"})").compression);
  CHECK(describe<strategy<cs::int8<>>>().compression == parse_group(R"({"compression": "int8"})").compression);
}

TEST_CASE("compressors: JSON names take the documented defaults, objects their parameters; bad ones are named") {
  CHECK(parse_group(R"({"compression": "powersgd"})").compression == named("powersgd", {1, 1000, 2}));
  CHECK(parse_group(R"({"compression": {"kind": "powersgd", "rank": 4}})").compression == named("powersgd", {4, 1000, 2}));
  CHECK(parse_group(R"({"compression": "topk"})").compression == named("topk", {0.01, 0, 0}));
  CHECK(parse_group(R"({"compression": "qsgd"})").compression == named("qsgd", {7, 8192, 0}));
  CHECK(parse_group(R"({"compression": "int8"})").compression == named("int8", {1024, 0, 0}));
  CHECK(parse_group(R"({"compression": {"kind": "randomk", "density": 0.5}})").compression == named("randomk", {0.5, 0, 0}));
  CHECK_THROWS_WITH((void)parse_group(R"({"compression": {"kind": "topk", "density": 2}})"), doctest::Contains("density"));
  // the value and the range as they read back (std::to_string printed 1e-9 as 0.000000)
  CHECK_THROWS_WITH((void)parse_group(R"({"compression": {"kind": "topk", "density": 1e-9}})"),
                    doctest::Contains("'compression.density': 1e-09 is outside [1e-06, 1]"));
  CHECK_THROWS_WITH((void)parse_group(R"({"compression": {"kind": "qsgd", "levels": 2.5}})"), doctest::Contains("levels"));
  CHECK(parse_group(R"({"compression": {"kind": "alq", "refit": 10}})").compression == named("alq", {7, 8192, 10}));
  CHECK_THROWS_WITH((void)parse_group(R"({"compression": {"kind": "amq", "refit": 0}})"), doctest::Contains("refit"));
  CHECK_THROWS((void)parse_group(R"({"compression": {"kind": "qsgd", "refit": 10}})"));  // qsgd has no refit
  CHECK_THROWS_WITH((void)parse_group(R"({"compression": {"kind": "powersgd", "rank": 0}})"), doctest::Contains("rank"));
  CHECK_THROWS((void)parse_group(R"({"compression": {"kind": "powersgd", "ranks": 2}})"));
  // a strategy round-trips with its parameters, and hashes alike
  const auto m = testing::tiny_model({1000, 1000, 1000, 1000, 1000, 1000});
  strategy_desc s;
  s.name = "family";
  for (auto cv : {named("int8", {256, 0, 0}), named("qsgd", {3, 1024, 0}), named("nuqsgd", {5, 8192, 0}), named("topk", {0.02, 0, 0}),
                  named("randomk", {0.125, 0, 0}), named("powersgd", {2, 0, 4})}) {
    group_desc g;
    g.compression = cv;
    s.groups.push_back(g);
  }
  for (int t = 0; t < 6; ++t) s.assignments.push_back({"t" + std::to_string(t), t, 0, {}});
  const auto back = io::parse_strategy(io::to_json_text(s));
  CHECK(back == s);
  CHECK(exec::strategy_hash(back) == exec::strategy_hash(s));
  auto other = s;
  other.groups[3].compression.params[0] = 0.03;
  CHECK(exec::strategy_hash(other) != exec::strategy_hash(s));
}

TEST_CASE("compressors: emit_header spells the policy types and includes their headers") {
  strategy_desc s;
  s.name = "family";
  for (auto cv : {named("topk", {0.01, 0, 0}), named("powersgd", {4, 1000, 2}), named("qsgd", {3, 1024, 0}), named("alq", {3, 1024, 5})}) {
    group_desc g;
    g.compression = cv;
    s.groups.push_back(g);
  }
  s.assignments = {{"t0", 0, 0, {}}, {"t1", 1, 0, {}}, {"t2", 2, 0, {}}, {"t3", 3, 0, {}}};
  const auto h = emit_header(s, "emitted::family");
  CHECK(h.find("autosync::compressors::topk<0.01>") != std::string::npos);
  CHECK(h.find("autosync::compressors::powersgd<4, 1000, 2.0>") != std::string::npos);
  CHECK(h.find("autosync::compressors::qsgd<3, 1024>") != std::string::npos);
  CHECK(h.find("autosync::compressors::alq<3, 1024, 5>") != std::string::npos);
  CHECK(h.find("#include <autosync/compressors/topk.hpp>") != std::string::npos);
  CHECK(h.find("#include <autosync/compressors/powersgd.hpp>") != std::string::npos);
  // the spelled types are these values
  static_assert(cs::topk<0.01>::value.params[0] == 0.01);
  CHECK(cs::spell(0.1) == "0.1");
  CHECK(cs::spell(2.0) == "2.0");
  CHECK(cs::spell(1e-6) == "1e-06");
}

TEST_CASE("compressors: wire bytes are the hand formulas of their exchanges (all-reduce equivalent)") {
  const auto c = testing::one_node();
  const int p = c.world_size();
  REQUIRE(p == 2);
  const auto m = testing::tiny_model({1000});
  const auto n = 1000;
  // int8 scatter-gather: 2 (p - 1) messages of ceil(n / p) + 8 ceil(ceil(n / p) / chunk) bytes, whole words
  auto int8_bytes = [&](int chunk) {
    const int shard = (n + p - 1) / p;
    const int msg = (shard + 8 * ((shard + chunk - 1) / chunk) + 3) / 4 * 4;
    return std::int64_t{p} * msg;
  };
  CHECK(wire(m, c, named("int8", {1024, 0, 0})) == int8_bytes(1024));  // 2 x 508
  CHECK(wire(m, c, named("int8", {64, 0, 0})) == int8_bytes(64));      // 2 x (500 + 64)
  // qsgd: all-gather of a norm + 4 bits per element (L = 7) in words: p / 2 x 504
  CHECK(wire(m, c, named("qsgd", {7, 8192, 0})) == p * (4 + 4 * ((n * 4 + 31) / 32)) / 2);
  // 3 levels: 1 + 2 bits; buckets of 256: 4 norms
  CHECK(wire(m, c, named("nuqsgd", {3, 256, 0})) == p * (3 * (4 + 4 * ((256 * 3 + 31) / 32)) + 4 + 4 * ((232 * 3 + 31) / 32)) / 2);
  // alq / amq: NUQSGD's payload (the fitted levels change the values, not the bits)
  CHECK(wire(m, c, named("alq", {3, 256, 100})) == wire(m, c, named("nuqsgd", {3, 256, 0})));
  CHECK(wire(m, c, named("amq", {7, 8192, 100})) == wire(m, c, named("qsgd", {7, 8192, 0})));
  // topk: all-gather of k = 10 pairs of 8 bytes: p / 2 x 80
  CHECK(wire(m, c, named("topk", {0.01, 0, 0})) == p * 80 / 2);
  // randomk: all-reduce of k = 10 floats
  CHECK(wire(m, c, named("randomk", {0.01, 0, 0})) == 40);
  // powersgd: (rows + cols) r floats per compressed matrix, else the tensor as it is
  CHECK(wire(one_tensor({300, 200}), c, named("powersgd", {4, 1000, 2})) == 4 * (300 + 200) * 4);
  CHECK(wire(one_tensor({3, 3, 5, 5}), c, named("powersgd", {1, 1000, 2})) == 4 * (3 + 75));
  CHECK(wire(one_tensor({3, 3, 5, 5}), c, named("powersgd", {4, 1000, 2})) == 4 * 225);  // (3 + 75) 3 2 > 225: raw
  CHECK(wire(one_tensor({1000}), c, named("powersgd", {1, 1000, 2})) == 4000);           // 1-D: raw
  // codec work: flops per element from the measured rates x elements
  group_desc g;
  g.compression = named("int8", {1024, 0, 0});
  CHECK(expand(m, c, uniform_strategy(m, g))[0].codec_flops == Approx(cs::flops_at(2.11) * n));
  // the timeline's collective carries the bytes
  const auto e = cost::estimate(m, c, uniform_strategy(m, g), cost::options{true});
  std::int64_t moved = 0;
  for (const auto& ev : e.events)
    if (ev.kind == cost::event_collective) moved += ev.bytes;
  CHECK(moved == int8_bytes(1024));
}

TEST_CASE("compressors: a strided piece (a range along an axis >= 1) travels flat, and PowerSGD prices it so") {
  const auto c = testing::one_node();
  const auto m = one_tensor({64, 32, 3, 3});
  group_desc g;
  g.compression = named("powersgd", {1, 0, 2});
  // whole: a 64 x 288 matrix at rank 1
  CHECK(expand(m, c, uniform_strategy(m, g))[0].wire_bytes == 4 * (64 + 288));
  // two shards along axis 1: each 64 x 16 x 3 x 3, strided in memory; the executor finds no
  // matrix in them (exec::exchange_context_of) and sends them as they are
  g.partitioner = partitioner_value{partitioner_kind::even, 2, 1, 0};
  const auto items = expand(m, c, uniform_strategy(m, g));
  REQUIRE(items.size() == 2);
  for (const auto& it : items) CHECK(it.wire_bytes == 4 * 64 * 16 * 9);
  // along axis 0 the shards are whole rows: 32 x 288 matrices
  g.partitioner = partitioner_value{partitioner_kind::even, 2, 0, 0};
  for (const auto& it : expand(m, c, uniform_strategy(m, g))) CHECK(it.wire_bytes == 4 * (32 + 288));
}

TEST_CASE("compressors: PowerSGD compresses each row shard of a fused bucket as its own matrix, as it is priced") {
  const auto c = testing::one_node();
  const auto m = one_tensor({64, 48});
  group_desc g;
  g.compression = named("powersgd", {1, 0, 2});
  g.partitioner = partitioner_value{partitioner_kind::even, 4, 0, 0};
  g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  const auto s = uniform_strategy(m, g);
  std::int64_t priced = 0;
  for (const auto& it : expand(m, c, s)) priced += it.wire_bytes;
  CHECK(priced == 4 * 4 * (16 + 48));
  const auto p = exec::compile_plan(m, c, s, {c.world_size(), c.world_size()});
  REQUIRE(p.buckets.size() == 1);
  const auto x = exec::exchange_context_of(p, 0);
  REQUIRE(x.matrices.size() == 4);  // merged, the four shards were one 64 x 48 matrix (4 (64 + 48) floats)
  std::int64_t sent = 0;
  for (const auto& mx : x.matrices) {
    CHECK(mx.rows == 16);
    CHECK(mx.cols == 48);
    sent += 4 * static_cast<std::int64_t>(exec::codecs::powersgd::wire_elements(mx.rows, mx.cols, 1, 2.0));
  }
  CHECK(sent == priced);
}

TEST_CASE("compressors: a fused bucket is priced as the executor compresses it, all its elements packed") {
  // five small tensors in one bucket: per tensor, top-k keeps ceil(0.01 n) >= 1 of each (5 pairs
  // where the bucket's 1,147 elements keep 12), int8 pays a scale header per tensor
  const auto c = testing::one_node();
  const int p = c.world_size();
  const auto m = testing::tiny_model({10, 30, 100, 7, 1000});
  for (const char* name : {"topk", "randomk", "int8", "qsgd", "accordion_topk"}) {
    CAPTURE(name);
    const auto* e = registry::find_compression(name);
    REQUIRE(e != nullptr);
    group_desc g;
    g.compression = compression_value{stable_id(name), registry::defaults(e->params)};
    g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
    const auto s = uniform_strategy(m, g);
    const auto plan = exec::compile_plan(m, c, s, {p, p});
    REQUIRE(plan.buckets.size() == 1);
    const auto n = plan.buckets[0].elements;
    CHECK(n == 1147);
    const auto sent = static_cast<std::int64_t>(e->wire_bytes(n, dtype::f32, p, g.compression.params, 4.0 * static_cast<double>(n)) + 0.5);
    const auto est = cost::estimate(m, c, s, cost::options{true});
    std::int64_t moved = 0;
    for (const auto& ev : est.events)
      if (ev.kind == cost::event_collective) moved += ev.bytes;
    CHECK(moved == sent);
    const auto bks = cost::buckets(m, c, s);
    REQUIRE(bks.size() == 1);
    CHECK(bks[0].wire_bytes == sent);
    std::int64_t items = 0;
    for (const auto& it : expand(m, c, s)) items += it.wire_bytes;
    if (std::string_view(name) == "topk") CHECK(items == p * 8 * (1 + 1 + 1 + 1 + 10) / 2);  // ceil(0.01 n) per tensor
    if (std::string_view(name) == "topk") CHECK(sent == p * 8 * 12 / 2);
    // unfused, each tensor is a bucket of its own: the items' prices
    g.fusion = fusion_value{};
    std::int64_t alone = 0;
    for (const auto& ev : cost::estimate(m, c, uniform_strategy(m, g), cost::options{true}).events)
      if (ev.kind == cost::event_collective) alone += ev.bytes;
    CHECK(alone == items);
  }
}

TEST_CASE("compressors: one that owns its exchange needs an all_reduce or sharded group with the ring") {
  const auto c = testing::one_node();
  const auto m = testing::tiny_model({1000});
  for (const char* name : {"int8", "topk", "powersgd", "qsgd", "randomk", "accordion_topk"}) {
    CAPTURE(name);
    group_desc g;
    g.compression = compression_value{stable_id(name), registry::defaults(registry::find_compression(name)->params)};
    CHECK_NOTHROW(uniform_strategy(m, g).validate(m, c));
    g.architecture = architecture_kind::sharded;
    CHECK_NOTHROW(uniform_strategy(m, g).validate(m, c));
    g.topology = topology_value{topology_kind::halving_doubling};
    const std::string topo_msg = "'groups[0].topology': compressor '" + std::string(name) + "' replaces the collective";
    CHECK_THROWS_WITH_AS(uniform_strategy(m, g).validate(m, c), doctest::Contains(topo_msg.c_str()), error);
    g.topology = topology_value{};
    for (auto a : {architecture_kind::parameter_server, architecture_kind::all_gather}) {
      g.architecture = a;
      const std::string comp_msg = "'groups[0].compression': compressor '" + std::string(name) + "' replaces the collective";
      CHECK_THROWS_WITH_AS(uniform_strategy(m, g).validate(m, c), doctest::Contains(comp_msg.c_str()), error);
    }
  }
}

TEST_CASE("compressors: top-k beats a dense all-reduce only below density 1 / p") {
  for (int nodes : {2, 4, 8}) {
    cluster_spec c;
    c.name = "flat";
    for (int k = 0; k < nodes; ++k) {
      c.nodes.push_back(testing::worker(1));
      c.nodes.back().name = "n" + std::to_string(k);
    }
    const int p = c.world_size();
    const auto m = testing::tiny_model({1 << 16});
    const std::int64_t dense = 4 << 16;
    CAPTURE(p);
    CHECK(wire(m, c, named("topk", {1.0 / p, 0, 0})) == dense);
    CHECK(wire(m, c, named("topk", {0.5 / p, 0, 0})) < dense);
    CHECK(wire(m, c, named("topk", {2.0 / p, 0, 0})) > dense);
    // an all-gather's equivalent grows with p, an all-reduce's does not
    CHECK(wire(m, c, named("qsgd", {7, 8192, 0})) == p * (8 * (4 + 4096)) / 2);
    CHECK(wire(m, c, named("randomk", {0.01, 0, 0})) == 4 * 656);
  }
}

TEST_CASE("compressors: the search proposes them only with allow_lossy, inside the lossy budget") {
  const auto m = testing::tiny_model({1000, 1000});
  const auto c = testing::one_node();
  auto has = [](const search::space& sp, std::string_view n, double p0) {
    return std::any_of(sp.compressions().begin(), sp.compressions().end(),
                       [&](const compression_value& v) { return v.id == stable_id(n) && v.params[0] == p0; });
  };
  const search::space plain(m, c);
  for (const char* n : {"int8", "qsgd", "nuqsgd", "topk", "randomk", "powersgd"}) CHECK_FALSE(has(plain, n, registry::find_compression(n)->params[0].default_value));
  search::space_options o;
  o.allow_lossy = true;
  const search::space lossy(m, c, o);
  CHECK(has(lossy, "int8", 1024));
  CHECK(has(lossy, "topk", 0.01));
  CHECK(has(lossy, "topk", 0.1));
  CHECK(has(lossy, "powersgd", 1));
  CHECK(has(lossy, "powersgd", 4));
  CHECK(has(lossy, "qsgd", 3));
  // which compressors
  o.lossy.allow("int8");
  o.lossy.allow("powersgd");
  const search::space only(m, c, o);
  CHECK(has(only, "int8", 1024));
  CHECK(has(only, "powersgd", 1));
  CHECK_FALSE(has(only, "topk", 0.01));
  CHECK(std::none_of(only.compressions().begin(), only.compressions().end(), [](const compression_value& v) { return v.id == comp::fp16::value; }));
  CHECK_FALSE(o.lossy.allow("int9"));
  // how far: int8 3.97x, fp16 2x in; qsgd (7.99x, 10.7x), topk 1 % (50x) out
  search::space_options r;
  r.allow_lossy = true;
  r.lossy.max_ratio = 4.5;
  const search::space ratio(m, c, r);
  CHECK(has(ratio, "int8", 1024));
  CHECK(std::any_of(ratio.compressions().begin(), ratio.compressions().end(), [](const compression_value& v) { return v.id == comp::fp16::value; }));
  CHECK_FALSE(has(ratio, "qsgd", 7));
  CHECK_FALSE(has(ratio, "qsgd", 3));
  CHECK_FALSE(has(ratio, "topk", 0.01));
  CHECK(search::compression_ratio(named("topk", {0.01, 0, 0})) == Approx(50.0));
  CHECK(search::compression_ratio(named("int8", {1024, 0, 0})) == Approx(32.0 / (8.0 + 64.0 / 1024)));
  // a strategy outside the budget is named by the constraint
  group_desc g;
  g.compression = named("topk", {0.01, 0, 0});
  const auto s = uniform_strategy(m, g);
  search::knowledge k{64, true};
  k.lossy.max_ratio = 4.5;
  const auto v = search::lossy_opt_in({m, c, k}, s);
  REQUIRE(v.has_value());
  CHECK(v->what.find("topk") != std::string::npos);
  CHECK(v->what.find("budget") != std::string::npos);
  CHECK(search::lossy_opt_in({m, c, search::knowledge{64, false}}, s).has_value());
  CHECK_FALSE(search::lossy_opt_in({m, c, search::knowledge{64, true}}, s).has_value());
  // an exchange replaces a collective: not in a parameter-server group
  CHECK_FALSE(search::exchange_in_collective({m, c, k}, s).has_value());
  auto ps = s;
  ps.groups[0].architecture = architecture_kind::parameter_server;
  const auto w = search::exchange_in_collective({m, c, k}, ps);
  REQUIRE(w.has_value());
  CHECK(w->field == "groups[0].compression");
  CHECK(w->what.find("parameter_server") != std::string::npos);
}

TEST_CASE("compressors: with lossy compressors allowed, the search costs each on its best uniform collective strategy") {
  // The walk follows the estimate, which ranks parameter servers first here (their lanes side by
  // side); the executor runs them far slower. Each allowed compressor is costed on the best
  // uniform all-reduce, so the pick is at most epsilon above fp16 on the same buckets (it was
  // 240 ms uncompressed against 140 ms).
  const auto m = zoo::make_model("resnet50");
  const auto c = zoo::make_cluster("commodity-10gbe-x8");
  search::options o;
  o.allow_lossy = true;
  REQUIRE(o.lossy.allow("fp16"));
  const auto r = search::optimize(m, c, o);
  group_desc g;
  g.fusion = fusion_value{std::uint64_t{64} << 20, std::uint64_t{64} << 20};
  const double dense = cost::estimate(m, c, uniform_strategy(m, g)).iteration;
  g.compression = compression_value{comp::fp16::value, {}};
  const double fp16 = cost::estimate(m, c, uniform_strategy(m, g)).iteration;
  CHECK(fp16 < 0.7 * dense);
  CHECK(r.serial_iteration <= fp16 * (1.0 + o.epsilon));
  CHECK(std::any_of(r.strategy.groups.begin(), r.strategy.groups.end(), [](const group_desc& x) { return x.compression.id == comp::fp16::value; }));
  // registered compressors run on host-memory backends only: none on this NCCL cluster, even
  // with every lossy compressor allowed
  REQUIRE(c.backend == collective_backend::nccl);
  search::options all;
  all.allow_lossy = true;
  const auto ra = search::optimize(m, c, all);
  CHECK(std::none_of(ra.strategy.groups.begin(), ra.strategy.groups.end(), [](const group_desc& x) { return runs_registered_codecs(x); }));
  CHECK(ra.serial_iteration <= fp16 * (1.0 + all.epsilon));
  // on MPI, int8 is cheaper still on these buckets
  auto mpi = c;
  mpi.backend = collective_backend::mpi;
  search::options q;
  q.allow_lossy = true;
  REQUIRE(q.lossy.allow("int8"));
  const double fp16_mpi = cost::estimate(m, mpi, uniform_strategy(m, g)).iteration;  // g: fp16 still
  g.compression = named("int8", {1024, 0, 0});
  const double int8 = cost::estimate(m, mpi, uniform_strategy(m, g)).iteration;
  CHECK(int8 < fp16_mpi);
  CHECK(search::optimize(m, mpi, q).serial_iteration <= int8 * (1.0 + q.epsilon));
}

TEST_CASE("compressors: optimize's table gives each group its bits per element and its busy time") {
  const auto m = testing::tiny_model({1000, 1000});
  const auto c = testing::one_node();
  strategy_desc s;
  s.name = "two";
  group_desc a, b;
  b.compression = named("topk", {0.01, 0, 0});
  s.groups = {a, b};
  s.assignments = {{"t0", 0, 0, {}}, {"t1", 1, 0, {}}};
  const auto rows = io::compression_by_group(m, c, s);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].compressor == "none");
  CHECK(rows[0].bits_per_element == Approx(32.0));
  CHECK(rows[1].compressor == "topk");
  CHECK(rows[1].exchange == "all-gather");
  CHECK(rows[1].bits_per_element == Approx(8.0 * 80 / 1000));  // p / 2 x 10 pairs of 8 bytes, p = 2
  CHECK(rows[0].busy > rows[1].busy);
  CHECK(rows[1].busy > 0.0);
}

TEST_CASE("compressors: each exchange on one rank") {
  registry::exchange_context x;
  x.elements = 1003;
  x.seed = 7;
  std::vector<float> g(x.elements);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(static_cast<int>(i * 7 % 23) - 11);
  auto bytes = [](std::vector<float>& v) { return reinterpret_cast<unsigned char*>(v.data()); };
  one_rank comm;
  SUBCASE("int8: one quantization within its bound") {
    auto ex = make("int8", {64, 0, 0}, x);
    auto v = g;
    ex(bytes(v), comm);
    double worst = 0.0;
    for (std::size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::abs(double(v[i]) - g[i]));
    CHECK(worst > 0.0);
    CHECK(worst <= 22.0 / 510.0 + 1e-5);
  }
  SUBCASE("topk: error feedback sends everything within ceil(1 / density) iterations") {
    auto ex = make("topk", {0.1, 0, 0}, x);
    std::vector<double> sum(g.size(), 0.0);
    for (int it = 0; it < 11; ++it) {
      std::vector<float> v = it == 0 ? g : std::vector<float>(g.size(), 0.0f);
      ex(bytes(v), comm);
      std::size_t nonzero = 0;
      for (std::size_t i = 0; i < v.size(); ++i) sum[i] += v[i], nonzero += v[i] != 0.0f;
      CHECK(nonzero <= 101);
    }
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(sum[i] == g[i]);
    CHECK(comm.gathers == 11);
  }
  SUBCASE("alq, amq: unbiased before and after their refits, which follow the schedule and lower the variance") {
    // magnitudes of a heavy-tailed gradient: most elements small, a few large (where fitted
    // levels beat NUQSGD's fixed halving)
    std::vector<float> h(x.elements);
    for (std::size_t i = 0; i < h.size(); ++i)
      h[i] = static_cast<float>((i % 97 == 0 ? 40.0 : 1.0) * std::sin(0.37 * static_cast<double>(i) + 0.1));
    for (const char* name : {"alq", "amq"}) {
      CAPTURE(name);
      std::vector<std::pair<std::string, double>> notes;
      std::vector<int> at;
      int it = 0;
      x.note = [&](std::string_view k, double v) { notes.emplace_back(std::string(k), v), at.push_back(it); };
      auto ex = make(name, {3, 1003, 2}, x);  // refits at exchanges 2, 40, then every 200
      auto fixed = make("nuqsgd", {3, 1003, 0}, x);
      const int T = 400;
      std::vector<double> mean(h.size(), 0.0);
      double sq_fit = 0.0, sq_fixed = 0.0;
      for (it = 0; it < T; ++it) {
        auto v = h, w = h;
        ex(bytes(v), comm);
        fixed(bytes(w), comm);
        for (std::size_t i = 0; i < v.size(); ++i) {
          mean[i] += v[i] / double(T);
          if (it >= 2) sq_fit += (double(v[i]) - h[i]) * (double(v[i]) - h[i]), sq_fixed += (double(w[i]) - h[i]) * (double(w[i]) - h[i]);
        }
      }
      CHECK(at == std::vector<int>{2, 40, 200});
      CHECK(notes.front().first == std::string(name) + (std::string_view(name) == "alq" ? ".variance" : ".multiplier"));
      if (std::string_view(name) == "amq") {
        for (const auto& n : notes) CHECK((n.second > 0.05 && n.second < 0.95));
      }
      // the fitted levels' squared error is below NUQSGD's on this gradient
      CAPTURE(sq_fit);
      CAPTURE(sq_fixed);
      CHECK(sq_fit < 0.9 * sq_fixed);
      // unbiased: per element within 6 sigma of the mean of T draws (gap 1: any levels)
      double norm2 = 0.0;
      for (float v : h) norm2 += double(v) * v;
      const double bound = 6.0 * std::sqrt(norm2 / 4.0 / T);
      double worst = 0.0;
      for (std::size_t i = 0; i < h.size(); ++i) worst = std::max(worst, std::abs(mean[i] - h[i]));
      CHECK(worst <= bound);
      CHECK(comm.gathers > 0);
    }
    x.note = nullptr;
  }
  SUBCASE("randomk: the same indices for the same bucket and iteration") {
    auto a = make("randomk", {0.05, 0, 0}, x), b = make("randomk", {0.05, 0, 0}, x);
    auto va = g, vb = g;
    a(bytes(va), comm);
    b(bytes(vb), comm);
    CHECK(va == vb);
    x.seed = 8;
    auto c8 = make("randomk", {0.05, 0, 0}, x);
    auto vc = g;
    c8(bytes(vc), comm);
    CHECK(vc != va);
  }
  SUBCASE("powersgd: all-reduce before its start, exact on rank-1 after, a zero gradient does not stall the warm start") {
    x.elements = 37 * 23 + 5;
    x.matrices = {{0, 37, 23}};
    auto ex = make("powersgd", {1, 2, 2}, x);
    auto rank1 = [&](float a) {
      std::vector<float> v(x.elements);
      for (std::size_t i = 0; i < 37 * 23; ++i) v[i] = a * static_cast<float>(std::sin(0.3 * double(i / 23) + 1) * std::cos(0.17 * double(i % 23)));
      for (std::size_t i = 37 * 23; i < v.size(); ++i) v[i] = static_cast<float>(i % 5);
      return v;
    };
    for (int it = 0; it < 2; ++it) {  // before the start: one all-reduce of the bucket, as it is
      auto v = rank1(1.0f);
      const auto want = v;
      ex(bytes(v), comm);
      CHECK(v == want);
    }
    CHECK(comm.reduces == 2);
    std::vector<float> zero(x.elements, 0.0f);
    ex(bytes(zero), comm);  // a zero gradient: Q comes back zero, the next step draws again
    for (float a : {2.0f, -3.0f}) {
      auto v = rank1(a);
      const auto want = v;
      ex(bytes(v), comm);
      double worst = 0.0, big = 0.0;
      for (std::size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::abs(double(v[i]) - want[i])), big = std::max(big, std::abs(double(want[i])));
      CHECK(worst <= 1e-4 * big);
      for (std::size_t i = 37 * 23; i < v.size(); ++i) CHECK(v[i] == want[i]);
    }
    CHECK(comm.reduces == 2 + 3 * 2);
  }
  SUBCASE("powersgd: exact on a wide rank-1 matrix from a cold random start (P = M Q summed in double)") {
    // 12 x 4608 (a 3 x 3 x 512 convolution's rows): a random Q nearly orthogonal to M's rows makes
    // M Q a sum of 4608 terms that cancel; summed in float it lost 2e-4 of M on resnet50's layers
    x.elements = 12 * 4608;
    x.matrices = {{0, 12, 4608}};
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      x.seed = seed;
      auto ex = make("powersgd", {1, 0, 2}, x);
      std::vector<float> v(x.elements);
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(3.0 * std::sin(0.3 * double(i / 4608) + 1.0) * std::cos(0.17 * double(i % 4608) + 0.2));
      const auto want = v;
      ex(bytes(v), comm);
      double worst = 0.0, big = 0.0;
      for (std::size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::abs(double(v[i]) - want[i])), big = std::max(big, std::abs(double(want[i])));
      CAPTURE(seed);
      CHECK(worst <= 1e-5 * big);
    }
  }
}

TEST_CASE("compressors: an exchange's state survives a save and a load into a fresh exchange") {
  registry::exchange_context x;
  x.elements = 37 * 23 + 41;
  x.matrices = {{0, 37, 23}};
  x.seed = 11;
  auto grad = [&](int it) {
    std::vector<float> v(x.elements);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.9 * it) * (i % 31 == 0 ? 9.0 : 1.0));
    return v;
  };
  auto bytes = [](std::vector<float>& v) { return reinterpret_cast<unsigned char*>(v.data()); };
  const std::pair<const char*, param_list> cases[] = {
      {"qsgd", {3, 256, 0}},          {"nuqsgd", {3, 256, 0}},         {"alq", {3, 256, 2}},
      {"amq", {3, 256, 2}},           {"topk", {0.05, 0, 0}},          {"randomk", {0.05, 0, 0}},
      {"powersgd", {2, 1, 2}},        {"accordion_topk", {0.5, 0.05, 2}}, {"accordion_powersgd", {2, 1, 2}},
      {"accordion_int8", {2, 0, 0}}};
  for (const auto& [name, params] : cases) {
    CAPTURE(name);
    one_rank comm;
    auto a = make(name, params, x);
    REQUIRE(a.stateful());
    for (int it = 0; it < 5; ++it) {
      auto v = grad(it);
      a(bytes(v), comm);
    }
    registry::state_writer w;
    a.save(w);
    const std::string saved = w.bytes();
    auto b = make(name, params, x);
    registry::state_reader r(saved, "state");
    b.load(r);
    r.finish();
    // from here on the two give the same bits
    bool same = true;
    for (int it = 5; it < 12; ++it) {
      auto va = grad(it), vb = grad(it);
      a(bytes(va), comm);
      b(bytes(vb), comm);
      same = same && std::memcmp(va.data(), vb.data(), va.size() * sizeof(float)) == 0;
    }
    CHECK(same);
    // and their states agree again
    registry::state_writer wa, wb;
    a.save(wa);
    b.save(wb);
    CHECK(wa.bytes() == wb.bytes());
    // a fresh exchange differs from the restored one (the state mattered)
    auto c = make(name, params, x);
    registry::state_writer wc;
    c.save(wc);
    CHECK(wc.bytes() != saved);
    // damaged: every truncation is an error naming the state, never a crash
    for (std::size_t cut : {std::size_t{0}, std::size_t{3}, saved.size() / 2, saved.size() - 1}) {
      CAPTURE(cut);
      auto d = make(name, params, x);
      registry::state_reader rd(std::string_view(saved).substr(0, cut), "state");
      CHECK_THROWS_WITH_AS(d.load(rd), doctest::Contains("'state'"), autosync::error);
    }
    // bytes left over: written for something else
    auto e = make(name, params, x);
    const std::string longer = saved + "xyz";
    registry::state_reader re(longer, "state");
    e.load(re);
    CHECK_THROWS_WITH_AS(re.finish(), doctest::Contains("left over"), autosync::error);
  }
  // a stateless exchange saves nothing
  auto q8 = make("int8", {64, 0, 0}, x);
  CHECK_FALSE(q8.stateful());
  registry::state_writer w8;
  q8.save(w8);
  CHECK(w8.bytes().empty());
  // a state of another bucket shape is refused by name
  one_rank comm;
  auto ps = make("powersgd", {2, 1, 2}, x);
  for (int it = 0; it < 3; ++it) {
    auto v = grad(it);
    ps(bytes(v), comm);
  }
  registry::state_writer wp;
  ps.save(wp);
  auto other_ctx = x;
  other_ctx.matrices = {{0, 23, 37}};
  auto other = make("powersgd", {2, 1, 2}, other_ctx);
  registry::state_reader rp(wp.bytes(), "state.buckets[0]");
  CHECK_THROWS_WITH_AS(other.load(rp), doctest::Contains("23 x 37"), autosync::error);
}

namespace {

// A one-rank session whose "synchronization" runs each bucket's exchange directly (the sum of
// one rank), or, broken, also adds 5 to one element: check_guarantees must catch that.
struct fake_session {
  model_spec m;
  strategy_desc s;
  bool broken = false;
  std::vector<registry::bucket_exchange> ex;   // per tensor (one bucket each)
  std::span<const exec::gradient> grads;
  one_rank comm;
  fake_session(model_spec mm, strategy_desc ss, bool b) : m(std::move(mm)), s(std::move(ss)), broken(b) {
    for (std::size_t t = 0; t < m.tensors.size(); ++t) {
      const auto& cv = s.groups[static_cast<std::size_t>(s.assignments[t].group)].compression;
      registry::exchange_context x;
      x.elements = static_cast<std::size_t>(m.tensors[t].elements());
      x.seed = t;
      if (m.tensors[t].shape.size() == 2) x.matrices = {{0, static_cast<std::size_t>(m.tensors[t].shape[0]), static_cast<std::size_t>(m.tensors[t].shape[1])}};
      ex.push_back(is_extension_id(cv.id) ? registry::find_compression(cv.id)->make_exchange(cv.params, x) : registry::bucket_exchange{});
    }
  }
  [[nodiscard]] const model_spec& model() const { return m; }
  [[nodiscard]] const strategy_desc& strategy() const { return s; }
  [[nodiscard]] int world_size() const { return 1; }
  [[nodiscard]] int rank() const { return 0; }
  void begin(std::span<const exec::gradient> g) { grads = g; }
  void ready(std::size_t) {}
  void finish() {
    for (std::size_t t = 0; t < grads.size(); ++t) {
      if (ex[t]) ex[t](static_cast<unsigned char*>(grads[t].data), comm);
      if (broken && t == 1) static_cast<float*>(grads[t].data)[3] += 5.0f;  // beyond every bound here
    }
  }
};

model_spec guarantee_model() {
  auto m = one_tensor({12, 9});
  for (auto shape : {std::vector<std::int64_t>{300}, std::vector<std::int64_t>{20, 15}}) {
    tensor t;
    t.name = "w" + std::to_string(m.tensors.size());
    t.shape = shape;
    t.backward_flops = 1e6;
    m.tensors.push_back(t);
  }
  return m;
}

}  // namespace

TEST_CASE("compressors: check_guarantees passes every compressor that keeps its promise and names the one that breaks it") {
  const auto m = guarantee_model();
  for (auto cv : {named("int8", {64, 0, 0}), named("qsgd", {3, 64, 0}), named("nuqsgd", {7, 8192, 0}), named("alq", {3, 64, 1}),
                  named("amq", {3, 64, 1}), named("topk", {0.2, 0, 0}), named("randomk", {0.5, 0, 0}), named("powersgd", {2, 2, 2}),
                  named("powersgd", {1, 5000, 2})}) {
    CAPTURE(compression_name(cv));
    strategy_desc s;
    s.name = "g";
    group_desc plain, lossy;
    lossy.compression = cv;
    s.groups = {plain, lossy};
    s.assignments = {{"w", 0, 0, {}}, {"w1", 1, 0, {}}, {"w2", 1, 0, {}}};
    fake_session good(m, s, false);
    const auto ok = cs::check_guarantees(good);
    CHECK(ok.ok());
    // PowerSGD starting beyond the checks' reach all-reduces: its tensors join the exact line
    const bool late_start = cv.id == stable_id("powersgd") && cv.params[1] > 256;
    REQUIRE(ok.lines.size() == (late_start ? 1u : 2u));
    CHECK(ok.lines[0].kind == cs::check_kind::exact);
    CHECK(ok.lines[0].compressor == (late_start ? "none, powersgd" : "none"));
    CHECK(ok.lines[0].tensors == (late_start ? 3u : 1u));
    fake_session bad(m, s, true);
    const auto no = cs::check_guarantees(bad);
    CHECK_FALSE(no.ok());
    bool named_it = false;
    for (const auto& l : no.lines)
      if (!l.ok) named_it = named_it || l.detail.find("w1") != std::string::npos;
    CHECK(named_it);
  }
}

TEST_CASE("compressors: accordion prices its high-compression level, reads its parameters, notes its decisions") {
  const auto* acc = registry::find_compression("accordion_topk");
  const auto* tk = registry::find_compression("topk");
  REQUIRE(acc != nullptr);
  REQUIRE(tk != nullptr);
  CHECK_FALSE(acc->lossless);
  CHECK(acc->exchange == registry::exchange_kind::all_gather);
  for (int p : {2, 4, 8})
    CHECK(acc->wire_bytes(100000, dtype::f32, p, {0.99, 0.05, 100}, 4e5) == tk->wire_bytes(100000, dtype::f32, p, {0.05, 0, 0}, 4e5));
  CHECK(acc->nominal_bits(param_list{0.99, 0.05, 100}) == tk->nominal_bits(param_list{0.05, 0, 0}));
  const auto* ap = registry::find_compression("accordion_powersgd");
  REQUIRE(ap != nullptr);
  CHECK(ap->exchange == registry::exchange_kind::two_all_reduces);
  // JSON: defaults filled in, a bad parameter named
  const auto g = io::group_from_json(nlohmann::json::parse(R"({"compression": {"kind": "accordion_topk", "density": 0.05}})"));
  CHECK(g.compression.params == param_list{0.99, 0.05, 100});
  CHECK(io::group_from_json(io::to_json(g)) == g);
  CHECK_THROWS_WITH((void)io::group_from_json(nlohmann::json::parse(R"({"compression": {"kind": "accordion_int8", "interval": 0}})")),
                    doctest::Contains("'compression.interval'"));
  CHECK(detail::emit::policies(g)[core_slot_index<slot::compression>] == "autosync::compressors::accordion_topk<0.99, 0.05, 100>");
  // one rank, interval 1: no history -> critical; the same gradient -> high; 4x -> critical
  registry::exchange_context x;
  x.elements = 501;
  x.seed = 3;
  std::vector<std::pair<std::string, double>> notes;
  x.note = [&](std::string_view k, double v) { notes.emplace_back(std::string(k), v); };
  auto ex = acc->make_exchange(param_list{0.99, 0.1, 1}, x);
  one_rank comm;
  std::vector<float> base(x.elements);
  for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(static_cast<int>(i * 13 % 17) - 8);
  for (float scale : {1.0f, 1.0f, 4.0f}) {
    auto v = base;
    for (auto& e : v) e *= scale;
    ex(reinterpret_cast<unsigned char*>(v.data()), comm);
  }
  std::vector<double> levels;
  for (const auto& [k, v] : notes)
    if (k == "accordion.level") levels.push_back(v);
  CHECK(levels == std::vector<double>{0, 1, 0});
}
