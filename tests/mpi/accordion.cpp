// tests/mpi/accordion.cpp — Accordion's switching (include/autosync/compressors/accordion.hpp)
// through a session on MPI (ctest mpi.accordion.npN):
//   - accordion_int8 with interval 2 on integer-valued gradients whose size the test controls:
//     the first intervals are critical (no compression: every sum exact), a steady gradient
//     (ratio 0) switches to int8 (sums within int8's bound, not all exact), a gradient 4x larger
//     (ratio 3 >= 0.5) switches back to exact sums;
//   - every rank gets the same bits and notes the same decisions;
//   - learn::record_trial carries the decisions ("exchange_notes"), through JSON and back;
//   - accordion_topk conserves the sum exactly across its switches (error feedback in both
//     levels): after the gradients stop, zero gradients drain the residuals of the active level,
//     and a switch back drains the other's.
#include <autosync/compressors/all.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/learn/record_trial.hpp>
#include <autosync/session_impl.hpp>

#include "harness.hpp"
#include "same_bits.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace autosync;
using exec::mpi_backend;

namespace {

model_spec net() {
  model_spec m;
  m.name = "accordion";
  const std::vector<std::pair<const char*, std::vector<std::int64_t>>> ts{{"w", {37, 23}}, {"b", {23}}, {"v", {19, 41}}};
  for (const auto& [n, s] : ts) {
    tensor t;
    t.name = n;
    t.shape = s;
    t.backward_flops = 1e6;
    m.tensors.push_back(t);
  }
  m.forward_flops = 1e6;
  return m;
}

strategy_desc one_bucket(const model_spec& m, compression_value c) {
  group_desc g;
  g.compression = c;
  g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  return uniform_strategy(m, g, "accordion");
}

float value(int rank, std::size_t t, std::size_t i) { return static_cast<float>(static_cast<int>((rank + 3) * 11 + t * 7 + i * 5) % 41 - 20); }

struct grads {
  std::vector<std::vector<float>> v;
  explicit grads(const model_spec& m) {
    for (const auto& t : m.tensors) v.emplace_back(static_cast<std::size_t>(t.elements()), 0.0f);
  }
  std::vector<exec::gradient> spans() {
    std::vector<exec::gradient> r;
    for (auto& x : v) r.push_back(exec::gradient{x.data(), dtype::f32, static_cast<std::int64_t>(x.size())});
    return r;
  }
};

void step(session<mpi_backend>& s, grads& g) {
  auto sp = g.spans();
  s.begin(std::span<const exec::gradient>(sp));
  for (std::size_t k = s.model().tensors.size(); k-- > 0;) s.ready(k);
  (void)s.finish();
}

}  // namespace

TEST_CASE("accordion_int8: critical intervals are exact, steady ones int8, a jump in the norm switches back") {
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const auto m = net();
  session_options o;
  o.reduce = reduction::sum;
  session s(world, m, one_bucket(m, compression_value{stable_id("accordion_int8"), {2, 0, 0}}), o);
  // scale per iteration: intervals [0,1] [2,3] steady, [4,5] steady, [6,7] x4, [8,9] x4
  const float scale[] = {1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 4};
  std::vector<int> exact(12, 0);
  for (int it = 0; it < 12; ++it) {
    grads g(m);
    for (std::size_t t = 0; t < g.v.size(); ++t)
      for (std::size_t i = 0; i < g.v[t].size(); ++i) g.v[t][i] = scale[it] * value(r, t, i);
    step(s, g);
    CHECK(mpitest::same_on_every_rank(world, g.v));
    bool all_exact = true;
    for (std::size_t t = 0; t < g.v.size(); ++t)
      for (std::size_t i = 0; i < g.v[t].size(); ++i) {
        float want = 0;
        for (int q = 0; q < p; ++q) want += scale[it] * value(q, t, i);
        all_exact = all_exact && g.v[t][i] == want;
        // int8's bound when compressed: two quantizations of ranges <= 2 * 20 * scale per rank
        CHECK(std::abs(g.v[t][i] - want) <= (2.0f * static_cast<float>(p) * 40.0f * scale[it] / 510.0f) * 1.01f + 1e-4f);
      }
    exact[static_cast<std::size_t>(it)] = all_exact ? 1 : 0;
  }
  // decisions at the end of iterations 1, 3, 5, 7, 9, 11 (interval 2):
  //   1: no history -> critical;  3: ratio 0 -> int8;  5: 0 -> int8;  7: 3 -> critical;  9: 0 -> int8; 11: 0 -> int8
  const std::vector<int> want_exact{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
  CHECK(exact == want_exact);
  const auto notes = s.exchange_notes();
  std::vector<double> levels;
  std::vector<std::int64_t> at;
  for (const auto& n : notes)
    if (n.key == "accordion.level") levels.push_back(n.value), at.push_back(n.iteration);
  CHECK(levels == std::vector<double>{0, 1, 1, 0, 1, 1});
  CHECK(at == std::vector<std::int64_t>{1, 3, 5, 7, 9, 11});
  for (const auto& n : notes)
    if (n.key == "accordion.ratio" && n.iteration == 7) CHECK(std::abs(n.value - 3.0) < 3e-3);
  // the record carries them, through JSON
  std::vector<learn::step_measure> mine(1, learn::step_measure{1e-3, 1e-4, 2e-3});
  learn::trial_context ctx;
  ctx.autosync_version = "test";
  const auto rec = learn::record_trial(s, mine, ctx);
  CHECK(rec.exchange_notes == notes);
  const auto back = learn::parse_record(learn::to_line(rec));
  CHECK(back.exchange_notes == notes);  // +inf (the first ratio) survives as "inf"
  CHECK(std::isinf(back.exchange_notes[1].value));
}

TEST_CASE("accordion_topk: error feedback conserves the sum exactly across switches") {
  auto world = mpi_backend::world();
  const int r = world.rank(), p = world.size();
  const auto m = net();
  session_options o;
  o.reduce = reduction::sum;
  // interval 3: [0..2] critical (density 0.99); [3..5] the same gradients (ratio ~0 -> density
  // 0.2); [6..8] 8x larger (ratio > 0.5 -> critical again); then zeros drain both levels' residuals.
  session s(world, m, one_bucket(m, compression_value{stable_id("accordion_topk"), {0.99, 0.2, 3}}), o);
  std::vector<std::vector<double>> total(m.tensors.size()), want(m.tensors.size());
  for (std::size_t t = 0; t < m.tensors.size(); ++t) {
    total[t].assign(static_cast<std::size_t>(m.tensors[t].elements()), 0.0);
    want[t] = total[t];
  }
  for (int it = 0; it < 60; ++it) {
    grads g(m);
    const float scale = it < 6 ? 1.0f : (it < 9 ? 8.0f : 0.0f);
    if (scale > 0)
      for (std::size_t t = 0; t < g.v.size(); ++t)
        for (std::size_t i = 0; i < g.v[t].size(); ++i) {
          g.v[t][i] = scale * value(r, t, i);
          for (int q = 0; q < p; ++q) want[t][i] += scale * value(q, t, i);
        }
    step(s, g);
    CHECK(mpitest::same_on_every_rank(world, g.v));
    for (std::size_t t = 0; t < g.v.size(); ++t)
      for (std::size_t i = 0; i < g.v[t].size(); ++i) total[t][i] += g.v[t][i];
  }
  for (std::size_t t = 0; t < total.size(); ++t)
    for (std::size_t i = 0; i < total[t].size(); ++i) CHECK(total[t][i] == want[t][i]);
  std::vector<double> levels;
  for (const auto& n : s.exchange_notes())
    if (n.key == "accordion.level") levels.push_back(n.value);
  REQUIRE(levels.size() == 20);
  CHECK(levels[0] == 0);  // no history
  CHECK(levels[1] == 1);  // the same gradients: high compression
  CHECK(levels[2] == 0);  // 8x larger: critical
}
