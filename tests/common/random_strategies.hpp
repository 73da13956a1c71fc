// tests/common/random_strategies.hpp — random small models and valid strategies over every
// slot, for the property tests of the plan compiler (tests/unit/plan.cpp) and the executor
// (tests/mpi/executor.cpp): one generator, so both suites draw from the same space.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace autosync::testing {

inline node_spec worker(int devices) {
  node_spec n;
  n.devices = devices;
  n.intra = {1e10, 1e-6};
  n.nic = {1e9, 1e-5};
  n.device_flops = 1e12;
  n.reduce_bandwidth = 1e10;
  return n;
}

inline cluster_spec make_cluster(int nodes, int rpn, int dedicated = 0) {
  cluster_spec c;
  c.name = "test";
  for (int i = 0; i < nodes; ++i) c.nodes.push_back(worker(rpn));
  for (int i = 0; i < dedicated; ++i) {
    node_spec s = worker(0);
    s.server_only = true;
    c.nodes.push_back(s);
  }
  return c;
}

inline bool fits(const group_desc& g, const tensor& t, int split_axis, std::int64_t extent) {
  const bool dense_arch = g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded;
  if (t.sparse && dense_arch) return false;
  if (!t.sparse && g.architecture == architecture_kind::all_gather) return false;
  if (g.partitioner.kind == partitioner_kind::even) {
    const auto ax = g.partitioner.axis;
    if (static_cast<std::size_t>(ax) >= t.shape.size()) return false;
    if (t.sparse && ax != 0) return false;
    if (split_axis >= 0 && ax != split_axis) return false;
    const auto d = split_axis >= 0 ? extent : t.shape[static_cast<std::size_t>(ax)];
    if (g.partitioner.shards > d) return false;
  }
  if (g.partitioner.kind == partitioner_kind::by_bytes && split_axis > 0) return false;
  return true;
}

struct random_case {
  model_spec model;
  strategy_desc strategy;
};

// `compressed`: every group compresses (fp16 or bf16) and the tensors are f32/f64 (the bound test).
inline random_case random_strategy(std::mt19937& rng, int servers, bool compressed = false) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  random_case rc;
  rc.model.name = "random";
  const std::int64_t sizes[] = {1, 2, 3, 5, 7, 13, 17, 31, 64, 100};
  const dtype types[] = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  const int T = 1 + pick(8);
  for (int i = 0; i < T; ++i) {
    tensor x;
    x.name = "t" + std::to_string(i);
    const bool two_d = pick(2) == 0;
    x.sparse = two_d && pick(4) == 0;
    x.shape = {sizes[pick(10)]};
    if (two_d) x.shape.push_back(sizes[pick(10)]);
    x.type = x.sparse ? dtype::f32 : types[pick(compressed ? 2 : 4)];
    if (x.sparse) x.sparse_density = 0.5;
    x.backward_flops = 1e6;
    rc.model.tensors.push_back(x);
  }
  auto& s = rc.strategy;
  s.name = "random";
  const std::uint64_t caps[] = {0, 16, 100, 1000, unbounded_bytes};
  const int G = 1 + pick(4);
  for (int gi = 0; gi < G; ++gi) {
    group_desc g;
    g.architecture = static_cast<architecture_kind>(pick(4));
    switch (pick(3)) {
      case 0: break;
      case 1: g.partitioner = {partitioner_kind::even, 1 + pick(3), pick(2), 0}; break;
      default: g.partitioner = {partitioner_kind::by_bytes, 1, 0, static_cast<std::uint64_t>(8 + pick(200))}; break;
    }
    g.placement = {static_cast<placement_kind>(pick(4)), pick(servers)};
    g.replication = static_cast<replication_kind>(pick(2));
    if (g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded) {
      const auto k = static_cast<topology_kind>(pick(4));
      g.topology = {k};
      if (k == topology_kind::hierarchical) g.topology = {k, static_cast<topology_kind>(pick(3)), static_cast<topology_kind>(pick(3))};
      if (g.architecture == architecture_kind::sharded) {
        if (g.topology.kind == topology_kind::tree) g.topology.kind = topology_kind::halving_doubling;
        if (g.topology.kind == topology_kind::hierarchical && g.topology.intra == topology_kind::tree) g.topology.intra = topology_kind::ring;
      }
    }
    g.compression = compressed ? static_cast<compression_id>(1 + pick(2)) : static_cast<compression_id>(pick(3));
    g.fusion.cap_bytes = caps[pick(5)];
    g.fusion.first_cap_bytes = pick(2) == 0 ? g.fusion.cap_bytes : std::min<std::uint64_t>(g.fusion.cap_bytes, 40);
    g.schedule = static_cast<schedule_kind>(pick(2));
    s.groups.push_back(g);
  }
  auto group_for = [&](const tensor& t, int split_axis, std::int64_t extent) {
    std::vector<int> ok;
    for (int gi = 0; gi < static_cast<int>(s.groups.size()); ++gi)
      if (fits(s.groups[static_cast<std::size_t>(gi)], t, split_axis, extent)) ok.push_back(gi);
    if (!ok.empty()) return ok[static_cast<std::size_t>(pick(static_cast<int>(ok.size())))];
    group_desc g;
    if (t.sparse) g.architecture = architecture_kind::parameter_server;
    if (compressed) g.compression = comp::bf16::value;
    s.groups.push_back(g);
    return static_cast<int>(s.groups.size()) - 1;
  };
  for (const auto& t : rc.model.tensors) {
    assignment a;
    a.tensor = t.name;
    const int axis = t.sparse ? 0 : pick(static_cast<int>(t.shape.size()));
    const auto d = t.shape[static_cast<std::size_t>(axis)];
    if (pick(3) == 0 && d >= 2) {
      a.split_axis = axis;
      const auto k = 2 + pick(static_cast<int>(std::min<std::int64_t>(d, 4)) - 1);
      for (int sh = 0; sh < k; ++sh) {
        const auto r = even_shard(d, k, sh);
        a.shard_groups.push_back(group_for(t, axis, r.end - r.begin));
      }
    } else {
      a.group = group_for(t, -1, 0);
    }
    s.assignments.push_back(a);
  }
  return rc;
}

}  // namespace autosync::testing
