// 01 — cost a strategy: what does PyTorch DDP's default cost for ResNet-50 on AutoSync's cluster B?
//
// A model from the zoo, a cluster preset, a baseline strategy built by the same code users
// call, and the analytical estimate with its timeline: compute, buckets, exposed communication.
#include <autosync/cost/estimate.hpp>
#include <autosync/strategy/baselines.hpp>
#include <autosync/zoo/clusters.hpp>
#include <autosync/zoo/models.hpp>

#include <cstdio>

int main() {
  using namespace autosync;
  const model_spec m = zoo::make_model("resnet50");
  const cluster_spec c = zoo::make_cluster("autosync-b");  // 4 x g4dn.12xlarge (4 x T4), 50 GbE
  const strategy_desc s = baselines::ddp(m);               // 25 MiB buckets, 1 MiB first, ring
  s.validate(m, c);

  const cost::prediction p = cost::estimate(m, c, s, cost::options{.timeline = true});
  std::printf("%s on %s (%d ranks), strategy %s\n", m.name.c_str(), c.name.c_str(), c.world_size(), s.name.c_str());
  std::printf("  forward %.2f ms, backward %.2f ms, communication busy %.2f ms, exposed %.2f ms\n", p.forward * 1e3,
              p.backward * 1e3, p.communication * 1e3, p.exposed * 1e3);
  std::printf("  predicted iteration %.2f ms (lower bound %.2f ms)\n", p.iteration * 1e3, p.lower_bound * 1e3);
  std::printf("  buckets on the communicator:\n");
  for (const auto& e : p.events)
    std::printf("    bucket %2u  %8.2f MiB  %8.2f -> %8.2f ms\n", e.bucket, e.bytes / 1048576.0, e.start * 1e3, e.end * 1e3);
}
