// The cost model at compile time: whole strategies costed inside static_assert. Compiled, never run.
#include <autosync/cost/estimate.hpp>

namespace {
using namespace autosync;

constexpr model_spec tiny_model() {
  model_spec m;
  m.name = "tiny";
  m.forward_flops = 1e6;
  for (int i = 0; i < 4; ++i) {
    tensor t;
    t.name = std::string("t") + static_cast<char>('0' + i);
    t.shape = {1000};
    t.backward_flops = 1e6;
    m.tensors.push_back(t);
  }
  return m;
}

constexpr cluster_spec one_node(int devices) {
  cluster_spec c;
  c.name = "1xN";
  node_spec n;
  n.name = "n0";
  n.devices = devices;
  n.intra = autosync::link{1e6, 1e-3};
  n.nic = autosync::link{1e6, 0.0};
  n.device_flops = 1e9;
  n.reduce_bandwidth = 2e6;
  c.nodes.push_back(n);
  return c;
}

constexpr bool near(double a, double b) { return (a > b ? a - b : b - a) <= 1e-12; }

constexpr cost::prediction costed(std::uint64_t cap, std::uint64_t first, schedule_kind sched = schedule_kind::fifo) {
  const auto m = tiny_model();
  group_desc g;
  g.fusion = fusion_value{cap, first};
  g.schedule = sched;
  return cost::estimate(m, one_node(2), uniform_strategy(m, g), cost::options{true});
}

// One bucket per tensor: lane 0 runs [2,9] [9,16] [16,23] [23,30] ms (tests/unit/cost_estimate.cpp).
static_assert(near(costed(0, 0).iteration, 0.030));
static_assert(near(costed(0, 0).forward, 0.001) && near(costed(0, 0).backward, 0.004));
static_assert(costed(0, 0).events.size() == 4);
// DDP-like caps: first bucket 4000 B, then 8000 B.
static_assert(near(costed(8000, 4000).iteration, 0.028));
// All in one bucket: 2 ms + 16000 B x 1.25e-6 s/B after the last gradient at 5 ms.
static_assert(near(costed(unbounded_bytes, unbounded_bytes).iteration, 0.027));
// Priority sends the front layer (bucket 3) second.
static_assert(costed(0, 0, schedule_kind::priority).events[1].bucket == 3);
// Never below the bound.
static_assert(costed(0, 0).lower_bound <= costed(0, 0).iteration);

// Policy types in, a number out: the descriptor of strategy<...> costed at compile time.
constexpr double hierarchical_cost() {
  const auto m = tiny_model();
  return cost::estimate(m, one_node(4), uniform_strategy(m, describe<strategy<topo::hierarchical<topo::ring, topo::ring>, fuse::unbounded>>()))
      .iteration;
}
// One node of 4: hierarchical = ring on 4 ranks: 6 ms + 2 x 3/4 x 16000 x 1e-6 + 3/4 x 16000 x 5e-7 after 5 ms.
static_assert(near(hierarchical_cost(), 0.005 + 0.006 + 0.024 + 0.006));

// Co-located parameter servers at compile time (tests/unit/cost_estimate.cpp): 4 worker nodes
// x 2 devices (intra 10 MB/s, no latency; NIC 1 MB/s), a server on each. One tensor of 16000 B
// ready at 2 ms in 4 shards, one per server, local replication: every node's NICs carry 3
// pushes in + 3 pulls out for its own server (12 ms) and its push/pull to the 3 others
// (3 x 4 ms) = 24 ms = 2(N-1)/N X beta, below each server's exchange as the executor runs it:
// 3 pushes side by side through the server's NIC (12 ms, above each sender's own 4 ms), each
// added (0.4 ms), then 3 pulls the same way = 25.2 ms; after the 0.6 ms local reduce, then the
// 0.4 ms broadcast: 2 + 0.6 + 25.2 + 0.4 = 28.2 ms.
constexpr double colocated_ps_cost() {
  model_spec m;
  m.name = "one";
  m.forward_flops = 1e6;
  tensor t;
  t.name = "t0";
  t.shape = {4000};
  t.backward_flops = 1e6;
  m.tensors.push_back(t);
  cluster_spec c;
  c.name = "4x2";
  for (int i = 0; i < 4; ++i) {
    node_spec n;
    n.name = std::string("n") + static_cast<char>('0' + i);
    n.devices = 2;
    n.intra = autosync::link{1e7, 0.0};
    n.nic = autosync::link{1e6, 0.0};
    n.device_flops = 1e9;
    n.reduce_bandwidth = 1e7;
    c.nodes.push_back(n);
  }
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  g.partitioner = partitioner_value{partitioner_kind::even, 4, 0, 0};
  g.placement = placement_value{placement_kind::load_balanced, 0};
  g.replication = replication_kind::local;
  g.fusion = fusion_value{unbounded_bytes, unbounded_bytes};
  return cost::estimate(m, c, uniform_strategy(m, g)).iteration;
}
static_assert(near(colocated_ps_cost(), 0.0282));

// The formulas themselves.
static_assert(cost::ring_all_reduce(1, 1e6, 1.0, 1.0, 1.0) == 0.0);
static_assert(cost::nccl_tree_all_reduce(2, 1000.0, 1.0, 0.5, 0.0) == cost::ring_all_reduce(2, 1000.0, 1.0, 0.5, 0.0));
static_assert(cost::tree_all_reduce(2, 1000.0, 1.0, 0.5, 0.0) == 2 * cost::ring_all_reduce(2, 1000.0, 1.0, 0.5, 0.0));
static_assert(cost::halving_doubling_all_reduce(6, 1000.0, 1.0, 0.0, 0.0) == 2 + 4);  // 2 lg 4 + pre + post
}  // namespace
