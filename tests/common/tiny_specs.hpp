// The standard tiny model and node of the cost tests, with exact times:
//
// tiny_model(): 4 f32 tensors t0..t3 of 1000 elements (4000 bytes) unless `elements` says
// otherwise, forward 1 ms, backward 1 ms per tensor on a 1 GFLOP/s device; backward makes t3
// ready at 2 ms, t2 at 3 ms, t1 at 4 ms, t0 at 5 ms.
// worker(d): d devices, intra link 1 MB/s (beta 1e-6 s/B) with alpha 1 ms, NIC 1 MB/s without
// latency, reduce 2 MB/s (gamma 5e-7 s/B): a 2-rank ring all-reduce of S bytes costs
// 2 alpha + S beta + S/2 gamma = 0.002 + 1.25e-6 S, i.e. 7 ms for one tensor.
// one_node(): one worker(2) node.
// node(...) and replicated(...): the multi-node clusters of the collective and learning tests.
// index_of(names, name): a feature's column in a feature-name table.
// round_device(): the compute tests' device: 100 TFLOP/s fp32, 200 tf32, 400 bf16, no fp16 unit;
// half of it reached by a GEMM; 10 SMs (5 TFLOP/s each at that efficiency); 1 TB/s fully reached;
// 1 us per kernel; no L2 figure.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/model.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autosync::testing {

inline device_compute round_device() {
  device_compute d;
  d.fp32 = 100e12;
  d.tf32 = 200e12;
  d.bf16 = 400e12;
  d.fp16 = 0.0;
  d.matmul_efficiency = 0.5;
  d.memory_bandwidth = 1e12;
  d.memory_efficiency = 1.0;
  d.multiprocessors = 10;
  d.kernel_floor = 1e-6;
  return d;
}

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

inline node_spec node(int devices, autosync::link intra, autosync::link nic, double device_flops, double reduce_bandwidth, int nics = 1) {
  node_spec n;
  n.devices = devices;
  n.intra = intra;
  n.nic = nic;
  n.nics = nics;
  n.device_flops = device_flops;
  n.reduce_bandwidth = reduce_bandwidth;
  return n;
}

// `count` copies of `proto`, named n0, n1, ...
inline cluster_spec replicated(std::string name, int count, const node_spec& proto) {
  cluster_spec c;
  c.name = std::move(name);
  for (int i = 0; i < count; ++i) {
    c.nodes.push_back(proto);
    c.nodes.back().name = "n" + std::to_string(i);
  }
  return c;
}

// The column of `name` in a feature-name table (cost::feature_names, cost::collective_feature_names);
// throws std::out_of_range, which fails the test, when there is none.
template <std::size_t N>
std::size_t index_of(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return i;
  throw std::out_of_range("no feature named '" + std::string(name) + "'");
}

}  // namespace autosync::testing
