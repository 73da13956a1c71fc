// autosync/gbt/forest.hpp — a gradient-boosted forest for inference: flat structure-of-arrays
// nodes, branch-light traversal, single-row and blocked batch prediction.
//
// A forest is built from a forest_spec (what the loaders in xgboost.hpp and lightgbm.hpp produce):
// each tree as local node arrays, root = node 0, -1 children for a leaf. Construction validates
// the structure — children in range, no node with two parents, no cycle, feature indices below
// num_features, no NaN threshold, finite leaf values — and throws gbt::forest_error naming the tree
// and the node. Nodes a tree's root does not reach (XGBoost keeps pruned nodes as deleted leaves)
// are dropped; the rest is renumbered breadth first so a tree's top levels share cache lines.
//
// The evaluation rules (split rule, missing values, accumulation, output transforms) are in
// static_forest.hpp, shared with the constexpr forests that emit.hpp writes, so both give the same
// bits at run time.
#pragma once

#include <autosync/error.hpp>
#include <autosync/gbt/static_forest.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace autosync::gbt {

// One tree as a loader produces it. Nodes are numbered from 0 (the root); all arrays have one
// entry per node. For a leaf, left and right are -1 and only `value` counts; for an internal node
// `value` is ignored.
struct tree_nodes {
  std::vector<std::int32_t> left, right;
  std::vector<std::uint32_t> feature;
  std::vector<float> threshold;
  std::vector<std::uint8_t> flags;  // node_flag bits
  std::vector<double> value;
};

struct forest_spec {
  std::size_t num_features = 0;
  std::vector<tree_nodes> trees;
  double base_margin = 0.0;  // added before the first tree (a float value for accumulation::f32)
  output_transform transform = output_transform::identity;
  accumulation acc = accumulation::f32;
  double sigmoid_scale = 1.0;  // sigmoid(scale · margin); XGBoost: 1
};

// A structural error in a tree: what() is "'trees[T].nodes[N]': message"; tree() and node() let a
// loader name the field of its own format.
class forest_error : public error {
 public:
  static constexpr std::size_t no_node = std::numeric_limits<std::size_t>::max();
  forest_error(std::size_t tree, std::size_t node, const std::string& message)
      : error("trees[" + std::to_string(tree) + "]" + (node == no_node ? std::string() : ".nodes[" + std::to_string(node) + "]"), message),
        tree_(tree),
        node_(node) {}
  [[nodiscard]] std::size_t tree() const noexcept { return tree_; }
  [[nodiscard]] std::size_t node() const noexcept { return node_; }  // no_node when about the whole tree

 private:
  std::size_t tree_, node_;
};

class forest {
 public:
  // Rows per block in batch prediction: the block's accumulators stay in registers/L1 while one
  // tree's nodes are walked for every row of the block.
  static constexpr std::size_t block_rows = 64;
  // Largest number of nodes (internal + leaves) a forest may hold.
  static constexpr std::size_t max_nodes = std::size_t{1} << 30;

  forest() = default;  // no trees: predicts the transformed base margin 0
  explicit forest(const forest_spec& spec)
      : num_features_(spec.num_features),
        base_margin_(spec.base_margin),
        transform_(spec.transform),
        acc_(spec.acc),
        sigmoid_scale_(spec.sigmoid_scale) {
    if (!std::isfinite(spec.base_margin)) throw error("base_margin", "is not finite");
    if (!std::isfinite(spec.sigmoid_scale)) throw error("sigmoid_scale", "is not finite");
    if (spec.num_features > std::numeric_limits<std::uint32_t>::max()) throw error("num_features", "is too large");
    roots_.reserve(spec.trees.size());
    for (std::size_t t = 0; t < spec.trees.size(); ++t) add_tree(t, spec.trees[t]);
  }

  [[nodiscard]] std::size_t num_features() const noexcept { return num_features_; }
  [[nodiscard]] std::size_t num_trees() const noexcept { return roots_.size(); }
  [[nodiscard]] std::size_t num_nodes() const noexcept { return feature_.size(); }  // internal nodes
  [[nodiscard]] std::size_t num_leaves() const noexcept { return leaf_value_.size(); }
  // Levels of splits on the tree's longest root-to-leaf path (0 for a single leaf).
  [[nodiscard]] std::size_t depth(std::size_t tree) const {
    if (tree >= depth_.size()) throw error("tree", std::to_string(tree) + " is out of range (the forest has " + std::to_string(depth_.size()) + " trees)");
    return depth_[tree];
  }
  [[nodiscard]] double base_margin() const noexcept { return base_margin_; }
  [[nodiscard]] output_transform transform() const noexcept { return transform_; }
  [[nodiscard]] accumulation accumulation_type() const noexcept { return acc_; }
  [[nodiscard]] double sigmoid_scale() const noexcept { return sigmoid_scale_; }

  // The flat arrays (see static_forest.hpp for their meaning).
  [[nodiscard]] std::span<const std::int32_t> roots() const noexcept { return roots_; }
  [[nodiscard]] std::span<const std::uint32_t> feature() const noexcept { return feature_; }
  [[nodiscard]] std::span<const float> threshold() const noexcept { return threshold_; }
  [[nodiscard]] std::span<const std::int32_t> children() const noexcept { return children_; }
  [[nodiscard]] std::span<const std::uint8_t> flags() const noexcept { return flags_; }
  [[nodiscard]] std::span<const double> leaf_value() const noexcept { return leaf_value_; }

  [[nodiscard]] detail::forest_view view() const noexcept {
    return {roots_, feature_, threshold_, children_, flags_, leaf_value_, base_margin_, acc_};
  }

  // One row of num_features() values (NaN = missing); includes the base score and the output
  // transform.
  [[nodiscard]] float predict(std::span<const float> row) const {
    check_row(row);
    return detail::transform(transform_, acc_, margin(row.data()), sigmoid_scale_);
  }
  // Before the output transform.
  [[nodiscard]] float predict_margin(std::span<const float> row) const {
    check_row(row);
    return static_cast<float>(margin(row.data()));
  }
  // n_rows rows, row-major (rows.size() == n_rows · num_features()), into out[0, n_rows). Same bits
  // as predict() row by row.
  void predict(std::span<const float> rows, std::size_t n_rows, std::span<float> out) const { batch(rows, n_rows, out, true); }
  void predict_margin(std::span<const float> rows, std::size_t n_rows, std::span<float> out) const { batch(rows, n_rows, out, false); }

 private:
  void check_row(std::span<const float> row) const {
    if (row.size() != num_features_)
      throw error("row", "has " + std::to_string(row.size()) + " values; the forest has " + std::to_string(num_features_) + " features");
  }

  void batch(std::span<const float> rows, std::size_t n_rows, std::span<float> out, bool transformed) const {
    if (num_features_ != 0 && n_rows > std::numeric_limits<std::size_t>::max() / num_features_)
      throw error("n_rows", "n_rows · num_features overflows");
    if (rows.size() != n_rows * num_features_)
      throw error("rows", "has " + std::to_string(rows.size()) + " values; " + std::to_string(n_rows) + " rows of " +
                              std::to_string(num_features_) + " features need " + std::to_string(n_rows * num_features_));
    if (out.size() != n_rows) throw error("out", "has " + std::to_string(out.size()) + " entries for " + std::to_string(n_rows) + " rows");
    if (acc_ == accumulation::f32)
      batch_as<float>(rows.data(), n_rows, out.data(), transformed);
    else
      batch_as<double>(rows.data(), n_rows, out.data(), transformed);
  }

  // Walks interleaved: 8 trees for one row; 32 rows of one tree in a batch (32 measured best of
  // 4/8/16/32 with tests/bench/gbt_predict.cpp: 100 trees of depth 6, x86-64).
  static constexpr std::size_t lanes = 8;
  static constexpr std::size_t batch_lanes = 32;

  // Interleaved walks: K independent root-to-leaf walks advance one level per step, so their
  // loads overlap instead of forming one long dependency chain. A walk that reached its leaf (a
  // negative reference) stays there: the step is branch-free, reading node 0 as a harmless dummy
  // (it exists whenever steps > 0). `steps` is the depth of the deepest of the K trees.
  template <std::size_t K>
  void walk(std::int32_t (&n)[K], const float* const* rows, std::size_t steps) const noexcept {
    const std::uint32_t* feature = feature_.data();
    const float* threshold = threshold_.data();
    const std::uint8_t* flags = flags_.data();
    const std::int32_t* children = children_.data();
    for (std::size_t s = 0; s < steps; ++s)
      for (std::size_t k = 0; k < K; ++k) {
        const std::int32_t cur = n[k];
        const auto u = static_cast<std::size_t>(cur < 0 ? 0 : cur);
        const bool left = detail::goes_left(rows[k][feature[u]], threshold[u], flags[u]);
        const std::int32_t next = children[2 * u + (left ? 0u : 1u)];
        n[k] = cur < 0 ? cur : next;
      }
  }

  // One row: `lanes` trees at a time walked together, their leaves then added in tree order, so
  // the sum is the one forest_view::margin computes.
  [[nodiscard]] double margin(const float* row) const noexcept {
    if (acc_ == accumulation::f32) return margin_as<float>(row);
    return margin_as<double>(row);
  }
  template <class Acc>
  [[nodiscard]] double margin_as(const float* row) const noexcept {
    auto sum = static_cast<Acc>(base_margin_);
    const std::size_t n_trees = roots_.size();
    std::size_t t = 0;
    const float* rows[lanes];
    std::fill_n(rows, lanes, row);
    for (; t + lanes <= n_trees; t += lanes) {
      std::int32_t n[lanes];
      std::size_t steps = 0;
      for (std::size_t k = 0; k < lanes; ++k) {
        n[k] = roots_[t + k];
        steps = std::max<std::size_t>(steps, depth_[t + k]);
      }
      walk(n, rows, steps);
      for (std::size_t k = 0; k < lanes; ++k) sum += static_cast<Acc>(leaf_value_[static_cast<std::size_t>(~n[k])]);
    }
    const detail::forest_view v = view();
    for (; t < n_trees; ++t) sum += static_cast<Acc>(leaf_value_[v.leaf(roots_[t], row)]);
    return static_cast<double>(sum);
  }

  // Tree by tree over a block of rows, `batch_lanes` rows walked together; per row the additions
  // happen in tree order, as in single-row prediction, so the results are identical.
  template <class Acc>
  void batch_as(const float* rows, std::size_t n_rows, float* out, bool transformed) const {
    const detail::forest_view v = view();
    std::array<Acc, block_rows> acc{};
    for (std::size_t begin = 0; begin < n_rows; begin += block_rows) {
      const std::size_t n = std::min(block_rows, n_rows - begin);
      const float* block = rows + begin * num_features_;
      std::fill_n(acc.begin(), n, static_cast<Acc>(base_margin_));
      for (std::size_t t = 0; t < roots_.size(); ++t) {
        const std::int32_t root = roots_[t];
        std::size_t i = 0;
        for (; i + batch_lanes <= n; i += batch_lanes) {
          std::int32_t refs[batch_lanes];
          const float* lane_rows[batch_lanes];
          for (std::size_t k = 0; k < batch_lanes; ++k) {
            refs[k] = root;
            lane_rows[k] = block + (i + k) * num_features_;
          }
          walk(refs, lane_rows, depth_[t]);
          for (std::size_t k = 0; k < batch_lanes; ++k) acc[i + k] += static_cast<Acc>(leaf_value_[static_cast<std::size_t>(~refs[k])]);
        }
        for (; i < n; ++i) acc[i] += static_cast<Acc>(leaf_value_[v.leaf(root, block + i * num_features_)]);
      }
      for (std::size_t i = 0; i < n; ++i)
        out[begin + i] = transformed ? detail::transform(transform_, acc_, static_cast<double>(acc[i]), sigmoid_scale_)
                                     : static_cast<float>(acc[i]);
    }
  }

  void add_tree(std::size_t t, const tree_nodes& tree) {
    const std::size_t n = tree.left.size();
    if (n == 0) throw forest_error(t, forest_error::no_node, "has no nodes");
    if (tree.right.size() != n || tree.feature.size() != n || tree.threshold.size() != n || tree.flags.size() != n ||
        tree.value.size() != n)
      throw forest_error(t, forest_error::no_node,
                         "node arrays differ in length (left " + std::to_string(n) + ", right " + std::to_string(tree.right.size()) +
                             ", feature " + std::to_string(tree.feature.size()) + ", threshold " + std::to_string(tree.threshold.size()) +
                             ", flags " + std::to_string(tree.flags.size()) + ", value " + std::to_string(tree.value.size()) + ")");
    if (n > max_nodes || feature_.size() + leaf_value_.size() + n > max_nodes)
      throw forest_error(t, forest_error::no_node, "the forest would exceed " + std::to_string(max_nodes) + " nodes");

    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    std::vector<std::size_t> parent(n, none);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t l = tree.left[i], r = tree.right[i];
      if (l == -1 && r == -1) {
        if (!std::isfinite(tree.value[i])) throw forest_error(t, i, "leaf value is not finite");
        continue;
      }
      if (l == -1 || r == -1)
        throw forest_error(t, i, "has one child (left " + std::to_string(l) + ", right " + std::to_string(r) + ")");
      for (const std::int32_t c : {l, r})
        if (c < 0 || static_cast<std::size_t>(c) >= n)
          throw forest_error(t, i, "child " + std::to_string(c) + " is out of range [0, " + std::to_string(n) + ")");
      if (l == r) throw forest_error(t, i, "both children are node " + std::to_string(l));
      if (tree.feature[i] >= num_features_)
        throw forest_error(t, i, "feature " + std::to_string(tree.feature[i]) + " is out of range (the forest has " +
                                     std::to_string(num_features_) + " features)");
      if (std::isnan(tree.threshold[i])) throw forest_error(t, i, "threshold is NaN");
      if ((tree.flags[i] & ~(node_flag::default_left | node_flag::zero_is_missing)) != 0)
        throw forest_error(t, i, "unknown flag bits " + std::to_string(tree.flags[i]));
      for (const std::int32_t c : {l, r}) {
        const auto u = static_cast<std::size_t>(c);
        if (u == 0) throw forest_error(t, i, "has the root (node 0) as a child: a cycle");
        if (parent[u] != none)
          throw forest_error(t, u, "is a child of both node " + std::to_string(parent[u]) + " and node " + std::to_string(i));
        parent[u] = i;
      }
    }
    // Every node has at most one parent, so a node not reachable from a parentless node is on a
    // cycle (or below one).
    std::vector<char> seen(n, 0);
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < n; ++i) {
      if (parent[i] != none) continue;
      stack.push_back(i);
      while (!stack.empty()) {
        const std::size_t u = stack.back();
        stack.pop_back();
        seen[u] = 1;
        if (tree.left[u] != -1) {
          stack.push_back(static_cast<std::size_t>(tree.left[u]));
          stack.push_back(static_cast<std::size_t>(tree.right[u]));
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!seen[i]) throw forest_error(t, i, "is on a cycle");

    // Breadth-first renumbering of what the root reaches: internal nodes get global numbers in
    // visiting order, leaves get leaf slots; children are filled in as their targets are numbered.
    auto ref_of = [&](std::size_t u) -> std::int32_t {
      if (tree.left[u] == -1) {
        leaf_value_.push_back(tree.value[u]);
        return ~static_cast<std::int32_t>(leaf_value_.size() - 1);
      }
      feature_.push_back(tree.feature[u]);
      threshold_.push_back(tree.threshold[u]);
      flags_.push_back(tree.flags[u]);
      children_.push_back(0);
      children_.push_back(0);
      return static_cast<std::int32_t>(feature_.size() - 1);
    };
    struct visit {
      std::size_t local;
      std::int32_t ref;
      std::uint32_t level;
    };
    std::vector<visit> queue;
    queue.push_back({0, ref_of(0), 0});
    roots_.push_back(queue.front().ref);
    std::uint32_t tree_depth = 0;
    for (std::size_t q = 0; q < queue.size(); ++q) {
      const auto [u, g, level] = queue[q];
      if (g < 0) continue;
      tree_depth = std::max(tree_depth, level + 1);
      const auto gu = static_cast<std::size_t>(g);
      const auto l = static_cast<std::size_t>(tree.left[u]), r = static_cast<std::size_t>(tree.right[u]);
      const std::int32_t gl = ref_of(l);
      const std::int32_t gr = ref_of(r);
      children_[2 * gu] = gl;
      children_[2 * gu + 1] = gr;
      queue.push_back({l, gl, level + 1});
      queue.push_back({r, gr, level + 1});
    }
    depth_.push_back(tree_depth);
  }

  std::size_t num_features_ = 0;
  double base_margin_ = 0.0;
  output_transform transform_ = output_transform::identity;
  accumulation acc_ = accumulation::f32;
  double sigmoid_scale_ = 1.0;
  std::vector<std::int32_t> roots_;
  std::vector<std::uint32_t> feature_;
  std::vector<float> threshold_;
  std::vector<std::int32_t> children_;
  std::vector<std::uint8_t> flags_;
  std::vector<double> leaf_value_;
  std::vector<std::uint32_t> depth_;  // per tree: levels from the root to its deepest leaf
};

}  // namespace autosync::gbt
