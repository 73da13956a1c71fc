// tests/emit/typed_mpi.cpp — an emitted strategy run typed on MPI, against the runtime path.
//
// emit_generate --typed writes typed_sample.hpp's strategy as a header (emitted_typed.hpp); this
// TU runs it two ways on the same ranks and the same gradients:
//   runtime  exec::executor<mpi_backend> on compile_plan(model, cluster, descriptor, layout):
//            each group dispatched once (Hana) into host_bucket_runner::run_as<A, T, C>
//   typed    exec::typed_executor<emitted::typed::strategy_t, mpi_backend> on
//            compile_plan<strategy_t>(model, cluster, emitted::typed::assignments, layout):
//            run_as<A, T, C> of each group's types, no dispatch
// and checks: iteration 0 (integer gradients) gives the exact sum on both; iterations 1..4
// (random non-integer gradients, error feedback carrying residuals across iterations) give the
// same bytes on both, for every tensor, with packing::always, automatic and never; a plan of
// another strategy is refused by the typed runner with an error naming the bucket.
// Run as mpiexec -np N (N = 2, 3, 4; ranks_per_node 2 when N is even: hierarchical levels
// of 2 x N/2). Exit 0 on every rank when every check passed.
#include "emitted_typed.hpp"
#include "typed_sample.hpp"
#include "../common/element_bytes.hpp"
#include "../common/random_strategies.hpp"

#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/session.hpp>
#include <autosync/exec/typed_executor.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using namespace autosync;
using namespace autosync::exec;
namespace e = emitted::typed;

static_assert(std::is_same_v<e::strategy_t, static_strategy<e::group_0, e::group_1, e::group_2, e::group_3, e::group_4, e::group_5,
                                                            e::group_6, e::group_7>>);
static_assert(std::is_same_v<e::strategy_t::group<6>::topology, topo::hierarchical<topo::halving_doubling, topo::halving_doubling>>);
static_assert(std::is_same_v<e::strategy_t::group<2>::compression, comp::bf16>);

namespace {

int failures = 0;
void check(bool ok, int rank, const std::string& what) {
  if (ok) return;
  if (++failures <= 20) std::fprintf(stderr, "[rank %d] typed_mpi: %s\n", rank, what.c_str());
}

struct buffers {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<gradient> grads;
  explicit buffers(const model_spec& m) {
    for (const auto& t : m.tensors) bytes.emplace_back(static_cast<std::size_t>(t.bytes()));
    for (std::size_t i = 0; i < m.tensors.size(); ++i)
      grads.push_back({bytes[i].data(), m.tensors[i].type, m.tensors[i].elements()});
  }
};

// Rank r's gradient element i of tensor t at iteration `it`: integers in [-8, 8] at iteration 0
// (their sums are exact on every path, also in fp16 / bf16), random reals after. A sparse
// tensor leaves rows untouched (zero) depending on the rank.
double value(const model_spec& m, std::size_t t, std::int64_t i, int r, int it, std::mt19937_64& rng) {
  const auto& x = m.tensors[t];
  if (x.sparse && ((i / x.slice_elements(0)) + r) % 3 == 0) return 0.0;
  if (it == 0) return static_cast<double>(static_cast<int>((static_cast<std::int64_t>(t) * 7 + i * 3 + r * 5) % 17) - 8);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  return x.type == dtype::i32 ? std::floor(u(rng)) : u(rng);
}
void fill(const model_spec& m, buffers& b, int r, int it) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(1000 * it + r));
  for (std::size_t t = 0; t < m.tensors.size(); ++t) {
    const auto& x = m.tensors[t];
    for (std::int64_t i = 0; i < x.elements(); ++i) {
      const double v = value(m, t, i, r, it, rng);
      unsigned char* at = b.bytes[t].data() + static_cast<std::size_t>(i) * size_of(x.type);
      if (x.type == dtype::i32) {
        const auto k = static_cast<std::int32_t>(v);
        std::memcpy(at, &k, 4);
      } else {
        testing::store(at, x.type, v);
      }
    }
  }
}
double element(const model_spec& m, const buffers& b, std::size_t t, std::int64_t i) {
  const auto& x = m.tensors[t];
  const unsigned char* at = b.bytes[t].data() + static_cast<std::size_t>(i) * size_of(x.type);
  if (x.type == dtype::i32) {
    std::int32_t k;
    std::memcpy(&k, at, 4);
    return k;
  }
  return testing::load(at, x.type);
}

template <class E>
void iterate(E& ex, const model_spec& m, buffers& b) {
  ex.begin_iteration(std::span<const gradient>(b.grads));
  for (auto t : m.backward_order()) ex.ready(t);
  ex.finish();
}

}  // namespace

int main(int argc, char** argv) {
  mpi_session session(argc, argv);
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const int rpn = p % 2 == 0 ? 2 : 1;
  try {
    const auto m = typed_sample::model();
    const auto cl = testing::make_cluster(p / rpn, rpn);
    const auto desc = typed_sample::strategy();
    check(to_descriptor<e::strategy_t>(e::assignments, e::name) == desc, r, "the emitted types do not rebuild the strategy");
    auto c = comms<mpi_backend>::make(mpi_backend::world(), rpn);
    const layout lay{p, rpn};
    const plan runtime_plan = compile_plan(m, cl, desc, lay);
    const plan typed_plan = compile_plan<e::strategy_t>(m, cl, e::assignments, lay, e::name);
    check(runtime_plan == typed_plan, r, "compile_plan<strategy_t> differs from the runtime plan");

    for (const auto pk : {packing::always, packing::automatic, packing::never}) {
      const executor_options o{0.0, true, false, pk};
      executor<mpi_backend> rt(c, m, runtime_plan, o);
      typed_executor<e::strategy_t, mpi_backend> ty(c, m, typed_plan, o);
      rt.setup();
      ty.setup();
      buffers a(m), b(m);
      for (int it = 0; it < 5; ++it) {
        fill(m, a, r, it);
        fill(m, b, r, it);
        iterate(rt, m, a);
        iterate(ty, m, b);
        const std::string where = "packing " + std::to_string(static_cast<int>(pk)) + ", iteration " + std::to_string(it);
        for (std::size_t t = 0; t < m.tensors.size(); ++t)
          check(a.bytes[t] == b.bytes[t], r, where + ": tensor " + m.tensors[t].name + " differs between the runtime and typed paths");
        if (it == 0) {  // the exact sums
          for (std::size_t t = 0; t < m.tensors.size(); ++t) {
            std::mt19937_64 unused;
            for (std::int64_t i = 0; i < m.tensors[t].elements(); ++i) {
              double want = 0.0;
              for (int q = 0; q < p; ++q) want += value(m, t, i, q, 0, unused);
              if (element(m, b, t, i) != want) {
                check(false, r, where + ": tensor " + m.tensors[t].name + " element " + std::to_string(i) + " is " +
                                    std::to_string(element(m, b, t, i)) + ", the sum is " + std::to_string(want));
                break;
              }
            }
          }
        }
      }
    }

    // A plan of another strategy (group 1 on ring instead of tree) is refused, naming the bucket.
    auto other = desc;
    other.groups[1].topology = topology_value{topology_kind::ring};
    const plan wrong = compile_plan(m, cl, other, lay);
    std::string field;
    try {
      typed_executor<e::strategy_t, mpi_backend> bad(c, m, wrong, {});
    } catch (const autosync::error& x) {
      field = x.field();
    }
    check(field.rfind("buckets[", 0) == 0 && field.find(".topology") != std::string::npos, r,
          "a plan of another strategy: expected an error naming a bucket's topology, got '" + field + "'");
  } catch (const std::exception& x) {
    check(false, r, std::string("exception: ") + x.what());
  }
  int bad = failures > 0 ? 1 : 0, any = 0;
  world.all_reduce(&bad, 1, dtype::i32);
  any = bad;
  if (r == 0) std::printf("typed_mpi: %d rank(s), %s\n", p, any ? "FAILED" : "runtime and typed paths agree bit for bit");
  return any ? 1 : 0;
}
