// The standard tiny model and node of the cost tests, with exact times:
//
// tiny_model(): 4 f32 tensors t0..t3 of 1000 elements (4000 bytes) unless `elements` says
// otherwise, forward 1 ms, backward 1 ms per tensor on a 1 GFLOP/s device; backward makes t3
// ready at 2 ms, t2 at 3 ms, t1 at 4 ms, t0 at 5 ms.
// worker(d): d devices, intra link 1 MB/s (beta 1e-6 s/B) with alpha 1 ms, NIC 1 MB/s without
// latency, reduce 2 MB/s (gamma 5e-7 s/B): a 2-rank ring all-reduce of S bytes costs
// 2 alpha + S beta + S/2 gamma = 0.002 + 1.25e-6 S, i.e. 7 ms for one tensor.
// one_node(): one worker(2) node.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace autosync::testing {

inline model_spec tiny_model(const std::vector<std::int64_t>& elements = {1000, 1000, 1000, 1000}) {
  model_spec m;
  m.name = "tiny";
  m.forward_flops = 1e6;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    tensor t;
    t.name = "t" + std::to_string(i);
    t.shape = {elements[i]};
    t.backward_flops = 1e6;
    m.tensors.push_back(t);
  }
  return m;
}

inline node_spec worker(int devices) {
  node_spec n;
  n.devices = devices;
  n.intra = autosync::link{1e6, 1e-3};
  n.nic = autosync::link{1e6, 0.0};
  n.device_flops = 1e9;
  n.reduce_bandwidth = 2e6;
  return n;
}

inline cluster_spec one_node() {
  cluster_spec c;
  c.name = "1x2";
  c.nodes.push_back(worker(2));
  c.nodes[0].name = "n0";
  return c;
}

}  // namespace autosync::testing
