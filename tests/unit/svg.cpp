// The SVG timeline draws what the prediction says: one box per event, one per backward tensor,
// a lane per server, escaped names.
#include <autosync/io/svg.hpp>
#include <autosync/strategy/baselines.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace autosync;

namespace {
std::size_t count(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}
model_spec small_model() {
  model_spec m{"m<&>", {}, 4e9, 8, ""};
  for (int i = 0; i < 5; ++i) {
    tensor t{"t" + std::to_string(i), {256, 256}};
    t.backward_flops = 1e9;
    m.tensors.push_back(t);
  }
  m.tensors[2].name = "a<b>&\"c\"";
  return m;
}
cluster_spec two_nodes() {
  node_spec n;
  n.devices = 2;
  n.intra = {1e10, 1e-6};
  n.nic = {1e9, 1e-5};
  n.device_flops = 1e12;
  n.reduce_bandwidth = 1e10;
  cluster_spec c;
  c.name = "2x2";
  c.nodes = {n, n};
  c.nodes[0].name = "a";
  c.nodes[1].name = "b";
  return c;
}
}  // namespace

TEST_CASE("svg: one box per event and per backward tensor, plus the forward") {
  const auto m = small_model();
  const auto c = two_nodes();
  const auto s = baselines::ddp(m);
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = true});
  REQUIRE(!p.events.empty());
  const auto svg = io::timeline_svg(m, s, p, "title <x>");
  CHECK(svg.starts_with("<svg "));
  CHECK(svg.ends_with("</svg>\n"));
  // background + forward + 5 backward tensors + one per event
  CHECK(count(svg, "<rect ") == 1 + 1 + m.tensors.size() + p.events.size());
  CHECK(count(svg, "<title>") == 1 + m.tensors.size() + p.events.size());
  CHECK(svg.find("title &lt;x&gt;") != std::string::npos);
  CHECK(svg.find("a&lt;b&gt;&amp;&quot;c&quot;") != std::string::npos);
  CHECK(svg.find("collectives") != std::string::npos);
  CHECK(svg.find("server 0") == std::string::npos);  // no PS lane for an all-reduce strategy
}

TEST_CASE("svg: a lane per parameter server") {
  const auto m = small_model();
  const auto c = two_nodes();
  const auto s = baselines::ps_load_balanced(m);
  const auto p = cost::estimate(m, c, s, cost::options{.timeline = true});
  const auto svg = io::timeline_svg(m, s, p, "ps");
  CHECK(svg.find("server 0") != std::string::npos);
  CHECK(svg.find("server 1") != std::string::npos);
  CHECK(count(svg, "push/pull") >= 1);
}
