// autosync/cluster.hpp — where the gradients are synchronized.
//
// A cluster is a list of nodes. A worker node holds `devices` accelerators (one rank each)
// joined by an intra-node link; it reaches the others through `nics` network interfaces of
// `nic` bandwidth/latency each. Nodes may differ (heterogeneous NICs). A node with
// `server_only` set holds no devices and serves parameter-server shards only (BytePS-style
// CPU summation servers). Units: bytes, seconds, bytes/second, FLOP/second.
//
// The network side also says how collectives run (cost/nccl_model.hpp uses it):
//   backend     mpi   the CPU executor's own ring / tree / halving-doubling on send/recv
//                     (the alpha-beta-gamma forms of cost/collectives.hpp describe them)
//               nccl  NCCL on GPUs: algorithm x protocol, channels, chunked pipelines
//   transport   how a node's NICs move NCCL's messages (rdma, efa, slingshot, gpudirect_tcp,
//               tcp): per-message latency and CPU/proxy overhead, efficiency, GPU-direct or
//               host bounce. Zero fields take the kind's sourced defaults (cost/transport.hpp).
//   nvls, collnet   in-switch reduction the hardware offers (NVLink SHARP on NVSwitch
//               Hopper+; SHARP on the InfiniBand switches) — NCCL's NVLS / CollNet algorithms
//   gpu_generation  NCCL's compute-capability class (volta, ampere, hopper, blackwell): its
//               per-channel bandwidth caps differ; `automatic` reads it from `device`
//   latency_scale, channels   calibration results (1 and 0 = NCCL's own tables / auto)
#pragma once

#include <autosync/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace autosync {

struct link {
  double bandwidth = 0.0;  // bytes per second, one direction
  double latency = 0.0;    // seconds per message (alpha)
};

enum class collective_backend : std::uint8_t { mpi, nccl };
enum class transport_kind : std::uint8_t { rdma, efa, slingshot, gpudirect_tcp, tcp };
enum class gpu_generation : std::uint8_t { automatic, volta, ampere, hopper, blackwell };

// A node network's transport, for the NCCL model. 0 (or a negative efficiency) means "the
// kind's default" (cost/transport.hpp lists them with their sources).
struct network_transport {
  transport_kind kind = transport_kind::rdma;
  double message_latency = 0.0;   // seconds a network message adds over NCCL's RDMA hop latency
  double message_overhead = 0.0;  // seconds of CPU/proxy work per network message (serialized per NIC)
  double efficiency = 0.0;        // fraction of the NICs' line rate a stream reaches
  int gpu_direct = -1;            // 1 NIC <-> GPU memory directly, 0 bounce through host memory, -1 default
  int ll128 = -1;                 // 1 NCCL's LL128 protocol runs across nodes, 0 it does not, -1 default
  friend constexpr bool operator==(const network_transport&, const network_transport&) = default;
};

// What one device computes with (cost/compute.hpp): a roofline per kernel. Matrix work runs at
// `matmul_efficiency` of the dense peak of its precision, less the tile and wave quantization of
// its GEMM shape over `multiprocessors`; memory-bound work moves its bytes at `memory_bandwidth` x
// `memory_efficiency`; no kernel takes less than `kernel_floor`. A zero peak means the device has
// no such unit: TF32, bf16 or fp16 requests then run at the fp32 rate (allow_tf32 does nothing
// before Ampere; bf16 has no tensor-core path before Ampere). All zero (`described()` false): the
// device is not described and the cost model uses `node_spec::device_flops` for FLOPs alone.
struct device_compute {
  double fp32 = 0.0;              // dense peak FLOP/s: fp32 on the vector units (non-tensor)
  double tf32 = 0.0;              //   TF32 tensor cores
  double bf16 = 0.0;              //   bf16 tensor cores (fp32 accumulate)
  double fp16 = 0.0;              //   fp16 tensor cores (fp32 accumulate)
  double matmul_efficiency = 0.0; // fraction of the peak a large, well-shaped GEMM reaches, (0, 1]
  double memory_bandwidth = 0.0;  // bytes/s of device memory (datasheet)
  double memory_efficiency = 0.0; // fraction of it a streaming kernel reaches, (0, 1]
  int multiprocessors = 0;        // SMs (CUDA) or cores: the tiles of one wave; 0: no quantization
  double kernel_floor = 0.0;      // seconds: the least time one kernel takes in a stream of them
  double l2_bytes = 0.0;          // bytes of the on-chip L2 cache (0: unknown): whether a kernel's
                                  // input may still be there (cost/compute.hpp, batch norm)

  [[nodiscard]] constexpr bool described() const noexcept { return fp32 > 0.0 && memory_bandwidth > 0.0; }
  friend constexpr bool operator==(const device_compute&, const device_compute&) = default;
};

struct node_spec {
  std::string name;
  int devices = 1;               // ranks on this node (0 for a server-only node)
  link intra{};                  // device <-> device inside the node (per device, one direction)
  link nic{};                    // one network interface
  int nics = 1;                  // interfaces per node
  bool server_only = false;      // a CPU parameter server without devices
  double device_flops = 0.0;     // effective training FLOP/s of one device
  double reduce_bandwidth = 0.0; // bytes/s one device reduces (sums) in memory: the gamma term
  device_compute compute{};      // the device's compute roofline (optional: see device_compute)
  double codec_flops = 0.0;      // work/s of the executor's codecs (compression) on this node, in the
                                 // compressors' units (fp16: 2 per element); 0: the backend's
                                 // default (cost/fabric.hpp, codec_rate); `autosync calibrate` measures it

  [[nodiscard]] constexpr double nic_bandwidth() const noexcept { return nic.bandwidth * nics; }
};

struct cluster_spec {
  std::string name;
  std::string device;            // e.g. "V100-SXM2-16GB"
  std::vector<node_spec> nodes;
  std::string source;            // where the constants come from
  // network / collective side (see the header comment)
  collective_backend backend = collective_backend::mpi;
  network_transport transport{};
  bool nvls = false;
  bool collnet = false;
  gpu_generation generation = gpu_generation::automatic;
  double latency_scale = 1.0;    // NCCL's base and per-hop latencies times this (calibration)
  int channels = 0;              // NCCL channels per communicator (0: NCCL's rule, cost/nccl_model.hpp)

  [[nodiscard]] constexpr int world_size() const noexcept {
    int n = 0;
    for (const auto& nd : nodes)
      if (!nd.server_only) n += nd.devices;
    return n;
  }
  [[nodiscard]] constexpr int worker_nodes() const noexcept {
    return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const node_spec& n) { return !n.server_only; }));
  }
  [[nodiscard]] constexpr bool has_dedicated_servers() const noexcept {
    return std::any_of(nodes.begin(), nodes.end(), [](const node_spec& n) { return n.server_only; });
  }
  // Node indices that host parameter-server shards: the dedicated server nodes when the
  // cluster has any, otherwise every worker node (co-located servers, as AutoDist does).
  [[nodiscard]] constexpr std::vector<int> server_nodes() const {
    std::vector<int> s;
    const bool dedicated = has_dedicated_servers();
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
      if (nodes[static_cast<std::size_t>(i)].server_only == dedicated) s.push_back(i);
    return s;
  }
  [[nodiscard]] constexpr int server_count() const { return static_cast<int>(server_nodes().size()); }
  // Node index of a rank (ranks are numbered node by node, worker nodes only).
  [[nodiscard]] constexpr int node_of_rank(int rank) const noexcept {
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      const auto& nd = nodes[static_cast<std::size_t>(i)];
      if (nd.server_only) continue;
      if (rank < nd.devices) return i;
      rank -= nd.devices;
    }
    return -1;
  }
  [[nodiscard]] constexpr int max_devices_per_node() const noexcept {
    int g = 0;
    for (const auto& nd : nodes)
      if (!nd.server_only) g = std::max(g, nd.devices);
    return g;
  }
  [[nodiscard]] constexpr bool uniform() const noexcept {
    const node_spec* first = nullptr;
    for (const auto& nd : nodes) {
      if (nd.server_only) continue;
      if (!first) { first = &nd; continue; }
      if (nd.devices != first->devices || nd.nic_bandwidth() != first->nic_bandwidth() ||
          nd.intra.bandwidth != first->intra.bandwidth)
        return false;
    }
    return true;
  }

  // Throws autosync::error naming the first bad field.
  void validate() const {
    if (nodes.empty()) throw error("nodes", "a cluster needs at least one node");
    std::unordered_set<std::string> names;
    // a rate a machine can have: bandwidths in [1 kB/s, 1e16 B/s], FLOP/s in [1e3, 1e20] (a rate
    // of 1e-300 makes every time infinite, and the search has nothing to compare)
    auto bytes_rate = [](double v) { return std::isfinite(v) && v >= 1e3 && v <= 1e16; };
    auto flop_rate = [](double v) { return std::isfinite(v) && v >= 1e3 && v <= 1e20; };
    auto seconds = [](double v) { return std::isfinite(v) && v >= 0.0 && v <= 1.0; };  // a latency: at most 1 s
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto& n = nodes[i];
      const std::string f = "nodes[" + std::to_string(i) + "]";
      if (!n.name.empty() && !names.insert(n.name).second) throw error(f + ".name", "duplicate node name '" + n.name + "'");
      if (n.server_only) {
        if (n.devices != 0) throw error(f + ".devices", "a server_only node has no devices (set 0)");
      } else {
        if (n.devices < 1 || n.devices > 1024) throw error(f + ".devices", "must be in [1, 1024], got " + std::to_string(n.devices));
        if (n.devices > 1 && !bytes_rate(n.intra.bandwidth)) throw error(f + ".intra.bandwidth", "must be bytes/s in [1e3, 1e16]");
        if (!flop_rate(n.device_flops)) throw error(f + ".device_flops", "must be FLOP/s in [1e3, 1e20]");
        if (!bytes_rate(n.reduce_bandwidth)) throw error(f + ".reduce_bandwidth", "must be bytes/s in [1e3, 1e16]");
        validate_compute(n.compute, f + ".compute");
        if (n.codec_flops != 0.0 && !flop_rate(n.codec_flops))
          throw error(f + ".codec_flops", "must be 0 (the backend's default) or work/s in [1e3, 1e20]");
      }
      if (!seconds(n.intra.latency)) throw error(f + ".intra.latency", "must be seconds in [0, 1]");
      if (n.nics < 1 || n.nics > 64) throw error(f + ".nics", "must be in [1, 64]");
      if (!bytes_rate(n.nic.bandwidth)) throw error(f + ".nic.bandwidth", "must be bytes/s in [1e3, 1e16]");
      if (!seconds(n.nic.latency)) throw error(f + ".nic.latency", "must be seconds in [0, 1]");
    }
    if (world_size() < 1) throw error("nodes", "a cluster needs at least one worker device");
    if (!seconds(transport.message_latency)) throw error("transport.message_latency", "must be seconds in [0, 1]");
    if (!seconds(transport.message_overhead)) throw error("transport.message_overhead", "must be seconds in [0, 1]");
    if (!(std::isfinite(transport.efficiency) && transport.efficiency >= 0.0 && transport.efficiency <= 1.0))
      throw error("transport.efficiency", "must be in [0, 1] (0: the transport's default)");
    if (transport.gpu_direct < -1 || transport.gpu_direct > 1) throw error("transport.gpu_direct", "must be -1 (default), 0 or 1");
    if (transport.ll128 < -1 || transport.ll128 > 1) throw error("transport.ll128", "must be -1 (default), 0 or 1");
    if (!(std::isfinite(latency_scale) && latency_scale > 0.0 && latency_scale <= 1e3)) throw error("latency_scale", "must be in (0, 1000]");
    if (channels < 0 || channels > 64) throw error("channels", "must be in [0, 64] (0: NCCL's rule)");
  }

  static void validate_compute(const device_compute& d, const std::string& f) {
    if (d == device_compute{}) return;  // not described
    auto rate = [&](double v, const char* field, bool required) {
      if (!std::isfinite(v) || v < 0.0 || v > 1e18 || (required && v == 0.0))
        throw error(f + "." + field, required ? "must be a positive number (at most 1e18)" : "must be a number in [0, 1e18] (0: no such unit)");
    };
    rate(d.fp32, "fp32", true);
    rate(d.tf32, "tf32", false);
    rate(d.bf16, "bf16", false);
    rate(d.fp16, "fp16", false);
    rate(d.memory_bandwidth, "memory_bandwidth", true);
    auto fraction = [&](double v, const char* field) {
      if (!(v > 0.0 && v <= 1.0)) throw error(f + "." + field, "must be a fraction in (0, 1]");
    };
    fraction(d.matmul_efficiency, "matmul_efficiency");
    fraction(d.memory_efficiency, "memory_efficiency");
    if (d.multiprocessors < 0 || d.multiprocessors > 1'000'000) throw error(f + ".multiprocessors", "must be in [0, 1000000]");
    if (!(d.kernel_floor >= 0.0 && d.kernel_floor < 1.0)) throw error(f + ".kernel_floor", "must be seconds in [0, 1)");
    if (!(d.l2_bytes >= 0.0 && d.l2_bytes <= 1e12)) throw error(f + ".l2_bytes", "must be bytes in [0, 1e12] (0: unknown)");
  }
};

}  // namespace autosync
