// autosync/plugin/nccl_tuner.hpp — an NCCL tuner plugin driven by autosync's cost model.
//
// NCCL asks a tuner, for every collective it enqueues, which algorithm and protocol to use:
// it hands over its own cost table `float[numAlgo][numProto]` (predicted µs, -1 where the
// combination is unavailable) and runs the smallest non-negative entry. This plugin decides
// with autosync's calibrated α-β-γ model (cost/collectives.hpp, cost/fabric.hpp — the
// constants of zoo/clusters.hpp, calibrated against nccl-tests logs) and steers NCCL by
// lowering the chosen entry to 0; -1 entries are never touched.
//
//   collective          autosync compares                      NCCL row it picks
//   AllReduce           ring vs tree (double binary tree)      RING | TREE
//   ReduceScatter,      ring vs halving_doubling               RING | PAT (NCCL's logarithmic
//   AllGather                                                         algorithm for these)
//   Broadcast, Reduce   —                                      RING (NCCL's algorithm for them)
//   Send/Recv           —                                      (left to NCCL)
// Within the chosen row the protocol NCCL predicted fastest is kept (autosync does not model
// LL / LL128 / Simple). When the chosen row has no available entry the table is left alone.
//
// The fabric of a communicator of nRanks ranks on nNodes nodes: the node of a cluster preset or
// JSON file (AUTOSYNC_TUNER_CLUSTER=dgx-h100-x2 or =path/cluster.json; default: a DGX H100
// node — NVSwitch 370 GB/s, 8 x NDR 400) repeated nNodes times with ceil(nRanks / nNodes)
// devices each.
//
// AUTOSYNC_TUNER_STRATEGY=path/strategy.json makes the searched topology the one that runs:
// the topology of the strategy's all_reduce / sharded groups (the first such group's when they
// differ) decides instead of the model where NCCL has it:
//   ring -> RING;  tree -> TREE (AllReduce);  halving_doubling -> PAT (ReduceScatter/AllGather);
//   hierarchical<I, O> -> I on single-node communicators (the intra communicators of the split),
//                         O on communicators of one rank per node (the inter communicators),
//                         the model elsewhere.
//
// AUTOSYNC_TUNER_CORRECTION=default (or =path/model.json, an XGBoost JSON model trained by
// `autosync learn --collectives`) makes AllReduce decide by corrected times: ring vs tree, each
// model x exp(forest(row)) (cost/collective_features.hpp: machine-relative features of the NCCL
// model on the cluster; the embedded default is bounded by its evidence box and was trained on
// the nccl-tests logs of tests/data/collectives/, each machine calibrated from 4 of its sizes).
// Its features are relative to the cluster's constants, so give the calibrated cluster
// (AUTOSYNC_TUNER_CLUSTER=cluster.json from `autosync calibrate`). Opt-in, not the default:
// judged leave one machine out it lowers the per-log median error (0.066 -> 0.061) but raises it
// over all rows (0.068 -> 0.090) (README, "Learned correction of collectives"). A strategy
// file's topology still comes first.
//
// Every decision is logged through NCCL's logger at INFO with the NCCL_TUNING flag
// (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING shows it).
//
// A bad environment variable (an unknown cluster preset, a missing or malformed file, a
// correction model of another feature set) never fails NCCL: NCCL 2.28 treats a non-success
// init of a tuner as fatal for the communicator (init.cc: NCCLCHECK(comm->tuner->init(...)),
// then "nccl init ... failed: internal error"), so init logs one WARN naming the variable and
// the problem and returns ncclSuccess with a passive context, whose getCollInfo leaves every
// cost table as NCCL filled it: NCCL's own choices stand on that communicator. getCollInfo and
// finalize are NCCLCHECKed too (enqueue.cc, init.cc: an error there fails the collective or the
// destroy, whatever the tuner headers say about falling back), so they return ncclSuccess
// always, also on a null context. Nothing throws across the C ABI.
//
// Pins: a program pins the algorithm of one communicator (exec/nccl: the executor's communicator
// for a strategy's topology). It calls `autosync_tuner_pin_next(all_reduce, rs_ag)` (exported by
// the plugin library; NCCL algorithm numbers, -1: no pin) right before it creates the
// communicator; the tuner init that runs next in the process takes the pin and files it under the
// communicator's commId (`autosync_tuner_pinned(commId, ...)` reads it back); (-1, -1) withdraws a
// pending pin that no init took. Pinned rows decide
// over the model, the correction and a strategy file, also on a context made passive by a bad
// variable (the pin is the program's, not the environment's); a pinned row with no available
// entry leaves the table alone. Communicators are created one at a time for this: nccl_backend
// holds a process-wide lock from the pin until the new communicator settled.
//
// The ABI (NCCL's ext-tuner headers are not installed; the structs are declared here with the
// exact layout): v4 (NCCL 2.24), v5 (2.28), v6 (2.30.3: v5 + getChunkSize). A shared library
// exports all three (examples/nccl_tuner/plugin.cpp: libnccl-tuner-autosync.so).
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/collectives.hpp>
#include <autosync/cost/default_collective_correction.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/error.hpp>
#include <autosync/gbt/xgboost.hpp>
#include <autosync/io/json.hpp>
#include <autosync/policy/topology.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/zoo/clusters.hpp>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace autosync::plugin {

// ---- the C ABI -----------------------------------------------------------------------------------
// ncclResult_t, ncclFunc_t and the log level are C enums: int on the ABI.
using nccl_result = int;
inline constexpr nccl_result nccl_success = 0;
inline constexpr nccl_result nccl_internal_error = 3;
inline constexpr nccl_result nccl_invalid_argument = 4;

enum coll : int { broadcast = 0, reduce = 1, all_gather = 2, reduce_scatter = 3, all_reduce = 4, send_recv = 5, send = 6, recv = 7 };
enum algo : int { algo_tree = 0, algo_ring = 1, algo_collnet_direct = 2, algo_collnet_chain = 3, algo_nvls = 4, algo_nvls_tree = 5, algo_pat = 6 };
enum proto : int { proto_ll = 0, proto_ll128 = 1, proto_simple = 2 };
inline constexpr int log_warn = 2, log_info = 3;
inline constexpr unsigned long flag_tuning = 64;

extern "C" {
typedef void (*nccl_logger)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

struct nvl_domain_info_v5 {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
};
struct tuner_constants_v5 {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
};
typedef nccl_result (*get_coll_info_fn)(void* ctx, int collType, std::size_t nBytes, int numPipeOps, float** collCostTable, int numAlgo,
                                         int numProto, int regBuff, int* nChannels);
struct tuner_v4 {
  const char* name;
  nccl_result (*init)(std::size_t nRanks, std::size_t nNodes, nccl_logger log, void** ctx);
  get_coll_info_fn getCollInfo;
  nccl_result (*destroy)(void* ctx);
};
struct tuner_v5 {
  const char* name;
  nccl_result (*init)(void** ctx, std::uint64_t commId, std::size_t nRanks, std::size_t nNodes, nccl_logger log,
                      nvl_domain_info_v5* nvlDomainInfo, tuner_constants_v5* constants);
  get_coll_info_fn getCollInfo;
  nccl_result (*finalize)(void* ctx);
};
struct tuner_v6 {
  const char* name;
  nccl_result (*init)(void** ctx, std::uint64_t commId, std::size_t nRanks, std::size_t nNodes, nccl_logger log,
                      nvl_domain_info_v5* nvlDomainInfo, tuner_constants_v5* constants);
  get_coll_info_fn getCollInfo;
  nccl_result (*finalize)(void* ctx);
  nccl_result (*getChunkSize)(void* ctx, int collType, std::size_t nBytes, int algo, int proto, int nChannels, std::size_t* chunkSize);
};
}  // extern "C"

// The layout NCCL reads (LP64): members in the documented order, nothing else. The sizes follow
// from the ABI description — 3 ints; (7x3 + 3x7x3 + 5x4x3) doubles; 4, 4 and 5 pointer-sized
// members — so a member added, dropped or retyped here fails to compile instead of misleading NCCL.
static_assert(sizeof(void*) == 8, "autosync: the NCCL tuner plugin ABI is described for 64-bit targets");
static_assert(sizeof(nvl_domain_info_v5) == 3 * sizeof(int), "autosync: ncclNvlDomainInfo_v5_t is three ints");
static_assert(sizeof(tuner_constants_v5) == (7 * 3 + 3 * 7 * 3 + 5 * 4 * 3) * sizeof(double),
              "autosync: ncclTunerConstants_v5_t is 144 doubles (1152 bytes)");
static_assert(sizeof(tuner_v4) == 32 && sizeof(tuner_v5) == 32 && sizeof(tuner_v6) == 40,
              "autosync: ncclTunerPlugin_v4/_v5 are 4 pointer-sized members, _v6 is 5");
static_assert(offsetof(tuner_v4, getCollInfo) == 16 && offsetof(tuner_v5, getCollInfo) == 16 && offsetof(tuner_v6, getCollInfo) == 16 &&
                  offsetof(tuner_v6, getChunkSize) == 32,
              "autosync: getCollInfo is the third member of every tuner version, getChunkSize the fifth of v6");

[[nodiscard]] constexpr const char* coll_name(int c) noexcept {
  constexpr const char* names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv", "Send", "Recv"};
  return c >= 0 && c < 8 ? names[c] : "Unknown";
}
[[nodiscard]] constexpr const char* algo_name(int a) noexcept {
  constexpr const char* names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  return a >= 0 && a < 7 ? names[a] : "UNDEF";
}
[[nodiscard]] constexpr const char* proto_name(int p) noexcept {
  constexpr const char* names[] = {"LL", "LL128", "SIMPLE"};
  return p >= 0 && p < 3 ? names[p] : "UNDEF";
}

// ---- the decision (pure: the harness recomputes it) ----------------------------------------------

// The fabric of a communicator: `proto`'s node repeated `nodes` times, ceil(ranks / nodes) devices each.
[[nodiscard]] inline cost::fabric communicator_fabric(const node_spec& proto, std::size_t ranks, std::size_t nodes) {
  if (ranks < 1 || nodes < 1 || nodes > ranks)
    throw error("nRanks", "tuner: a communicator of " + std::to_string(ranks) + " ranks on " + std::to_string(nodes) + " nodes");
  cluster_spec c;
  c.name = "communicator";
  const std::size_t per = ranks / nodes + (ranks % nodes != 0 ? 1 : 0);  // ceil, without ranks + nodes - 1 overflowing
  if (per > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw error("nRanks", "tuner: " + std::to_string(ranks) + " ranks on " + std::to_string(nodes) + " nodes is more devices per node than an int holds");
  const auto g = static_cast<int>(per);
  for (std::size_t i = 0; i < nodes; ++i) {
    node_spec n = proto;
    n.server_only = false;
    n.devices = g;
    c.nodes.push_back(n);
  }
  return cost::make_fabric(c);
}

// The default node: one DGX H100 (zoo::dgx_h100).
[[nodiscard]] inline node_spec default_node() { return zoo::dgx_h100(1).nodes.at(0); }

// What the strategy file asks for (AUTOSYNC_TUNER_STRATEGY), if anything.
[[nodiscard]] inline std::optional<topology_value> strategy_topology(const strategy_desc& s) {
  for (const auto& g : s.groups)
    if (g.architecture == architecture_kind::all_reduce || g.architecture == architecture_kind::sharded) return g.topology;
  return std::nullopt;
}

// The collective correction AUTOSYNC_TUNER_CORRECTION names: "" or "off" none (analytical),
// "default" the embedded one, anything else an XGBoost JSON model file of
// cost::collective_feature_count features. Throws autosync::error on a bad file or width.
[[nodiscard]] inline cost::collective_correction load_correction(const std::string& v) {
  if (v.empty() || v == "off") return {};
  if (v == "default") return cost::collective_correction(cost::default_collective_correction{});
  if (!std::filesystem::exists(v)) throw error("'" + v + "' is neither 'default', 'off' nor an XGBoost JSON model file");
  return cost::collective_correction(gbt::load_xgboost_json(v));
}

struct decision {
  int algo = -1;             // the NCCL row autosync wants, -1: no opinion
  double model_a = 0.0;      // seconds: ring (and tree / halving_doubling) on this fabric, corrected or not
  double model_b = 0.0;
  const char* reason = "";   // "model" | "corrected model" | "strategy" | "only algorithm"
};

// autosync's choice for one collective of `bytes` on fabric f (nRanks ranks, nNodes nodes);
// with a correction, AllReduce compares the corrected times.
[[nodiscard]] inline decision decide(const cost::fabric& f, std::size_t nranks, std::size_t nnodes, int collective, double bytes,
                                     const std::optional<topology_value>& forced, const cost::collective_correction& correction = {}) {
  decision d;
  const topology_value ring{topology_kind::ring}, tree{topology_kind::tree}, hd{topology_kind::halving_doubling};
  std::optional<topology_kind> want;
  if (forced) {
    if (forced->kind == topology_kind::hierarchical) {
      if (nnodes == 1) want = forced->intra;
      else if (nranks == nnodes) want = forced->inter;
    } else {
      want = forced->kind;
    }
  }
  switch (collective) {
    case all_reduce: {
      d.model_a = cost::collective_time(f, cost::collective_op::all_reduce, topology_kind::ring, bytes);  // NCCL's ring and tree
      d.model_b = cost::collective_time(f, cost::collective_op::all_reduce, topology_kind::tree, bytes);
      if (want == topology_kind::ring || want == topology_kind::tree) {
        d.algo = *want == topology_kind::ring ? algo_ring : algo_tree;
        d.reason = "strategy";
      } else if (correction.corrected()) {
        d.model_a = cost::corrected_all_reduce(f, ring, bytes, correction).time;
        d.model_b = cost::corrected_all_reduce(f, tree, bytes, correction).time;
        d.algo = d.model_b < d.model_a ? algo_tree : algo_ring;
        d.reason = "corrected model";
      } else {
        d.algo = d.model_b < d.model_a ? algo_tree : algo_ring;
        d.reason = "model";
      }
      return d;
    }
    case reduce_scatter:
    case all_gather: {
      const bool rs = collective == reduce_scatter;
      d.model_a = rs ? cost::reduce_scatter(f, ring, bytes) : cost::all_gather(f, ring, bytes);
      d.model_b = rs ? cost::reduce_scatter(f, hd, bytes) : cost::all_gather(f, hd, bytes);
      if (want == topology_kind::ring || want == topology_kind::halving_doubling) {
        d.algo = *want == topology_kind::ring ? algo_ring : algo_pat;
        d.reason = "strategy";
      } else {
        d.algo = d.model_b < d.model_a ? algo_pat : algo_ring;
        d.reason = "model";
      }
      return d;
    }
    case broadcast:
    case reduce:
      d.algo = algo_ring;
      d.reason = "only algorithm";
      return d;
    default: return d;
  }
}

// Steers `table` (float[numAlgo][numProto]) to d.algo: its cheapest available protocol becomes 0.
// Returns the protocol chosen, or -1 when the table was left alone.
[[nodiscard]] inline int steer(float** table_ptr, int num_algo, int num_proto, const decision& d) {
  if (table_ptr == nullptr || d.algo < 0 || d.algo >= num_algo || num_proto < 1) return -1;
  float* row = reinterpret_cast<float*>(table_ptr) + static_cast<std::ptrdiff_t>(d.algo) * num_proto;
  int best = -1;
  for (int p = 0; p < num_proto; ++p)
    if (row[p] >= 0.0f && (best < 0 || row[p] < row[best])) best = p;
  if (best >= 0) row[best] = 0.0f;
  return best;
}

// ---- pins ------------------------------------------------------------------------------------------
struct pin {
  int all_reduce = -1;  // an NCCL algorithm (algo_*) for AllReduce, -1: no pin
  int rs_ag = -1;       // for ReduceScatter and AllGather
};
[[nodiscard]] constexpr bool valid_pin_value(int a) noexcept { return a >= -1 && a <= algo_pat; }
struct pin_registry {
  std::mutex mu;
  std::optional<pin> pending;                 // taken by the next init
  std::map<std::uint64_t, pin> by_comm;       // commId -> the pin its init took (v5 / v6)
};
[[nodiscard]] inline pin_registry& pins() {
  static pin_registry r;
  return r;
}
// The pending pin, taken (at most one init gets it).
[[nodiscard]] inline std::optional<pin> take_pending_pin() {
  auto& r = pins();
  const std::lock_guard lk(r.mu);
  return std::exchange(r.pending, std::nullopt);
}

// ---- the tuner (one per communicator) ------------------------------------------------------------
class tuner {
 public:
  // A context that leaves NCCL's choices alone (what init hands NCCL when a variable is bad).
  struct passive_t {};
  static constexpr passive_t passive{};
  tuner(passive_t, std::size_t nranks, std::size_t nnodes, nccl_logger log) : nranks_(nranks), nnodes_(nnodes), log_(log), passive_(true) {}

  // Reads AUTOSYNC_TUNER_CLUSTER / AUTOSYNC_TUNER_STRATEGY / AUTOSYNC_TUNER_CORRECTION; throws
  // autosync::error naming the variable on bad input.
  tuner(std::size_t nranks, std::size_t nnodes, nccl_logger log) : nranks_(nranks), nnodes_(nnodes), log_(log) {
    node_spec node = default_node();
    cluster_name_ = "dgx-h100 node (default)";
    if (const char* c = std::getenv("AUTOSYNC_TUNER_CLUSTER"); c && *c) {
      try {
        const std::string v(c);
        const cluster_spec cl = std::filesystem::exists(v) ? io::load_cluster_file(v) : zoo::make_cluster(v);
        cl.validate();
        bool found = false;
        for (const auto& n : cl.nodes)
          if (!n.server_only) {
            node = n;
            found = true;
            break;
          }
        if (!found) throw error("nodes", "the cluster has no worker node");
        cluster_name_ = cl.name.empty() ? v : cl.name;
      } catch (const std::exception& e) {
        throw error("AUTOSYNC_TUNER_CLUSTER", std::string("'") + c + "': " + e.what());
      }
    }
    fabric_ = communicator_fabric(node, nranks, nnodes);
    if (const char* v = std::getenv("AUTOSYNC_TUNER_CORRECTION"); v && *v) {
      try {
        correction_ = load_correction(v);
      } catch (const std::exception& e) {
        throw error("AUTOSYNC_TUNER_CORRECTION", std::string("'") + v + "': " + e.what());
      }
    }
    if (const char* s = std::getenv("AUTOSYNC_TUNER_STRATEGY"); s && *s) {
      try {
        const auto desc = io::load_strategy_file(s);
        forced_ = strategy_topology(desc);
        strategy_name_ = desc.name.empty() ? std::string(s) : desc.name;
      } catch (const std::exception& e) {
        throw error("AUTOSYNC_TUNER_STRATEGY", std::string("'") + s + "': " + e.what());
      }
    }
    info("autosync tuner: communicator of %zu ranks on %zu nodes; fabric from %s; %s; %s", nranks, nnodes, cluster_name_.c_str(),
         strategy_name_.empty() ? "no strategy file (the cost model decides)" : ("strategy '" + strategy_name_ + "'").c_str(),
         correction_.corrected() ? "AllReduce by corrected times (AUTOSYNC_TUNER_CORRECTION)" : "analytical times");
  }

  nccl_result get_coll_info(int collective, std::size_t bytes, float** table, int num_algo, int num_proto, int* channels) {
    (void)channels;  // left at 0: NCCL decides
    const int pinned = !pin_ ? -1
                       : collective == all_reduce                                   ? pin_->all_reduce
                       : (collective == reduce_scatter || collective == all_gather) ? pin_->rs_ag
                                                                                    : -1;
    if (passive_ && pinned < 0) return nccl_success;
    auto d = passive_ ? decision{} : decide(fabric_, nranks_, nnodes_, collective, static_cast<double>(bytes), forced_, correction_);
    if (pinned >= 0) {
      d.algo = pinned;
      d.reason = "pinned by the program";
    }
    const int p = steer(table, num_algo, num_proto, d);
    if (d.algo < 0) return nccl_success;
    if (p < 0) {
      info("autosync tuner: %s %zu B on %zu ranks: %s unavailable, NCCL's choice stands", coll_name(collective), bytes, nranks_, algo_name(d.algo));
      return nccl_success;
    }
    info("autosync tuner: %s %zu B on %zu ranks / %zu nodes -> %s/%s (%s; model %s %.2f us, %s %.2f us)", coll_name(collective), bytes, nranks_,
         nnodes_, algo_name(d.algo), proto_name(p), d.reason, "ring", d.model_a * 1e6,
         collective == all_reduce ? "tree" : "halving_doubling", d.model_b * 1e6);
    return nccl_success;
  }

  [[nodiscard]] const cost::fabric& fabric() const noexcept { return fabric_; }
  // The pin this communicator's init took, if any, and the commId it is filed under.
  void set_pin(std::optional<pin> p, std::optional<std::uint64_t> comm_id) {
    pin_ = p;
    comm_id_ = comm_id;
    if (p) {
      info("autosync tuner: communicator %s pinned by the program: AllReduce %s, ReduceScatter/AllGather %s",
           comm_id ? ("0x" + hex(*comm_id)).c_str() : "(v4: no commId)", p->all_reduce >= 0 ? algo_name(p->all_reduce) : "(model)",
           p->rs_ag >= 0 ? algo_name(p->rs_ag) : "(model)");
      if (comm_id) {
        auto& r = pins();
        const std::lock_guard lk(r.mu);
        r.by_comm[*comm_id] = *p;
      }
    }
  }
  ~tuner() {
    if (pin_ && comm_id_) {
      auto& r = pins();
      const std::lock_guard lk(r.mu);
      r.by_comm.erase(*comm_id_);
    }
  }
  tuner(const tuner&) = delete;
  tuner& operator=(const tuner&) = delete;
  // Whether this context leaves NCCL's choices alone (init met a bad variable).
  [[nodiscard]] bool is_passive() const noexcept { return passive_; }

 private:
  static std::string hex(std::uint64_t v) {
    char b[20];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
    return b;
  }
  template <class... A>
  void info(const char* fmt, A... a) const {
    if (log_) log_(log_info, flag_tuning, __FILE__, __LINE__, fmt, a...);
  }

  std::size_t nranks_, nnodes_;
  nccl_logger log_;
  cost::fabric fabric_{};
  std::optional<topology_value> forced_;
  cost::collective_correction correction_;
  std::string cluster_name_, strategy_name_;
  bool passive_ = false;
  std::optional<pin> pin_;
  std::optional<std::uint64_t> comm_id_;
};

// ---- the C entry points --------------------------------------------------------------------------
namespace entry {

// Never a non-success return for bad input: NCCL would fail the communicator (see the header
// comment). A bad variable gives one WARN and a passive context; only a null `ctx` (NCCL's bug,
// not the user's) is an error.
inline nccl_result make(std::size_t nranks, std::size_t nnodes, nccl_logger log, void** ctx, std::optional<std::uint64_t> comm_id = std::nullopt) {
  if (ctx == nullptr) return nccl_invalid_argument;
  *ctx = nullptr;
  std::optional<pin> pinned;
  try {
    pinned = take_pending_pin();
  } catch (...) {
  }
  auto warn = [&](const char* why) {
    if (log)
      log(log_warn, flag_tuning, __FILE__, __LINE__,
          "autosync tuner: %s; NCCL's own algorithm and protocol choices stand on this communicator (%zu ranks)", why, nranks);
  };
  try {
    auto* t = new tuner(nranks, nnodes, log);
    *ctx = t;
    t->set_pin(pinned, comm_id);
    return nccl_success;
  } catch (const std::exception& e) {
    warn(e.what());
  } catch (...) {
    warn("init failed (unknown exception)");
  }
  try {
    auto* t = new tuner(tuner::passive, nranks, nnodes, log);
    *ctx = t;
    t->set_pin(pinned, comm_id);
  } catch (...) {
    *ctx = nullptr;  // getCollInfo and finalize accept a null context
  }
  return nccl_success;
}
inline nccl_result init_v4(std::size_t nranks, std::size_t nnodes, nccl_logger log, void** ctx) { return make(nranks, nnodes, log, ctx); }
inline nccl_result init_v5(void** ctx, std::uint64_t comm_id, std::size_t nranks, std::size_t nnodes, nccl_logger log, nvl_domain_info_v5*,
                           tuner_constants_v5*) {
  return make(nranks, nnodes, log, ctx, comm_id);
}
// autosync_tuner_pin_next: 0, or 1 for a value that is no NCCL algorithm (nothing pinned).
inline int pin_next(int all_reduce_algo, int rs_ag_algo) noexcept {
  if (!valid_pin_value(all_reduce_algo) || !valid_pin_value(rs_ag_algo)) return 1;
  try {
    auto& r = pins();
    const std::lock_guard lk(r.mu);
    if (all_reduce_algo < 0 && rs_ag_algo < 0) r.pending.reset();  // (-1, -1): withdraw a pin nobody took
    else r.pending = pin{all_reduce_algo, rs_ag_algo};
    return 0;
  } catch (...) {
    return 1;
  }
}
// autosync_tuner_pinned: 1 and the pin of a live communicator of this commId, else 0.
inline int pinned(std::uint64_t comm_id, int* all_reduce_algo, int* rs_ag_algo) noexcept {
  try {
    auto& r = pins();
    const std::lock_guard lk(r.mu);
    const auto it = r.by_comm.find(comm_id);
    if (it == r.by_comm.end()) return 0;
    if (all_reduce_algo) *all_reduce_algo = it->second.all_reduce;
    if (rs_ag_algo) *rs_ag_algo = it->second.rs_ag;
    return 1;
  } catch (...) {
    return 0;
  }
}
inline nccl_result get_coll_info(void* ctx, int collective, std::size_t bytes, int, float** table, int num_algo, int num_proto, int,
                                 int* channels) {
  if (ctx == nullptr) return nccl_success;  // no opinion: NCCL's table stands
  try {
    return static_cast<tuner*>(ctx)->get_coll_info(collective, bytes, table, num_algo, num_proto, channels);
  } catch (...) {
    return nccl_success;  // a non-success return fails the collective in NCCL 2.28 (enqueue.cc: NCCLCHECK)
  }
}
inline nccl_result finalize(void* ctx) {
  delete static_cast<tuner*>(ctx);
  return nccl_success;
}

}  // namespace entry

inline constexpr const char* plugin_name = "autosync";

[[nodiscard]] constexpr tuner_v4 make_v4() noexcept { return {plugin_name, &entry::init_v4, &entry::get_coll_info, &entry::finalize}; }
[[nodiscard]] constexpr tuner_v5 make_v5() noexcept { return {plugin_name, &entry::init_v5, &entry::get_coll_info, &entry::finalize}; }
[[nodiscard]] constexpr tuner_v6 make_v6() noexcept {
  return {plugin_name, &entry::init_v5, &entry::get_coll_info, &entry::finalize, nullptr};  // getChunkSize: NCCL's default
}

}  // namespace autosync::plugin
