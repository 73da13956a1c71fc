// tests/registry/registry.cpp — a compressor and a slot registered in this test's own files
// (ext.hpp) go through JSON, hashing, emit_header, the search's proposals and the cost model
// with nothing under include/ naming them. `emit` mode writes the emitted header for the ctest
// registry.emit (check.cpp compiles it): registry_unit --emit <file>.
#include "ext.hpp"

#include <autosync/cost/estimate.hpp>
#include <autosync/cost/replay.hpp>
#include <autosync/exec/hash.hpp>
#include <autosync/io/json.hpp>
#include <autosync/search/space.hpp>
#include <autosync/strategy/emit.hpp>
#include <autosync/strategy/items.hpp>

#include "../common/tiny_specs.hpp"

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

using namespace autosync;
using doctest::Approx;

namespace {

using g_plain = strategy<topo::ring>;
using g_ext = strategy<regtest::prescale_by<4>, regtest::fixed32<8>, topo::halving_doubling>;

strategy_desc sample() {
  strategy_desc s;
  s.name = "registry";
  s.groups = {describe<g_plain>(), describe<g_ext>()};
  s.assignments = {{"t0", 0, 0, {}}, {"t1", 1, 0, {}}};
  return s;
}

}  // namespace

TEST_CASE("registry: the policy types describe the registered values") {
  const auto g = describe<g_ext>();
  CHECK(g.compression.id == stable_id("fixed32"));
  CHECK(g.compression.params[0] == 8.0);
  REQUIRE(g.ext.size() == 1);
  CHECK(g.ext.v[0] == ext_value::of("prescale", "by", {4, 0, 0}));
  // any order, and the slot's default is no policy at all
  static_assert(std::is_same_v<g_ext, strategy<topo::halving_doubling, regtest::fixed32<8>, regtest::prescale_by<4>>>);
  static_assert(std::is_same_v<strategy<regtest::no_prescale, topo::ring>, g_plain>);
  CHECK_NOTHROW(validate_group(g, "g"));
  auto bad = g;
  bad.ext.v[0].params[0] = 0.5;  // below the factor's minimum 1
  CHECK_THROWS_WITH(validate_group(bad, "g"), doctest::Contains("g.prescale.factor"));
}

TEST_CASE("registry: JSON round trip, names and parameters; defaults write nothing") {
  const auto s = sample();
  const auto text = io::to_json_text(s);
  CHECK(text.find("\"prescale\"") != std::string::npos);
  CHECK(text.find("\"fixed32\"") != std::string::npos);
  CHECK(io::parse_strategy(text) == s);
  const auto j = io::to_json(s);
  CHECK(j["groups"][0].find("prescale") == j["groups"][0].end());  // default: not written
  CHECK(j["groups"][1]["prescale"]["kind"] == "by");
  CHECK(j["groups"][1]["prescale"]["factor"] == 4);
  CHECK(j["groups"][1]["compression"]["scale"] == 8.0);
  // reading: a bare name takes the default parameters; the default kind is stored as absent
  const auto g = io::group_from_json(nlohmann::json::parse(R"({"compression": "fixed32", "prescale": "by"})"));
  CHECK(g.compression == compression_value{stable_id("fixed32"), {1, 0, 0}});
  CHECK(*g.ext.find(stable_id("prescale")) == ext_value::of("prescale", "by", {2, 0, 0}));
  CHECK(io::group_from_json(nlohmann::json::parse(R"({"prescale": "none"})")) == group_desc{});
  CHECK_THROWS_WITH((void)io::group_from_json(nlohmann::json::parse(R"({"prescale": "twice"})")),
                    doctest::Contains("unknown prescale 'twice' (valid: none, by)"));
  CHECK_THROWS_WITH((void)io::group_from_json(nlohmann::json::parse(R"({"compression": {"kind": "fixed32", "rank": 4}})")),
                    doctest::Contains("unknown key 'rank' for 'fixed32'"));
  CHECK_THROWS_WITH((void)io::group_from_json(nlohmann::json::parse(R"({"compression": "int8"})")),
                    doctest::Contains("valid: none, fp16, bf16, fixed32"));
}

TEST_CASE("registry: hashes: same values the same, other values differ") {
  const auto s = sample();
  CHECK(exec::strategy_hash(s) == exec::strategy_hash(io::parse_strategy(io::to_json_text(s))));
  auto other = s;
  other.groups[1].compression.params[0] = 16;
  CHECK(exec::strategy_hash(other) != exec::strategy_hash(s));
  other = s;
  other.groups[1].ext.v[0].params[0] = 8;
  CHECK(exec::strategy_hash(other) != exec::strategy_hash(s));
  other = s;
  other.groups[1].ext.erase(stable_id("prescale"));
  CHECK(exec::strategy_hash(other) != exec::strategy_hash(s));
  // the ids are hashes of names, not registration order
  CHECK(stable_id("fixed32") == 0x80000000u + (stable_id("fixed32") & 0x7fffffffu));
}

TEST_CASE("registry: emit_header spells the registered types and includes their header") {
  const auto h = emit_header(sample(), "emitted::registry");
  CHECK(h.find("#include <ext.hpp>") != std::string::npos);
  CHECK(h.find("regtest::fixed32<8>") != std::string::npos);
  CHECK(h.find("regtest::prescale_by<4>") != std::string::npos);
}

TEST_CASE("registry: the search proposes the registered values") {
  const auto m = testing::tiny_model({1000, 1000});
  const auto c = testing::one_node();
  search::space_options o;
  o.allow_lossy = true;
  const search::space sp(m, c, o);
  const group_desc g;
  std::vector<group_desc> out;
  sp.variants(g, search::aspect_of<slot::compression>, nullptr, out);
  CHECK(std::any_of(out.begin(), out.end(), [](const group_desc& v) { return v.compression.id == stable_id("fixed32"); }));
  REQUIRE(sp.aspects().size() == search::all_aspects.size() + 1);
  out.clear();
  sp.variants(g, search::extension_aspect(0), nullptr, out);
  REQUIRE(out.size() == 3);
  CHECK(out[0] == g);
  CHECK(out[2].ext.v[0] == ext_value::of("prescale", "by", {4, 0, 0}));
  // lossy compressors only with allow_lossy
  const search::space plain(m, c);
  CHECK(std::none_of(plain.compressions().begin(), plain.compressions().end(),
                     [](const compression_value& v) { return v.id == stable_id("fixed32"); }));
}

TEST_CASE("registry: the cost model takes wire bytes and codec work from the entries") {
  auto m = testing::tiny_model({1000});
  m.tensors[0].type = dtype::f64;
  const auto c = testing::one_node();
  const auto plain = uniform_strategy(m, group_desc{});
  auto comp = plain;
  comp.groups[0].compression = compression_value{stable_id("fixed32"), {1, 0, 0}};
  auto pre = plain;
  pre.groups[0] = with_extension(pre.groups[0], ext_value::of("prescale", "by", {2, 0, 0}));
  // items: 1000 f64 elements = 8000 bytes; fixed32 sends 4 per element
  CHECK(expand(m, c, plain)[0].wire_bytes == 8000);
  CHECK(expand(m, c, comp)[0].wire_bytes == 4000);
  CHECK(expand(m, c, pre)[0].wire_bytes == 8000);
  CHECK(expand(m, c, pre)[0].codec_flops == 2000.0);
  const cost::options t{true};
  const auto e0 = cost::estimate(m, c, plain, t), e1 = cost::estimate(m, c, comp, t), e2 = cost::estimate(m, c, pre, t);
  const double flops = c.nodes[0].device_flops > 0 ? c.nodes[0].device_flops : 1.0;
  CHECK(e1.compression == Approx(2.0 * 1000 / flops));
  CHECK(e2.compression == Approx(2.0 * 1000 / flops));
  auto bytes = [](const cost::prediction& p) {
    for (const auto& e : p.events)
      if (e.kind == cost::event_collective) return e.bytes;
    return decltype(p.events[0].bytes){};
  };
  CHECK(bytes(e0) == 8000);
  CHECK(bytes(e1) == 4000);
  CHECK(bytes(e2) == 8000);
  CHECK(e1.communication < e0.communication);
}

TEST_CASE("registry: a slot's codec and a built-in wire format in one group are refused, by validate and by the search") {
  // the executor encodes a bucket with registered codecs or with fp16 / bf16, not both (compile_plan)
  const auto m = testing::tiny_model({1 << 20, 1 << 20});
  const auto c = testing::one_node();
  search::space_options o;
  o.allow_lossy = true;
  const search::space sp(m, c, o);
  for (const auto id : {comp::fp16::value, comp::bf16::value}) {
    group_desc g;
    g.compression = compression_value{id, {}};
    const auto both = with_extension(g, ext_value::of("prescale", "by", {2, 0, 0}));
    CHECK(codec_conflict(both) == "prescale");
    CHECK_THROWS_WITH_AS(uniform_strategy(m, both).validate(m, c), doctest::Contains("'groups[0].prescale': the slot's codec and compressor"), error);
    CHECK_FALSE(sp.feasible(sp.uniform(both)));
    CHECK(sp.feasible(sp.uniform(g)));
    CHECK(codec_conflict(g).empty());
    CHECK(codec_conflict(with_extension(g, ext_value::of("prescale", "none"))).empty());  // the default: no slot value, no codec
  }
  // a registered compressor with the slot runs both as registered codecs: allowed
  group_desc r;
  r.compression = compression_value{stable_id("fixed32"), {1, 0, 0}};
  r = with_extension(r, ext_value::of("prescale", "by", {2, 0, 0}));
  CHECK(codec_conflict(r).empty());
  CHECK_NOTHROW(uniform_strategy(m, r).validate(m, c));
}

TEST_CASE("registry: a parameter-server bucket with registered codecs replays its transfers one after another, as the executor runs them") {
  // the executor batches a parameter-server bucket's pieces only without codecs (make_batches: not
  // hooked); prescale "none" set explicitly (a slot value, where JSON and with_extension drop the
  // default) runs an identity codec and costs no codec time, so no compression event says so
  const auto m = testing::tiny_model();
  const auto c = testing::replicated("2x2", 2, testing::worker(2));
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  g.placement = placement_value{placement_kind::round_robin, 0};
  g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  const auto plain = uniform_strategy(m, g);
  auto with_none = [](group_desc x) {
    (void)x.ext.set(ext_value::of("prescale", "none"));
    return x;
  };
  const auto hooked = uniform_strategy(m, with_none(g));
  REQUIRE(runs_registered_codecs(hooked.groups[0]));
  CHECK_FALSE(runs_registered_codecs(plain.groups[0]));
  auto replay = [&](const strategy_desc& s) {
    s.validate(m, c);
    const auto p = cost::estimate(m, c, s, cost::options{true});
    for (const auto& e : p.events) CHECK(e.kind != cost::event_compression);
    return cost::serial_replay(p, cost::buckets(m, c, s), expand(m, c, s), s, cost::make_fabric(c)).iteration;
  };
  const double batched = replay(plain), serial = replay(hooked);
  // two servers, two pieces: side by side against back to back
  CHECK(serial > batched);
  auto local = g;
  local.replication = replication_kind::local;  // never batched either way
  CHECK(replay(uniform_strategy(m, local)) == replay(uniform_strategy(m, with_none(local))));
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--emit") {
    std::ofstream(argv[2]) << emit_header(sample(), "emitted::registry");
    return 0;
  }
  return doctest::Context(argc, argv).run();
}
