// tests/mpi/backend.cpp — exec::mpi_backend itself: every primitive of the Backend concept for
// every dtype (also split into several MPI calls by a small max_count, and cut into pieces
// between ranks of different hosts), split, argument errors,
// AUTOSYNC_TIMEOUT_S, and the timeouts: a peer that skips a receive, a send or a collective
// makes the waiting rank throw an error naming the rank within the timeout, and the job goes on.
#include "collective_checks.hpp"
#include "harness.hpp"

#include <autosync/exec/mpi/backend.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace autosync;
using namespace autosync::exec;
using namespace autosync::mpitest;

namespace {

constexpr dtype every_dtype[] = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::i32, dtype::i64};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Poll settle() until the requests a timeout left behind are done (the late peer arrived).
bool settles(mpi_backend& b, double limit = 20.0) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!b.settle()) {
    if (seconds_since(t0) > limit) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

std::vector<unsigned char> bytes_of(int r, std::size_t n, dtype t, std::uint64_t salt) { return input(r, n, t, salt); }

// Every primitive against its definition, for every dtype and size.
void check_primitives(mpi_backend& b, std::initializer_list<std::size_t> sizes) {
  const int p = b.size(), r = b.rank();
  for (dtype t : every_dtype)
    for (std::size_t n : sizes) {
      CONTEXT(autosync::name_of(t) << " n=" << n << " max_count=" << b.max_count());
      const std::size_t es = size_of(t);
      {  // all_reduce
        auto buf = bytes_of(r, n, t, 11);
        b.all_reduce(buf.data(), n, t);
        AUTOSYNC_CHECK_ELEMENTS(buf, expected_sum(p, n, t, 11), 0, n, t);
      }
      {  // reduce_scatter: send holds p blocks of n; I get block r summed
        const auto send = bytes_of(r, n * static_cast<std::size_t>(p), t, 12);
        const auto want = expected_sum(p, n * static_cast<std::size_t>(p), t, 12);
        std::vector<unsigned char> recv(n * es);
        b.reduce_scatter(send.data(), recv.data(), n, t);
        std::vector<unsigned char> mine(want.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * n * es),
                                        want.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r + 1) * n * es));
        AUTOSYNC_CHECK_ELEMENTS(recv, mine, 0, n, t);
      }
      {  // all_gather, separate buffers and in place
        std::vector<unsigned char> want;
        for (int q = 0; q < p; ++q) {
          auto part = bytes_of(q, n, t, 13);
          want.insert(want.end(), part.begin(), part.end());
        }
        const auto mine = bytes_of(r, n, t, 13);
        std::vector<unsigned char> recv(n * es * static_cast<std::size_t>(p), 0x77);
        b.all_gather(mine.data(), recv.data(), n, t);
        AUTOSYNC_CHECK_ELEMENTS(recv, want, 0, n * static_cast<std::size_t>(p), t);
        std::vector<unsigned char> inplace(n * es * static_cast<std::size_t>(p), 0x77);
        std::copy(mine.begin(), mine.end(), inplace.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * n * es));
        b.all_gather(inplace.data() + static_cast<std::size_t>(r) * n * es, inplace.data(), n, t);
        AUTOSYNC_CHECK_ELEMENTS(inplace, want, 0, n * static_cast<std::size_t>(p), t);
      }
      for (int root = 0; root < p; ++root) {  // reduce and broadcast from every root
        CONTEXT("root=" << root);
        auto buf = bytes_of(r, n, t, 14 + static_cast<std::uint64_t>(root));
        const auto before = buf;
        b.reduce(buf.data(), n, t, root);
        if (r == root) AUTOSYNC_CHECK_ELEMENTS(buf, expected_sum(p, n, t, 14 + static_cast<std::uint64_t>(root)), 0, n, t);
        else AUTOSYNC_CHECK_ELEMENTS(buf, before, 0, n, t);  // MPI leaves non-roots alone
        auto bc = r == root ? bytes_of(root, n, t, 30) : std::vector<unsigned char>(n * es, 0x11);
        b.broadcast(bc.data(), n, t, root);
        AUTOSYNC_CHECK_ELEMENTS(bc, bytes_of(root, n, t, 30), 0, n, t);
      }
      {  // send / recv around the ring: even ranks send first, odd ranks receive first
        const int right = (r + 1) % p, left = (r + p - 1) % p;
        const auto mine = bytes_of(r, n, t, 40);
        std::vector<unsigned char> got(n * es, 0x22);
        if (r % 2 == 0) {
          b.send(mine.data(), n, t, right, 5);
          b.recv(got.data(), n, t, left, 5);
        } else {
          b.recv(got.data(), n, t, left, 5);
          b.send(mine.data(), n, t, right, 5);
        }
        AUTOSYNC_CHECK_ELEMENTS(got, bytes_of(left, n, t, 40), 0, n, t);
      }
      {  // sendrecv with different counts each way: I send n + r elements, receive n + left
        const int right = (r + 1) % p, left = (r + p - 1) % p;
        const std::size_t sn = n + static_cast<std::size_t>(r), rn = n + static_cast<std::size_t>(left);
        const auto mine = bytes_of(r, sn, t, 50);
        std::vector<unsigned char> got(rn * es, 0x33);
        b.sendrecv(mine.data(), sn, right, got.data(), rn, left, t, 6);
        AUTOSYNC_CHECK_ELEMENTS(got, bytes_of(left, rn, t, 50), 0, rn, t);
      }
      {  // sendrecv_many: every rank sends its own n + q elements to every other rank q and
         // receives n + r from each, all at once (a parameter server's side-by-side exchange)
        std::vector<std::vector<unsigned char>> out(static_cast<std::size_t>(p)), in(static_cast<std::size_t>(p));
        std::vector<peer_piece> sends, recvs;
        for (int q = 0; q < p; ++q) {
          if (q == r) continue;
          const auto uq = static_cast<std::size_t>(q);
          out[uq] = bytes_of(r, n + uq, t, 60);
          in[uq].assign((n + static_cast<std::size_t>(r)) * es, 0x44);
          sends.push_back({{out[uq].data(), n + uq}, q});
          recvs.push_back({{in[uq].data(), n + static_cast<std::size_t>(r)}, q});
        }
        b.sendrecv_many(sends, recvs, t, 7);
        for (int q = 0; q < p; ++q)
          if (q != r) AUTOSYNC_CHECK_ELEMENTS(in[static_cast<std::size_t>(q)], bytes_of(q, n + static_cast<std::size_t>(r), t, 60), 0, n + static_cast<std::size_t>(r), t);
      }
      b.barrier();
    }
}

}  // namespace

TEST_CASE("mpi_backend: every primitive, every dtype") {
  auto b = mpi_backend::world();
  CHECK(b.valid());
  CHECK_EQ(b.max_count(), static_cast<std::size_t>(INT_MAX));
  check_primitives(b, {0, 1, 7, 1000});
}

TEST_CASE("mpi_backend: counts above max_count are split into several MPI calls") {
  auto b = mpi_backend::world();
  b.set_max_count(7);
  check_primitives(b, {6, 7, 8, 50});
}

TEST_CASE("mpi_backend: messages between hosts travel in pieces of piece_bytes, the same bits") {
  // Every rank its own host (and every other rank's pair of ranks one host): each primitive with
  // messages cut into pieces of 8 bytes (1-2 elements), then of 24, with max_count below and above.
  const int r = mpi_backend::world().rank();
  for (const bool pairs : {false, true})
    for (const std::size_t piece : {std::size_t{8}, std::size_t{24}})
      for (const std::size_t maxc : {std::size_t{INT_MAX}, std::size_t{5}}) {
        CONTEXT("hosts of " << (pairs ? 2 : 1) << " ranks, piece_bytes=" << piece << " max_count=" << maxc);
        auto b = mpi_backend::world();
        b.set_piece_bytes(piece);
        b.set_max_count(maxc);
        b.locate("host-" + std::to_string(pairs ? r / 2 : r));
        CHECK_EQ(b.piece_bytes(), piece);
        for (int q = 0; q < b.size(); ++q) CHECK_EQ(b.remote(q), pairs ? q / 2 != r / 2 : q != r);
        check_primitives(b, {0, 1, 7, 50});
      }
}

TEST_CASE("mpi_backend: one host is never cut; world() locates; a piece size the ranks disagree on is an error") {
  auto b = mpi_backend::world();
  CHECK_EQ(b.piece_bytes(), std::size_t{32} << 10);  // the default (AUTOSYNC_MPI_PIECE_BYTES unset)
  for (int q = 0; q < b.size(); ++q) CHECK(!b.remote(q));  // mpirun on one machine: one processor name
  b.set_piece_bytes(b.rank() == 0 ? 64 : 32);
  if (b.size() > 1) CHECK_THROWS_WITH(b.locate(), "'piece_bytes': mpi_backend: rank ");
  b.barrier();  // every rank threw: still in step
  const char* old = std::getenv("AUTOSYNC_MPI_PIECE_BYTES");
  const std::string saved = old ? old : "";
  setenv("AUTOSYNC_MPI_PIECE_BYTES", "0", 1);
  CHECK_EQ(mpi_backend::world().piece_bytes(), 0u);
  for (const char* bad : {"abc", "-1", "5k", "2000000000000"}) {
    CONTEXT("AUTOSYNC_MPI_PIECE_BYTES=" << bad);
    setenv("AUTOSYNC_MPI_PIECE_BYTES", bad, 1);
    CHECK_THROWS_WITH(mpi_backend::world(), "'AUTOSYNC_MPI_PIECE_BYTES'");  // thrown before any communication
  }
  if (old) setenv("AUTOSYNC_MPI_PIECE_BYTES", saved.c_str(), 1);
  else unsetenv("AUTOSYNC_MPI_PIECE_BYTES");
  b.set_piece_bytes(std::size_t{32} << 10);
  b.barrier();
}

TEST_CASE("mpi_backend: split by color, ordered by key, color < 0 is not a member") {
  auto b = mpi_backend::world();
  b.set_timeout(17.0);
  const int p = b.size(), r = b.rank();
  const int color = r == p - 1 && p > 2 ? -1 : r % 2;
  auto s = b.split(color, -r);  // key = -rank: the new order is reversed
  if (color < 0) {
    CHECK(!s.valid());
    std::int64_t x = 1;
    CHECK_THROWS_WITH(s.all_reduce(&x, 1, dtype::i64), "'backend': mpi all_reduce: this rank is not a member");
  } else {
    int members = 0, above = 0;  // members of my color, and those with a larger world rank
    for (int q = 0; q < p; ++q) {
      const int cq = q == p - 1 && p > 2 ? -1 : q % 2;
      if (cq != color) continue;
      ++members;
      above += q > r;
    }
    CHECK(s.valid());
    CHECK_EQ(s.size(), members);
    CHECK_EQ(s.rank(), above);
    CHECK_EQ(s.timeout(), 17.0);
    std::int64_t sum = r;
    s.all_reduce(&sum, 1, dtype::i64);
    std::int64_t want = 0;
    for (int q = 0; q < p; ++q)
      if ((q == p - 1 && p > 2 ? -1 : q % 2) == color) want += q;
    CHECK_EQ(sum, want);
  }
  // moving hands the communicator over
  auto moved = std::move(b);
  CHECK(moved.valid());
  CHECK(!b.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  moved.barrier();
}

TEST_CASE("mpi_backend: bad arguments name the field") {
  auto b = mpi_backend::world();
  const int p = b.size();
  float x[2] = {1, 2};
  CHECK_THROWS_WITH(b.set_timeout(0.0), "'timeout'");
  CHECK_THROWS_WITH(b.set_timeout(-3.0), "'timeout'");
  CHECK_THROWS_WITH(b.set_max_count(0), "'max_count'");
  CHECK_THROWS_WITH(b.send(x, 2, dtype::f32, p, 0), "'peer': mpi send: " + std::to_string(p) + " is not a rank");
  CHECK_THROWS_WITH(b.recv(x, 2, dtype::f32, -1, 0), "'peer'");
  CHECK_THROWS_WITH(b.send(x, 2, dtype::f32, 0, -4), "'tag'");
  CHECK_THROWS_WITH(b.sendrecv(x, 1, 0, x + 1, 1, p + 3, dtype::f32, 1), "'src'");
  const peer_piece far{{reinterpret_cast<unsigned char*>(x), 1}, p};
  CHECK_THROWS_WITH(b.sendrecv_many(std::span(&far, 1), {}, dtype::f32, 1), "'dst'");
  CHECK_THROWS_WITH(b.sendrecv_many({}, std::span(&far, 1), dtype::f32, 1), "'src'");
  CHECK_THROWS_WITH(b.reduce(x, 2, dtype::f32, p), "'root'");
  CHECK_THROWS_WITH(b.broadcast(x, 2, dtype::f32, -1), "'root'");
  mpi_backend empty;
  CHECK(!empty.valid());
  CHECK_THROWS_WITH(empty.barrier(), "'backend'");
  b.barrier();  // nothing was sent: still in step
}

TEST_CASE("mpi_backend: AUTOSYNC_TIMEOUT_S sets the default timeout") {
  const char* old = std::getenv("AUTOSYNC_TIMEOUT_S");
  const std::string saved = old ? old : "";
  setenv("AUTOSYNC_TIMEOUT_S", "2.5", 1);
  {
    auto b = mpi_backend::world();
    CHECK_EQ(b.timeout(), 2.5);
  }
  for (const char* bad : {"abc", "-1", "0", "5s"}) {
    CONTEXT("AUTOSYNC_TIMEOUT_S=" << bad);
    setenv("AUTOSYNC_TIMEOUT_S", bad, 1);
    CHECK_THROWS_WITH(mpi_backend::world(), "'AUTOSYNC_TIMEOUT_S'");  // thrown before any communication
  }
  unsetenv("AUTOSYNC_TIMEOUT_S");
  {
    auto b = mpi_backend::world();
    CHECK_EQ(b.timeout(), 60.0);
  }
  if (old) setenv("AUTOSYNC_TIMEOUT_S", saved.c_str(), 1);
}

TEST_CASE("mpi_session: joins an initialized MPI, thread level at least SERIALIZED") {
  mpi_session again;  // the harness initialized MPI: this one must not finalize it
  CHECK(!again.owns());
  CHECK(again.thread_level() >= MPI_THREAD_SERIALIZED);
}

TEST_CASE("timeout: a receive whose sender skipped names that rank; everyone goes on") {
  auto b = mpi_backend::world();
  b.set_timeout(0.5);
  const int p = b.size(), r = b.rank();
  if (r == 0) {  // rank 1 never sends tag 7
    float x[4];
    const auto t0 = std::chrono::steady_clock::now();
    try {
      b.recv(x, 4, dtype::f32, 1, 7);
      fail(__FILE__, __LINE__, "recv returned without a sender");
    } catch (const error& e) {
      const double waited = seconds_since(t0);
      CHECK_EQ(e.field(), std::string("rank 1"));
      CHECK(std::string(e.what()).find("mpi recv on rank 0 timed out after 0.5 s waiting for rank 1 (tag 7)") != std::string::npos);
      CHECK(waited >= 0.5);
      CHECK(waited < 5.0);
    }
    CHECK(b.broken().empty());  // the receive was cancelled: the backend stays usable
  }
  if (r == 1) {  // sendrecv with rank 0, which skips it: my send goes out, my receive times out
    const float s[2] = {1, 2};
    float got[2];
    CHECK_THROWS_WITH(b.sendrecv(s, 2, 0, got, 2, 0, dtype::f32, 8), "timed out after 0.5 s waiting for rank 0 (tag 8)");
    CHECK(b.broken().empty());
  }
  b.set_timeout(30.0);  // the others wait here while ranks 0 and 1 sit out their timeouts
  b.barrier();
  if (r == 0) {  // rank 1's message arrived while nobody listened: it is still intact
    float got[2] = {0, 0};
    b.recv(got, 2, dtype::f32, 1, 8);
    CHECK(got[0] == 1.0f && got[1] == 2.0f);
  }
  std::int64_t v = 1;
  b.all_reduce(&v, 1, dtype::i64);
  CHECK_EQ(v, p);
}

TEST_CASE("timeout: a send nobody receives makes the backend unusable until the peer turns up") {
  auto b = mpi_backend::world();
  auto side = mpi_backend::world();
  b.set_timeout(0.5);
  const int p = b.size(), r = b.rank();
  // large enough for a rendezvous send: it cannot complete before rank 1 posts the receive
  std::vector<float> big(std::size_t{1} << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 1000);
  if (r == 0) {
    CHECK_THROWS_WITH(b.send(big.data(), big.size(), dtype::f32, 1, 9), "mpi send on rank 0 timed out after 0.5 s waiting for rank 1 (tag 9)");
    CHECK(!b.broken().empty());
    CHECK_THROWS_WITH(b.barrier(), "mpi barrier: the communicator is unusable after a timed-out send");
  }
  b.set_timeout(30.0);  // from here on nobody is meant to time out, however loaded the machine
  side.barrier();  // rank 1 only now receives: late
  if (r == 1) {
    std::vector<float> got(big.size());
    b.recv(got.data(), got.size(), dtype::f32, 0, 9);
    CHECK(got == big);
  }
  if (r == 0) CHECK(settles(b));
  b.barrier();
  std::int64_t v = r;
  b.all_reduce(&v, 1, dtype::i64);
  CHECK_EQ(v, static_cast<std::int64_t>(p) * (p - 1) / 2);
}

TEST_CASE("timeout: a collective one rank skipped times out on the others; the late rank catches up") {
  auto b = mpi_backend::world();
  auto side = mpi_backend::world();
  b.set_timeout(0.5);
  const int p = b.size(), r = b.rank();
  std::int64_t v = r + 1;
  const std::int64_t total = static_cast<std::int64_t>(p) * (p + 1) / 2;
  if (r != 1) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      b.all_reduce(&v, 1, dtype::i64);
      fail(__FILE__, __LINE__, "all_reduce returned without rank 1");
    } catch (const error& e) {
      CHECK_EQ(e.field(), "rank " + std::to_string(r));
      CHECK(std::string(e.what()).find("mpi all_reduce on rank " + std::to_string(r) + " timed out after 0.5 s waiting for the other " +
                                       std::to_string(p - 1) + " ranks") != std::string::npos);
      CHECK(seconds_since(t0) < 5.0);
    }
    CHECK_THROWS_WITH(b.barrier(), "unusable after a timed-out all_reduce");
  }
  b.set_timeout(30.0);  // from here on nobody is meant to time out, however loaded the machine
  side.barrier();
  if (r == 1) {
    b.all_reduce(&v, 1, dtype::i64);  // late: matches the all_reduce the others left pending
    CHECK_EQ(v, total);
  } else {
    CHECK(settles(b));
    CHECK_EQ(v, total);  // the pending all_reduce finished in the background, in place
  }
  b.barrier();
  std::int64_t w = 2;
  b.all_reduce(&w, 1, dtype::i64);
  CHECK_EQ(w, 2 * p);
}
