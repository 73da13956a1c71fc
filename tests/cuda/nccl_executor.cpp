// tests/cuda/nccl_executor.cpp — the NCCL backend and the executor on it, on real GPUs.
//
// Run as `mpirun -np N nccl_executor` with one GPU per rank (rank r uses device r mod the
// device count; N = 1 on a one-GPU machine). MPI only bootstraps the NCCL communicator.
//   1. every backend operation (all_reduce, reduce_scatter, all_gather, reduce, broadcast,
//      sendrecv around a ring, a ncclGroup of sends and receives, split, barrier) on device
//      buffers and on host buffers (staged), every dtype, exact integer sums;
//   2. the topology overloads (ring, tree, halving_doubling, hierarchical all-reduce; uneven
//      reduce-scatter + all-gather; parameter server with and without local replication;
//      sparse all-gather) against the exact sum;
//   3. the executor on plans of random strategies (every step kind, compressed or not, fifo
//      and priority schedules, strided shards): integer-valued gradients give exactly the
//      reference sum, two iterations in a row; with averaging, sum / N; 1 to 6 buckets in flight;
//   4. argument errors name their field; a timed-out receive names the operation.
// Exits 77 (ctest SKIP_RETURN_CODE) when cudaGetDeviceCount finds no device.
#include <autosync/exec/executor.hpp>
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/nccl/backend.hpp>

#include "../common/random_strategies.hpp"

#include <cuda_runtime_api.h>

#include <chrono>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace autosync;
using namespace autosync::exec;

namespace {

int failures = 0, checks = 0, rank_ = 0;
#define EXPECT(cond, ...)                                                            \
  do {                                                                               \
    ++checks;                                                                        \
    if (!(cond)) {                                                                   \
      ++failures;                                                                    \
      if (failures < 30) {                                                           \
        std::fprintf(stderr, "rank %d: FAILED %s:%d: %s: ", rank_, __FILE__, __LINE__, #cond); \
        std::fprintf(stderr, __VA_ARGS__);                                           \
        std::fprintf(stderr, "\n");                                                  \
      }                                                                              \
    }                                                                                \
  } while (0)

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw error("cuda", std::string(what) + ": " + cudaGetErrorString(e));
}

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// Rank r's element e of tensor t in iteration it: an integer in [-4, 4].
int value(std::uint64_t seed, int r, std::size_t t, std::int64_t e, int it) {
  return static_cast<int>(mix(mix(mix(seed) ^ static_cast<std::uint64_t>(r)) ^ (t << 20) ^ static_cast<std::uint64_t>(e) ^ (static_cast<std::uint64_t>(it) << 50)) % 9) - 4;
}

// A typed host vector of integer values.
std::vector<unsigned char> encode_values(const std::vector<double>& v, dtype t) {
  std::vector<unsigned char> out(v.size() * size_of(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    unsigned char* e = out.data() + i * size_of(t);
    switch (t) {
      case dtype::f32: { const float f = static_cast<float>(v[i]); std::memcpy(e, &f, 4); break; }
      case dtype::f64: std::memcpy(e, &v[i], 8); break;
      case dtype::f16: { const auto h = to_f16(v[i]); std::memcpy(e, &h, 2); break; }
      case dtype::bf16: { const auto h = to_bf16(v[i]); std::memcpy(e, &h, 2); break; }
      case dtype::i32: { const auto x = static_cast<std::int32_t>(v[i]); std::memcpy(e, &x, 4); break; }
      case dtype::i64: { const auto x = static_cast<std::int64_t>(v[i]); std::memcpy(e, &x, 8); break; }
    }
  }
  return out;
}
double decode_value(const unsigned char* e, dtype t) {
  switch (t) {
    case dtype::f32: { float f; std::memcpy(&f, e, 4); return f; }
    case dtype::f64: { double d; std::memcpy(&d, e, 8); return d; }
    case dtype::f16: { std::uint16_t h; std::memcpy(&h, e, 2); return from_f16(h); }
    case dtype::bf16: { std::uint16_t h; std::memcpy(&h, e, 2); return from_bf16(h); }
    case dtype::i32: { std::int32_t x; std::memcpy(&x, e, 4); return x; }
    case dtype::i64: { std::int64_t x; std::memcpy(&x, e, 8); return static_cast<double>(x); }
  }
  return 0;
}

struct device_vec {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit device_vec(std::size_t b) : bytes(b) { cuda_ok(cudaMalloc(&p, b ? b : 1), "cudaMalloc"); }
  device_vec(const device_vec&) = delete;
  ~device_vec() { cudaFree(p); }
  void put(const std::vector<unsigned char>& h) { cuda_ok(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice), "H2D"); }
  std::vector<unsigned char> get() const {
    std::vector<unsigned char> h(bytes);
    cuda_ok(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost), "D2H");
    return h;
  }
};

// Rank q's vector for a backend test: value(seed, q, 0, i, 0).
std::vector<double> rank_vector(std::uint64_t seed, int q, std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(seed, q, 0, static_cast<std::int64_t>(i), 0);
  return v;
}

bool same_values(const std::vector<unsigned char>& got, const std::vector<double>& want, dtype t, std::size_t from = 0, std::size_t count = SIZE_MAX) {
  const std::size_t es = size_of(t);
  for (std::size_t i = from; i < want.size() && i - from < count; ++i)
    if (decode_value(got.data() + i * es, t) != want[i]) return false;
  return true;
}

void backend_ops(comms<nccl_backend>& c, bool host) {
  auto& w = c.world;
  const int p = w.size(), r = w.rank();
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::i32, dtype::i64}) {
    const std::size_t es = size_of(t);
    const std::string tag = std::string(name_of(t)) + (host ? " host" : " device");
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{65537}}) {
      const std::uint64_t seed = n * 31 + static_cast<std::uint64_t>(t);
      std::vector<double> sum(n, 0.0);
      for (int q = 0; q < p; ++q) {
        const auto v = rank_vector(seed, q, n);
        for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
      }
      const auto mine = encode_values(rank_vector(seed, r, n), t);
      auto run = [&](auto&& op, std::size_t bytes, const std::vector<unsigned char>& init) {
        if (host) {
          std::vector<unsigned char> h = init;
          h.resize(bytes);
          op(h.data());
          return h;
        }
        device_vec d(bytes);
        std::vector<unsigned char> h = init;
        h.resize(bytes);
        d.put(h);
        op(d.p);
        return d.get();
      };
      // all_reduce
      auto got = run([&](void* b) { w.all_reduce(b, n, t); }, n * es, mine);
      EXPECT(same_values(got, sum, t), "all_reduce %s n=%zu", tag.c_str(), n);
      // reduce (root p-1) + broadcast (root 0)
      got = run([&](void* b) { w.reduce(b, n, t, p - 1); }, n * es, mine);
      if (r == p - 1) EXPECT(same_values(got, sum, t), "reduce %s n=%zu", tag.c_str(), n);
      const auto root_vec = rank_vector(seed, 0, n);
      got = run([&](void* b) { w.broadcast(b, n, t, 0); }, n * es, mine);
      EXPECT(same_values(got, root_vec, t), "broadcast %s n=%zu", tag.c_str(), n);
      // reduce_scatter: rank q's send = p blocks of n: block k = rank_vector(seed + k)
      std::vector<double> big(n * static_cast<std::size_t>(p)), want_block(n, 0.0);
      for (int k = 0; k < p; ++k) {
        const auto v = rank_vector(seed + static_cast<std::uint64_t>(k), r, n);
        std::copy(v.begin(), v.end(), big.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(k) * n));
      }
      for (int q = 0; q < p; ++q) {
        const auto v = rank_vector(seed + static_cast<std::uint64_t>(r), q, n);
        for (std::size_t i = 0; i < n; ++i) want_block[i] += v[i];
      }
      got = run([&](void* b) { w.reduce_scatter(b, static_cast<unsigned char*>(b) + big.size() * es, n, t); }, big.size() * es + n * es,
                encode_values(big, t));
      EXPECT(same_values(std::vector<unsigned char>(got.begin() + static_cast<std::ptrdiff_t>(big.size() * es), got.end()), want_block, t),
             "reduce_scatter %s n=%zu", tag.c_str(), n);
      // all_gather: block q = rank q's vector
      std::vector<double> gathered;
      for (int q = 0; q < p; ++q) {
        const auto v = rank_vector(seed, q, n);
        gathered.insert(gathered.end(), v.begin(), v.end());
      }
      auto init = mine;
      init.resize(n * es + n * es * static_cast<std::size_t>(p));
      got = run([&](void* b) { w.all_gather(b, static_cast<unsigned char*>(b) + n * es, n, t); }, init.size(), init);
      EXPECT(same_values(std::vector<unsigned char>(got.begin() + static_cast<std::ptrdiff_t>(n * es), got.end()), gathered, t),
             "all_gather %s n=%zu", tag.c_str(), n);
      // sendrecv around the ring: receive the left neighbour's vector
      const int right = (r + 1) % p, left = (r + p - 1) % p;
      init = mine;
      init.resize(2 * n * es);
      got = run([&](void* b) { w.sendrecv(b, n, right, static_cast<unsigned char*>(b) + n * es, n, left, t, 7); }, 2 * n * es, init);
      EXPECT(same_values(std::vector<unsigned char>(got.begin() + static_cast<std::ptrdiff_t>(n * es), got.end()), rank_vector(seed, left, n), t),
             "sendrecv %s n=%zu", tag.c_str(), n);
      // a group: send mine to every rank, receive every rank's (block q from rank q)
      init = mine;
      init.resize(n * es * (1 + static_cast<std::size_t>(p)));
      got = run(
          [&](void* b) {
            auto* base = static_cast<unsigned char*>(b);
            std::vector<nccl_p2p> ops;
            for (int q = 0; q < p; ++q) ops.push_back({true, base, n, q});
            for (int q = 0; q < p; ++q) ops.push_back({false, base + (1 + static_cast<std::size_t>(q)) * n * es, n, q});
            w.group(ops, t);
          },
          init.size(), init);
      EXPECT(same_values(std::vector<unsigned char>(got.begin() + static_cast<std::ptrdiff_t>(n * es), got.end()), gathered, t),
             "group %s n=%zu", tag.c_str(), n);
    }
  }
  w.barrier();
  // split by parity: the all-reduce sums only the ranks of my color
  auto half = w.split(r % 2, r);
  EXPECT(half.valid(), "split");
  EXPECT(half.size() == (p + 1 - r % 2) / 2, "split size %d", half.size());
  EXPECT(half.rank() == r / 2, "split rank %d", half.rank());
  std::int64_t one = 1;
  half.all_reduce(&one, 1, dtype::i64);
  EXPECT(one == half.size(), "split all_reduce %lld", static_cast<long long>(one));
  auto none = w.split(-1, 0);
  EXPECT(!none.valid(), "split with color -1 is empty");
}

void topologies(comms<nccl_backend>& c) {
  auto& w = c.world;
  const int p = w.size(), r = w.rank();
  const topology_value topos[] = {topology_value{topology_kind::ring}, topology_value{topology_kind::tree},
                                  topology_value{topology_kind::halving_doubling},
                                  topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::tree}};
  for (dtype t : {dtype::f32, dtype::f16, dtype::i64})
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{1023}, std::size_t{4096}}) {
      const std::uint64_t seed = 977 + n;
      std::vector<double> sum(n, 0.0);
      for (int q = 0; q < p; ++q) {
        const auto v = rank_vector(seed, q, n);
        for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
      }
      const auto mine = encode_values(rank_vector(seed, r, n), t);
      device_vec d(mine.size());
      for (const auto& topo : topos) {
        d.put(mine);
        all_reduce(c, d.p, n, t, topo);
        EXPECT(same_values(d.get(), sum, t), "all_reduce(%s) %s n=%zu", std::string(name_of(topo.kind)).c_str(), std::string(name_of(t)).c_str(), n);
        d.put(mine);
        reduce_scatter(c, d.p, n, t, topo);
        const auto blk = even_shard(static_cast<std::int64_t>(n), p, r);
        EXPECT(same_values(d.get(), sum, t, static_cast<std::size_t>(blk.begin), static_cast<std::size_t>(blk.end - blk.begin)),
               "reduce_scatter block %s n=%zu", std::string(name_of(t)).c_str(), n);
        all_gather(c, d.p, n, t, topo);
        EXPECT(same_values(d.get(), sum, t), "reduce_scatter + all_gather %s n=%zu", std::string(name_of(t)).c_str(), n);
      }
      for (bool local : {false, true}) {
        d.put(mine);
        ps_push_pull(c, d.p, n, t, p - 1, local);
        EXPECT(same_values(d.get(), sum, t), "ps_push_pull local=%d n=%zu", local ? 1 : 0, n);
      }
      // sparse: rows of 1 element; this rank touched the rows with (row + rank) % 3 != 0
      std::vector<std::int64_t> rows;
      std::vector<double> sparse_sum(n, 0.0);
      for (int q = 0; q < p; ++q) {
        const auto v = rank_vector(seed, q, n);
        for (std::size_t i = 0; i < n; ++i)
          if ((i + static_cast<std::size_t>(q)) % 3 != 0) sparse_sum[i] += v[i];
      }
      for (std::size_t i = 0; i < n; ++i)
        if ((i + static_cast<std::size_t>(r)) % 3 != 0) rows.push_back(static_cast<std::int64_t>(i));
      d.put(mine);  // untouched rows hold garbage (non-zero): the contract ignores them
      sparse_all_gather(c, d.p, n, 1, t, rows);
      EXPECT(same_values(d.get(), sparse_sum, t), "sparse_all_gather n=%zu", n);
    }
}

void executor_runs(comms<nccl_backend>& c, int rpn) {
  const int p = c.world.size(), r = c.world.rank();
  std::mt19937 rng(4242);
  int kinds[4] = {0, 0, 0, 0}, compressed = 0, priority = 0;
  for (int trial = 0; trial < 40; ++trial) {
    auto rc = testing::random_strategy(rng, 2, trial % 3 == 2);
    const auto cluster = testing::make_cluster(p / rpn, rpn, trial % 4 == 3 ? 1 : 0);
    plan pl;
    try {
      pl = compile_plan(rc.model, cluster, rc.strategy, {p, rpn});
    } catch (const error&) {
      continue;  // a strategy the random cluster cannot hold
    }
    for (const auto& b : pl.buckets) {
      ++kinds[static_cast<int>(b.kind)];
      compressed += b.compressed;
      priority += b.priority;
    }
    const bool average = trial % 5 == 4;
    c.world.set_buckets_in_flight(1 + trial % 6);  // 1 (one bucket at a time) .. 6 in flight
    executor<nccl_backend> ex(c, rc.model, pl, {.timeout = 30.0, .error_feedback = true, .average = average});
    ex.setup();
    std::vector<std::unique_ptr<device_vec>> bufs;
    for (const auto& t : rc.model.tensors) bufs.push_back(std::make_unique<device_vec>(static_cast<std::size_t>(t.bytes())));
    for (int it = 0; it < 2; ++it) {
      std::vector<gradient> grads;
      std::vector<std::vector<double>> want(rc.model.tensors.size());
      for (std::size_t ti = 0; ti < rc.model.tensors.size(); ++ti) {
        const auto& t = rc.model.tensors[ti];
        const auto n = static_cast<std::size_t>(t.elements());
        const auto row = t.sparse ? static_cast<std::size_t>(t.slice_elements(0)) : n;
        auto val = [&](int q, std::size_t e) {
          if (t.sparse && (e / row + static_cast<std::size_t>(q) + static_cast<std::size_t>(it)) % 2 == 0) return 0.0;  // untouched row
          return static_cast<double>(value(static_cast<std::uint64_t>(trial), q, ti, static_cast<std::int64_t>(e), it));
        };
        std::vector<double> mine(n);
        want[ti].assign(n, 0.0);
        for (std::size_t e = 0; e < n; ++e) {
          mine[e] = val(r, e);
          for (int q = 0; q < p; ++q) want[ti][e] += val(q, e);
          if (average) want[ti][e] /= p;
        }
        bufs[ti]->put(encode_values(mine, t.type));
        grads.push_back({bufs[ti]->p, t.type, t.elements()});
      }
      ex.begin_iteration(grads);
      const auto order = rc.model.backward_order();
      for (auto ti : order) ex.ready(ti);
      const auto timing = ex.finish();
      EXPECT(timing.buckets == pl.buckets.size(), "buckets run");
      for (std::size_t ti = 0; ti < rc.model.tensors.size(); ++ti) {
        const auto got = bufs[ti]->get();
        const dtype ty = rc.model.tensors[ti].type;
        bool ok = true;
        for (std::size_t e = 0; e < want[ti].size() && ok; ++e) {
          const double g = decode_value(got.data() + e * size_of(ty), ty);
          // averages of integers are exact in f64 only; elsewhere the rounding of x / p in the dtype
          const double w = average ? decode_value(encode_values({want[ti][e]}, ty).data(), ty) : want[ti][e];
          ok = g == w || (average && std::fabs(g - w) <= 1e-2 * std::fabs(w));
        }
        EXPECT(ok, "trial %d iteration %d tensor %zu (%s)", trial, it, ti, std::string(name_of(ty)).c_str());
      }
    }
  }
  EXPECT(kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0 && kinds[3] > 0, "every step kind ran (%d %d %d %d)", kinds[0], kinds[1], kinds[2], kinds[3]);
  EXPECT(compressed > 0 && priority > 0, "compressed (%d) and priority (%d) buckets ran", compressed, priority);
  c.world.set_buckets_in_flight(4);
}

void errors(comms<nccl_backend>& c) {
  auto& w = c.world;
  device_vec d(64);
  auto field_of = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const error& e) {
      return e.field();
    }
    return "(no error)";
  };
  EXPECT(field_of([&] { w.reduce(d.p, 4, dtype::f32, w.size()); }) == "root", "reduce with a bad root names 'root'");
  EXPECT(field_of([&] { w.send(d.p, 4, dtype::f32, -1, 0); }) == "peer", "send to -1 names 'peer'");
  EXPECT(field_of([&] { w.send(d.p, 4, dtype::f32, 0, -3); }) == "tag", "a negative tag names 'tag'");
  EXPECT(field_of([&] { nccl_backend empty; empty.barrier(); }) == "backend", "an empty backend names 'backend'");
  // a receive nobody answers: an error naming the operation within the timeout, not a hang
  auto extra = w.split(0, w.rank());
  extra.set_timeout(3.0);
  std::string what;
  try {
    extra.recv(d.p, 4, dtype::f32, (extra.rank() + 1) % extra.size(), 0);
  } catch (const error& e) {
    what = e.what();
  }
  EXPECT(what.find("nccl recv") != std::string::npos, "an unanswered recv throws naming it, got '%s'", what.c_str());
  EXPECT(!extra.broken().empty(), "the communicator is marked unusable after the timeout");
  EXPECT(field_of([&] { extra.barrier(); }).rfind("rank", 0) == 0, "a broken communicator throws on the next operation");
  // the same with a host buffer: the staged copy back must not block behind the dead receive
  auto extra2 = w.split(0, w.rank());
  extra2.set_timeout(3.0);
  std::vector<float> host(4, 1.0f);
  what.clear();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    extra2.recv(host.data(), host.size(), dtype::f32, (extra2.rank() + 1) % extra2.size(), 0);
  } catch (const error& e) {
    what = e.what();
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT(what.find("nccl recv") != std::string::npos, "an unanswered recv into host memory throws naming it, got '%s'", what.c_str());
  EXPECT(took < 20.0, "the host-buffer recv gave up within the timeout (took %.1f s)", took);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device (cudaGetDeviceCount found none); the NCCL backend needs a GPU per rank\n");
    return 77;
  }
  mpi_session mpi(argc, argv);
  auto boot = mpi_backend::world();
  rank_ = boot.rank();
  try {
    auto world = nccl_backend::bootstrap(boot, boot.rank() % devices);
    world.set_job_abort([&](std::string_view) { MPI_Abort(MPI_COMM_WORLD, 1); });
    const int p = world.size();
    const int rpn = p % 2 == 0 ? 2 : 1;
    auto c = comms<nccl_backend>::make(std::move(world), rpn);
    backend_ops(c, false);
    backend_ops(c, true);
    topologies(c);
    executor_runs(c, rpn);
    if (rpn != 1) {
      auto flat = comms<nccl_backend>::make(nccl_backend::bootstrap(boot, boot.rank() % devices), 1);
      executor_runs(flat, 1);
    }
    errors(c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank_, e.what());
    ++failures;
  }
  int all = failures;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) std::printf("nccl_executor: %d ranks, %d checks on rank 0, %d failures in all\n", boot.size(), checks, all);
  return all == 0 ? 0 : 1;
}
