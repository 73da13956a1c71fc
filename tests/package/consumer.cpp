// Uses the installed headers the way a trainer does: a policy type, its descriptor and a validated
// strategy; then, with MPI (autosync::mpi), a session that averages a small model's gradients over
// the ranks (ctest runs it under mpiexec at 2 ranks). This file includes only <autosync/session.hpp>,
// as every translation unit of a trainer may; the session's definitions are compiled once, in
// consumer_session.cpp.
#include <autosync/autosync.hpp>
#ifdef AUTOSYNC_HAS_MPI
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/session.hpp>
#endif

#include <cstdio>
#include <span>
#include <vector>

int main(int argc, char** argv) {
  using namespace autosync;
  using s = strategy<topo::hierarchical<topo::ring, topo::tree>, comp::bf16, fuse::bucket_cap<1 << 20>>;
  static_assert(describe<s>().topology.inter == topology_kind::tree);
  model_spec m;
  m.name = "tiny";
  m.tensors = {tensor{"w", {4, 4}}, tensor{"b", {4}}};
  cluster_spec c;
  node_spec n;
  n.devices = 2;
  n.intra = {1e10, 1e-6};
  n.nic = {1e9, 1e-5};
  n.device_flops = 1e12;
  n.reduce_bandwidth = 1e10;
  c.nodes = {n, n};
  const auto st = uniform_strategy(m, describe<s>(), "consumer");
  st.validate(m, c);
  const auto items = expand(m, c, st);
  if (items.size() != 2 || items[0].wire_bytes != 32) {
    std::puts("consumer: unexpected items");
    return 1;
  }
#ifdef AUTOSYNC_HAS_MPI
  exec::mpi_session mpi(argc, argv);
  auto world = exec::mpi_backend::world();
  const int p = world.size(), r = world.rank();
  session sync(world, m, uniform_strategy(m, group_desc{}, "ring"));  // averages by default
  std::vector<float> w(16), b(4);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(i * (2 * r + 1));  // the average over p ranks: i * p
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(i * (2 * r + 1));
  std::vector<std::span<float>> grads{w, b};
  sync.begin(grads);
  sync.ready("b");
  sync.ready("w");
  sync.finish();
  for (std::size_t i = 0; i < w.size(); ++i)
    if (w[i] != float(i * p) || (i < b.size() && b[i] != float(i * p))) {
      std::printf("consumer: rank %d: element %zu is %g, expected %g\n", r, i, double(w[i]), double(i * p));
      return 1;
    }
  std::printf("consumer: ok (rank %d of %d: a session averaged the gradients exactly)\n", r, p);
#else
  (void)argc;
  (void)argv;
  std::puts("consumer: ok");
#endif
  return 0;
}
