// Time of one cost::evaluator call on bert-large (391 tensors) against the target of 20 µs per
// strategy (the CLI's Release flags, one core). Prints `target_ratio` = measured / 20 µs (<= 1 meets the target).
//   bench_cost_eval [--benchmark_filter=...]
#include <autosync/cost/estimate.hpp>

#if __has_include(<autosync/zoo/models.hpp>)
#include <autosync/zoo/models.hpp>
#define AUTOSYNC_BENCH_ZOO 1
#endif

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace {
using namespace autosync;

constexpr double target_seconds = 20e-6;

model_spec bert_large() {
#ifdef AUTOSYNC_BENCH_ZOO
  return zoo::make_model("bert-large");
#else
  // 391 tensors of bert-large's shapes (embeddings, 24 layers of 16, pooler), forward order.
  model_spec m;
  m.name = "bert-large";
  const std::int64_t H = 1024, V = 30522;
  auto add = [&](std::string name, std::vector<std::int64_t> shape) {
    tensor t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.backward_flops = 2.0 * 8 * 512 * static_cast<double>(t.elements());
    m.tensors.push_back(std::move(t));
  };
  add("embeddings.word_embeddings.weight", {V, H});
  add("embeddings.position_embeddings.weight", {512, H});
  add("embeddings.token_type_embeddings.weight", {2, H});
  add("embeddings.LayerNorm.weight", {H});
  add("embeddings.LayerNorm.bias", {H});
  for (int l = 0; l < 24; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* q : {"query", "key", "value"}) {
      add(p + "attention.self." + q + ".weight", {H, H});
      add(p + "attention.self." + q + ".bias", {H});
    }
    add(p + "attention.output.dense.weight", {H, H});
    add(p + "attention.output.dense.bias", {H});
    add(p + "attention.output.LayerNorm.weight", {H});
    add(p + "attention.output.LayerNorm.bias", {H});
    add(p + "intermediate.dense.weight", {4 * H, H});
    add(p + "intermediate.dense.bias", {4 * H});
    add(p + "output.dense.weight", {H, 4 * H});
    add(p + "output.dense.bias", {H});
    add(p + "output.LayerNorm.weight", {H});
    add(p + "output.LayerNorm.bias", {H});
  }
  add("pooler.dense.weight", {H, H});
  add("pooler.dense.bias", {H});
  m.forward_flops = m.backward_flops() / 2;
  return m;
#endif
}

// 4 nodes x 8 GPUs (NVLink 230 GB/s, 4 x 100 Gb/s NICs) + 4 CPU parameter servers.
cluster_spec cluster(bool servers) {
  cluster_spec c;
  c.name = "4x8";
  for (int i = 0; i < 4; ++i) {
    node_spec n;
    n.name = "w" + std::to_string(i);
    n.devices = 8;
    n.intra = autosync::link{230e9, 0.7e-6};
    n.nic = autosync::link{12.5e9, 5e-6};
    n.nics = 4;
    n.device_flops = 137e12;
    n.reduce_bandwidth = 500e9;
    c.nodes.push_back(n);
  }
  for (int i = 0; servers && i < 4; ++i) {
    node_spec n;
    n.name = "s" + std::to_string(i);
    n.devices = 0;
    n.server_only = true;
    n.nic = autosync::link{12.5e9, 5e-6};
    c.nodes.push_back(n);
  }
  return c;
}

void run(benchmark::State& state, const strategy_desc& s, bool servers) {
  static const model_spec m = bert_large();
  const auto c = cluster(servers);
  s.validate(m, c);
  cost::evaluator ev(m, c);
  double sink = 0;
  for (auto _ : state) {
    const auto p = ev(s);
    sink += p.iteration;
    benchmark::DoNotOptimize(sink);
  }
  state.counters["tensors"] = static_cast<double>(m.tensors.size());
  state.counters["target_ratio"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * target_seconds, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void ddp_buckets(benchmark::State& state) {
  const auto m = bert_large();
  group_desc g;
  g.fusion = fusion_value{25u << 20, 1u << 20};
  run(state, uniform_strategy(m, g, "ddp"), false);
}
void per_tensor_priority(benchmark::State& state) {
  const auto m = bert_large();
  group_desc g;
  g.schedule = schedule_kind::priority;
  g.topology = topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::tree};
  run(state, uniform_strategy(m, g, "per-tensor"), false);
}
void partitioned_ps(benchmark::State& state) {
  const auto m = bert_large();
  group_desc g;
  g.architecture = architecture_kind::parameter_server;
  g.partitioner = partitioner_value{partitioner_kind::by_bytes, 0, 0, 4096000};
  g.placement = placement_value{placement_kind::load_balanced, 0};
  g.replication = replication_kind::local;
  run(state, uniform_strategy(m, g, "byteps-like"), true);
}
void mixed(benchmark::State& state) {
  // AutoSync-like: 8 groups mixing architectures, topologies, compression and caps.
  const auto m = bert_large();
  strategy_desc s;
  s.name = "mixed";
  for (int k = 0; k < 8; ++k) {
    group_desc g;
    if (k % 4 == 3) {
      g.architecture = architecture_kind::parameter_server;
      g.placement = placement_value{placement_kind::round_robin, 0};
      g.partitioner = partitioner_value{partitioner_kind::even, 2, 0, 0};
    } else {
      g.topology = topology_value{k % 2 ? topology_kind::ring : topology_kind::halving_doubling};
      g.fusion = fusion_value{std::uint64_t{4} << (20 + k), std::uint64_t{1} << 20};
      g.compression = static_cast<compression_id>(k % 3);
      g.schedule = k % 2 ? schedule_kind::priority : schedule_kind::fifo;
    }
    s.groups.push_back(g);
  }
  for (std::size_t i = 0; i < m.tensors.size(); ++i)
    s.assignments.push_back(assignment{m.tensors[i].name, static_cast<std::int32_t>(i % 8), 0, {}});
  run(state, s, true);
}
}  // namespace

BENCHMARK(ddp_buckets);
BENCHMARK(per_tensor_priority);
BENCHMARK(partitioned_ps);
BENCHMARK(mixed);
BENCHMARK_MAIN();
