// gbt::forest on hand-built trees: the split rule, missing values, accumulation types, output
// transforms, batch == single row, and structural validation with errors naming tree and node.
#include <autosync/gbt/forest.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gbt = autosync::gbt;

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();

// A node list in the loaders' form: (left, right, feature, threshold, flags, value).
struct node {
  std::int32_t left, right;
  std::uint32_t feature;
  float threshold;
  std::uint8_t flags;
  double value;
};
gbt::tree_nodes tree(std::initializer_list<node> nodes) {
  gbt::tree_nodes t;
  for (const node& n : nodes) {
    t.left.push_back(n.left);
    t.right.push_back(n.right);
    t.feature.push_back(n.feature);
    t.threshold.push_back(n.threshold);
    t.flags.push_back(n.flags);
    t.value.push_back(n.value);
  }
  return t;
}
node split(std::int32_t l, std::int32_t r, std::uint32_t f, float thr, std::uint8_t flags = 0) { return {l, r, f, thr, flags, 0.0}; }
node leaf(double v) { return {-1, -1, 0, 0.0f, 0, v}; }

std::string message_of(const gbt::forest_spec& spec) {
  try {
    (void)gbt::forest(spec);
  } catch (const autosync::error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("gbt forest: split rule x < threshold, NaN to the default child, zero-as-missing") {
  gbt::forest_spec spec;
  spec.num_features = 2;
  // Nodes listed out of breadth-first order on purpose (the forest renumbers them).
  spec.trees.push_back(tree({split(3, 1, 0, 1.0f, gbt::node_flag::default_left), leaf(-2.0), leaf(4.0),
                             split(4, 2, 1, 0.5f, gbt::node_flag::zero_is_missing), leaf(8.0)}));
  const gbt::forest f(spec);
  CHECK(f.num_trees() == 1);
  CHECK(f.num_nodes() == 2);
  CHECK(f.num_leaves() == 3);
  CHECK(f.depth(0) == 2);
  CHECK_THROWS_WITH_AS((void)f.depth(1), "'tree': 1 is out of range (the forest has 1 trees)", autosync::error);
  auto p = [&](float a, float b) {
    const float row[] = {a, b};
    return f.predict(row);
  };
  CHECK(p(0.0f, 0.4f) == 8.0f);                          // 0.4 < 0.5 -> left (8)
  CHECK(p(0.0f, 0.6f) == 4.0f);                          // right (4)
  CHECK(p(1.0f, 0.0f) == -2.0f);                         // a == threshold is not < : right
  CHECK(p(std::nextafter(1.0f, 0.0f), 0.6f) == 4.0f);    // just below: left
  CHECK(p(nan_f, 0.6f) == 4.0f);                         // NaN, default left
  CHECK(p(0.0f, nan_f) == 4.0f);                         // NaN, default right
  CHECK(p(0.0f, 0.0f) == 4.0f);                          // zero is missing here: default right, although 0 < 0.5
  CHECK(p(0.0f, 1e-35f) == 4.0f);                        // still "zero" (<= 1e-35)
  CHECK(p(0.0f, -1e-35f) == 4.0f);                       // and -1e-35: LightGBM 4's IsZero is -1e-35 <= x <= 1e-35
  CHECK(p(0.0f, std::nextafter(-1e-35f, -1.0f)) == 8.0f);  // not below it
  CHECK(p(0.0f, 2e-35f) == 8.0f);
  CHECK(p(-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()) == 4.0f);
}

TEST_CASE("gbt forest: accumulation order and type, base margin, transforms") {
  gbt::forest_spec spec;
  spec.num_features = 1;
  // Three single-leaf trees whose float sum depends on the order: 1e8 + 3 - 1e8 in float.
  spec.trees = {tree({leaf(1e8)}), tree({leaf(3.0)}), tree({leaf(-1e8)})};
  spec.acc = gbt::accumulation::f32;
  const float row[] = {0.0f};
  {
    const gbt::forest f(spec);
    CHECK(f.num_nodes() == 0);
    CHECK(f.depth(2) == 0);
    float expect = 0.0f;
    expect += 1e8f;
    expect += 3.0f;  // float spacing at 1e8 is 8: 100000003 rounds back to 100000000
    expect += -1e8f;
    CHECK(f.predict(row) == expect);
    CHECK(f.predict(row) == 0.0f);
  }
  spec.acc = gbt::accumulation::f64;
  CHECK(gbt::forest(spec).predict(row) == 3.0f);

  spec.trees = {tree({leaf(0.5)}), tree({leaf(0.25)})};
  spec.base_margin = -1.0;
  spec.acc = gbt::accumulation::f32;
  spec.transform = gbt::output_transform::sigmoid;
  {
    const gbt::forest f(spec);
    CHECK(f.predict_margin(row) == -0.25f);
    CHECK(f.predict(row) == 1.0f / (1.0f + std::exp(0.25f)));
  }
  spec.acc = gbt::accumulation::f64;
  spec.sigmoid_scale = 3.0;
  CHECK(gbt::forest(spec).predict(row) == static_cast<float>(1.0 / (1.0 + std::exp(0.75))));
  spec.transform = gbt::output_transform::exp;
  CHECK(gbt::forest(spec).predict(row) == static_cast<float>(std::exp(-0.25)));
  spec.acc = gbt::accumulation::f32;
  CHECK(gbt::forest(spec).predict(row) == std::exp(-0.25f));

  const gbt::forest empty;
  CHECK(empty.num_trees() == 0);
  CHECK(empty.predict(std::span<const float>()) == 0.0f);
}

TEST_CASE("gbt forest: batch prediction equals row-by-row prediction, any block boundary") {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  gbt::forest_spec spec;
  spec.num_features = 5;
  spec.transform = gbt::output_transform::sigmoid;
  for (int t = 0; t < 30; ++t) {
    // a complete depth-3 tree: 7 splits, 8 leaves
    gbt::tree_nodes tn;
    for (int i = 0; i < 15; ++i) {
      const bool is_leaf = i >= 7;
      tn.left.push_back(is_leaf ? -1 : 2 * i + 1);
      tn.right.push_back(is_leaf ? -1 : 2 * i + 2);
      tn.feature.push_back(static_cast<std::uint32_t>(g() % 5));
      tn.threshold.push_back(u(g));
      tn.flags.push_back(static_cast<std::uint8_t>(g() % 4));
      tn.value.push_back(u(g));
    }
    spec.trees.push_back(tn);
  }
  for (const auto acc : {gbt::accumulation::f32, gbt::accumulation::f64}) {
    spec.acc = acc;
    const gbt::forest f(spec);
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{200}}) {
      std::vector<float> rows(n * 5);
      for (auto& v : rows) v = g() % 7 == 0 ? nan_f : (g() % 11 == 0 ? 0.0f : u(g));
      std::vector<float> out(n), margins(n);
      f.predict(rows, n, out);
      f.predict_margin(rows, n, margins);
      for (std::size_t i = 0; i < n; ++i) {
        const std::span<const float> row(&rows[i * 5], 5);
        CHECK(std::bit_cast<std::uint32_t>(out[i]) == std::bit_cast<std::uint32_t>(f.predict(row)));
        CHECK(std::bit_cast<std::uint32_t>(margins[i]) == std::bit_cast<std::uint32_t>(f.predict_margin(row)));
      }
    }
  }
}

TEST_CASE("gbt forest: wrong row and batch sizes are errors naming the argument") {
  gbt::forest_spec spec;
  spec.num_features = 3;
  spec.trees = {tree({leaf(1.0)})};
  const gbt::forest f(spec);
  const float two[] = {1.0f, 2.0f};
  CHECK_THROWS_WITH_AS((void)f.predict(two), "'row': has 2 values; the forest has 3 features", autosync::error);
  std::vector<float> rows(7), out(2);
  CHECK_THROWS_WITH_AS(f.predict(rows, 2, out), "'rows': has 7 values; 2 rows of 3 features need 6", autosync::error);
  rows.resize(6);
  out.resize(3);
  CHECK_THROWS_WITH_AS(f.predict(rows, 2, out), "'out': has 3 entries for 2 rows", autosync::error);
  CHECK_THROWS_AS(f.predict(rows, std::numeric_limits<std::size_t>::max() / 2, out), autosync::error);
}

TEST_CASE("gbt forest: structural validation names the tree and the node") {
  gbt::forest_spec spec;
  spec.num_features = 2;
  auto with = [&](gbt::tree_nodes t) {
    gbt::forest_spec s = spec;
    s.trees = {tree({leaf(1.0)}), std::move(t)};
    return message_of(s);
  };
  CHECK(with(tree({split(1, 2, 0, 0.5f), leaf(1), leaf(2)})) == "(accepted)");
  CHECK(with(tree({split(1, 5, 0, 0.5f), leaf(1), leaf(2)})) == "'trees[1].nodes[0]': child 5 is out of range [0, 3)");
  CHECK(with(tree({split(1, -3, 0, 0.5f), leaf(1), leaf(2)})) == "'trees[1].nodes[0]': child -3 is out of range [0, 3)");
  CHECK(with(tree({split(1, -1, 0, 0.5f), leaf(1), leaf(2)})) == "'trees[1].nodes[0]': has one child (left 1, right -1)");
  CHECK(with(tree({split(1, 1, 0, 0.5f), leaf(1), leaf(2)})) == "'trees[1].nodes[0]': both children are node 1");
  CHECK(with(tree({split(1, 2, 2, 0.5f), leaf(1), leaf(2)})) ==
        "'trees[1].nodes[0]': feature 2 is out of range (the forest has 2 features)");
  CHECK(with(tree({split(1, 2, 0, nan_f), leaf(1), leaf(2)})) == "'trees[1].nodes[0]': threshold is NaN");
  CHECK(with(tree({split(1, 2, 0, 0.5f, 4), leaf(1), leaf(2)})) == "'trees[1].nodes[0]': unknown flag bits 4");
  CHECK(with(tree({split(1, 2, 0, 0.5f), leaf(std::nan("")), leaf(2)})) == "'trees[1].nodes[1]': leaf value is not finite");
  CHECK(with(tree({split(1, 2, 0, 0.5f), leaf(1), leaf(HUGE_VAL)})) == "'trees[1].nodes[2]': leaf value is not finite");
  // cycles: through the root, a node with two parents, and a loop away from the root
  CHECK(with(tree({split(1, 2, 0, 0.5f), split(0, 3, 1, 0.0f), leaf(2), leaf(3)})) ==
        "'trees[1].nodes[1]': has the root (node 0) as a child: a cycle");
  CHECK(with(tree({split(1, 2, 0, 0.5f), split(2, 3, 1, 0.0f), leaf(2), leaf(3)})) ==
        "'trees[1].nodes[2]': is a child of both node 0 and node 1");
  CHECK(with(tree({split(1, 2, 0, 0.5f), leaf(1), leaf(2), split(4, 5, 0, 0.0f), split(3, 6, 1, 1.0f), leaf(0), leaf(0)})) ==
        "'trees[1].nodes[3]': is on a cycle");
  CHECK(with(gbt::tree_nodes{}) == "'trees[1]': has no nodes");
  gbt::tree_nodes ragged = tree({split(1, 2, 0, 0.5f), leaf(1), leaf(2)});
  ragged.value.pop_back();
  CHECK(with(ragged) == "'trees[1]': node arrays differ in length (left 3, right 3, feature 3, threshold 3, flags 3, value 2)");
  // Unreachable, acyclic leaves (XGBoost's deleted nodes) are dropped.
  gbt::forest_spec s = spec;
  s.trees = {tree({split(1, 2, 0, 0.5f), leaf(1), leaf(2), leaf(99), leaf(98)})};
  const gbt::forest f(s);
  CHECK(f.num_leaves() == 2);
  // Non-finite base margin.
  s.base_margin = std::numeric_limits<double>::infinity();
  CHECK(message_of(s) == "'base_margin': is not finite");
}
