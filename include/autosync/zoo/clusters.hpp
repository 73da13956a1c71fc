// autosync/zoo/clusters.hpp — built-in cluster presets, one per CLI name.
//
//   name                  nodes x devices         intra link            network
//   autosync-a            11 x 1 TITAN X Pascal   (PCIe to host)        1 x 40 GbE
//   autosync-b             4 x 4 T4 (g4dn.12xl)   PCIe, no switch       1 x 50 GbE (AWS ENA)
//   autosync-b-ps          autosync-b + 2 CPU parameter servers (c5n.9xlarge, 50 Gb/s)
//   p3.16xlarge-x4         4 x 8 V100-SXM2        NVLink2 cube mesh     1 x 25 Gb/s (AWS ENA)
//   dgx-a100-x<N>          N x 8 A100-SXM4-40GB   NVSwitch (NVLink3)    8 x HDR 200 Gb/s IB
//   dgx-h100-x<N>          N x 8 H100-SXM5-80GB   NVSwitch (NVLink4)    8 x NDR 400 Gb/s IB
//   commodity-10gbe-x8     8 x 4 RTX 3090         PCIe via host memory  1 x 10 GbE
//   local-<N>              1 x N MPI ranks        shared memory copy    1 loopback interface
//
// Every constant lives in `zoo::hw` with the source it comes from: a public spec sheet, a
// real nccl-tests log in tests/data/collectives/, a published paper, or (marked so) an
// assumption with its reasoning. Units follow cluster.hpp: bytes/s one direction, seconds,
// FLOP/s. Three conventions keep the numbers comparable across presets:
//
//   * intra bandwidth is what a ring reaches, i.e. nccl-tests busbw, because the ring
//     allreduce time 2(p-1)/p * S / B gives busbw = B exactly (tests/data/collectives/README);
//   * latencies are per ring step (alpha in 2(p-1) alpha), fitted to the small-message
//     floors of the logs (~10 us for 8 ranks in one A100 node, ~19 us for 2 x 4 GH200);
//   * reduce_bandwidth = memory bandwidth / 3: summing n bytes reads 2n and writes n.
//     On a server_only node it is the whole node's CPU summation rate (it has no devices).
//
// Network side: the GPU presets run their collectives through NCCL (cluster_spec::backend nccl,
// costed by cost/nccl_model.hpp) over the transport their network is: InfiniBand RDMA for the DGX
// systems (dgx-h100 also has NVLink SHARP, nvls), NCCL's TCP sockets for the Ethernet clusters
// (AWS ENA before EFA, 10/40 GbE); local-<N> is the MPI executor on CPU ranks (backend mpi, the
// alpha-beta-gamma formulas). cost/transport.hpp has each transport's sourced defaults.
//
// `make_cluster(name)` accepts every name of `cluster_names()` and the parametric forms
// dgx-a100-x<N>, dgx-h100-x<N> (N in [1, 512]) and local-<N> (N in [1, 256]).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/transport.hpp>
#include <autosync/error.hpp>

#include <charconv>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace autosync::zoo {

namespace hw {

// ---- unit helpers ----------------------------------------------------------------------------
[[nodiscard]] constexpr double gbit_per_s(double g) noexcept { return g * 1e9 / 8.0; }  // line rate -> bytes/s
[[nodiscard]] constexpr double gbyte_per_s(double g) noexcept { return g * 1e9; }
[[nodiscard]] constexpr double tflops(double t) noexcept { return t * 1e12; }
[[nodiscard]] constexpr double usec(double u) noexcept { return u * 1e-6; }

// ---- networks (bytes/s per interface, one direction) ----------------------------------------
// Ethernet: nominal line rate (IEEE 802.3 names); no public measurement of these clusters.
inline constexpr double gbe10 = gbit_per_s(10);    // 10 GbE   = 1.25e9 B/s
inline constexpr double gbe25 = gbit_per_s(25);    // "up to 25 Gigabit" (AWS p3.16xlarge spec) = 3.125e9 B/s;
                                                   // one TCP flow is capped at 10 Gb/s in a placement group,
                                                   // NCCL/MPI open several sockets so the aggregate applies
inline constexpr double gbe40 = gbit_per_s(40);    // 40 GbE   = 5e9 B/s (AutoSync paper, cluster A)
inline constexpr double gbe50 = gbit_per_s(50);    // "50 Gigabit" (AWS g4dn.12xlarge / c5n.9xlarge spec) = 6.25e9 B/s
// InfiniBand: NDR 400 Gb/s = 50 GB/s line rate; NVIDIA's maintainer in nccl-tests issue 290
// (tests/data/collectives/h100_1node_nvls_and_2node_ndr400_allreduce.txt): "For NDR @ 400Gbps
// you should see 46-48GB/s per NIC" -> midpoint 47 GB/s, i.e. 94 % of line rate.
inline constexpr double ib_efficiency = 47.0 / 50.0;
inline constexpr double ib_ndr400 = gbyte_per_s(47);                 // 4.7e10 B/s
inline constexpr double ib_hdr200 = gbit_per_s(200) * ib_efficiency; // 25 GB/s line x 0.94 = 2.35e10 B/s
inline constexpr double loopback = gbyte_per_s(4);  // assumption: TCP over `lo` on one core, iperf3-class 30-40 Gb/s

// ---- latencies (seconds per ring step) ------------------------------------------------------
// NVLink/NVSwitch: the 8 x A100 small-message floor ~10 us (tests/data/collectives/README) is
// 2(p-1) = 14 ring steps -> 0.714 us/step. Cross-check: NCCL's own table (src/graph/tuning.cc,
// baseLat ring LL 3.6 us + 14 x hwLat NVLink ring LL 0.47 us) = 10.2 us.
inline constexpr double nvlink_latency = usec(10.0) / 14.0;
// PCIe: NCCL's hwLat for ring LL is 1.0 us over PCI vs 0.47 us over NVLink -> scale the fit above.
inline constexpr double pcie_latency = nvlink_latency * (1.0 / 0.47);  // ~1.52 us
// RDMA network (InfiniBand, Slingshot): 2 nodes x 4 GH200 floor ~19 us
// (gh200_2node_8gpu_slingshot_allreduce.txt, 8 B..512 B) = 12 intra-node steps x 0.714 us +
// 2 network steps x alpha -> alpha = (19 - 8.57) / 2 = 5.2 us. NCCL: hwLat NET ring LL 2.7 us
// plus the 1.8x intra-node LL penalty it applies on multi-node rings -> the same 19 us.
inline constexpr double rdma_latency = (usec(19.0) - 12.0 * nvlink_latency) / 2.0;
// Kernel TCP/IP over Ethernet: assumption, ~20 us above the RDMA figure (socket syscalls,
// interrupt coalescing; netperf TCP_RR one-way latencies on 10-40 GbE are typically 15-30 us).
inline constexpr double tcp_latency = usec(25.0);
// AWS ENA (virtualized, SR-IOV): assumption, AWS publishes no figure; +10 us over bare TCP.
inline constexpr double aws_ena_latency = usec(35.0);
// Loopback TCP: assumption, one kernel round trip without a wire, ~10 us.
inline constexpr double loopback_latency = usec(10.0);
// Shared-memory MPI (OpenMPI vader/CMA): osu_latency intra-socket is typically 0.3-0.5 us.
inline constexpr double shm_latency = usec(0.5);

// ---- intra-node links (bytes/s a ring reaches per device, one direction) ---------------------
// A100 NVSwitch: measured busbw 230.84 GB/s at 1 GiB (a100_1node_8gpu_allreduce.txt) of the
// 300 GB/s per-direction NVLink3 spec (12 links x 25 GB/s) -> 77 % of spec.
inline constexpr double a100_nvswitch = gbyte_per_s(230.84);
inline constexpr double nvlink_efficiency = 230.84 / 300.0;
// H100 NVSwitch: "8 x H100 NVLink ~370 GB/s effective without NVLS" (tests/data/collectives/
// README; 476 GB/s busbw with NVLS in issue 290). The ring/tree topologies modelled here do not
// use NVLS (in-switch reduction), so the non-NVLS figure is the one a ring reaches.
inline constexpr double h100_nvswitch = gbyte_per_s(370);
// V100 NVLink2 hybrid cube mesh (DGX-1 / p3.16xlarge): 6 links x 25 GB/s = 150 GB/s per
// direction (V100 datasheet), times the efficiency measured on A100 above -> 115 GB/s.
inline constexpr double v100_nvlink = gbyte_per_s(150) * nvlink_efficiency;
// PCIe 3.0 x16 = 15.75 GB/s per direction (PCI-SIG); T4s in g4dn.12xlarge have no PCIe switch,
// so P2P crosses the CPU root complex. Assumption: 10 GB/s (such P2P typically reaches 8-12).
inline constexpr double pcie3_p2p = gbyte_per_s(10);
// PCIe 3.0 x16 DMA to host (the single device of an autosync-a node): CUDA bandwidthTest
// pinned copies typically reach ~12 GB/s of the 15.75 GB/s nominal. Assumption.
inline constexpr double pcie3_host = gbyte_per_s(12);
// GeForce RTX 3090 has no PCIe P2P, copies bounce through host memory: two PCIe 4.0 x16
// transfers (31.5 GB/s nominal each). Assumption: 12 GB/s effective.
inline constexpr double pcie4_bounce = gbyte_per_s(12);
// MPI shared memory between ranks on one host (OpenMPI vader + CMA single copy): osu_bw
// large-message intra-socket bandwidth is typically 8-10 GB/s. Assumption: 8 GB/s.
inline constexpr double shm_copy = gbyte_per_s(8);

// ---- device throughput (effective training FLOP/s of one device) -----------------------------
// `device_flops`: the rate of FLOPs-only models on a device that is not described, and of
// compression codecs (cost/estimate.hpp). Models with layers run on the rooflines further down.
// V100: Megatron-LM (Shoeybi et al. 2019): 39 TFLOP/s sustained on one V100, "30% of peak"
// (125 TFLOP/s tensor-core peak, V100 SXM2 datasheet).
inline constexpr double v100_flops = tflops(39);
inline constexpr double volta_efficiency = 39.0 / 125.0;
// A100: Narayanan et al. 2021 (Megatron-LM on GPU clusters, Table 1, 1.7B GPT on 32 GPUs):
// 137 TFLOP/s per GPU = 44% of the 312 TFLOP/s bf16 dense peak (A100 datasheet).
inline constexpr double a100_flops = tflops(137);
inline constexpr double ampere_efficiency = 137.0 / 312.0;
// H100 SXM5: 989 TFLOP/s bf16 dense peak (H100 datasheet). Assumption: the A100 fraction.
inline constexpr double h100_flops = tflops(989) * ampere_efficiency;  // ~434 TFLOP/s
// T4: 65 TFLOP/s fp16 tensor peak (T4 datasheet). Assumption: the Volta fraction (Turing is the
// same tensor-core generation); the 70 W power cap may hold it lower.
inline constexpr double t4_flops = tflops(65) * volta_efficiency;  // ~20 TFLOP/s
// RTX 3090: 35.6 TFLOP/s fp16 tensor with fp32 accumulate (GA102 whitepaper; GeForce runs
// fp32-accumulate at half rate). Assumption: the A100 fraction.
inline constexpr double rtx3090_flops = tflops(35.6) * ampere_efficiency;  // ~15.6 TFLOP/s
// TITAN X (Pascal, GP102): 10.97 TFLOP/s fp32 peak (NVIDIA spec), no tensor cores.
// Assumption: fp32 cuDNN training sustains half of peak.
inline constexpr double titan_x_pascal_flops = tflops(10.97) * 0.5;
// One x86 core: 3 GHz x 2 AVX2 FMA units x 8 fp32 lanes x 2 = 96 GFLOP/s peak.
// Assumption: CPU training kernels sustain ~30%.
inline constexpr double cpu_core_flops = 96e9 * 0.3;

// ---- in-memory reduction (gamma): memory bandwidth / 3 (read 2n, write n) --------------------
inline constexpr double titan_x_pascal_reduce = gbyte_per_s(480) / 3.0;  // 480 GB/s GDDR5X (spec)
inline constexpr double t4_reduce = gbyte_per_s(320) / 3.0;              // 320 GB/s GDDR6 (T4 datasheet)
inline constexpr double v100_reduce = gbyte_per_s(900) / 3.0;            // 900 GB/s HBM2 (V100 SXM2 datasheet)
inline constexpr double a100_reduce = gbyte_per_s(1555) / 3.0;           // 1555 GB/s HBM2 (A100 40GB datasheet)
inline constexpr double h100_reduce = gbyte_per_s(3350) / 3.0;           // 3.35 TB/s HBM3 (H100 SXM5 datasheet)
inline constexpr double rtx3090_reduce = gbyte_per_s(936) / 3.0;         // 936 GB/s GDDR6X (spec)
// One x86 core streams ~12 GB/s from DRAM (single-thread STREAM, typical server core). Assumption.
inline constexpr double cpu_core_reduce = gbyte_per_s(12) / 3.0;
// c5n.9xlarge parameter server: Xeon Platinum 8124M, 6 x DDR4-2666 channels = 128 GB/s peak;
// assumption: STREAM reaches ~100 GB/s with all 18 cores -> 33 GB/s summed.
inline constexpr double c5n_server_reduce = gbyte_per_s(100) / 3.0;

// ---- device compute rooflines (cluster.hpp device_compute; cost/compute.hpp uses them) -------
// Dense peaks per precision and memory bandwidth are the vendors' datasheet figures (sparsity
// figures halved); SM counts from the architecture whitepapers. The other four constants:
//
// matmul_efficiency — the fraction of the dense peak a large, well-shaped GEMM reaches, from the
//   "Maximum Achievable Matmul FLOPS" table (S. Bekman, ml-engineering, compute/accelerator:
//   torch.matmul, bf16, brute-force shape search): A100 SXM 267.9 of 312 TFLOP/s = 85.9 %
//   (CUDA 12.1), H100 SXM 792.1 of 989 = 80.1 % (CUDA 12.1). The same fraction is taken for the
//   device's other units (the clock a GPU holds under a saturated GEMM limits them alike).
//   Devices with no entry: assumption, 80 % (the lowest NVIDIA entry of that table).
inline constexpr double a100_matmul_efficiency = 267.9 / 312.0;
inline constexpr double h100_matmul_efficiency = 792.1 / 989.0;
inline constexpr double unlisted_matmul_efficiency = 0.80;
// memory_efficiency — the fraction of the datasheet bandwidth a streaming (elementwise) kernel
//   moves. Assumption: 0.90, the level STREAM-type GPU benchmarks (BabelStream copy/triad)
//   typically report on HBM parts; GDDR parts are taken alike.
inline constexpr double hbm_memory_efficiency = 0.90;
// kernel_floor — the device-side cost of one kernel in a stream of them (launch, ramp-up, tail),
//   added to its work (cost/compute.hpp). PyTorch's eager mode launches every op as its own
//   kernel. NVIDIA's introduction to CUDA Graphs (NVIDIA Technical Blog, "Getting Started with
//   CUDA Graphs", 2019) times a stream of short kernels at a few microseconds each, of which the
//   kernel's own work is a fraction. Assumption built on it: 4 us per kernel on every CUDA device.
//   Check: an NCF step at batch 65,536 on an H100 (45 kernels of little work in the zoo's
//   description) measures 0.24 ms of GPU time, 5.3 us a kernel.
inline constexpr double cuda_kernel_floor = usec(4.0);

// l2_bytes — the L2 cache: the architecture whitepapers' figures (A100 40 MB, V100 6 MB, T4 4 MB,
//   RTX 3090 6 MB, TITAN X 3 MB, H100 SXM5 50 MB), taken as MiB as the CUDA runtime reports them
//   (cudaDevAttrL2CacheSize); the H200's 60 MiB as PyTorch read it on one.
inline constexpr double mib = 1024.0 * 1024.0;

[[nodiscard]] constexpr device_compute gpu(double fp32, double tf32, double bf16, double fp16, double matmul_eff,
                                           double bandwidth, int sms, double l2) noexcept {
  device_compute d;
  d.fp32 = fp32;
  d.tf32 = tf32;
  d.bf16 = bf16;
  d.fp16 = fp16;
  d.matmul_efficiency = matmul_eff;
  d.memory_bandwidth = bandwidth;
  d.memory_efficiency = hbm_memory_efficiency;
  d.multiprocessors = sms;
  d.kernel_floor = cuda_kernel_floor;
  d.l2_bytes = l2;
  return d;
}

// H100 SXM5 80GB (H100 datasheet): FP32 67, TF32 989 sparse = 494.5 dense, BF16/FP16 1979 sparse =
// 989.5 dense TFLOP/s; HBM3 3.35 TB/s; 132 SMs (Hopper whitepaper, H100 SXM5).
inline constexpr device_compute h100_sxm =
    gpu(tflops(67), tflops(494.5), tflops(989.5), tflops(989.5), h100_matmul_efficiency, gbyte_per_s(3350), 132, 50 * mib);
// H200 SXM 141GB (H200 datasheet): the H100's GH100 die and peaks (FP32 67, TF32 494.5, BF16/FP16
// 989.5 dense TFLOP/s; 132 SMs) with HBM3e at 4.8 TB/s. Matmul efficiency: the H100's (same die
// and clocks).
inline constexpr device_compute h200_sxm =
    gpu(tflops(67), tflops(494.5), tflops(989.5), tflops(989.5), h100_matmul_efficiency, gbyte_per_s(4800), 132, 60 * mib);
// A100 SXM4 40GB (A100 datasheet): FP32 19.5, TF32 156, BF16/FP16 312 TFLOP/s; HBM2 1555 GB/s;
// 108 SMs (Ampere whitepaper). The 80GB part has 2039 GB/s (same compute).
inline constexpr device_compute a100_sxm_40gb =
    gpu(tflops(19.5), tflops(156), tflops(312), tflops(312), a100_matmul_efficiency, gbyte_per_s(1555), 108, 40 * mib);
inline constexpr device_compute a100_sxm_80gb =
    gpu(tflops(19.5), tflops(156), tflops(312), tflops(312), a100_matmul_efficiency, gbyte_per_s(2039), 108, 40 * mib);
// V100 SXM2 (V100 datasheet): FP32 15.7, FP16 tensor 125 TFLOP/s, no TF32 or BF16 units; HBM2
// 900 GB/s; 80 SMs (Volta whitepaper).
inline constexpr device_compute v100_sxm2 =
    gpu(tflops(15.7), 0.0, 0.0, tflops(125), unlisted_matmul_efficiency, gbyte_per_s(900), 80, 6 * mib);
// T4 (T4 datasheet): FP32 8.1, FP16 tensor 65 TFLOP/s; GDDR6 320 GB/s; 40 SMs (Turing whitepaper).
// Its 70 W cap may hold the clock below the peaks' boost clock.
inline constexpr device_compute t4 = gpu(tflops(8.1), 0.0, 0.0, tflops(65), unlisted_matmul_efficiency, gbyte_per_s(320), 40, 4 * mib);
// GeForce RTX 3090 (GA102 whitepaper, appendix table): FP32 35.6, TF32 tensor 35.6, BF16 and FP16
// tensor with FP32 accumulate 71 TFLOP/s (dense); GDDR6X 936 GB/s; 82 SMs.
inline constexpr device_compute rtx3090 =
    gpu(tflops(35.6), tflops(35.6), tflops(71), tflops(71), unlisted_matmul_efficiency, gbyte_per_s(936), 82, 6 * mib);
// TITAN X (Pascal, GP102; NVIDIA spec): FP32 10.97 TFLOP/s, no tensor cores (its FP16 rate is
// 1/64: autocast runs at the FP32 rate); GDDR5X 480 GB/s; 28 SMs.
inline constexpr device_compute titan_x_pascal =
    gpu(tflops(10.97), 0.0, 0.0, 0.0, unlisted_matmul_efficiency, gbyte_per_s(480), 28, 3 * mib);
// The `local-<N>` CPU ranks are not described: their (simulated) compute stays FLOPs at
// cpu_core_flops, as the testbed's trial records were measured with it.

}  // namespace hw

namespace detail {

inline node_spec worker(std::string name, int devices, link intra, link nic, int nics, double flops, double reduce,
                        device_compute compute = {}) {
  node_spec n;
  n.compute = compute;
  n.name = std::move(name);
  n.devices = devices;
  n.intra = intra;
  n.nic = nic;
  n.nics = nics;
  n.device_flops = flops;
  n.reduce_bandwidth = reduce;
  return n;
}

inline cluster_spec uniform(std::string name, std::string device, std::string source, int nodes, const node_spec& proto) {
  cluster_spec c;
  c.name = std::move(name);
  c.device = std::move(device);
  c.source = std::move(source);
  c.nodes.reserve(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    node_spec n = proto;
    n.name = std::to_string(i);
    n.name.insert(0, 1, 'n');  // (not "n" + ...: GCC 12 warns falsely about that at -O2, -Wrestrict)
    c.nodes.push_back(std::move(n));
  }
  c.validate();
  return c;
}

// The network side of a preset: NCCL over `kind`, NVLink SHARP where the hardware has it.
inline cluster_spec nccl_over(cluster_spec c, transport_kind kind, bool nvls = false) {
  c.backend = collective_backend::nccl;
  c.transport.kind = kind;
  c.nvls = nvls;
  return c;
}

inline constexpr int max_dgx_nodes = 512;
inline constexpr int max_local_ranks = 256;

}  // namespace detail

// ---- presets -------------------------------------------------------------------------------------

// AutoSync (NeurIPS 2020) cluster A: 11 nodes, one TITAN X each, 40 GbE. The paper does not say
// which TITAN X; the Pascal card (2016) is assumed, the current one when the work was done.
// A single-device node has no device-to-device link; `intra` is its PCIe link to the host.
[[nodiscard]] inline cluster_spec autosync_a() {
  return detail::nccl_over(
      detail::uniform("autosync-a", "TITAN X (Pascal)", "AutoSync (NeurIPS 2020) cluster A; NVIDIA spec sheets", 11,
                      detail::worker("", 1, {hw::pcie3_host, hw::pcie_latency}, {hw::gbe40, hw::tcp_latency}, 1,
                                     hw::titan_x_pascal_flops, hw::titan_x_pascal_reduce, hw::titan_x_pascal)),
      transport_kind::tcp);
}

// AutoSync cluster B: 4 x AWS g4dn.12xlarge (4 x T4 on PCIe each, 50 Gb/s).
[[nodiscard]] inline cluster_spec autosync_b() {
  return detail::nccl_over(
      detail::uniform("autosync-b", "T4", "AutoSync (NeurIPS 2020) cluster B; AWS g4dn.12xlarge and T4 spec sheets", 4,
                      detail::worker("", 4, {hw::pcie3_p2p, hw::pcie_latency}, {hw::gbe50, hw::aws_ena_latency}, 1, hw::t4_flops,
                                     hw::t4_reduce, hw::t4)),
      transport_kind::tcp);
}

// Cluster B plus two dedicated CPU parameter servers (AWS c5n.9xlarge: 50 Gb/s, the same rate
// as the workers), the BytePS layout: server_nodes() are the two servers, not the workers.
[[nodiscard]] inline cluster_spec autosync_b_ps() {
  cluster_spec c = autosync_b();
  c.name = "autosync-b-ps";
  c.source += "; servers: AWS c5n.9xlarge spec";
  for (int i = 0; i < 2; ++i) {
    node_spec s;
    s.name = "ps" + std::to_string(i);
    s.devices = 0;
    s.server_only = true;
    s.nic = {hw::gbe50, hw::aws_ena_latency};
    s.nics = 1;
    s.reduce_bandwidth = hw::c5n_server_reduce;
    c.nodes.push_back(std::move(s));
  }
  c.validate();
  return c;
}

// 4 x AWS p3.16xlarge: 8 x V100-SXM2-16GB on NVLink2 each, "up to 25 Gigabit" networking.
[[nodiscard]] inline cluster_spec p3_16xlarge_x4() {
  return detail::nccl_over(
      detail::uniform("p3.16xlarge-x4", "V100-SXM2-16GB", "AWS p3.16xlarge and V100 spec sheets; Megatron-LM 2019", 4,
                      detail::worker("", 8, {hw::v100_nvlink, hw::nvlink_latency}, {hw::gbe25, hw::aws_ena_latency}, 1,
                                     hw::v100_flops, hw::v100_reduce, hw::v100_sxm2)),
      transport_kind::tcp);
}

// N x DGX A100: 8 x A100-SXM4-40GB on NVSwitch, 8 x ConnectX-6 HDR 200 Gb/s compute NICs
// (the two storage NICs are not counted).
[[nodiscard]] inline cluster_spec dgx_a100(int nodes) {
  if (nodes < 1 || nodes > detail::max_dgx_nodes)
    throw error("cluster", "dgx-a100-x<N> needs N in [1, " + std::to_string(detail::max_dgx_nodes) + "], got " + std::to_string(nodes));
  return detail::nccl_over(detail::uniform("dgx-a100-x" + std::to_string(nodes), "A100-SXM4-40GB",
                                           "DGX A100 spec; nccl-tests a100_1node_8gpu_allreduce; Megatron-LM 2021", nodes,
                                           detail::worker("", 8, {hw::a100_nvswitch, hw::nvlink_latency},
                                                          {hw::ib_hdr200, hw::rdma_latency}, 8, hw::a100_flops, hw::a100_reduce, hw::a100_sxm_40gb)),
                           transport_kind::rdma);
}

// N x DGX H100: 8 x H100-SXM5-80GB on NVSwitch, 8 x ConnectX-7 NDR 400 Gb/s compute NICs.
[[nodiscard]] inline cluster_spec dgx_h100(int nodes) {
  if (nodes < 1 || nodes > detail::max_dgx_nodes)
    throw error("cluster", "dgx-h100-x<N> needs N in [1, " + std::to_string(detail::max_dgx_nodes) + "], got " + std::to_string(nodes));
  return detail::nccl_over(detail::uniform("dgx-h100-x" + std::to_string(nodes), "H100-SXM5-80GB",
                                           "DGX H100 spec; nccl-tests issue 290 (NDR 400 Gb/s, NVLink)", nodes,
                                           detail::worker("", 8, {hw::h100_nvswitch, hw::nvlink_latency},
                                                          {hw::ib_ndr400, hw::rdma_latency}, 8, hw::h100_flops, hw::h100_reduce, hw::h100_sxm)),
                           transport_kind::rdma, true);
}

// 8 commodity nodes x 4 GeForce RTX 3090 (PCIe, no P2P) on one 10 GbE port each.
[[nodiscard]] inline cluster_spec commodity_10gbe_x8() {
  return detail::nccl_over(
      detail::uniform("commodity-10gbe-x8", "RTX 3090", "GA102 whitepaper and RTX 3090 spec; 10 GbE line rate", 8,
                      detail::worker("", 4, {hw::pcie4_bounce, hw::pcie_latency}, {hw::gbe10, hw::tcp_latency}, 1,
                                     hw::rtx3090_flops, hw::rtx3090_reduce, hw::rtx3090)),
      transport_kind::tcp);
}

// N MPI ranks on this host (what the MPI tests and examples run on): one node, N CPU "devices",
// shared-memory copies between them, a loopback interface as the NIC.
[[nodiscard]] inline cluster_spec local(int ranks) {
  if (ranks < 1 || ranks > detail::max_local_ranks)
    throw error("cluster", "local-<N> needs N in [1, " + std::to_string(detail::max_local_ranks) + "], got " + std::to_string(ranks));
  return detail::uniform("local-" + std::to_string(ranks), "CPU core", "MPI ranks on one host; typical x86 core and OSU figures", 1,
                         detail::worker("", ranks, {hw::shm_copy, hw::shm_latency}, {hw::loopback, hw::loopback_latency}, 1,
                                        hw::cpu_core_flops, hw::cpu_core_reduce));
}

// ---- names ---------------------------------------------------------------------------------------

// The listed preset names, in the order the CLI shows them.
[[nodiscard]] inline std::vector<std::string> cluster_names() {
  return {"autosync-a",  "autosync-b",   "autosync-b-ps", "p3.16xlarge-x4", "dgx-a100-x2",
          "dgx-a100-x4", "dgx-a100-x16", "dgx-h100-x2",   "dgx-h100-x16",   "dgx-h100-x32",
          "commodity-10gbe-x8", "local-2", "local-4", "local-8"};
}

namespace detail {

// "<prefix><N>" with N a positive decimal without sign or leading zero: N (saturated at
// LLONG_MAX when the digits overflow), or -1 when `name` is not of that form.
[[nodiscard]] inline long long parametric(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return -1;
  const std::string_view digits = name.substr(prefix.size());
  if (digits.front() < '1' || digits.front() > '9') return -1;
  long long n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (end != digits.data() + digits.size()) return -1;
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<long long>::max();
  return n;
}

[[nodiscard]] inline int checked_count(std::string_view name, long long n, int max) {
  if (n > max)
    throw error("cluster", "cluster '" + std::string(name) + "': N must be in [1, " + std::to_string(max) + "]");
  return static_cast<int>(n);
}

}  // namespace detail

// The preset called `name`; throws autosync::error on field "cluster" for unknown names.
[[nodiscard]] inline cluster_spec make_cluster(std::string_view name) {
  if (name == "autosync-a") return autosync_a();
  if (name == "autosync-b") return autosync_b();
  if (name == "autosync-b-ps") return autosync_b_ps();
  if (name == "p3.16xlarge-x4") return p3_16xlarge_x4();
  if (name == "commodity-10gbe-x8") return commodity_10gbe_x8();
  if (const auto n = detail::parametric(name, "dgx-a100-x"); n >= 0)
    return dgx_a100(detail::checked_count(name, n, detail::max_dgx_nodes));
  if (const auto n = detail::parametric(name, "dgx-h100-x"); n >= 0)
    return dgx_h100(detail::checked_count(name, n, detail::max_dgx_nodes));
  if (const auto n = detail::parametric(name, "local-"); n >= 0)
    return local(detail::checked_count(name, n, detail::max_local_ranks));
  std::string valid;
  for (const auto& s : cluster_names()) valid += s + ", ";
  valid += "dgx-a100-x<N>, dgx-h100-x<N> (N in [1, " + std::to_string(detail::max_dgx_nodes) + "]), local-<N> (N in [1, " +
           std::to_string(detail::max_local_ranks) + "])";
  throw error("cluster", "unknown cluster '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace autosync::zoo
