// The NCCL collective model at compile time: a cluster, its fabric and NCCL's choice evaluated
// inside static_assert (cost/nccl_model.hpp is constexpr end to end). Compiled, never run.
#include <autosync/cost/fabric.hpp>
#include <autosync/cost/nccl_model.hpp>

namespace {
using namespace autosync;

constexpr cluster_spec h100(int nodes, transport_kind kind) {
  cluster_spec c;
  c.name = "h100";
  c.device = "H100-SXM5-80GB";
  c.backend = collective_backend::nccl;
  c.transport.kind = kind;
  for (int i = 0; i < nodes; ++i) {
    node_spec n;
    n.name = "n";
    n.name += static_cast<char>('0' + i);
    n.devices = 8;
    n.intra = autosync::link{450e9, 1e-6};
    n.nic = autosync::link{25e9, 4e-6};
    n.nics = 8;
    n.device_flops = 1e14;
    n.reduce_bandwidth = 1e12;
    c.nodes.push_back(n);
  }
  return c;
}

constexpr double ar(const cluster_spec& c, topology_kind k, double n) { return cost::all_reduce(cost::make_fabric(c), topology_value{k}, n); }

// A whole NCCL-backend all-reduce is a constant expression.
static_assert(ar(h100(2, transport_kind::gpudirect_tcp), topology_kind::ring, 1 << 20) > 0.0);
// The small-message floor comes from the latencies: a TCP-based transport's floor is several
// times an RDMA one's (its message latency on every network hop).
static_assert(ar(h100(2, transport_kind::gpudirect_tcp), topology_kind::halving_doubling, 8) >
              3.0 * ar(h100(2, transport_kind::rdma), topology_kind::halving_doubling, 8));
// Time grows with size, and never beats the fabric's lower bound.
static_assert(ar(h100(2, transport_kind::rdma), topology_kind::ring, 1 << 24) < ar(h100(2, transport_kind::rdma), topology_kind::ring, 1 << 26));
static_assert(cost::lower_bound(cost::make_fabric(h100(2, transport_kind::rdma)), 1 << 26) <=
              ar(h100(2, transport_kind::rdma), topology_kind::tree, 1 << 26));
// Channels grow with the message (NCCL's threshold rule) up to the communicator's count.
static_assert(cost::nccl::channels_for(cost::make_fabric(h100(2, transport_kind::rdma)).world(), cost::nccl::algorithm::ring,
                                       cost::nccl::protocol::simple, 64.0 * 1024) == 2);
static_assert(cost::nccl::channels_for(cost::make_fabric(h100(2, transport_kind::rdma)).world(), cost::nccl::algorithm::ring,
                                       cost::nccl::protocol::simple, 1e9) == 16);
// Across nodes LL128 runs over RDMA only.
static_assert(cost::nccl::available(cost::make_fabric(h100(2, transport_kind::rdma)).world(), cost::nccl::operation::all_reduce,
                                    cost::nccl::algorithm::ring, cost::nccl::protocol::ll128));
static_assert(!cost::nccl::available(cost::make_fabric(h100(2, transport_kind::efa)).world(), cost::nccl::operation::all_reduce,
                                     cost::nccl::algorithm::ring, cost::nccl::protocol::ll128));
// NCCL's default for a large all-reduce over 2 nodes is a Simple protocol.
static_assert(cost::nccl::select(cost::make_fabric(h100(2, transport_kind::rdma)).world(), cost::nccl::operation::all_reduce, 1e9).proto ==
              cost::nccl::protocol::simple);

}  // namespace
