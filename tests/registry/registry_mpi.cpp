// tests/registry/registry_mpi.cpp — the registered compressor and slot of ext.hpp run on MPI
// (ctest registry.mpi.npN): integer-valued gradients, exact sums after encode -> collective ->
// decode, on every architecture that runs a dense bucket, two iterations (codec state kept).
#include "ext.hpp"

#include "../mpi/harness.hpp"

#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>

#include "../common/random_strategies.hpp"

#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

model_spec small_model() {
  model_spec m;
  m.name = "registry";
  m.forward_flops = 1e6;
  const std::int64_t sizes[] = {300, 17, 1024, 5};
  for (int i = 0; i < 4; ++i) {
    tensor t;
    t.name = "t" + std::to_string(i);
    t.shape = {sizes[i]};
    t.type = i % 2 == 0 ? dtype::f32 : dtype::f64;
    m.tensors.push_back(t);
  }
  return m;
}

double value(int rank, std::size_t t, std::size_t i, int iter) {
  return static_cast<double>(static_cast<int>((rank + 1) * 7 + t * 13 + i % 97 + iter * 3) % 201 - 100);
}

}  // namespace

TEST_CASE("registry: a registered compressor and slot run on MPI with exact integer sums") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size(), r = c.world.rank();
  const auto m = small_model();
  const auto cl = testing::make_cluster(p, 1, 0);
  for (auto arch : {architecture_kind::all_reduce, architecture_kind::sharded, architecture_kind::parameter_server}) {
    for (int variant = 0; variant < 3; ++variant) {
      CONTEXT("architecture " << std::string(name_of(arch)) << ", variant " << variant);
      group_desc g;
      g.architecture = arch;
      g.fusion = {4096, 4096};
      if (arch == architecture_kind::parameter_server) g.placement = placement_value{placement_kind::round_robin, 0};
      if (variant != 1) g.compression = compression_value{stable_id("fixed32"), {variant == 2 ? 4.0 : 1.0, 0, 0}};
      if (variant != 0) g = with_extension(g, ext_value::of("prescale", "by", {4, 0, 0}));
      const auto s = uniform_strategy(m, g, "registry");
      s.validate(m, cl);
      const auto pl = compile_plan(m, cl, s, layout{p, 1});
      bool hooked = true;
      for (const auto& b : pl.buckets) hooked = hooked && b.hooked;
      CHECK(hooked);
      executor<mpi_backend> ex(c, m, pl, {});
      ex.setup();
      std::vector<std::vector<float>> f32(m.tensors.size());
      std::vector<std::vector<double>> f64(m.tensors.size());
      for (int iter = 0; iter < 2; ++iter) {
        std::vector<gradient> gr;
        for (std::size_t t = 0; t < m.tensors.size(); ++t) {
          const auto n = static_cast<std::size_t>(m.tensors[t].elements());
          if (m.tensors[t].type == dtype::f32) {
            f32[t].resize(n);
            for (std::size_t i = 0; i < n; ++i) f32[t][i] = static_cast<float>(value(r, t, i, iter));
            gr.push_back(gradient{f32[t].data(), dtype::f32, m.tensors[t].elements()});
          } else {
            f64[t].resize(n);
            for (std::size_t i = 0; i < n; ++i) f64[t][i] = value(r, t, i, iter);
            gr.push_back(gradient{f64[t].data(), dtype::f64, m.tensors[t].elements()});
          }
        }
        ex.begin_iteration(std::span<const gradient>(gr));
        for (auto t : m.backward_order()) ex.ready(t);
        (void)ex.finish();
        long wrong = 0;
        for (std::size_t t = 0; t < m.tensors.size(); ++t) {
          const auto n = static_cast<std::size_t>(m.tensors[t].elements());
          for (std::size_t i = 0; i < n; ++i) {
            double want = 0;
            for (int q = 0; q < p; ++q) want += value(q, t, i, iter);
            const double got = m.tensors[t].type == dtype::f32 ? static_cast<double>(f32[t][i]) : f64[t][i];
            wrong += got != want ? 1 : 0;
          }
        }
        CHECK_EQ(wrong, 0L);
      }
    }
  }
}
