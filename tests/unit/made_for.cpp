// What a strategy was made for (strategy/made_for.hpp): the stamp, its JSON at the top level of a
// strategy, the fingerprint's fields, and check_made_for's errors (the field and both values).
#include <autosync/io/json.hpp>
#include <autosync/strategy/made_for.hpp>
#include <autosync/zoo/clusters.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace autosync;

namespace {

model_spec two() {
  model_spec m;
  m.name = "two";
  m.tensors = {tensor{"w", {4, 4}}, tensor{"b", {4}}};
  return m;
}

std::string thrown(auto&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

TEST_CASE("made_for: the stamp of a cluster; the fingerprint sees links and devices, not names") {
  const auto c = zoo::make_cluster("p3.16xlarge-x4");
  const auto m = made_for_of(c);
  CHECK(m.cluster == "p3.16xlarge-x4");
  CHECK(m.world_size == 32);
  CHECK(m.ranks_per_node == 8);
  CHECK(m.fingerprint.starts_with("fnv1a64:"));
  CHECK(m.fingerprint.size() == 8 + 16);
  CHECK(made_for_of(c, 4, 2).world_size == 4);
  CHECK(made_for_of(c, 4, 2).ranks_per_node == 2);
  auto renamed = c;
  renamed.name = "other";
  renamed.source = "elsewhere";
  CHECK(cluster_fingerprint(renamed) == m.fingerprint);
  auto faster = c;
  faster.nodes[1].nic.bandwidth *= 2;
  CHECK(cluster_fingerprint(faster) != m.fingerprint);
  auto flops = c;
  flops.nodes[0].device_flops += 1;
  CHECK(cluster_fingerprint(flops) != m.fingerprint);
  CHECK(cluster_fingerprint(zoo::local(2)) != cluster_fingerprint(zoo::local(3)));
  // the compute roofline, and the device label that an automatic GPU generation is read from
  REQUIRE(c.nodes[0].compute.described());
  auto slower = c;
  slower.nodes[2].compute.memory_bandwidth /= 10;
  CHECK(cluster_fingerprint(slower) != m.fingerprint);
  auto floor = c;
  floor.nodes[0].compute.kernel_floor *= 2;
  CHECK(cluster_fingerprint(floor) != m.fingerprint);
  auto label = c;
  label.device = "A100-SXM4-80GB";
  CHECK(cluster_fingerprint(label) != m.fingerprint);
  auto pinned = c;
  pinned.generation = gpu_generation::volta;
  auto pinned_label = pinned;
  pinned_label.device = "A100-SXM4-80GB";  // not read when the generation is given
  CHECK(cluster_fingerprint(pinned_label) == cluster_fingerprint(pinned));
}

TEST_CASE("made_for: JSON round trip at the top level; files without it still load") {
  const auto m = two();
  auto s = uniform_strategy(m, group_desc{}, "s");
  const auto plain = io::to_json_text(s);
  CHECK(plain.find("made_for") == std::string::npos);
  CHECK(io::parse_strategy(plain) == s);
  s.made_for = made_for_of(zoo::local(4));
  const auto text = io::to_json_text(s);
  CHECK(text.find("\"made_for\"") != std::string::npos);
  const auto back = io::parse_strategy(text);
  CHECK(back == s);
  REQUIRE(back.made_for.has_value());
  CHECK(back.made_for->cluster == "local-4");
  CHECK(back.made_for->world_size == 4);
}

TEST_CASE("made_for: malformed stamps name the field") {
  const std::string head = R"({"name": "s", "groups": [{}], "assignments": [{"tensor": "w", "group": 0}], "made_for": )";
  CHECK(thrown([&] { (void)io::parse_strategy(head + R"({"cluster": "a", "fingerprint": "f", "world_size": 4}})"); })
            .find("'made_for.ranks_per_node': required field is missing") != std::string::npos);
  CHECK(thrown([&] { (void)io::parse_strategy(head + R"({"cluster": "a", "fingerprint": "f", "world_size": 0, "ranks_per_node": 1}})"); })
            .find("'made_for.world_size': must be >= 1") != std::string::npos);
  CHECK(thrown([&] { (void)io::parse_strategy(head + R"({"cluster": "a", "fingerprint": "f", "world_size": 6, "ranks_per_node": 4}})"); })
            .find("'made_for.ranks_per_node': 4 does not divide world_size 6") != std::string::npos);
  CHECK(thrown([&] { (void)io::parse_strategy(head + R"({"cluster": "a", "fingerprint": "f", "world_size": 4, "ranks_per_node": 4, "x": 1}})"); })
            .find("'made_for.x': unknown key 'x'") != std::string::npos);
  CHECK(thrown([&] { (void)io::parse_strategy(head + R"("local-4"})"); }).find("'made_for': must be {") != std::string::npos);
  // the fingerprint in the form cluster_fingerprint writes, or an error naming it
  for (const char* fp : {"", "f", "fnv1a64:3f0c", "fnv1a64:3F0C00000000000A", "sha256:0123456789abcdef"})
    CHECK(thrown([&] {
            (void)io::parse_strategy(head + R"({"cluster": "a", "fingerprint": ")" + fp + R"(", "world_size": 4, "ranks_per_node": 4}})");
          }).find("'made_for.fingerprint': must be \"fnv1a64:\" and 16 hex digits") != std::string::npos);
  CHECK(io::parse_strategy(head + R"({"cluster": "a", "fingerprint": "fnv1a64:3f0c00000000000a", "world_size": 4, "ranks_per_node": 4}})")
            .made_for->fingerprint == "fnv1a64:3f0c00000000000a");
}

TEST_CASE("made_for: check_made_for names the field and both sides") {
  const auto c = zoo::local(4);
  const auto stamp = made_for_of(c);
  check_made_for(stamp, "s", c, 4, 4);  // matches: no throw
  CHECK(thrown([&] { check_made_for(stamp, "s", zoo::local(8), 8, 8); }) ==
        "'made_for.cluster': strategy 's' was made for cluster 'local-4'; this run's cluster is 'local-8' (search again for this "
        "cluster, or run on cluster 'local-4')");
  CHECK(thrown([&] { check_made_for(stamp, "s", c, 8, 8); }) ==
        "'made_for.world_size': strategy 's' was made for 4 ranks (cluster 'local-4', 4 ranks, 4 per node); this job has 8 ranks");
  CHECK(thrown([&] { check_made_for(stamp, "s", c, 4, 2); }) ==
        "'made_for.ranks_per_node': strategy 's' was made for 4 ranks per node (cluster 'local-4', 4 ranks, 4 per node); this job runs 2 per node");
  auto remeasured = c;
  remeasured.nodes[0].intra.latency *= 3;
  const auto msg = thrown([&] { check_made_for(stamp, "s", remeasured, 4, 4); });
  CHECK(msg.starts_with("'made_for.fingerprint': strategy 's' was made for cluster 'local-4' with fingerprint " + stamp.fingerprint));
  CHECK(msg.find("has fingerprint " + cluster_fingerprint(remeasured)) != std::string::npos);
}
