// tests/mpi/collectives.cpp — exec/collectives.hpp on the MPI backend: every topology x dtype x
// size x ranks_per_node gives the exact sum; block layouts of reduce_scatter / all_gather; the
// parameter server with every server rank and both replication settings; sparse all-gather;
// the double binary tree's shape; f16/bf16 rounding; bad arguments fail on every rank alike.
#include "collective_checks.hpp"
#include "harness.hpp"

#include <autosync/exec/collectives.hpp>
#include <autosync/exec/mpi/backend.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace autosync;
using namespace autosync::exec;
using namespace autosync::mpitest;

namespace {

int world_size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// 0, 1, 2, small primes, n < p, non-multiples of p; where the machine can afford it (np <= 4:
// CI runs 8 ranks oversubscribed on 2 cores) 70001, which spans several tree chunks for f32 and
// f64, and 1<<20 (several chunks for every dtype) on the first node shape.
std::vector<std::size_t> sizes(int p, bool first_shape) {
  std::vector<std::size_t> s{0, 1, 2, 7, 13, 31, 97, 1009};
  if (p > 1) s.push_back(static_cast<std::size_t>(p - 1));
  s.push_back(static_cast<std::size_t>(3 * p + 1));
  s.push_back(static_cast<std::size_t>(5 * p + 2));
  if (p <= 4) s.push_back(70001);
  if (p <= 4 && first_shape) s.push_back(std::size_t{1} << 20);
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

// ranks_per_node settings for the hierarchical topologies: 1 (every rank a node), 2 where it
// divides p, and p (one node).
std::vector<int> node_shapes(int p) {
  std::set<int> s{1, p};
  if (p % 2 == 0) s.insert(2);
  return {s.begin(), s.end()};
}

template <class Body>
void for_each_shape(Body body) {
  const int p = world_size();
  for (int rpn : node_shapes(p)) {
    CONTEXT("ranks_per_node=" << rpn);
    auto c = comms<mpi_backend>::make(mpi_backend::world(), rpn);
    // flat topologies do not read the node shape: run them once
    body(c, all_topologies(rpn == 1, true), sizes(p, rpn == 1));
  }
}

}  // namespace

TEST_CASE("all_reduce: every topology x dtype x size x node shape is exact") {
  for_each_shape([](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>& sz) {
    check_all_reduce(c, topos, float_dtypes, sz);
  });
}

TEST_CASE("reduce_scatter: block even_shard(n, p, r) of rank r holds the exact sum") {
  for_each_shape([](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>& sz) {
    check_reduce_scatter(c, topos, float_dtypes, sz);
  });
}

TEST_CASE("all_gather: every rank ends with every rank's block") {
  for_each_shape([](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>& sz) {
    check_all_gather(c, topos, float_dtypes, sz);
  });
}

TEST_CASE("integer dtypes sum exactly too (i32, i64)") {
  const dtype ints[] = {dtype::i32, dtype::i64};
  const std::size_t sz[] = {0, 1, 5, 1000};
  for_each_shape([&](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>&) {
    check_all_reduce(c, topos, ints, sz);
    check_reduce_scatter(c, topos, ints, sz);
    check_all_gather(c, topos, ints, sz);
  });
}

// The MPI backend without its sendrecv_pieces: what a backend without that optional member
// gets (one sendrecv, send or recv per piece).
struct plain_mpi {
  mpi_backend b;
  int rank() const { return b.rank(); }
  int size() const { return b.size(); }
  bool valid() const { return b.valid(); }
  double timeout() const { return b.timeout(); }
  void set_timeout(double s) { b.set_timeout(s); }
  void all_reduce(void* p, std::size_t n, dtype t) { b.all_reduce(p, n, t); }
  void reduce_scatter(const void* s, void* r, std::size_t n, dtype t) { b.reduce_scatter(s, r, n, t); }
  void all_gather(const void* s, void* r, std::size_t n, dtype t) { b.all_gather(s, r, n, t); }
  void reduce(void* p, std::size_t n, dtype t, int root) { b.reduce(p, n, t, root); }
  void broadcast(void* p, std::size_t n, dtype t, int root) { b.broadcast(p, n, t, root); }
  void send(const void* p, std::size_t n, dtype t, int peer, int tag) { b.send(p, n, t, peer, tag); }
  void recv(void* p, std::size_t n, dtype t, int peer, int tag) { b.recv(p, n, t, peer, tag); }
  void sendrecv(const void* s, std::size_t sn, int d, void* r, std::size_t rn, int src, dtype t, int tag) {
    b.sendrecv(s, sn, d, r, rn, src, t, tag);
  }
  plain_mpi split(int color, int key) { return plain_mpi{b.split(color, key)}; }
  void barrier() { b.barrier(); }
  [[noreturn]] void abort(std::string_view why) { b.abort(why); }
};
static_assert(Backend<plain_mpi>);

TEST_CASE("segmented buffers (a bucket's tensors where they lie): ring, halving-doubling, hierarchical of those, exact") {
  for_each_shape([](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>& sz) {
    check_segmented(c, topos, float_dtypes, sz);
  });
}

TEST_CASE("segmented buffers on a backend without sendrecv_pieces (one message per piece)") {
  const int p = world_size();
  const dtype types[] = {dtype::f32, dtype::bf16};
  const std::size_t sz[] = {0, 1, 13, 1009, 70001};
  for (int rpn : node_shapes(p)) {
    CONTEXT("ranks_per_node=" << rpn);
    auto c = comms<plain_mpi>::make(plain_mpi{mpi_backend::world()}, rpn);
    check_segmented(c, all_topologies(rpn == 1, true), types, sz);
  }
}

TEST_CASE("segmented buffers: tree is refused with an error naming the topology") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  std::vector<float> a(5, 1.0f);
  segmented sv(dtype::f32);
  sv.append(a.data(), a.size());
  std::string field;
  try {
    exec::all_reduce(c, sv, topology_value{topology_kind::tree, topology_kind::ring, topology_kind::ring});
  } catch (const autosync::error& e) {
    field = e.field();
  }
  CHECK(field == "topology");
}

TEST_CASE("reduce_scatter block layout, by hand: n = 10 over 4 ranks is [0,3) [3,6) [6,8) [8,10)") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size(), r = c.world.rank();
  if (p != 4) return;
  const std::size_t begin[] = {0, 3, 6, 8}, end[] = {3, 6, 8, 10};
  for (const auto& topo : all_topologies()) {
    CONTEXT(name_of(topo));
    // rank q puts q+1 everywhere: the sum is 10 in every element
    std::vector<float> buf(10, static_cast<float>(r + 1));
    reduce_scatter(c, buf.data(), buf.size(), dtype::f32, topo);
    for (std::size_t i = begin[r]; i < end[r]; ++i) CHECK_EQ(buf[i], 10.0f);
    // all_gather of the blocks: element i ends as the index of its owner
    std::vector<float> g(10, -1.0f);
    for (std::size_t i = begin[r]; i < end[r]; ++i) g[i] = static_cast<float>(r);
    all_gather(c, g.data(), g.size(), dtype::f32, topo);
    CHECK(g == std::vector<float>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3});
  }
}

TEST_CASE("ps_push_pull: every server rank, with and without local replication") {
  const int p = world_size();
  std::vector<std::size_t> sz{0, 1, 7, static_cast<std::size_t>(3 * p + 1), 1009};
  if (p <= 4) sz.push_back(std::size_t{1} << 18);
  for (int rpn : node_shapes(p)) {
    auto c = comms<mpi_backend>::make(mpi_backend::world(), rpn);
    check_ps_push_pull(c, float_dtypes, sz);
  }
}

TEST_CASE("ps_push_pull_concurrent: pieces on k distinct servers, summed side by side, exact sums") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int p = c.world.size(), r = c.world.rank();
  for (int k = 1; k <= p; ++k)
    for (dtype t : float_dtypes)
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1009}}) {
        CONTEXT("ps_push_pull_concurrent k=" << k << " " << autosync::name_of(t) << " n=" << n);
        std::vector<std::vector<unsigned char>> bufs;
        std::vector<ps_piece> pieces;
        std::vector<std::uint64_t> salts;
        for (int i = 0; i < k; ++i) {
          const auto salt = mix(static_cast<std::uint64_t>(k) << 40 ^ static_cast<std::uint64_t>(i) << 32 ^ static_cast<std::uint64_t>(t) << 24 ^ n);
          salts.push_back(salt);
          bufs.push_back(input(r, n + static_cast<std::size_t>(i), t, salt));  // pieces of different lengths
        }
        for (int i = 0; i < k; ++i)  // servers spread over the ranks, the last piece on rank 0's side
          pieces.push_back({bufs[static_cast<std::size_t>(i)].data(), n + static_cast<std::size_t>(i), (p - 1 - i * p / k + p) % p});
        ps_push_pull_concurrent(c, std::span<const ps_piece>(pieces), t);
        for (int i = 0; i < k; ++i)
          AUTOSYNC_CHECK_ELEMENTS(bufs[static_cast<std::size_t>(i)], expected_sum(p, n + static_cast<std::size_t>(i), t, salts[static_cast<std::size_t>(i)]),
                                  0, n + static_cast<std::size_t>(i), t);
      }
  // two pieces on one server, or a server outside the world: an error on every rank, nothing sent
  float x = 1.0f, y = 2.0f;
  const ps_piece twice[] = {{&x, 1, 0}, {&y, 1, 0}};
  CHECK_THROWS_WITH(ps_push_pull_concurrent(c, std::span<const ps_piece>(twice), dtype::f32), "'server_rank'");
  const ps_piece outside[] = {{&x, 1, p}};
  CHECK_THROWS_WITH(ps_push_pull_concurrent(c, std::span<const ps_piece>(outside), dtype::f32), "'server_rank'");
  // and the comms are still in step
  const ps_piece one[] = {{&x, 1, p - 1}};
  ps_push_pull_concurrent(c, std::span<const ps_piece>(one), dtype::f32);
  CHECK_EQ(x, static_cast<float>(p));
}

TEST_CASE("sparse_all_gather: touched rows summed, untouched rows zero") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  check_sparse_all_gather(c, float_dtypes);
}

TEST_CASE("sparse_all_gather: invalid rows on one rank throw on every rank") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  const int r = c.world.rank(), last = c.world.size() - 1;
  std::vector<float> buf(8 * 2, 1.0f);
  std::vector<std::int64_t> rows{0, 3, 5};
  if (r == last) rows = {0, 5, 5};  // not unique at index 2
  if (r == last)
    CHECK_THROWS_WITH(sparse_all_gather(c, buf.data(), 8, 2, dtype::f32, rows),
                      "'rows[2]': sparse_all_gather: row 5 is not above the row before it");
  else
    CHECK_THROWS_WITH(sparse_all_gather(c, buf.data(), 8, 2, dtype::f32, rows),
                      "'rows[2]': sparse_all_gather: rank " + std::to_string(last) + " passed invalid rows");
  if (r == 0) rows = {1, 8};  // out of range
  if (r == 0)
    CHECK_THROWS_WITH(sparse_all_gather(c, buf.data(), 8, 2, dtype::f32, rows), "'rows[1]': sparse_all_gather: row 8 is outside [0, 8)");
  else
    CHECK_THROWS_WITH(sparse_all_gather(c, buf.data(), 8, 2, dtype::f32, rows), "rank 0 passed invalid rows");
  // the communicator is still in step: a valid call works afterwards
  const std::vector<std::int64_t> ok{static_cast<std::int64_t>(r % 8)};
  std::vector<float> b2(8, 0.0f);
  b2[static_cast<std::size_t>(r % 8)] = 1.0f;
  sparse_all_gather(c, b2.data(), 8, 1, dtype::f32, ok);
  float total = 0;
  for (float x : b2) total += x;
  CHECK_EQ(total, static_cast<float>(c.world.size()));
}

TEST_CASE("bad arguments: the field is named, nothing is sent") {
  auto c = comms<mpi_backend>::make(mpi_backend::world(), 1);
  float x = 1.0f;
  CHECK_THROWS_WITH(all_reduce(c, nullptr, 4, dtype::f32, topo::ring::value), "'buf'");
  CHECK_THROWS_WITH(reduce_scatter(c, &x, 1, dtype::f32, topology_value{topology_kind::hierarchical, topology_kind::hierarchical, topology_kind::ring}),
                    "'topology.intra'");
  CHECK_THROWS_WITH(all_gather(c, &x, 1, dtype::f32, topology_value{topology_kind::hierarchical, topology_kind::ring, topology_kind::hierarchical}),
                    "'topology.inter'");
  CHECK_THROWS_WITH(all_reduce(c, &x, 1, dtype::f32, topology_value{static_cast<topology_kind>(9)}), "'topology.kind'");
  CHECK_THROWS_WITH(ps_push_pull(c, &x, 1, dtype::f32, c.world.size(), false), "'server_rank'");
  CHECK_THROWS_WITH(ps_push_pull(c, &x, 1, dtype::f32, -1, true), "'server_rank'");
  CHECK_THROWS_WITH(comms<mpi_backend>::make(mpi_backend::world(), 0), "'ranks_per_node'");
  if (c.world.size() % 3 != 0) CHECK_THROWS_WITH(comms<mpi_backend>::make(mpi_backend::world(), 3), "'ranks_per_node': comms::make: 3 does not divide");
  CHECK_THROWS_WITH(comms<mpi_backend>::make(mpi_backend{}, 1), "'world'");
  // and the comms still work
  all_reduce(c, &x, 1, dtype::f32, topo::tree::value);
  CHECK_EQ(x, static_cast<float>(c.world.size()));
}

TEST_CASE("comms::make: node, local, intra and inter communicators") {
  const int p = world_size();
  for (int rpn : node_shapes(p)) {
    CONTEXT("ranks_per_node=" << rpn);
    auto c = comms<mpi_backend>::make(mpi_backend::world(), rpn);
    const int r = c.world.rank();
    CHECK_EQ(c.ranks_per_node, rpn);
    CHECK_EQ(c.nodes, p / rpn);
    CHECK_EQ(c.node, r / rpn);
    CHECK_EQ(c.local, r % rpn);
    CHECK_EQ(c.intra.size(), rpn);
    CHECK_EQ(c.intra.rank(), c.local);
    CHECK_EQ(c.inter.size(), p / rpn);
    CHECK_EQ(c.inter.rank(), c.node);
    // the members: sum of world ranks over intra = node's ranks, over inter = same local index
    std::int64_t s = r;
    c.intra.all_reduce(&s, 1, dtype::i64);
    CHECK_EQ(s, static_cast<std::int64_t>(rpn) * (c.node * rpn) + rpn * (rpn - 1) / 2);
    std::int64_t s2 = r;
    c.inter.all_reduce(&s2, 1, dtype::i64);
    CHECK_EQ(s2, static_cast<std::int64_t>(c.nodes) * c.local + static_cast<std::int64_t>(rpn) * c.nodes * (c.nodes - 1) / 2);
  }
}

TEST_CASE("double binary tree: NCCL's shape, ranks inner in at most one tree") {
  auto w = mpi_backend::world();
  if (w.rank() != 0) return;  // pure functions: one rank checks them
  // p = 8, tree 0 by hand (the diagram in collectives.hpp)
  CHECK_EQ(exec::detail::btree(8, 0).parent, -1);
  CHECK_EQ(exec::detail::btree(8, 0).child[1], 4);
  CHECK_EQ(exec::detail::btree(8, 4).parent, 0);
  CHECK(exec::detail::btree(8, 4).child == (std::array<int, 2>{2, 6}));
  CHECK(exec::detail::btree(8, 6).child == (std::array<int, 2>{5, 7}));
  CHECK_EQ(exec::detail::btree(8, 7).parent, 6);
  CHECK_EQ(exec::detail::dtree(8, 7, 1).parent, -1);  // mirrored: 7 is the root of tree 1
  CHECK_EQ(exec::detail::dtree(8, 3, 1).parent, 7);
  CHECK_EQ(exec::detail::dtree(5, 1, 1).parent, -1);  // odd p: shifted, 1 is the root of tree 1
  for (int p = 1; p <= 64; ++p) {
    CONTEXT("p=" << p);
    int inner_both = 0;
    for (int which = 0; which < 2; ++which) {
      int roots = 0;
      for (int r = 0; r < p; ++r) {
        const auto t = exec::detail::dtree(p, r, which);
        if (t.parent < 0) ++roots;
        else {
          const auto up = exec::detail::dtree(p, t.parent, which);
          CHECK((up.child[0] == r) != (up.child[1] == r));  // my parent lists me exactly once
        }
        for (int ch : t.child)
          if (ch >= 0) CHECK_EQ(exec::detail::dtree(p, ch, which).parent, r);
      }
      CHECK_EQ(roots, 1);
      const int root = which == 0 ? 0 : (p % 2 ? 1 % p : p - 1);
      CHECK_EQ(static_cast<int>(exec::detail::subtree(p, root, which).size()), p);  // connected
    }
    for (int r = 0; r < p; ++r) {
      auto inner = [&](int which) {
        const auto t = exec::detail::dtree(p, r, which);
        return t.child[0] >= 0 || t.child[1] >= 0;
      };
      if (inner(0) && inner(1)) ++inner_both;
    }
    // NCCL's property: no rank is an inner node of both trees for even p; for odd p the shifted
    // tree leaves exactly one exception, rank 0 (the root of tree 0)
    if (p > 2 && p % 2 == 0) CHECK_EQ(inner_both, 0);
    if (p > 2 && p % 2 == 1) {
      CHECK_EQ(inner_both, 1);
      CHECK(exec::detail::dtree(p, 0, 1).child[0] >= 0 || exec::detail::dtree(p, 0, 1).child[1] >= 0);
    }
    // depth: ceil(lg p) + 1 levels at most
    int depth = 0;
    for (int r = 0; r < p; ++r) {
      int d = 0;
      for (int u = r; exec::detail::btree(p, u).parent >= 0; u = exec::detail::btree(p, u).parent) ++d;
      depth = std::max(depth, d);
    }
    CHECK(depth <= static_cast<int>(std::bit_width(static_cast<unsigned>(p))));
  }
}

TEST_CASE("f16 / bf16 conversions round to nearest even") {
  auto w = mpi_backend::world();
  if (w.rank() != 0) return;
  // every f16 survives f16 -> f32 -> f16 (NaNs stay NaN)
  int bad = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    if (std::isnan(f) ? (f32_to_f16(f) & 0x7c00u) != 0x7c00u || (f32_to_f16(f) & 0x3ffu) == 0 : f32_to_f16(f) != h) ++bad;
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(f16_to_f32(0x3c00), 1.0f);
  CHECK_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK_EQ(f16_to_f32(0x7bff), 65504.0f);
  CHECK_EQ(f32_to_f16(65519.0f), 0x7bff);               // below the halfway point to 65536
  CHECK_EQ(f32_to_f16(65520.0f), 0x7c00);               // overflows to inf
  CHECK_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: to even (down)
  CHECK_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: to even (up)
  CHECK_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);             // tie with 0: to even
  CHECK_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  CHECK_EQ(f32_to_f16(-2.0f), 0xc000);
  CHECK_EQ(f32_to_bf16(1.0f), 0x3f80);
  CHECK_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie: to even (down)
  CHECK_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie: to even (up)
  CHECK_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  CHECK_EQ(f32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float rounds to inf
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));  // signalling NaN stays NaN
#if defined(__FLT16_MAX__)
  // against the compiler's own _Float16 conversion on a spread of floats around the f16 range
  std::uint64_t s = 12345;
  int diff = 0;
  for (int i = 0; i < 2000000; ++i) {
    s = mix(s);
    const std::uint32_t x = (static_cast<std::uint32_t>(s) & 0x807fffffu) | (static_cast<std::uint32_t>(0x60 + (s >> 40) % 0x30) << 23);
    const float f = std::bit_cast<float>(x);
    diff += f32_to_f16(f) != std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
  }
  CHECK_EQ(diff, 0);
#endif
  // sum_into: f16 sums in f32 and rounds once: 2048 + 1 = 2049 is not an f16, ties to 2048
  std::uint16_t a = f32_to_f16(2048.0f), b = f32_to_f16(1.0f);
  sum_into(&a, &b, 1, dtype::f16);
  CHECK_EQ(f16_to_f32(a), 2048.0f);
  std::uint16_t c3 = f32_to_f16(2048.0f), d3 = f32_to_f16(3.0f);
  sum_into(&c3, &d3, 1, dtype::f16);
  CHECK_EQ(f16_to_f32(c3), 2052.0f);  // 2051 lies halfway between 2050 and 2052: the even mantissa wins
}
