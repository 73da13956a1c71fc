// Uses the installed headers the way a trainer would: a policy type, its descriptor, and a
// validated strategy for a small model.
#include <autosync/autosync.hpp>

#include <cstdio>

int main() {
  using namespace autosync;
  using s = strategy<topo::hierarchical<topo::ring, topo::tree>, comp::bf16, fuse::bucket_cap<1 << 20>>;
  static_assert(describe<s>().topology.inter == topology_kind::tree);
  model_spec m{"tiny", {tensor{"w", {4, 4}}, tensor{"b", {4}}}};
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
  std::puts("consumer: ok");
  return 0;
}
