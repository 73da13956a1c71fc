// gbt::emit_header: the text it writes (names, namespaces, exact hexadecimal numbers) and its
// errors. The emitted headers are compiled and compared with the runtime forests by ctest
// gbt_emit_roundtrip (tests/data/gbt/emit_check.cpp), which also holds the static_assert tests.
#include <autosync/gbt/emit.hpp>
#include <autosync/gbt/lightgbm.hpp>

#include <doctest/doctest.h>

#include <limits>
#include <string>

namespace gbt = autosync::gbt;

namespace {

// One split of feature 1 at `threshold`.
gbt::forest small(float threshold = 0.1f) {
  gbt::forest_spec spec;
  spec.num_features = 2;
  gbt::tree_nodes t;
  t.left = {1, -1, -1};
  t.right = {2, -1, -1};
  t.feature = {1, 0, 0};
  t.threshold = {threshold, 0, 0};
  t.flags = {gbt::node_flag::default_left, 0, 0};
  t.value = {0, 0.1, -2.5};
  spec.trees = {t};
  spec.base_margin = 0.5;
  spec.transform = gbt::output_transform::exp;
  spec.acc = gbt::accumulation::f64;
  return gbt::forest(spec);
}

}  // namespace

TEST_CASE("gbt emit_header: the written text") {
  const std::string h = gbt::emit_header(small(), "my::models::tiny");
  CHECK(h.find("#pragma once\n\n#include <autosync/gbt/static_forest.hpp>\n") != std::string::npos);
  CHECK(h.find("namespace my::models {\n") != std::string::npos);
  CHECK(h.find("}  // namespace my::models\n") != std::string::npos);
  CHECK(h.find("inline constexpr autosync::gbt::static_forest<2, 1, 1, 2> tiny{\n") != std::string::npos);
  CHECK(h.find(".threshold = {\n        0x1.99999ap-4f},") != std::string::npos);   // 0.1f exactly
  CHECK(h.find(".leaf_value = {\n        0x1.999999999999ap-4, -0x1.4p+1},") != std::string::npos);  // 0.1 (double) exactly
  CHECK(h.find(".roots = {\n        0},") != std::string::npos);
  CHECK(h.find(".children = {\n        -1, -2},") != std::string::npos);
  CHECK(h.find(".flags = {\n        1},") != std::string::npos);
  CHECK(h.find(".base_margin = 0x1p-1,") != std::string::npos);
  CHECK(h.find(".transform = autosync::gbt::output_transform::exp,") != std::string::npos);
  CHECK(h.find(".acc = autosync::gbt::accumulation::f64,") != std::string::npos);
  CHECK(h.find("// 2 features, 1 trees, 1 internal nodes, 2 leaves; output exp.") != std::string::npos);
  // An unqualified name opens no namespace; the text is deterministic.
  const std::string plain = gbt::emit_header(small(), "tiny");
  CHECK(plain.find("namespace") == std::string::npos);
  CHECK(plain == gbt::emit_header(small(), "tiny"));
}

TEST_CASE("gbt emit_header: an infinite threshold is written through numeric_limits, and <limits> included") {
  // (a LightGBM threshold beyond float's range loads as +inf: every finite value goes left)
  const std::string h = gbt::emit_header(small(std::numeric_limits<float>::infinity()), "inf_model");
  CHECK(h.find("#include <autosync/gbt/static_forest.hpp>\n\n#include <limits>\n") != std::string::npos);
  CHECK(h.find(".threshold = {\n        std::numeric_limits<float>::infinity()},") != std::string::npos);
  CHECK(h.find("inff") == std::string::npos);
  // a finite forest's header stays as it was: no <limits>
  CHECK(gbt::emit_header(small(), "tiny").find("<limits>") == std::string::npos);
}

TEST_CASE("gbt emit_header: errors") {
  CHECK_THROWS_WITH_AS(gbt::emit_header(small(), "2fast"), "'name': '2fast' is not a C++ identifier (optionally qualified)", autosync::error);
  CHECK_THROWS_WITH_AS(gbt::emit_header(small(), "a::"), "'name': 'a::' is not a C++ identifier (optionally qualified)", autosync::error);
  CHECK_THROWS_WITH_AS(gbt::emit_header(small(), "a-b"), "'name': 'a-b' is not a C++ identifier (optionally qualified)", autosync::error);
  CHECK_THROWS_WITH_AS(gbt::emit_header(small(), ""), "'name': '' is not a C++ identifier (optionally qualified)", autosync::error);
  CHECK_THROWS_WITH_AS(gbt::emit_header(gbt::forest(), "x"), "'forest': has no trees; there is nothing to embed", autosync::error);
}
