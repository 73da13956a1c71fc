// autosync/cost/transport.hpp — what a node network's transport costs an NCCL message, with
// the source of every default, and the names of the cluster's network-side enums.
//
// NCCL moves a collective over the network in messages of one pipeline step (cost/nccl_model.hpp:
// 32 KiB of data with LL, 576,000 B with LL128, 512 KiB with Simple, fewer for small vectors).
// A transport adds to each such message, on top of NCCL's own per-hop network latency (its
// tuning table is an InfiniBand figure, src/graph/tuning.cc hwLatencies[NET]):
//
//   message_latency    seconds of extra one-way latency (the network hop of every step)
//   message_overhead   seconds of CPU / proxy-thread work per message, serialized per NIC: the
//                      start-up cost that makes many small messages slow (TCP stacks, host
//                      bounce buffers, the proxy's progress loop)
//   efficiency         the fraction of line rate a long stream reaches
//   gpu_direct         the NIC reads and writes GPU memory; without it every message is
//                      copied through host memory (a second pass over PCIe)
//   ll128              NCCL's LL128 protocol across nodes: it needs every 128-byte line to land
//                      whole and in order in the receiver's buffer, which RDMA writes to GPU
//                      memory give; out-of-order transports (AWS SRD), TCP streams and host
//                      bounces do not, and NCCL runs LL and Simple only (sources below)
//
//   kind            latency  overhead  efficiency  gpu_direct  source (ll128: rdma only)
//   rdma (IB/RoCE)   0 us     1 us      0.94        yes         NCCL's NET table is RDMA (0 extra);
//                                                               overhead: NCCL's own network post
//                                                               overhead (tuning.cc getNetOverhead,
//                                                               1 us Intel / 2 us AMD); efficiency:
//                                                               NVIDIA's "46-48 GB/s per NDR NIC"
//                                                               (nccl-tests issue 290) = 47/50
//   efa (AWS SRD)    12 us    4 us      0.90        yes         libfabric via aws-ofi-nccl: AWS
//                                                               documents EFA's one-way latency as
//                                                               "~15 us" class for SRD (EFA user
//                                                               guide); overhead: the plugin's
//                                                               software request path (assumption)
//   slingshot (CXI)  1.5 us   1 us      0.90        yes         HPE Slingshot-11: ~2 us MPI
//                                                               ping-pong (HPE/CSCS figures) of
//                                                               which NCCL's table holds the RDMA
//                                                               part; efficiency: 200 Gb/s CXI
//                                                               streams reach ~22.5 GB/s (assumption);
//                                                               no LL128: HPE's and CSCS's NCCL
//                                                               settings for Slingshot exclude it
//                                                               (NCCL_PROTO=^LL128)
//   gpudirect_tcp    40 us    10 us     0.90        yes         GPUDirect-TCPX/TCPXO (Google):
//                                                               TCP/IP per message through the
//                                                               kernel stack and the receive-side
//                                                               unpack; one-way latency of kernel
//                                                               TCP in a cloud VM (netperf TCP_RR
//                                                               half round trip, 25-50 us;
//                                                               assumption: 40); overhead: a socket
//                                                               send/recv pair per step (assumption);
//                                                               no LL128: pages land out of line
//                                                               order (Google's LL128 profile for
//                                                               TCPXO is opt-in: set ll128 = 1)
//   tcp (sockets)    25 us    15 us     0.80        no          NCCL's socket transport: kernel TCP
//                                                               (zoo::hw::tcp_latency, netperf
//                                                               TCP_RR one-way 15-30 us), a host
//                                                               bounce copy per message, socket
//                                                               threads (NCCL_NSOCKS_PERTHREAD);
//                                                               efficiency: multi-stream iperf on
//                                                               10-100 GbE reaches ~80 % (assumption);
//                                                               no LL128: the host bounce
//
// A cluster's transport fields that are 0 (-1 for gpu_direct) take these defaults:
// `resolve(transport)` returns the effective values. Calibration (cost/nccl_calibrate.hpp) fits
// the effective bandwidth, the latency scale and the message overhead of a machine from a few
// measured sizes and writes them back into the cluster.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/policy/slots.hpp>

#include <array>
#include <cstddef>
#include <string_view>

namespace autosync {
template <>
struct enum_names<collective_backend> {
  static constexpr std::array<std::string_view, 2> names{"mpi", "nccl"};
};
template <>
struct enum_names<transport_kind> {
  static constexpr std::array<std::string_view, 5> names{"rdma", "efa", "slingshot", "gpudirect_tcp", "tcp"};
};
template <>
struct enum_names<gpu_generation> {
  static constexpr std::array<std::string_view, 5> names{"automatic", "volta", "ampere", "hopper", "blackwell"};
};
}  // namespace autosync

namespace autosync::cost {

struct transport_defaults {
  double message_latency = 0.0;
  double message_overhead = 0.0;
  double efficiency = 1.0;
  bool gpu_direct = true;
  bool ll128 = true;
};

// The sourced defaults of each kind (table above).
[[nodiscard]] constexpr transport_defaults defaults_of(transport_kind k) noexcept {
  switch (k) {
    case transport_kind::rdma: return {0.0, 1.0e-6, 47.0 / 50.0, true, true};
    case transport_kind::efa: return {12.0e-6, 4.0e-6, 0.90, true, false};
    case transport_kind::slingshot: return {1.5e-6, 1.0e-6, 0.90, true, false};
    case transport_kind::gpudirect_tcp: return {40.0e-6, 10.0e-6, 0.90, true, false};
    case transport_kind::tcp: break;
  }
  return {25.0e-6, 15.0e-6, 0.80, false, false};
}

// The transport with its zero fields replaced by the kind's defaults.
[[nodiscard]] constexpr transport_defaults resolve(const network_transport& t) noexcept {
  auto d = defaults_of(t.kind);
  if (t.message_latency > 0.0) d.message_latency = t.message_latency;
  if (t.message_overhead > 0.0) d.message_overhead = t.message_overhead;
  if (t.efficiency > 0.0) d.efficiency = t.efficiency;
  if (t.gpu_direct >= 0) d.gpu_direct = t.gpu_direct == 1;
  if (t.ll128 >= 0) d.ll128 = t.ll128 == 1;
  return d;
}

namespace detail {
// A plain loop: libstdc++'s string_view::find is not usable on a std::string's buffer in constant evaluation (GCC 12).
[[nodiscard]] constexpr bool contains(std::string_view s, std::string_view w) noexcept {
  for (std::size_t i = 0; i + w.size() <= s.size(); ++i) {
    std::size_t k = 0;
    while (k < w.size() && s[i + k] == w[k]) ++k;
    if (k == w.size()) return true;
  }
  return false;
}
}  // namespace detail

// NCCL's compute-capability class of a device name (V100 / T4 / RTX 20xx: volta; A100 / A10 /
// RTX 30xx / 40xx: ampere; H100 / H200 / GH200: hopper; B200 / GB200 / B100: blackwell);
// unknown names are taken as ampere (NCCL's middle tables).
[[nodiscard]] constexpr gpu_generation generation_of(std::string_view device) noexcept {
  using detail::contains;
  if (contains(device, "B200") || contains(device, "B100") || contains(device, "GB10") || contains(device, "Blackwell"))
    return gpu_generation::blackwell;
  if (contains(device, "H100") || contains(device, "H200") || contains(device, "GH200") || contains(device, "H800"))
    return gpu_generation::hopper;
  if (contains(device, "V100") || contains(device, "T4") || contains(device, "TITAN") || contains(device, "RTX 20"))
    return gpu_generation::volta;
  return gpu_generation::ampere;
}
[[nodiscard]] constexpr gpu_generation generation_of(const cluster_spec& c) noexcept {
  return c.generation == gpu_generation::automatic ? generation_of(std::string_view(c.device)) : c.generation;
}

}  // namespace autosync::cost
