// autosync::session on the MPI backend, at every rank count of the mpi tests:
//   - from a strategy (ready by name) and from a file: the average over the ranks, exact on
//     integer-valued data; reduction::sum (ready by index): the exact sum;
//   - from a search on rank 0: only rank 0 searches (its progress callback runs, the others'
//     never), every rank gets the identical strategy (its JSON text compared with rank 0's), stamped
//     with what it was made for, and it runs with exact averages;
//   - on_bucket_done: once per bucket per iteration, the bucket's tensors as the plan has them, and
//     every tensor reported completed exactly once, when every element of it is already final;
//   - learn::record_trial: every rank's figures gathered, the maxima, the session's cluster,
//     layout and strategy; a rank with another iteration count named;
//   - errors: a strategy made for another cluster, world size, layout or fingerprint (the field and
//     both values), a missing strategy file (every rank throws rank 0's error), ready() of an
//     unknown name and twice, finish() before every ready() (the missing tensors named) — each
//     naming the rank.
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/io/json/strategy.hpp>
#include <autosync/learn/record_trial.hpp>
#include <autosync/session_impl.hpp>
#include <autosync/session_search.hpp>
#include <autosync/zoo/clusters.hpp>

#include "harness.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

using namespace autosync;
using exec::mpi_backend;

namespace {

// Six f32 tensors in forward order, one of them large enough to be split.
model_spec net() {
  model_spec m;
  m.name = "net";
  const std::vector<std::pair<const char*, std::vector<std::int64_t>>> ts{
      {"l0.w", {64, 32}}, {"l0.b", {64}}, {"l1.w", {96, 64}}, {"l1.b", {96}}, {"big", {200, 30}}, {"out.w", {10, 96}}};
  for (const auto& [n, s] : ts) {
    tensor t;
    t.name = n;
    t.shape = s;
    t.backward_flops = 1e6;
    m.tensors.push_back(t);
  }
  m.forward_flops = 4e6;
  return m;
}

// Rank r's gradient of tensor t: v(t, i) * (2r + 1), v in [0, 97). Over p ranks the sum is v p^2
// and the average v p: exact in f32.
float base(std::size_t t, std::size_t i) { return static_cast<float>((t * 31 + i) % 97); }

struct grads {
  std::vector<std::vector<float>> data;
  explicit grads(const model_spec& m, int rank) {
    for (std::size_t t = 0; t < m.tensors.size(); ++t) {
      data.emplace_back(static_cast<std::size_t>(m.tensors[t].elements()));
      for (std::size_t i = 0; i < data[t].size(); ++i) data[t][i] = base(t, i) * static_cast<float>(2 * rank + 1);
    }
  }
  std::vector<std::span<float>> spans() {
    std::vector<std::span<float>> s;
    for (auto& d : data) s.emplace_back(d);
    return s;
  }
  // Elements of tensor t that differ from v(t, i) * factor.
  [[nodiscard]] std::size_t wrong(std::size_t t, float factor) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < data[t].size(); ++i) n += data[t][i] == base(t, i) * factor ? 0 : 1;
    return n;
  }
};

group_desc ring_group(std::uint64_t cap) {
  group_desc g;
  g.topology = topology_value{topology_kind::ring};
  g.fusion = fusion_value{cap, cap};
  return g;
}

// One iteration: ready in backward order, by name or by index.
exec::iteration_timing step(session<mpi_backend>& s, grads& g, bool by_name) {
  s.begin(g.spans());
  const auto& m = s.model();
  for (std::size_t k = m.tensors.size(); k-- > 0;) {
    if (by_name) s.ready(m.tensors[k].name);
    else s.ready(k);
  }
  return s.finish();
}

std::string rank0_text(mpi_backend& w, const std::string& mine) {
  std::int64_t n = static_cast<std::int64_t>(mine.size());
  w.broadcast(&n, 1, dtype::i64, 0);
  REQUIRE(n >= 0);
  std::string t(static_cast<std::size_t>(n), '\0');
  if (w.rank() == 0) t = mine;
  std::vector<std::int64_t> words(t.size() / 8 + 1, 0);  // one spare word: never an empty broadcast
  std::memcpy(words.data(), t.data(), t.size());
  w.broadcast(words.data(), words.size(), dtype::i64, 0);
  std::memcpy(t.data(), words.data(), t.size());
  return t;
}

}  // namespace

TEST_CASE("session from a strategy: exact averages, ready by name, the trainer keeps its world") {
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const auto m = net();
  session s(world, m, uniform_strategy(m, ring_group(8 << 10), "ring-8k"));
  CHECK_EQ(s.world_size(), p);
  CHECK_EQ(s.ranks_per_node(), p);  // zoo::local(p): one node
  CHECK_EQ(s.cluster().name, "local-" + std::to_string(p));
  CHECK(s.buckets() > 1);
  CHECK(s.reduce() == reduction::average);
  CHECK(!s.strategy().made_for.has_value());  // given without a stamp: none added, none checked
  for (int it = 0; it < 3; ++it) {
    CONTEXT("iteration " << it);
    grads g(m, r);
    step(s, g, true);
    for (std::size_t t = 0; t < m.tensors.size(); ++t) CHECK_EQ(g.wrong(t, static_cast<float>(p)), 0u);
    // the trainer's own collective on its world between iterations (the session has its own)
    std::int64_t one = 1;
    world.all_reduce(&one, 1, dtype::i64);
    CHECK_EQ(one, p);
  }
}

TEST_CASE("session: reduction::sum is exact, ready by index, buffers as vectors") {
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const auto m = net();
  session_options o;
  o.reduce = reduction::sum;
  group_desc hd;
  hd.topology = topology_value{topology_kind::halving_doubling};
  session s(world, m, uniform_strategy(m, hd, "hd"), o);
  grads g(m, r);
  s.begin(g.data);  // a std::vector<std::vector<float>> is a range of buffers too
  for (std::size_t k = m.tensors.size(); k-- > 0;) s.ready(k);
  s.finish();
  for (std::size_t t = 0; t < m.tensors.size(); ++t) CHECK_EQ(g.wrong(t, static_cast<float>(p * p)), 0u);
}

TEST_CASE("session from a search: rank 0 searches, every rank gets the same strategy") {
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const auto m = net();
  search_options so{zoo::local(p)};
  int progress_calls = 0;
  so.options.on_progress = [&](const search::progress&) { ++progress_calls; };
  session s(world, m, so);
  CHECK((r == 0) == (progress_calls > 0));  // the search ran on rank 0 only
  const std::string mine = io::to_json_text(s.strategy());
  CHECK_EQ(rank0_text(world, mine), mine);
  REQUIRE(s.strategy().made_for.has_value());
  CHECK_EQ(s.strategy().made_for->cluster, "local-" + std::to_string(p));
  CHECK_EQ(s.strategy().made_for->world_size, p);
  CHECK_EQ(s.strategy().made_for->ranks_per_node, p);
  CHECK_EQ(s.strategy().made_for->fingerprint, cluster_fingerprint(zoo::local(p)));
  // the same search on one process gives the same strategy (deterministic, counted budget)
  auto alone = search::optimize(m, zoo::local(p), search::options{}).strategy;
  alone.made_for = made_for_of(zoo::local(p), p, p);
  CHECK(alone == s.strategy());
  grads g(m, r);
  step(s, g, true);
  for (std::size_t t = 0; t < m.tensors.size(); ++t) CHECK_EQ(g.wrong(t, static_cast<float>(p)), 0u);
}

TEST_CASE("session: on_bucket_done once per bucket, completed tensors already final") {
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const auto m = net();
  // no fusion: one bucket per item; "big" split in two shards along axis 0 (two buckets)
  auto st = uniform_strategy(m, ring_group(0), "no-fusion");
  st.assignments[4].shard_groups = {0, 0};
  st.assignments[4].split_axis = 0;
  session s(world, m, st);
  const std::size_t nb = s.buckets();
  CHECK_EQ(nb, m.tensors.size() + 1);
  for (int it = 0; it < 2; ++it) {
    CONTEXT("iteration " << it);
    grads g(m, r);
    std::vector<int> calls(nb, 0), completed(m.tensors.size(), 0), final_when_completed(m.tensors.size(), 0);
    std::size_t big_buckets = 0;
    s.on_bucket_done([&](const bucket_info& b) {
      ++calls.at(b.index);
      CHECK_EQ(b.group, 0u);
      CHECK(!b.tensors.empty());
      for (auto t : b.tensors) big_buckets += t == 4 ? 1 : 0;
      for (auto t : b.completed) {
        ++completed.at(t);
        if (g.wrong(t, static_cast<float>(p)) == 0) ++final_when_completed[t];
      }
      // "big" completes only with the second of its two buckets
      if (std::find(b.tensors.begin(), b.tensors.end(), 4u) != b.tensors.end())
        CHECK_EQ(std::find(b.completed.begin(), b.completed.end(), 4u) != b.completed.end(), big_buckets == 2);
    });
    step(s, g, it == 0);
    for (std::size_t b = 0; b < nb; ++b) CHECK_EQ(calls[b], 1);
    for (std::size_t t = 0; t < m.tensors.size(); ++t) {
      CHECK_EQ(completed[t], 1);
      CHECK_EQ(final_when_completed[t], 1);
    }
    CHECK_EQ(big_buckets, 2u);
  }
}

TEST_CASE("session: a strategy made for another cluster or layout fails on every rank, naming both") {
  auto world = mpi_backend::world();
  const int p = world.size();
  const auto m = net();
  const auto local = zoo::local(p);
  auto st = uniform_strategy(m, ring_group(1 << 20), "stamped");
  st.made_for = made_for_of(local, 2 * p, 2 * p);
  CHECK_THROWS_WITH(session(world, m, st), "'made_for.world_size': strategy 'stamped' was made for " + std::to_string(2 * p) +
                                               " ranks (cluster 'local-" + std::to_string(p) + "'");
  CHECK_THROWS_WITH(session(world, m, st), "this job has " + std::to_string(p) + " ranks");
  st.made_for = made_for_of(zoo::make_cluster("p3.16xlarge-x4"));
  CHECK_THROWS_WITH(session(world, m, st), "'made_for.cluster': strategy 'stamped' was made for cluster 'p3.16xlarge-x4'; this run's cluster is 'local-" +
                                               std::to_string(p) + "'");
  if (p % 2 == 0) {
    st.made_for = made_for_of(local, p, p / 2);
    CHECK_THROWS_WITH(session(world, m, st), "'made_for.ranks_per_node'");
  }
  auto other = local;
  other.nodes[0].intra.bandwidth *= 2;  // re-measured links under the same name
  st.made_for = made_for_of(other, p, p);
  CHECK_THROWS_WITH(session(world, m, st), "'made_for.fingerprint': strategy 'stamped' was made for cluster 'local-" + std::to_string(p) +
                                               "' with fingerprint " + cluster_fingerprint(other));
  CHECK_THROWS_WITH(session(world, m, st), "has fingerprint " + cluster_fingerprint(local));
  // one rank with a bad layout: it throws its own error, the others name it (nobody hangs)
  session_options bad;
  if (world.rank() == p - 1) bad.ranks_per_node = p + 1;
  if (world.rank() == p - 1)
    CHECK_THROWS_WITH(session(world, m, uniform_strategy(m, ring_group(0)), bad), "'ranks_per_node': " + std::to_string(p + 1) + " ranks per node do not divide");
  else
    CHECK_THROWS_WITH(session(world, m, uniform_strategy(m, ring_group(0)), bad), "'rank " + std::to_string(p - 1) + "': session: rank " +
                                                                                       std::to_string(p - 1) + " could not set up");
  // the right stamp runs
  st.made_for = made_for_of(local, p, p);
  session ok(world, m, st);
  grads g(m, world.rank());
  step(ok, g, false);
  for (std::size_t t = 0; t < m.tensors.size(); ++t) CHECK_EQ(g.wrong(t, static_cast<float>(p)), 0u);
}

TEST_CASE("session from a file: rank 0 reads it; stamped or not; a missing file fails every rank") {
  auto world = mpi_backend::world();
  const int p = world.size();
  const auto m = net();
  const auto dir = std::filesystem::temp_directory_path();
  // one name for every rank: rank 0's pid
  std::int64_t pid = static_cast<std::int64_t>(::getpid());
  world.broadcast(&pid, 1, dtype::i64, 0);
  const auto stamped = dir / ("autosync_session_" + std::to_string(pid) + "_stamped.json");
  const auto old = dir / ("autosync_session_" + std::to_string(pid) + "_old.json");
  auto st = uniform_strategy(m, ring_group(16 << 10), "from-file");
  if (world.rank() == 0) {
    io::save_strategy_file(old, st);  // no made_for: loads with no check
    st.made_for = made_for_of(zoo::local(p), p + 1, p + 1);
    io::save_strategy_file(stamped, st);
  }
  world.barrier();
  {
    session s(world, m, strategy_file{old});
    CHECK(!s.strategy().made_for.has_value());
    grads g(m, world.rank());
    step(s, g, true);
    for (std::size_t t = 0; t < m.tensors.size(); ++t) CHECK_EQ(g.wrong(t, static_cast<float>(p)), 0u);
  }
  CHECK_THROWS_WITH(session(world, m, strategy_file{stamped}), "'made_for.world_size'");
  CHECK_THROWS_WITH(session(world, m, strategy_file{dir / "autosync_session_no_such_file.json"}), "autosync_session_no_such_file.json");
  world.barrier();
  if (world.rank() == 0) {
    std::filesystem::remove(old);
    std::filesystem::remove(stamped);
  }
}

TEST_CASE("session: ready() of an unknown name or twice, finish() before every ready(): the rank named") {
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const auto m = net();
  const std::string rank = "rank " + std::to_string(r) + ": ";
  const auto one_bucket = uniform_strategy(m, ring_group(1u << 30), "one-bucket");
  {
    session s(world, m, one_bucket);
    grads g(m, r);
    s.begin(g.spans());
    CHECK_THROWS_WITH(s.ready("fc9.weight"), "'tensor': " + rank + "ready(\"fc9.weight\"): model 'net' has no tensor named 'fc9.weight'");
    CHECK_THROWS_WITH(s.ready(std::size_t{99}), rank);
    CHECK_THROWS_WITH((void)s.tensor_index("nope"), "has no tensor named 'nope'");
    for (std::size_t k = 0; k < m.tensors.size(); ++k) s.ready(k);  // the iteration goes on
    s.finish();
    for (std::size_t t = 0; t < m.tensors.size(); ++t) CHECK_EQ(g.wrong(t, static_cast<float>(p)), 0u);
  }
  {
    session s(world, m, one_bucket);
    grads g(m, r);
    s.begin(g.spans());
    s.ready("l1.w");
    CHECK_THROWS_WITH(s.ready("l1.w"), rank + "executor: tensor 'l1.w' was already marked ready");
    CHECK_THROWS_WITH(s.begin(g.spans()), rank);  // the session failed: no further iteration
  }
  {
    session s(world, m, one_bucket);
    grads g(m, r);
    s.begin(g.spans());
    s.ready("l0.w");
    s.ready("big");
    CHECK_THROWS_WITH(s.finish(), "'ready': " + rank + "finish() before ready() of 4 tensors: 'l0.b', 'l1.w', 'l1.b', 'out.w'");
  }
}

TEST_CASE("session: a begin() refused on one rank fails every rank, never a sum of two iterations") {
  auto world = mpi_backend::world();
  const int r = world.rank();
  const auto m = net();
  session s(world, m, uniform_strategy(m, ring_group(1u << 30), "one-bucket"), session_options{.timeout = 2.0});
  grads g(m, r);
  auto sp = g.spans();
  if (r == 0) sp[0] = sp[0].first(sp[0].size() - 1);  // rank 0 passes a buffer one element short
  if (r == 0) {
    CHECK_THROWS_WITH(s.begin(sp), "'grads[0].count': rank 0: ");
    // its next iteration would meet the others' first: the session refuses it
    CHECK_THROWS_WITH(s.begin(g.spans()), "rank 0: executor: an earlier iteration failed");
  } else {
    s.begin(sp);
    for (std::size_t k = m.tensors.size(); k-- > 0;) s.ready(k);
    CHECK_THROWS_WITH(s.finish(), "timed out");  // the bucket waits for rank 0 (or a rank waiting for it)
    CHECK_THROWS_WITH(s.begin(g.spans()), "an earlier iteration failed");
  }
  if (r == 0)  // nothing ran on rank 0's buffers
    for (std::size_t t = 0; t < m.tensors.size(); ++t) CHECK_EQ(g.wrong(t, 1.0f), 0u);
  world.barrier();
}

TEST_CASE("learn::record_trial: every rank's timings gathered into the session's trial record") {
  auto world = mpi_backend::world();
  const int p = world.size(), r = world.rank();
  const auto m = net();
  session s(world, m, uniform_strategy(m, ring_group(8 << 10), "ring-8k"));
  std::vector<learn::step_measure> mine;
  for (int it = 0; it < 3; ++it) {
    grads g(m, r);
    const auto t = step(s, g, false);
    // made-up figures that say which rank and iteration they are from
    mine.push_back({t.sync, 1.0 + r + 10.0 * it, 100.0 + r + 10.0 * it});
  }
  learn::trial_context ctx;
  ctx.settings = {1, 0.0, 7};
  ctx.autosync_version = "test";
  const auto rec = learn::record_trial(s, mine, ctx);
  rec.validate();
  CHECK_EQ(rec.model.spec.name, "net");
  CHECK(rec.model.zoo.empty());
  CHECK_EQ(rec.cluster.name, "local-" + std::to_string(p));
  CHECK_EQ(rec.ranks_per_node, p);
  CHECK(rec.strategy == s.strategy());
  CHECK_EQ(rec.settings.seed, 7u);
  CHECK_EQ(rec.environment.ranks, p);
  CHECK(rec.predicted_iteration > 0.0);
  REQUIRE(rec.iterations.size() == 3u);
  for (std::size_t it = 0; it < 3; ++it) {
    CONTEXT("iteration " << it);
    const auto& i = rec.iterations[it];
    REQUIRE(i.rank_exposed.size() == static_cast<std::size_t>(p));
    for (int q = 0; q < p; ++q) {
      CHECK_EQ(i.rank_exposed[static_cast<std::size_t>(q)], 1.0 + q + 10.0 * static_cast<double>(it));
      CHECK_EQ(i.rank_iteration[static_cast<std::size_t>(q)], 100.0 + q + 10.0 * static_cast<double>(it));
    }
    CHECK_EQ(i.exposed, 1.0 + (p - 1) + 10.0 * static_cast<double>(it));  // the slowest rank
    CHECK_EQ(i.iteration, 100.0 + (p - 1) + 10.0 * static_cast<double>(it));
  }
  // the same iterations on every rank (the timestamp and host may differ): rank 0's, compared
  std::string figures;
  for (const auto& i : rec.iterations)
    for (std::size_t q = 0; q < i.rank_iteration.size(); ++q) figures += std::to_string(i.rank_exposed[q]) + "/" + std::to_string(i.rank_iteration[q]) + " ";
  CHECK_EQ(rank0_text(world, figures), figures);
  // a rank that measured another number of iterations is named
  std::vector<learn::step_measure> uneven(r == p - 1 ? 2 : 3);
  CHECK_THROWS_WITH((void)learn::record_trial(s, uneven, ctx), "'rank " + std::to_string(p - 1) + "': record_trial: rank " +
                                                                  std::to_string(p - 1) + " measured 2 iterations, rank 0 3");
}
