// io/json.hpp: formats, round trips, unit strings, and errors that name file, line and field.
#include <autosync/io/json.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#if __has_include(<autosync/zoo/models.hpp>)
#include <autosync/zoo/models.hpp>
#define AUTOSYNC_TEST_HAVE_ZOO_MODELS 1
#endif
#if __has_include(<autosync/zoo/clusters.hpp>)
#include <autosync/zoo/clusters.hpp>
#define AUTOSYNC_TEST_HAVE_ZOO_CLUSTERS 1
#endif
#if __has_include(<autosync/strategy/baselines.hpp>)
#include <autosync/strategy/baselines.hpp>
#define AUTOSYNC_TEST_HAVE_BASELINES 1
#endif

namespace {
using namespace autosync;
using namespace autosync::io;

// model_spec and cluster_spec have no operator==; compare every field.
void check_same(const model_spec& a, const model_spec& b) {
  CHECK(a.name == b.name);
  CHECK(a.source == b.source);
  CHECK(a.batch_per_device == b.batch_per_device);
  CHECK(a.forward_flops == b.forward_flops);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    INFO("tensor ", i, " ", x.name);
    CHECK(x.name == y.name);
    CHECK(x.shape == y.shape);
    CHECK(x.type == y.type);
    CHECK(x.sparse == y.sparse);
    CHECK(x.sparse_density == y.sparse_density);
    CHECK(x.backward_flops == y.backward_flops);
    CHECK(x.ready_order == y.ready_order);
  }
}
void check_same(const cluster_spec& a, const cluster_spec& b) {
  CHECK(a.name == b.name);
  CHECK(a.device == b.device);
  CHECK(a.source == b.source);
  REQUIRE(a.nodes.size() == b.nodes.size());
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    INFO("node ", i);
    CHECK(a.nodes[i].name == b.nodes[i].name);
    CHECK(detail::jio::same_except_name(a.nodes[i], b.nodes[i]));
  }
}

// The message of the autosync::error that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

model_spec hand_model() {
  model_spec m;
  m.name = "hand \"made\"";
  m.source = "unit test, with unicode \xC2\xB5 and a tab\t";
  m.batch_per_device = 48;
  m.forward_flops = 1.2345678901234567e10;
  m.tensors.push_back({"emb", {100000, 64}, dtype::f32, true, 0.013, 0.1, 2});
  m.tensors.push_back({"conv1.weight", {64, 3, 7, 7}, dtype::f16, false, 1.0, 1e-300, 1});
  m.tensors.push_back({"fc.bias", {1000}, dtype::bf16, false, 1.0, 3.0e9, 0});
  m.tensors.push_back({"x.i64", {2, 8}, dtype::i64, false, 1.0, 0.1 + 0.2, 3});
  return m;
}

cluster_spec hand_cluster() {
  cluster_spec c;
  c.name = "mixed";
  c.device = "V100";
  c.source = "made up";
  node_spec w{"gpu-0", 8, {1.3e11, 5e-6}, {3.125e9, 2e-5}, 1, false, 1.2e14, 4e11};
  for (int i = 0; i < 3; ++i) {
    w.name = "gpu-" + std::to_string(i);
    c.nodes.push_back(w);
  }
  node_spec odd = w;
  odd.name = "odd";
  odd.nics = 2;
  odd.nic.bandwidth = 12.5e9 / 3.0;
  c.nodes.push_back(odd);
  node_spec anon = w;
  anon.name = "";
  c.nodes.push_back(anon);
  c.nodes.push_back(anon);
  node_spec ps{"ps-0", 0, {0, 0}, {1.25e9, 3e-5}, 1, true, 0, 0};
  c.nodes.push_back(ps);
  ps.name = "ps-1";
  c.nodes.push_back(ps);
  return c;
}

strategy_desc hand_strategy() {
  strategy_desc s;
  s.name = "hand";
  s.groups.push_back(describe<strategy<>>());
  s.groups.push_back(describe<strategy<topo::hierarchical<topo::ring, topo::tree>, comp::fp16,
                                       fuse::bucket_cap<26214400, 1048576>, sched::priority>>());
  s.groups.push_back(describe<strategy<arch::parameter_server, part::even<4, 1>, place::pinned<1>, repl::local>>());
  s.groups.push_back(describe<strategy<arch::parameter_server, part::by_bytes<4096000>, place::hashed>>());
  s.groups.push_back(describe<strategy<arch::sharded, topo::halving_doubling, comp::bf16, fuse::unbounded, place::load_balanced>>());
  s.groups.push_back(describe<strategy<arch::all_gather>>());
  s.assignments.push_back({"emb", 3, 0, {}});
  s.assignments.push_back({"conv1.weight", 0, 0, {0, 1, 0}});
  s.assignments.push_back({"fc.bias", 1, 0, {}});
  s.assignments.push_back({"x.i64", 0, 1, {4, 2}});
  return s;
}

}  // namespace

TEST_CASE("json: model round trip, all fields") {
  const auto m = hand_model();
  m.validate();
  const auto text = to_json_text(m);
  check_same(parse_model(text), m);
  // nlohmann ADL hooks, both json flavours.
  nlohmann::json j = m;
  check_same(j.get<model_spec>(), m);
  nlohmann::ordered_json oj = m;
  check_same(oj.get<model_spec>(), m);
  // io:: value functions: keys in the documented order; from_json validates.
  const auto oj2 = io::to_json(m);
  CHECK(oj2.begin().key() == "name");
  CHECK(oj2.at("tensors")[0].begin().key() == "name");
  check_same(io::model_from_json(nlohmann::json(oj2)), m);
  CHECK_THROWS_WITH_AS((void)io::model_from_json(nlohmann::json::parse(R"({"tensors": [{"name": "a", "shape": [0]}]})")),
                       "'tensors[0].shape[0]': must be positive, got 0", error);
  CHECK_THROWS_WITH_AS((void)io::group_from_json(nlohmann::json::parse(R"({"partitioner": {"kind": "even", "shards": 0}})")),
                       "'partitioner.shards': must be >= 1", error);
  // Defaults are omitted: a dense f32 tensor with no FLOPs and no ready order is name+shape+dtype.
  model_spec small{"s", {{"w", {3}, dtype::f32, false, 1.0, 0.0, -1}}, 0.0, 0, ""};
  CHECK(nlohmann::json(small)["tensors"][0] == nlohmann::json::parse(R"({"name":"w","shape":[3],"dtype":"f32"})"));
}

TEST_CASE("json: the documented model form reads as written") {
  const auto m = parse_model(R"({"name": "n", "batch_per_device": 32, "forward_flops": 1.2e10, "source": "s",
    "tensors": [{"name": "conv1.weight", "shape": [64,3,7,7], "dtype": "f32", "sparse": false,
                 "sparse_density": 1.0, "backward_flops": 1.2e9, "ready_order": 0},
                {"name": "e", "shape": [10, 4], "dtype": "float16", "sparse": true, "sparse_density": 0.5, "ready_order": 1}]})");
  REQUIRE(m.tensors.size() == 2);
  CHECK(m.tensors[0].elements() == 64 * 3 * 7 * 7);
  CHECK(m.tensors[0].backward_flops == 1.2e9);
  CHECK(m.tensors[0].ready_order == 0);
  CHECK(m.tensors[1].type == dtype::f16);
  CHECK(m.tensors[1].sparse);
  CHECK(m.tensors[1].sparse_density == 0.5);
  CHECK(m.tensors[1].ready_order == 1);
  CHECK(m.batch_per_device == 32);
  CHECK(m.forward_flops == 1.2e10);
}

TEST_CASE("json: cluster round trip; identical runs are written with count") {
  const auto c = hand_cluster();
  c.validate();
  const auto text = to_json_text(c);
  check_same(parse_cluster(text), c);
  const auto j = nlohmann::json::parse(text);
  // gpu-0..2 -> one entry with count 3; "odd"; two unnamed -> count 2; ps-0, ps-1 -> "ps" with count 2.
  REQUIRE(j["nodes"].size() == 4);
  CHECK(j["nodes"][0]["name"] == "gpu");
  CHECK(j["nodes"][0]["count"] == 3);
  CHECK(j["nodes"][1]["name"] == "odd");
  CHECK_FALSE(j["nodes"][1].contains("count"));
  CHECK_FALSE(j["nodes"][2].contains("name"));
  CHECK(j["nodes"][2]["count"] == 2);
  CHECK(j["nodes"][3]["server_only"] == true);
  CHECK(j["nodes"][3]["name"] == "ps");
  CHECK(j["nodes"][3]["count"] == 2);
  CHECK_FALSE(j["nodes"][0].contains("server_only"));
  check_same(nlohmann::json(c).get<cluster_spec>(), c);
}

TEST_CASE("json: cluster count, units and defaults") {
  const auto c = parse_cluster(R"({"name": "x", "nodes": [
    {"name": "n", "count": 4, "devices": 8, "intra": {"bandwidth": "12.5GB/s", "latency": "5us"},
     "nic": {"bandwidth": "25Gb/s", "latency": "2ms"}, "device_flops": 1e14, "reduce_bandwidth": "1 GiB/s"},
    {"devices": 1, "nic": {"bandwidth": "400Gbps", "latency": 1e-5}, "device_flops": 1e14, "reduce_bandwidth": 4e11}]})");
  REQUIRE(c.nodes.size() == 5);
  CHECK(c.nodes[0].name == "n-0");
  CHECK(c.nodes[3].name == "n-3");
  CHECK(c.nodes[4].name.empty());
  CHECK(c.world_size() == 33);
  CHECK(c.nodes[2].intra.bandwidth == 12.5e9);
  CHECK(c.nodes[2].intra.latency == doctest::Approx(5e-6).epsilon(1e-15));
  CHECK(c.nodes[1].nic.bandwidth == 3.125e9);
  CHECK(c.nodes[1].nic.latency == doctest::Approx(2e-3).epsilon(1e-15));
  CHECK(c.nodes[0].reduce_bandwidth == 1073741824.0);
  CHECK(c.nodes[4].nic.bandwidth == 5e10);
  CHECK(c.nodes[4].nics == 1);  // default
}

TEST_CASE("json: bandwidth and latency strings are parsed strictly") {
  using detail::jio::parse_quantity;
  using detail::jio::quantity;
  CHECK(parse_quantity("25Gb/s", quantity::bandwidth) == 3.125e9);
  CHECK(parse_quantity("12.5GB/s", quantity::bandwidth) == 1.25e10);
  CHECK(parse_quantity("400Gbps", quantity::bandwidth) == 5e10);
  CHECK(parse_quantity("100 MB/s", quantity::bandwidth) == 1e8);
  CHECK(parse_quantity("2GiB/s", quantity::bandwidth) == 2147483648.0);
  CHECK(parse_quantity("8b/s", quantity::bandwidth) == 1.0);
  CHECK(parse_quantity("3kB/s", quantity::bandwidth) == 3000.0);
  CHECK(parse_quantity("8Kib/s", quantity::bandwidth) == 1024.0);
  CHECK(parse_quantity("1e3MBps", quantity::bandwidth) == 1e9);
  CHECK(parse_quantity("5us", quantity::time) == 5e-6);
  CHECK(parse_quantity("5\xC2\xB5s", quantity::time) == 5e-6);
  CHECK(parse_quantity("2ms", quantity::time) == 2e-3);
  CHECK(parse_quantity("100ns", quantity::time) == doctest::Approx(1e-7).epsilon(1e-15));
  CHECK(parse_quantity(".5s", quantity::time) == 0.5);
  for (const char* bad : {"", "GB/s", "25", "25 ", "25  Gb/s", " 25Gb/s", "25Gb/s ", "-25Gb/s", "+25Gb/s", "25gb/s", "25GB",
                          "25Gb/sec", "inf GB/s", "nanGB/s", "1e999GB/s", "25.Gb/s.", "0x10GB/s", "25KIB/s", "25Gs", "5E",
                          "1..2GB/s", "Gi", "25us"})
    CHECK_MESSAGE(!parse_quantity(bad, quantity::bandwidth), bad);
  for (const char* bad : {"5", "5 us ", "5sec", "5Ms", "-5us", "5 GB/s", "us"})
    CHECK_MESSAGE(!parse_quantity(bad, quantity::time), bad);
  CHECK(parse_quantity("25.", quantity::time) == std::nullopt);
  CHECK(parse_quantity("25.s", quantity::time) == 25.0);
}

TEST_CASE("json: strategy round trip over every policy form") {
  const auto s = hand_strategy();
  s.validate_groups();
  const auto text = to_json_text(s);
  CHECK(parse_strategy(text) == s);
  CHECK(nlohmann::json(s).get<strategy_desc>() == s);
  for (const auto& g : s.groups) CHECK(nlohmann::json(g).get<group_desc>() == g);
  // Compact forms on output.
  const auto j = nlohmann::json::parse(text);
  CHECK(j["groups"][0]["partitioner"] == "none");
  CHECK(j["groups"][0]["topology"] == "ring");
  CHECK(j["groups"][0]["fusion"] == nlohmann::json::parse(R"({"cap_bytes": 0})"));
  CHECK(j["groups"][1]["topology"] == nlohmann::json::parse(R"({"kind":"hierarchical","intra":"ring","inter":"tree"})"));
  CHECK(j["groups"][1]["fusion"] == nlohmann::json::parse(R"({"cap_bytes": 26214400, "first_cap_bytes": 1048576})"));
  CHECK(j["groups"][2]["partitioner"] == nlohmann::json::parse(R"({"kind":"even","shards":4,"axis":1})"));
  CHECK(j["groups"][2]["placement"] == nlohmann::json::parse(R"({"kind":"pinned","server":1})"));
  CHECK(j["groups"][3]["partitioner"] == nlohmann::json::parse(R"({"kind":"by_bytes","max_bytes":4096000})"));
  CHECK(j["groups"][4]["fusion"]["cap_bytes"].get<std::uint64_t>() == unbounded_bytes);
  CHECK(j["assignments"][0] == nlohmann::json::parse(R"({"tensor":"emb","group":3})"));
  CHECK(j["assignments"][1] == nlohmann::json::parse(R"({"tensor":"conv1.weight","split_axis":0,"shard_groups":[0,1,0]})"));
}

TEST_CASE("json: every group field is optional; object forms of simple kinds are read too") {
  const auto s = parse_strategy(R"({"groups": [{}, {"partitioner": {"kind": "none"}, "placement": {"kind": "hashed"},
      "topology": {"kind": "tree"}, "fusion": "unbounded"}, {"topology": {"kind": "hierarchical"}, "fusion": {"cap_bytes": 4096}}]})");
  REQUIRE(s.groups.size() == 3);
  CHECK(s.groups[0] == group_desc{});
  CHECK(s.groups[1].placement.kind == placement_kind::hashed);
  CHECK(s.groups[1].topology == topology_value{topology_kind::tree});
  CHECK(s.groups[1].fusion == fuse::unbounded::value);
  CHECK(s.groups[2].topology == topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::ring});
  CHECK(s.groups[2].fusion == fusion_value{4096, 4096});  // first cap defaults to the cap
  CHECK(s.assignments.empty());
}

#if defined(AUTOSYNC_TEST_HAVE_ZOO_MODELS)
TEST_CASE("json: every zoo model (and every baseline strategy on it) round-trips") {
  for (auto name : zoo::model_names()) {
    INFO(name);
    const auto m = zoo::make_model(name);
    check_same(parse_model(to_json_text(m)), m);
#if defined(AUTOSYNC_TEST_HAVE_BASELINES) && defined(AUTOSYNC_TEST_HAVE_ZOO_CLUSTERS)
    const auto c = zoo::make_cluster(zoo::cluster_names().front());
    for (const auto& s : baselines::all(m, c)) {
      INFO(s.name);
      CHECK(parse_strategy(to_json_text(s), m, c) == s);
    }
#endif
  }
}
#endif

#if defined(AUTOSYNC_TEST_HAVE_ZOO_CLUSTERS)
TEST_CASE("json: every zoo cluster round-trips") {
  for (const auto& name : zoo::cluster_names()) {
    INFO(name);
    const auto c = zoo::make_cluster(name);
    check_same(parse_cluster(to_json_text(c)), c);
  }
}
#endif

// ----------------------------------------------------------------------------------------------
// Errors: file, line, field.

TEST_CASE("json errors: validate() failures point at the line of the field") {
  const std::string text = R"({
  "name": "m",
  "tensors": [
    {"name": "a", "shape": [4]},
    {"name": "b", "shape": [4]},
    {"name": "c", "shape": [4]},
    {
      "name": "d",
      "shape": [
        3,
        -2
      ]
    }
  ]
})";
  CHECK(error_of([&] { (void)parse_model(text, "model.json"); }) == "model.json:11: 'tensors[3].shape[1]': must be positive, got -2");
  try {
    (void)parse_model(text, "model.json");
  } catch (const file_error& e) {
    CHECK(e.file() == "model.json");
    CHECK(e.line() == 11);
    CHECK(e.column() == 9);
    CHECK(e.field() == "tensors[3].shape[1]");
    CHECK(e.message() == "must be positive, got -2");
  }
  // Duplicate names (validate) -> the line of the second name.
  CHECK(error_of([] {
          (void)parse_model("{\"tensors\": [\n{\"name\": \"a\", \"shape\": [1]},\n{\"shape\": [1],\n \"name\": \"a\"}]}", "m.json");
        }) == "m.json:4: 'tensors[1].name': duplicate tensor name 'a'");
  // A missing field -> the closest enclosing value.
  CHECK(error_of([] { (void)parse_model("{\"tensors\": [\n{\"name\": \"a\", \"shape\": [1]},\n  {\"name\": \"b\"}]}", "m.json"); }) ==
        "m.json:3: 'tensors[1].shape': required field is missing");
  CHECK(error_of([] { (void)parse_model("\n\n  {\"name\": \"x\", \"tensors\": []}", "m.json"); }) ==
        "m.json:3: 'tensors': a model needs at least one tensor");
}

TEST_CASE("json errors: types, names, keys, ranges") {
  auto model_err = [](const std::string& tensor_json) {
    return error_of([&] { (void)parse_model("{\"tensors\": [\n" + tensor_json + "\n]}", "m.json"); });
  };
  CHECK(model_err(R"({"name": "a", "shape": [1], "dtype": "f8"})") ==
        "m.json:2: 'tensors[0].dtype': unknown dtype 'f8' (valid: f32, f16, bf16, f64, i32, i64)");
  CHECK(model_err(R"({"name": "a", "shape": [1], "shpe": [1]})") ==
        "m.json:2: 'tensors[0].shpe': unknown key 'shpe' (valid: name, shape, dtype, sparse, sparse_density, backward_flops, ready_order, ready_time)");
  CHECK(model_err(R"({"name": 7, "shape": [1]})") == "m.json:2: 'tensors[0].name': must be a string, got 7");
  CHECK(model_err(R"({"name": "a", "shape": "1"})") == "m.json:2: 'tensors[0].shape': must be an array, got \"1\"");
  CHECK(model_err(R"({"name": "a", "shape": [1.5]})") == "m.json:2: 'tensors[0].shape[0]': must be an integer, got 1.5");
  CHECK(model_err(R"({"name": "a", "shape": [true]})") == "m.json:2: 'tensors[0].shape[0]': must be an integer, got true");
  CHECK(model_err(R"({"name": "a", "shape": [9223372036854775808]})") ==
        "m.json:2: 'tensors[0].shape[0]': must be an integer in [-9223372036854775808, 9223372036854775807], got 9223372036854775808");
  CHECK(model_err(R"({"name": "a", "shape": [1e300]})").find("'tensors[0].shape[0]': must be an integer in") != std::string::npos);
  CHECK(model_err(R"({"name": "a", "shape": [4294967296, 4294967296]})") ==
        "m.json:2: 'tensors[0].shape': element count overflows 64 bits");
  CHECK(model_err(R"({"name": "a", "shape": [1000000, 1000000]})") ==
        "m.json:2: 'tensors[0].shape': 1000000000000 elements: a tensor may have at most 2^36 (68719476736)");
  CHECK(model_err(R"({"name": "a", "shape": [2], "ready_order": 2147483648})") ==
        "m.json:2: 'tensors[0].ready_order': must be an integer in [-2147483648, 2147483647], got 2147483648");
  CHECK(model_err(R"({"name": "a", "shape": [2], "sparse_density": 0})") == "m.json:2: 'tensors[0].sparse_density': must be in (0, 1]");
  CHECK(model_err(R"({"name": "a", "shape": [2], "sparse": 1})") == "m.json:2: 'tensors[0].sparse': must be true or false, got 1");
  CHECK(model_err("[]") == "m.json:2: 'tensors[0]': must be a tensor (an object), got an array");
  CHECK(error_of([] { (void)parse_model("[1]", "m.json"); }) == "m.json:1: must be a model (an object), got an array");
  CHECK(error_of([] { (void)parse_model(R"({"tensors": [{"name": "a", "shape": [1]}], "batch_per_device": -1})", "m.json"); }) ==
        "m.json:1: 'batch_per_device': must be an integer in [0, 9223372036854775807], got -1");
}

TEST_CASE("json errors: syntax errors carry line, column and the path being read") {
  const std::string text = "{\n  \"tensors\": [\n    {\"name\": \"a\", \"shape\": [1,]}\n  ]\n}";
  try {
    (void)parse_model(text, "m.json");
    FAIL("no error");
  } catch (const file_error& e) {
    CHECK(e.line() == 3);
    CHECK(e.column() == 31);  // the ']' after "1,"
    CHECK(e.field() == "tensors[0].shape[1]");
    CHECK(std::string(e.what()).rfind("m.json:3:31: 'tensors[0].shape[1]': syntax error while parsing value", 0) == 0);
  }
  // The line and column agree with nlohmann's own count.
  try {
    const auto ignored = nlohmann::json::parse(text);
    (void)ignored;
  } catch (const nlohmann::json::parse_error& e) {
    CHECK(std::string(e.what()).find("line 3, column 31") != std::string::npos);
  }
  CHECK(error_of([] { (void)parse_model("", "e.json"); }).rfind("e.json:1:1: syntax error while parsing value - unexpected end of input", 0) == 0);
  CHECK(error_of([] { (void)parse_model("{\"tensors\": []} x", "e.json"); }).rfind("e.json:1:17: syntax error", 0) == 0);
  // A float that overflows a double is nlohmann's out_of_range 406, still located.
  CHECK(error_of([] { (void)parse_model("{\"forward_flops\":\n 1e999}", "e.json"); }) ==
        "e.json:2:6: 'forward_flops': number overflow parsing '1e999'");
}

TEST_CASE("json errors: duplicate keys and deep nesting are rejected with their place") {
  CHECK(error_of([] { (void)parse_model("{\"tensors\": [{\"name\": \"a\",\n \"shape\": [1], \"name\": \"b\"}]}", "d.json"); }) ==
        "d.json:2: 'tensors[0].name': key 'name' appears twice in this object");
  // Escapes are decoded before comparing: "n\u0061me" is "name".
  CHECK(error_of([] { (void)parse_model(R"({"tensors": [{"name": "a", "n\u0061me": "b", "shape": [1]}]})", "d.json"); })
            .find("key 'name' appears twice") != std::string::npos);
  std::string deep(100, '[');
  deep += std::string(100, ']');
  CHECK(error_of([&] { (void)parse_model("{\"tensors\": " + deep + "}", "d.json"); })
            .rfind("d.json:1: 'tensors[0][0][0]", 0) == 0);
  CHECK(error_of([&] { (void)parse_model("{\"tensors\": " + deep + "}", "d.json"); }).find("nesting deeper than 64 levels") !=
        std::string::npos);
}

TEST_CASE("json errors: cluster") {
  auto err = [](const std::string& text) { return error_of([&] { (void)parse_cluster(text, "c.json"); }); };
  CHECK(err("{\"nodes\": [{\"nic\": {\"bandwidth\": \"25 Gbit/s\"}}]}").rfind(
            "c.json:1: 'nodes[0].nic.bandwidth': cannot read \"25 Gbit/s\" as a bandwidth", 0) == 0);
  CHECK(err("{\"nodes\": [{\"nic\": {\"latency\": \"-5us\"}}]}").rfind("c.json:1: 'nodes[0].nic.latency': cannot read \"-5us\" as a latency", 0) ==
        0);
  CHECK(err("{\"nodes\": [{\"nic\": {\"bandwidth\": true}}]}") ==
        "c.json:1: 'nodes[0].nic.bandwidth': must be a number or a string with a unit, got true");
  CHECK(err("{\"nodes\": [{\"count\": 0}]}") == "c.json:1: 'nodes[0].count': must be an integer in [1, 65536], got 0");
  // a latency is seconds in [0, 1]: 1e300 would make every figure a row of digits
  const std::string node = R"("device_flops": 1e12, "reduce_bandwidth": 1e10, "nic": {"bandwidth": 1e9, )";
  CHECK(err("{\"nodes\": [{" + node + "\"latency\": 1e300}}]}") == "c.json:1: 'nodes[0].nic.latency': must be seconds in [0, 1]");
  CHECK(err("{\"nodes\": [{" + node + "\"latency\": 0}, \"devices\": 2, \"intra\": {\"bandwidth\": 1e10, \"latency\": \"2s\"}}]}") ==
        "c.json:1: 'nodes[0].intra.latency': must be seconds in [0, 1]");
  CHECK(err("{\"nodes\": [{\"count\": 40000}, {\"count\": 40000}]}") ==
        "c.json:1: 'nodes[1].count': the cluster would have more than 65536 nodes");
  CHECK(err("{\"nodes\": [{\"devices\": 2147483648}]}") ==
        "c.json:1: 'nodes[0].devices': must be an integer in [-2147483648, 2147483647], got 2147483648");
  CHECK(err("{\"nodes\": [{\"nick\": 1}]}") ==
        "c.json:1: 'nodes[0].nick': unknown key 'nick' (valid: name, count, devices, intra, nic, nics, server_only, device_flops, "
        "reduce_bandwidth, compute, codec_flops)");
  CHECK(err("{\"nodes\": [{" + node + "\"latency\": 0}, \"codec_flops\": -1}]}") ==
        "c.json:1: 'nodes[0].codec_flops': must be 0 (the backend's default) or work/s in [1e3, 1e20]");
  // a calibrated codec rate is read and written (absent: the backend's default, not written)
  const auto coded = parse_cluster("{\"nodes\": [{" + node + "\"latency\": 0}, \"codec_flops\": 1.5e8}]}");
  CHECK(coded.nodes[0].codec_flops == 1.5e8);
  check_same(parse_cluster(to_json_text(coded)), coded);
  CHECK(to_json_text(parse_cluster("{\"nodes\": [{" + node + "\"latency\": 0}}]}")).find("codec_flops") == std::string::npos);
  // validate() speaks of expanded node 5; the message points at the JSON entry it came from.
  const std::string text = R"({"nodes": [
    {"name": "a", "devices": 1, "nic": {"bandwidth": 1e9}, "device_flops": 1e12, "reduce_bandwidth": 1e10},
    {"name": "b", "count": 4, "devices": 2,
     "nic": {"bandwidth": 1e9}, "device_flops": 1e12, "reduce_bandwidth": 1e10}
  ]})";
  CHECK(err(text) == "c.json:3: 'nodes[1].intra.bandwidth': must be bytes/s in [1e3, 1e16] (in node 1 'b-0', a replica of this entry)");
  CHECK(err(R"({"nodes": [{"name": "a-1", "nic": {"bandwidth": 1e9}, "device_flops": 1e12, "reduce_bandwidth": 1e10},
    {"name": "a", "count": 2, "nic": {"bandwidth": 1e9}, "device_flops": 1e12, "reduce_bandwidth": 1e10}]})") ==
        "c.json:2: 'nodes[1].name': duplicate node name 'a-1' (in node 2 'a-1', a replica of this entry)");
}

TEST_CASE("json errors: strategy") {
  auto err = [](const std::string& text) { return error_of([&] { (void)parse_strategy(text, "s.json"); }); };
  CHECK(err(R"({"groups": [{"architecture": "allreduce"}]})") ==
        "s.json:1: 'groups[0].architecture': unknown architecture 'allreduce' (valid: all_reduce, parameter_server, sharded, all_gather)");
  CHECK(err(R"({"groups": [{"compression": "int8"}]})") ==
        "s.json:1: 'groups[0].compression': unknown compression 'int8' (valid: none, fp16, bf16)");
  CHECK(err(R"({"groups": [{"partitioner": "even"}]})").rfind("s.json:1: 'groups[0].partitioner': 'even' needs its numbers", 0) == 0);
  CHECK(err(R"({"groups": [{"partitioner": {"kind": "even", "shards": 4, "max_bytes": 9}}]})") ==
        "s.json:1: 'groups[0].partitioner.max_bytes': unknown key 'max_bytes' for partitioner 'even' (valid: kind, shards, axis)");
  CHECK(err(R"({"groups": [{"partitioner": {"kind": "by_bytes", "max_bytes": -1}}]})") ==
        "s.json:1: 'groups[0].partitioner.max_bytes': must not be negative, got -1");
  CHECK(err(R"({"groups": [{"partitioner": {"kind": "by_bytes", "max_bytes": 0}}]})") ==
        "s.json:1: 'groups[0].partitioner.max_bytes': must be >= 1");
  CHECK(err(R"({"groups": [{"fusion": {"cap_bytes": 1e20}}]})") == "s.json:1: 'groups[0].fusion.cap_bytes': does not fit in 64 bits, got 1e+20");
  CHECK(err(R"({"groups": [{"placement": {"kind": "pinned"}}]})") == "s.json:1: 'groups[0].placement.server': required field is missing");
  CHECK(err(R"({"groups": []})") == "s.json:1: 'groups': a strategy needs at least one group");
  // validate_groups(): mapped to the line of the field.
  CHECK(err("{\"groups\": [{},\n {\"topology\": {\"kind\": \"hierarchical\",\n  \"intra\": \"hierarchical\"}}]}") ==
        "s.json:3: 'groups[1].topology.intra': must be ring, tree or halving_doubling");
  CHECK(err("{\"groups\": [{}],\n \"assignments\": [{\"tensor\": \"a\", \"group\": 1}]}") ==
        "s.json:2: 'assignments[0].group': group 1 does not exist (the strategy has 1 groups)");
  CHECK(err("{\"groups\": [{}],\n \"assignments\": [{\"tensor\": \"a\", \"group\": 0, \"shard_groups\": [0]}]}") ==
        "s.json:2: 'assignments[0].group': give either \"group\" or \"split_axis\" + \"shard_groups\", not both");
  CHECK(err("{\"groups\": [{}],\n \"assignments\": [{\"tensor\": \"a\", \"group\": 0},\n {\"tensor\": \"a\", \"group\": 0}]}") ==
        "s.json:3: 'assignments[1].tensor': tensor 'a' is assigned twice (also at assignments[0])");
  CHECK(err("{\"groups\": [{}],\n \"assignments\": [{\"tensor\": \"a\", \"shard_groups\": []}]}").rfind(
            "s.json:2: 'assignments[0].shard_groups': must not be empty", 0) == 0);
  // Against a model and a cluster: strategy_desc::validate, located.
  const auto m = hand_model();
  const auto c = hand_cluster();
  const std::string bad = "{\"groups\": [{}],\n \"assignments\": [\n {\"tensor\": \"emb\", \"group\": 0}]}";
  CHECK(error_of([&] { (void)parse_strategy(bad, m, c, "s.json"); }) ==
        "s.json:3: 'assignments[0].group': tensor 'emb' has a sparse gradient; all_reduce needs dense ones: use parameter_server or "
        "all_gather");
  // At most max_strategy_items pieces: a partitioner that would cut more is refused, naming the
  // assignment (2^31 shards ran out of memory in expand)
  model_spec big;
  big.name = "big";
  big.tensors.push_back(tensor{"w", {std::int64_t{1} << 22}});
  big.tensors.push_back(tensor{"v", {4}});
  group_desc even;
  even.partitioner = partitioner_value{partitioner_kind::even, std::int32_t{1} << 21, 0, 0};
  CHECK(error_of([&] { uniform_strategy(big, even).validate(big, c); }) ==
        "'assignments[0].group': the strategy would synchronize more than 1048576 pieces (shards of tensors); partition into fewer or "
        "larger shards");
  group_desc fine;
  fine.partitioner = partitioner_value{partitioner_kind::by_bytes, 0, 0, 16};  // 4 elements a shard: 2^20 shards of w
  CHECK(error_of([&] { uniform_strategy(big, fine).validate(big, c); }).rfind("'assignments[1].group': the strategy would synchronize", 0) == 0);
  fine.partitioner.max_bytes = 32;  // 2^19 shards of w and one of v: within the bound
  CHECK_NOTHROW(uniform_strategy(big, fine).validate(big, c));
}

TEST_CASE("json: the path locator") {
  const std::string text = "{\"a\": {\"b\\\"c\": [1, [2, 3],\n {\"d\": 4}]},\n \"e\": \"}]\" , \"f\": [[],\n[5]]}";
  const detail::json_text jt(text);
  auto line = [&](const std::vector<detail::path_segment>& p) { return jt.at(jt.find(p)).line; };
  CHECK(line({{"a", -1}, {"b\"c", -1}, {"", 2}, {"d", -1}}) == 2);
  CHECK(line({{"a", -1}, {"b\"c", -1}, {"", 1}, {"", 1}}) == 1);
  CHECK(jt.at(jt.find({{"a", -1}, {"b\"c", -1}, {"", 1}, {"", 1}})).column == 24);
  CHECK(line({{"f", -1}, {"", 1}, {"", 0}}) == 4);
  CHECK(line({{"e", -1}}) == 3);
  CHECK(line({{"f", -1}, {"", 7}}) == 3);    // no such element: the array itself
  CHECK(line({{"zzz", -1}, {"", 0}}) == 1);  // no such key: the document
  CHECK(detail::split_path("tensors[3].shape[1]") ==
        std::vector<detail::path_segment>{{"tensors", -1}, {"", 3}, {"shape", -1}, {"", 1}});
  CHECK(detail::join_path(detail::split_path("a.b[2][0].c")) == "a.b[2][0].c");
  CHECK(jt.path_at(text.find("5]")) == "f[1][0]");
  CHECK_FALSE(jt.check_structure().has_value());
}

TEST_CASE("json: files") {
  const auto dir = std::filesystem::temp_directory_path() / ("autosync_json_test_" + std::to_string(std::rand()));
  std::filesystem::create_directories(dir);
  const auto m = hand_model();
  const auto c = hand_cluster();
  const auto s = hand_strategy();
  save_model_file(dir / "m.json", m);
  save_cluster_file(dir / "c.json", c);
  save_strategy_file(dir / "s.json", s);
  check_same(load_model_file(dir / "m.json"), m);
  check_same(load_cluster_file(dir / "c.json"), c);
  CHECK(load_strategy_file(dir / "s.json") == s);
  CHECK(load_strategy_file(dir / "s.json", m, c) == s);
  // The file name is the one in messages.
  {
    std::ofstream(dir / "bad.json") << "{\n\"tensors\": 3}";
  }
  const auto msg = error_of([&] { (void)load_model_file(dir / "bad.json"); });
  CHECK(msg == (dir / "bad.json").string() + ":2: 'tensors': must be an array, got 3");
  CHECK(error_of([&] { (void)load_model_file(dir / "missing.json"); }).find("cannot open") != std::string::npos);
  std::filesystem::remove_all(dir);
}
