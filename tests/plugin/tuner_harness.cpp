// tests/plugin/tuner_harness.cpp — loads libnccl-tuner-autosync.so the way NCCL does (dlopen,
// dlsym of ncclTunerPlugin_v6 / _v5 / _v4) and calls init / getCollInfo / finalize (destroy)
// for a table of collectives, message sizes and communicator shapes, on NCCL-like pre-filled
// cost tables (NCCL's latency + bytes / bandwidth form, with -1 for unavailable entries).
// For every call it checks:
//   - the entry NCCL would run (the smallest non-negative) is in the row autosync's cost model
//     prefers, computed here from cost/fabric.hpp directly (ring vs tree for AllReduce, ring vs
//     halving_doubling -> PAT for ReduceScatter / AllGather, RING for Broadcast / Reduce), with
//     the protocol NCCL's own table rated best in that row;
//   - -1 entries stay -1, every other entry but the chosen one is unchanged; a preferred row
//     with no available entry leaves the table untouched; Send/Recv tables are untouched;
//   - both answers of each comparison occur (the table spans the model's crossover);
//   - AUTOSYNC_TUNER_STRATEGY forces the strategy's topology (tree; hierarchical<ring, tree>:
//     ring on one-node communicators, tree on one-rank-per-node ones);
//   - AUTOSYNC_TUNER_CLUSTER changes the fabric (a preset and a JSON file);
//   - AUTOSYNC_TUNER_CORRECTION=default decides AllReduce by the corrected ring and tree times
//     of the embedded collective correction, recomputed here, and changes some decisions of the
//     analytical model; a model file with a constant output (the same factor on every time)
//     decides as the analytical model does;
//   - the INFO/TUNING log names the choice;
//   - NCCL's own handling of the plugin's return codes (2.28.9): a non-success init fails the
//     communicator (init.cc, NCCLCHECK(comm->tuner->init(...))), a non-success getCollInfo fails
//     the collective and a non-success finalize the destroy (enqueue.cc, init.cc: NCCLCHECK).
//     The harness treats each as fatal, as NCCL does. A bad AUTOSYNC_TUNER_CLUSTER (an unknown
//     preset, a missing or malformed file), AUTOSYNC_TUNER_STRATEGY (missing, malformed) or
//     AUTOSYNC_TUNER_CORRECTION (missing, another feature set) must give exactly one WARN naming
//     the variable and its value, then ncclSuccess and a context that leaves every table alone.
// Usage: tuner_harness <path of libnccl-tuner-autosync.so>. No GPU, no NCCL needed.
#include <autosync/cost/collective_features.hpp>
#include <autosync/cost/default_collective_correction.hpp>
#include <autosync/cost/fabric.hpp>
#include <autosync/io/json.hpp>
#include <autosync/plugin/nccl_tuner.hpp>
#include <autosync/zoo/clusters.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace pl = autosync::plugin;
using autosync::topology_kind;
using autosync::topology_value;

namespace {

int failures = 0, checks = 0;
#define EXPECT(cond, ...)                                                     \
  do {                                                                        \
    ++checks;                                                                 \
    if (!(cond)) {                                                            \
      ++failures;                                                             \
      if (failures < 40) {                                                    \
        std::fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
        std::fprintf(stderr, __VA_ARGS__);                                    \
        std::fprintf(stderr, "\n");                                           \
      }                                                                       \
    }                                                                         \
  } while (0)

std::vector<std::string> logged;
std::vector<int> logged_level;
std::vector<unsigned long> logged_flags;
extern "C" void capture(int level, unsigned long flags, const char*, int, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  logged.emplace_back(buf);
  logged_level.push_back(level);
  logged_flags.push_back(flags);
}

constexpr int A = 7, P = 3;  // NCCL 2.28: 7 algorithms x 3 protocols
using table = std::vector<float>;

// NCCL-like predictions (µs): lat + bytes / (1000 bw), per algorithm and protocol; unavailable
// entries -1 (collnet always, NVLS rows on multi-node, tree rows for AllGather/ReduceScatter,
// PAT only for AllGather/ReduceScatter, plus `holes` chosen by the case).
table nccl_like(int coll, std::size_t bytes, std::size_t ranks, std::size_t nodes, unsigned holes) {
  table t(A * P, -1.0f);
  const double lat[P] = {6.6, 14.0, 8.4}, bwf[P] = {0.3, 0.9, 1.0};
  const double busbw = nodes > 1 ? 12.0 * 8 : 20.6 * 16;  // GB/s
  for (int a = 0; a < A; ++a) {
    bool ok = a == pl::algo_ring || a == pl::algo_tree || a == pl::algo_pat || a == pl::algo_nvls;
    if (a == pl::algo_tree && coll != pl::all_reduce) ok = false;
    if (a == pl::algo_pat && coll != pl::all_gather && coll != pl::reduce_scatter) ok = false;
    if (a == pl::algo_nvls && (nodes > 1 || coll != pl::all_reduce)) ok = false;
    if (!ok) continue;
    for (int p = 0; p < P; ++p) {
      if (holes & (1u << (a * P + p))) continue;
      const double steps = a == pl::algo_ring ? 2.0 * static_cast<double>(ranks - 1) : 2.0 * std::log2(static_cast<double>(ranks) + 1);
      t[static_cast<std::size_t>(a * P + p)] = static_cast<float>(lat[p] * steps + static_cast<double>(bytes) / (1000.0 * busbw * bwf[p]));
    }
  }
  return t;
}

int argmin(const table& t) {
  int best = -1;
  for (int i = 0; i < A * P; ++i)
    if (t[static_cast<std::size_t>(i)] >= 0.0f && (best < 0 || t[static_cast<std::size_t>(i)] < t[static_cast<std::size_t>(best)])) best = i;
  return best;
}

// The model's preference, from cost/fabric.hpp directly; with a correction, AllReduce from the
// corrected times of cost/collective_features.hpp.
int expected_algo(const autosync::cost::fabric& f, int coll, double n, int forced_kind = -1,
                  const autosync::cost::collective_correction* correction = nullptr) {
  const topology_value ring{topology_kind::ring}, tree{topology_kind::tree}, hd{topology_kind::halving_doubling};
  switch (coll) {
    case pl::all_reduce:
      if (forced_kind == static_cast<int>(topology_kind::ring)) return pl::algo_ring;
      if (forced_kind == static_cast<int>(topology_kind::tree)) return pl::algo_tree;
      if (correction)
        return autosync::cost::corrected_all_reduce(f, tree, n, *correction).time < autosync::cost::corrected_all_reduce(f, ring, n, *correction).time
                   ? pl::algo_tree
                   : pl::algo_ring;
      // NCCL's ring and tree (collective_time: on an alpha-beta-gamma fabric NCCL's tree, not the MPI executor's)
      return autosync::cost::collective_time(f, autosync::cost::collective_op::all_reduce, topology_kind::tree, n) <
                     autosync::cost::collective_time(f, autosync::cost::collective_op::all_reduce, topology_kind::ring, n)
                 ? pl::algo_tree
                 : pl::algo_ring;
    case pl::reduce_scatter:
    case pl::all_gather:
      if (forced_kind == static_cast<int>(topology_kind::ring)) return pl::algo_ring;
      if (forced_kind == static_cast<int>(topology_kind::halving_doubling)) return pl::algo_pat;
      if (coll == pl::all_gather)
        return autosync::cost::all_gather(f, hd, n) < autosync::cost::all_gather(f, ring, n) ? pl::algo_pat : pl::algo_ring;
      return autosync::cost::reduce_scatter(f, hd, n) < autosync::cost::reduce_scatter(f, ring, n) ? pl::algo_pat : pl::algo_ring;
    case pl::broadcast:
    case pl::reduce: return pl::algo_ring;
    default: return -1;
  }
}

autosync::cost::fabric fabric_of(const autosync::node_spec& node, std::size_t ranks, std::size_t nodes) {
  autosync::cluster_spec c;
  c.name = "expected";
  for (std::size_t i = 0; i < nodes; ++i) {
    auto n = node;
    n.devices = static_cast<int>((ranks + nodes - 1) / nodes);
    c.nodes.push_back(n);
  }
  return autosync::cost::make_fabric(c);
}

struct plugin {
  void* lib = nullptr;
  const pl::tuner_v4* v4 = nullptr;
  const pl::tuner_v5* v5 = nullptr;
  const pl::tuner_v6* v6 = nullptr;
};

// What NCCL 2.28.9 does with the tuner's init (init.cc: NCCLCHECK(comm->tuner->init(...))): a
// non-success result fails the communicator's init ("nccl init ... failed"). Returns the
// context, or nullptr after recording the failure NCCL would report.
void* nccl_init(const plugin& p, int version, std::uint64_t comm_id, std::size_t ranks, std::size_t nodes, bool* ok = nullptr) {
  void* ctx = nullptr;
  int rc = -1;
  if (version == 4) {
    rc = p.v4->init(ranks, nodes, &capture, &ctx);
  } else {
    pl::nvl_domain_info_v5 nvl{static_cast<int>(nodes), static_cast<int>(ranks / nodes), static_cast<int>(ranks / nodes)};
    pl::tuner_constants_v5 constants{};
    constants.baseLatencies[pl::algo_ring][pl::proto_simple] = 8.4;
    const auto before = constants;
    rc = (version == 5 ? p.v5->init : p.v6->init)(&ctx, comm_id, ranks, nodes, &capture, &nvl, &constants);
    EXPECT(std::memcmp(&before, &constants, sizeof constants) == 0, "the constants are left as NCCL set them");
  }
  EXPECT(rc == 0, "init v%d (%zu ranks, %zu nodes) returned %d: NCCL 2.28 fails the communicator on that", version, ranks, nodes, rc);
  if (ok) *ok = rc == 0;
  return rc == 0 ? ctx : nullptr;
}
int nccl_finalize(const plugin& p, int version, void* ctx) {
  return (version == 4 ? p.v4->destroy : version == 5 ? p.v5->finalize : p.v6->finalize)(ctx);
}
pl::get_coll_info_fn get_of(const plugin& p, int version) {
  return version == 4 ? p.v4->getCollInfo : version == 5 ? p.v5->getCollInfo : p.v6->getCollInfo;
}

// One communicator: every collective x size, checked against the model. Returns the counts
// of the choices made per algorithm (to check both sides of each crossover occur).
void run_comm(const plugin& p, int version, std::size_t ranks, std::size_t nodes, const autosync::node_spec& node, int forced_kind,
              std::vector<int>& chosen, const autosync::cost::collective_correction* correction = nullptr) {
  bool ok = false;
  void* ctx = nccl_init(p, version, 42, ranks, nodes, &ok);
  EXPECT(ctx != nullptr, "init v%d (%zu ranks, %zu nodes) gave a context", version, ranks, nodes);
  if (!ok || ctx == nullptr) return;
  const auto f = fabric_of(node, ranks, nodes);
  const auto get = get_of(p, version);
  for (int coll : {pl::broadcast, pl::reduce, pl::all_gather, pl::reduce_scatter, pl::all_reduce, pl::send_recv})
    for (std::size_t bytes = 256; bytes <= (std::size_t{1} << 32); bytes *= 4)
      for (unsigned holes : {0u, 1u << (pl::algo_ring * P + pl::proto_ll), (1u << (pl::algo_tree * P)) | (1u << (pl::algo_tree * P + 1)) | (1u << (pl::algo_tree * P + 2)),
                             0x7u << (pl::algo_ring * P)}) {
        const auto orig = nccl_like(coll, bytes, ranks, nodes, holes);
        auto t = orig;
        int channels = 0;
        const int r = get(ctx, coll, bytes, 1, reinterpret_cast<float**>(t.data()), A, P, 0, &channels);
        EXPECT(r == 0, "getCollInfo returned %d", r);
        EXPECT(channels == 0, "nChannels left to NCCL");
        int changed = 0;
        for (int i = 0; i < A * P; ++i) {
          const auto k = static_cast<std::size_t>(i);
          if (orig[k] < 0.0f) EXPECT(t[k] == orig[k], "-1 entry %d touched (%s %zu B)", i, pl::coll_name(coll), bytes);
          if (t[k] != orig[k]) ++changed;
        }
        const int want = expected_algo(f, coll, static_cast<double>(bytes), forced_kind, correction);
        if (want < 0) {
          EXPECT(changed == 0, "%s table untouched", pl::coll_name(coll));
          continue;
        }
        int want_proto = -1;
        for (int q = 0; q < P; ++q) {
          const float v = orig[static_cast<std::size_t>(want * P + q)];
          if (v >= 0.0f && (want_proto < 0 || v < orig[static_cast<std::size_t>(want * P + want_proto)])) want_proto = q;
        }
        if (want_proto < 0) {
          EXPECT(changed == 0, "%s %zu B: the preferred row %s is unavailable: table untouched", pl::coll_name(coll), bytes, pl::algo_name(want));
          continue;
        }
        const int pick = argmin(t);
        EXPECT(pick == want * P + want_proto, "%s %zu B on %zu ranks / %zu nodes: NCCL would run %s/%s, the model prefers %s/%s", pl::coll_name(coll),
               bytes, ranks, nodes, pl::algo_name(pick / P), pl::proto_name(pick % P), pl::algo_name(want), pl::proto_name(want_proto));
        EXPECT(changed <= 1, "only the chosen entry changes (%d changed)", changed);
        if (coll == pl::all_reduce || coll == pl::all_gather) ++chosen[static_cast<std::size_t>(coll * A + want)];
      }
  EXPECT(nccl_finalize(p, version, ctx) == 0, "finalize (NCCL fails the destroy otherwise)");
}

// A context that must leave NCCL's choices alone: every table unchanged, every call ncclSuccess.
void expect_passive(const plugin& p, int version, void* ctx, std::size_t ranks, std::size_t nodes, const char* why) {
  const auto get = get_of(p, version);
  for (int coll : {pl::broadcast, pl::reduce, pl::all_gather, pl::reduce_scatter, pl::all_reduce, pl::send_recv})
    for (std::size_t bytes = 256; bytes <= (std::size_t{1} << 32); bytes *= 16) {
      const auto orig = nccl_like(coll, bytes, ranks, nodes, 0);
      auto t = orig;
      int channels = 0;
      const int r = get(ctx, coll, bytes, 1, reinterpret_cast<float**>(t.data()), A, P, 0, &channels);
      EXPECT(r == 0, "%s: getCollInfo returned %d (NCCL 2.28 fails the collective on that)", why, r);
      EXPECT(t == orig && channels == 0, "%s: %s %zu B: the table is NCCL's own", why, pl::coll_name(coll), bytes);
    }
}

// A communicator pinned by the program (autosync_tuner_pin_next before its init): AllReduce
// always in row `ar`, ReduceScatter / AllGather in row `rsag` (their best available protocol),
// a pinned row with no available entry leaves the table alone; Broadcast follows the model.
using pin_next_fn = int (*)(int, int);
using pinned_fn = int (*)(std::uint64_t, int*, int*);
void run_pinned(const plugin& p, pin_next_fn pin_next, pinned_fn pinned, int version, std::uint64_t comm_id, std::size_t ranks, std::size_t nodes,
                int ar, int rsag) {
  EXPECT(pin_next(ar, rsag) == 0, "pin_next(%d, %d)", ar, rsag);
  bool ok = false;
  void* ctx = nccl_init(p, version, comm_id, ranks, nodes, &ok);
  if (!ok || ctx == nullptr) return;
  int got_ar = -9, got_rsag = -9;
  if (version == 4) {
    EXPECT(pinned(comm_id, &got_ar, &got_rsag) == 0, "v4 has no commId: nothing filed under one");
  } else {
    EXPECT(pinned(comm_id, &got_ar, &got_rsag) == 1 && got_ar == ar && got_rsag == rsag, "the pin is filed under commId 0x%llx (%d %d)",
           static_cast<unsigned long long>(comm_id), got_ar, got_rsag);
  }
  const auto get = get_of(p, version);
  for (int coll : {pl::broadcast, pl::all_gather, pl::reduce_scatter, pl::all_reduce})
    for (std::size_t bytes = 256; bytes <= (std::size_t{1} << 32); bytes *= 16)
      for (unsigned holes : {0u, 0x7u << (pl::algo_tree * P), 0x7u << (pl::algo_ring * P), 0x7u << (pl::algo_pat * P)}) {
        const auto orig = nccl_like(coll, bytes, ranks, nodes, holes);
        auto t = orig;
        int channels = 0;
        EXPECT(get(ctx, coll, bytes, 1, reinterpret_cast<float**>(t.data()), A, P, 0, &channels) == 0, "getCollInfo");
        const int want = coll == pl::all_reduce ? ar : coll == pl::broadcast ? pl::algo_ring : rsag;
        int want_proto = -1;
        for (int q = 0; q < P; ++q) {
          const float v = orig[static_cast<std::size_t>(want * P + q)];
          if (v >= 0.0f && (want_proto < 0 || v < orig[static_cast<std::size_t>(want * P + want_proto)])) want_proto = q;
        }
        if (want_proto < 0) {
          EXPECT(t == orig, "pinned %s row %s unavailable: the table is NCCL's own", pl::coll_name(coll), pl::algo_name(want));
          continue;
        }
        EXPECT(argmin(t) == want * P + want_proto, "pinned: %s %zu B runs %s/%s, the pin says %s", pl::coll_name(coll), bytes,
               pl::algo_name(argmin(t) / P), pl::proto_name(argmin(t) % P), pl::algo_name(want));
      }
  EXPECT(nccl_finalize(p, version, ctx) == 0, "finalize");
  EXPECT(pinned(comm_id, &got_ar, &got_rsag) == 0, "a finalized communicator's pin is forgotten");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tuner_harness <libnccl-tuner-autosync.so>\n");
    return 2;
  }
  unsetenv("AUTOSYNC_TUNER_CLUSTER");
  unsetenv("AUTOSYNC_TUNER_STRATEGY");
  plugin p;
  p.lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!p.lib) {
    std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  p.v4 = static_cast<const pl::tuner_v4*>(dlsym(p.lib, "ncclTunerPlugin_v4"));
  p.v5 = static_cast<const pl::tuner_v5*>(dlsym(p.lib, "ncclTunerPlugin_v5"));
  p.v6 = static_cast<const pl::tuner_v6*>(dlsym(p.lib, "ncclTunerPlugin_v6"));
  EXPECT(p.v4 && p.v5 && p.v6, "every version exported (v4 %p, v5 %p, v6 %p)", static_cast<const void*>(p.v4), static_cast<const void*>(p.v5),
         static_cast<const void*>(p.v6));
  if (!(p.v4 && p.v5 && p.v6)) return 1;
  EXPECT(std::string(p.v4->name) == "autosync" && std::string(p.v5->name) == "autosync" && std::string(p.v6->name) == "autosync", "name");
  EXPECT(p.v6->getChunkSize == nullptr, "v6 getChunkSize left to NCCL");

  const auto h100 = autosync::zoo::dgx_h100(1).nodes.at(0);
  std::vector<int> chosen(8 * A, 0);
  const std::size_t shapes[][2] = {{8, 1}, {16, 2}, {64, 8}, {2, 2}, {4, 1}, {256, 32}, {3, 1}};
  for (int version : {4, 5, 6})
    for (const auto& s : shapes) run_comm(p, version, s[0], s[1], h100, -1, chosen);
  EXPECT(chosen[pl::all_reduce * A + pl::algo_ring] > 0 && chosen[pl::all_reduce * A + pl::algo_tree] > 0,
         "AllReduce: both ring (%d) and tree (%d) were chosen", chosen[pl::all_reduce * A + pl::algo_ring], chosen[pl::all_reduce * A + pl::algo_tree]);
  EXPECT(chosen[pl::all_gather * A + pl::algo_ring] > 0 && chosen[pl::all_gather * A + pl::algo_pat] > 0,
         "AllGather: both ring (%d) and PAT (%d) were chosen", chosen[pl::all_gather * A + pl::algo_ring], chosen[pl::all_gather * A + pl::algo_pat]);
  bool logged_choice = false;
  for (std::size_t i = 0; i < logged.size(); ++i)
    if (logged_level[i] == pl::log_info && logged_flags[i] == pl::flag_tuning && logged[i].find("AllReduce") != std::string::npos &&
        (logged[i].find("-> RING/") != std::string::npos || logged[i].find("-> TREE/") != std::string::npos))
      logged_choice = true;
  EXPECT(logged_choice, "the choice is logged at INFO with NCCL_TUNING");

  // pins: the program's choice per communicator, by commId; taken by exactly one init
  const auto pin_next = reinterpret_cast<pin_next_fn>(dlsym(p.lib, "autosync_tuner_pin_next"));
  const auto pinned = reinterpret_cast<pinned_fn>(dlsym(p.lib, "autosync_tuner_pinned"));
  EXPECT(pin_next && pinned, "autosync_tuner_pin_next / autosync_tuner_pinned exported");
  if (pin_next && pinned) {
    run_pinned(p, pin_next, pinned, 5, 0x5eed0001, 16, 2, pl::algo_tree, pl::algo_pat);
    run_pinned(p, pin_next, pinned, 6, 0x5eed0002, 8, 1, pl::algo_ring, pl::algo_ring);
    run_pinned(p, pin_next, pinned, 4, 0x5eed0003, 64, 8, pl::algo_tree, pl::algo_ring);
    run_pinned(p, pin_next, pinned, 5, 0x5eed0004, 4, 4, pl::algo_ring, pl::algo_pat);
    EXPECT(pin_next(7, -1) == 1 && pin_next(-2, 0) == 1, "a value that is no NCCL algorithm is refused");
    // the pending pin went to one init: the next communicator follows the model again
    std::vector<int> unpinned(8 * A, 0);
    run_comm(p, 5, 16, 2, h100, -1, unpinned);
    int a = 0, b = 0;
    EXPECT(pinned(42, &a, &b) == 0, "an unpinned communicator has no pin");
    // (-1, -1) withdraws a pin no init took (a program that pinned, then created no communicator)
    EXPECT(pin_next(pl::algo_tree, pl::algo_pat) == 0 && pin_next(-1, -1) == 0, "pin, then withdraw");
    run_comm(p, 6, 16, 2, h100, -1, unpinned);
    EXPECT(pinned(42, &a, &b) == 0, "a withdrawn pin reaches no communicator");
    // a pin holds on a context a bad variable made passive (the pin is the program's)
    setenv("AUTOSYNC_TUNER_CLUSTER", "no-such-cluster", 1);
    run_pinned(p, pin_next, pinned, 5, 0x5eed0005, 16, 2, pl::algo_ring, pl::algo_pat);
    unsetenv("AUTOSYNC_TUNER_CLUSTER");
  }

  // a strategy file forces its topology
  const auto dir = std::filesystem::temp_directory_path() / ("autosync_tuner_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  autosync::strategy_desc s;
  s.name = "forced";
  autosync::group_desc g;
  g.topology = topology_value{topology_kind::tree};
  s.groups.push_back(g);
  autosync::io::save_strategy_file(dir / "tree.json", s);
  setenv("AUTOSYNC_TUNER_STRATEGY", (dir / "tree.json").c_str(), 1);
  std::vector<int> forced(8 * A, 0);
  run_comm(p, 5, 16, 2, h100, static_cast<int>(topology_kind::tree), forced);
  EXPECT(forced[pl::all_reduce * A + pl::algo_ring] == 0 && forced[pl::all_reduce * A + pl::algo_tree] > 0, "tree strategy: always TREE");
  s.groups[0].topology = topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::tree};
  autosync::io::save_strategy_file(dir / "hier.json", s);
  setenv("AUTOSYNC_TUNER_STRATEGY", (dir / "hier.json").c_str(), 1);
  run_comm(p, 5, 8, 1, h100, static_cast<int>(topology_kind::ring), forced);  // the intra communicator
  run_comm(p, 6, 4, 4, h100, static_cast<int>(topology_kind::tree), forced);  // the inter communicator
  run_comm(p, 4, 32, 4, h100, -1, forced);                                    // the world: the model
  unsetenv("AUTOSYNC_TUNER_STRATEGY");

  // another fabric: a preset and a cluster file
  setenv("AUTOSYNC_TUNER_CLUSTER", "commodity-10gbe-x8", 1);
  const auto commodity = autosync::zoo::commodity_10gbe_x8().nodes.at(0);
  std::vector<int> other(8 * A, 0);
  run_comm(p, 5, 32, 8, commodity, -1, other);
  autosync::io::save_cluster_file(dir / "cluster.json", autosync::zoo::p3_16xlarge_x4());
  setenv("AUTOSYNC_TUNER_CLUSTER", (dir / "cluster.json").c_str(), 1);
  run_comm(p, 6, 32, 4, autosync::zoo::p3_16xlarge_x4().nodes.at(0), -1, other);

  unsetenv("AUTOSYNC_TUNER_CLUSTER");

  // the collective correction (AUTOSYNC_TUNER_CORRECTION): the embedded default decides AllReduce
  // by corrected times (run_comm checks every decision against them)
  setenv("AUTOSYNC_TUNER_CORRECTION", "default", 1);
  const autosync::cost::collective_correction embedded{autosync::cost::default_collective_correction{}};
  std::vector<int> corrected(8 * A, 0);
  // ties of the analytical model (2 ranks: ring and tree are one formula) do not count as changes
  auto tie = [](const autosync::cost::fabric& f, double n) {
    const double r = autosync::cost::collective_time(f, autosync::cost::collective_op::all_reduce, topology_kind::ring, n);
    return std::abs(r - autosync::cost::collective_time(f, autosync::cost::collective_op::all_reduce, topology_kind::tree, n)) <= 1e-9 * r;
  };
  int differ = 0, sizes = 0;
  const std::size_t corrected_shapes[][2] = {{8, 1}, {16, 2}, {32, 4}, {64, 8}, {2, 2}};
  for (const auto& shape : corrected_shapes) {
    run_comm(p, 5, shape[0], shape[1], h100, -1, corrected, &embedded);
    const auto f = fabric_of(h100, shape[0], shape[1]);
    for (std::size_t bytes = 256; bytes <= (std::size_t{1} << 32); bytes *= 4) {
      const double n = static_cast<double>(bytes);
      ++sizes;
      if (!tie(f, n) && expected_algo(f, pl::all_reduce, n) != expected_algo(f, pl::all_reduce, n, -1, &embedded)) ++differ;
    }
  }
  // measured when written: 0 of 65 (the bounded, machine-relative correction of
  // cost/default_collective_correction.hpp moves ring and tree alike on these fabrics; the
  // plugin's decisions above were checked against the corrected times size by size)
  std::printf("tuner_harness: the embedded collective correction changes %d of %d AllReduce decisions\n", differ, sizes);
  EXPECT(differ < sizes / 4, "the correction changes few decisions: it corrects the model, it does not replace it (%d of %d)", differ, sizes);
  // a strategy's topology still comes first
  setenv("AUTOSYNC_TUNER_STRATEGY", (dir / "tree.json").c_str(), 1);
  run_comm(p, 6, 16, 2, h100, static_cast<int>(topology_kind::tree), corrected, &embedded);
  unsetenv("AUTOSYNC_TUNER_STRATEGY");
  // a model file whose output is one constant scales every time alike: the analytical decisions
  const std::string constant_model = R"({"learner": {"attributes": {}, "feature_names": [], "feature_types": [],
  "gradient_booster": {"model": {"gbtree_model_param": {"num_parallel_tree": "1", "num_trees": "1", "size_leaf_vector": "0"},
    "tree_info": [0],
    "trees": [{"base_weights": [7E-1], "categories": [], "categories_nodes": [], "categories_segments": [], "categories_sizes": [],
       "default_left": [0], "id": 0, "left_children": [-1], "right_children": [-1], "parents": [2147483647],
       "loss_changes": [0E0], "split_indices": [0], "split_type": [0], "split_conditions": [7E-1], "sum_hessian": [1E1],
       "tree_param": {"num_deleted": "0", "num_feature": "NF", "num_nodes": "1", "size_leaf_vector": "0"}}]},
   "name": "gbtree"},
  "learner_model_param": {"base_score": "0E0", "boost_from_average": "1", "num_class": "0", "num_feature": "NF", "num_target": "1"},
  "objective": {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}},
 "version": [1, 7, 4]})";
  auto write_model = [&](const std::filesystem::path& path, std::size_t features) {
    std::string text = constant_model;
    for (auto at = text.find("\"NF\""); at != std::string::npos; at = text.find("\"NF\""))
      text.replace(at, 4, "\"" + std::to_string(features) + "\"");
    std::ofstream(path) << text;
  };
  write_model(dir / "constant.json", autosync::cost::collective_feature_count);
  setenv("AUTOSYNC_TUNER_CORRECTION", (dir / "constant.json").c_str(), 1);
  const autosync::cost::collective_correction constant{autosync::gbt::load_xgboost_json(dir / "constant.json")};
  std::vector<int> scaled(8 * A, 0);
  run_comm(p, 4, 16, 2, h100, -1, scaled, &constant);
  run_comm(p, 6, 64, 8, h100, -1, scaled, &constant);
  for (const auto& shape : shapes) {
    const auto f = fabric_of(h100, shape[0], shape[1]);
    for (std::size_t bytes = 256; bytes <= (std::size_t{1} << 32); bytes *= 4) {
      const double n = static_cast<double>(bytes);
      if (tie(f, n)) continue;  // a tie may round either way once scaled
      EXPECT(expected_algo(f, pl::all_reduce, n, -1, &constant) == expected_algo(f, pl::all_reduce, n),
             "a constant correction decides as the analytical model (%zu B on %zu ranks)", bytes, shape[0]);
    }
  }
  unsetenv("AUTOSYNC_TUNER_CORRECTION");
  write_model(dir / "narrow.json", 2);  // a model of another feature set
  std::ofstream(dir / "malformed.json") << "{\"name\": \"x\", \"nodes\": [";

  // bad input never fails NCCL: one WARN naming the variable and its value, ncclSuccess, and a
  // context that leaves NCCL's choices alone (every version; the other variables still good)
  const std::pair<const char*, std::string> bad[] = {{"AUTOSYNC_TUNER_CLUSTER", "no-such-cluster"},
                                                     {"AUTOSYNC_TUNER_CLUSTER", (dir / "missing.json").string()},
                                                     {"AUTOSYNC_TUNER_CLUSTER", (dir / "malformed.json").string()},
                                                     {"AUTOSYNC_TUNER_STRATEGY", (dir / "missing.json").string()},
                                                     {"AUTOSYNC_TUNER_STRATEGY", (dir / "malformed.json").string()},
                                                     {"AUTOSYNC_TUNER_CORRECTION", (dir / "missing.json").string()},
                                                     {"AUTOSYNC_TUNER_CORRECTION", (dir / "narrow.json").string()}};
  for (const auto& [var, value] : bad)
    for (int version : {4, 5, 6}) {
      setenv("AUTOSYNC_TUNER_CLUSTER", "dgx-h100-x2", 1);  // a good value, unless it is the bad one
      setenv(var, value.c_str(), 1);
      logged.clear();
      logged_level.clear();
      logged_flags.clear();
      const std::string why = std::string(var) + "=" + value + " (v" + std::to_string(version) + ")";
      bool ok = false;
      void* ctx = nccl_init(p, version, 7, 16, 2, &ok);
      EXPECT(ok, "%s: NCCL would fail the communicator", why.c_str());
      int warns = 0;
      std::string warn;
      for (std::size_t i = 0; i < logged.size(); ++i)
        if (logged_level[i] == pl::log_warn) {
          ++warns;
          warn = logged[i];
        }
      EXPECT(warns == 1, "%s: one WARN, got %d", why.c_str(), warns);
      EXPECT(warn.find(var) != std::string::npos && warn.find(value) != std::string::npos && warn.find("NCCL's own") != std::string::npos,
             "%s: the WARN names the variable, its value and what happens: '%s'", why.c_str(), warn.c_str());
      EXPECT(ctx != nullptr, "%s: a passive context", why.c_str());
      if (ok) {
        expect_passive(p, version, ctx, 16, 2, why.c_str());
        EXPECT(nccl_finalize(p, version, ctx) == 0, "%s: finalize", why.c_str());
      }
      unsetenv(var);
      unsetenv("AUTOSYNC_TUNER_CLUSTER");
    }
  // a null context (what init leaves when even the passive context cannot be allocated)
  for (int version : {4, 5, 6}) {
    expect_passive(p, version, nullptr, 8, 1, "a null context");
    EXPECT(nccl_finalize(p, version, nullptr) == 0, "finalize of a null context");
  }
  std::filesystem::remove_all(dir);
  dlclose(p.lib);
  std::printf("tuner_harness: %d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
