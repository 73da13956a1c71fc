// autosync/exec/mpi/backend.hpp — the MPI (CPU) backend. Needs <mpi.h>: build
// with the CMake target autosync::mpi (OpenMPI 4.1 in CI).
//
//   int main(int argc, char** argv) {
//     autosync::exec::mpi_session mpi(argc, argv);           // MPI_Init_thread / MPI_Finalize
//     auto c = autosync::exec::comms<autosync::exec::mpi_backend>::make(
//         autosync::exec::mpi_backend::world(), /*ranks_per_node=*/4);
//     autosync::exec::all_reduce(c, grad.data(), grad.size(), autosync::dtype::f32,
//                                autosync::topo::ring::value);
//   }
//
// mpi_backend wraps one communicator: world() and split() own theirs (freed on destruction),
// wrap() borrows one. Every operation is posted non-blocking (MPI_Isend, MPI_Iallreduce, ...)
// and completed by polling MPI_Testall against a deadline of timeout() seconds (default 60,
// the environment variable AUTOSYNC_TIMEOUT_S overrides it), so a dead or stuck peer becomes
//
//   autosync::error("rank 3", "mpi recv on rank 0 timed out after 60 s waiting for rank 3 ...")
//
// The field names the rank waited for (point-to-point) or, for a collective (where MPI cannot
// tell who is missing), the rank that gave up. After a timeout:
//   - a receive that never matched is cancelled: the backend stays usable (barrier and go on);
//   - a send or a collective cannot be withdrawn (MPI cannot cancel either reliably). The request
//     is kept and retired in the background if the peer turns up late (settle() checks); until
//     then the backend is marked unusable and every further operation throws. The buffer of such
//     an operation stays in use by MPI until then, and destroying the backend leaves its
//     communicator to MPI_Finalize; the usual reaction is abort().
// Polling spins briefly, then yields the CPU between tests (oversubscribed ranks hand the core
// to the peer they wait for without a timer's latency), and only after 10 ms without progress
// sleeps with a growing back-off (up to 1 ms).
//
// dtypes: f32/f64/i32/i64 map to MPI's types and MPI_SUM; f16 and bf16 travel as MPI_UINT16_T
// and are summed by user-defined MPI_Ops (in f32, rounded to nearest even, exec/collectives.hpp).
// Counts above max_count() (INT_MAX by default) are split into several MPI calls.
//
// Messages between hosts travel in pieces of at most piece_bytes() (32 KiB by default), every
// piece posted at once. Above its eager limit (64 KiB for Open MPI's TCP BTL) MPI hands a message
// over by rendezvous: the receiver must answer the sender's request before the data flows, and a
// ring step (one blocking exchange with each neighbour) waits for that answer once per step.
// Measured on the 4-host testbed (200 Mb/s TCP per host), the ring all-reduce over whole blocks
// took 1.33x (4 MiB), 1.8x (1 MiB) and 3.3-4.0x (256 KiB) of its alpha-beta time; in 32 KiB
// pieces 1.08-1.10x at every size (TCP's goodput is 0.956 of the line rate). Peers on the same
// host are never cut (shared memory hands a large message over in one copy: cut into 32 KiB
// pieces, a 4 MiB exchange took 1.75x as long). world() and split() learn which ranks share a
// host (a timed all-gather of each rank's MPI processor name and piece size, which must agree on
// every rank); wrap() and adopt() do not communicate: call locate() (collective) on them to cut
// too. AUTOSYNC_MPI_PIECE_BYTES sets the default (0: never cut; RDMA transports such as UCX hand
// large messages over without the round trip's cost and may be better off whole).
//
// Threads: MPI must provide at least MPI_THREAD_SERIALIZED (the executor calls the backend from
// its communication thread); mpi_session (exec/mpi/session.hpp) asks for MPI_THREAD_MULTIPLE and
// refuses less than SERIALIZED with an error that says what the library provided.
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/hash.hpp>
#include <autosync/exec/mpi/session.hpp>
#include <autosync/model.hpp>

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only (MPI-2 C++ bindings are deprecated and unused)
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace autosync::exec {

class mpi_backend {
 public:
  mpi_backend() = default;  // empty: valid() == false (what split returns to non-members)

  // A duplicate of MPI_COMM_WORLD, owned. Collective over the world.
  [[nodiscard]] static mpi_backend world() {
    // a bad AUTOSYNC_TIMEOUT_S or AUTOSYNC_MPI_PIECE_BYTES throws before any communication
    const double t = mpi_detail::default_timeout();
    const std::size_t pb = mpi_detail::default_piece_bytes();
    MPI_Comm c = MPI_COMM_NULL;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &c) != MPI_SUCCESS) throw error("MPI_Comm_dup", "mpi_backend::world: cannot duplicate MPI_COMM_WORLD");
    mpi_backend w(c, true, t, pb);
    w.locate();
    return w;
  }
  // Take ownership of `c` (freed on destruction).
  [[nodiscard]] static mpi_backend adopt(MPI_Comm c) {
    return mpi_backend(c, true, mpi_detail::default_timeout(), mpi_detail::default_piece_bytes());
  }
  // Borrow `c` (the caller frees it after the backend is gone). Sets MPI_ERRORS_RETURN on it.
  [[nodiscard]] static mpi_backend wrap(MPI_Comm c) {
    return mpi_backend(c, false, mpi_detail::default_timeout(), mpi_detail::default_piece_bytes());
  }

  mpi_backend(const mpi_backend&) = delete;
  mpi_backend& operator=(const mpi_backend&) = delete;
  mpi_backend(mpi_backend&& o) noexcept { swap(o); }
  mpi_backend& operator=(mpi_backend&& o) noexcept {
    if (this != &o) {
      mpi_backend tmp(std::move(o));
      swap(tmp);
    }
    return *this;
  }
  ~mpi_backend() { release(); }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] bool valid() const noexcept { return comm_ != MPI_COMM_NULL; }
  [[nodiscard]] MPI_Comm comm() const noexcept { return comm_; }
  [[nodiscard]] double timeout() const noexcept { return timeout_; }
  void set_timeout(double s) {
    if (!(s > 0.0) || s > 1e9) throw error("timeout", "mpi_backend: " + mpi_detail::seconds(s) + " is not a positive number of seconds");
    timeout_ = s;
  }
  // Largest element count handed to one MPI call (larger transfers are split). INT_MAX by default.
  [[nodiscard]] std::size_t max_count() const noexcept { return max_count_; }
  void set_max_count(std::size_t c) {
    if (c == 0 || c > static_cast<std::size_t>(INT_MAX)) throw error("max_count", "mpi_backend: must be in [1, INT_MAX]");
    max_count_ = c;
  }
  // Largest message to or from a rank on another host, in bytes (0: never cut). Every rank of the
  // communicator must use the same value (the receiver cuts its receive as the sender cuts its
  // send); locate() checks that.
  [[nodiscard]] std::size_t piece_bytes() const noexcept { return piece_bytes_; }
  void set_piece_bytes(std::size_t b) { piece_bytes_ = b; }
  // Whether `peer` runs on another host (false until locate() ran: world() and split() run it).
  [[nodiscard]] bool remote(int peer) const noexcept {
    return !host_.empty() && peer >= 0 && peer < size_ && host_[static_cast<std::size_t>(peer)] != host_[static_cast<std::size_t>(rank_)];
  }
  // Collective: every rank's host (a hash of AUTOSYNC_MPI_HOST when set, else of
  // MPI_Get_processor_name) and piece size, gathered under the deadline. Throws naming "piece_bytes" when the ranks disagree on the piece size.
  void locate() {
    usable("locate");
    if (const char* e = std::getenv("AUTOSYNC_MPI_HOST"); e != nullptr && *e != '\0') return locate(std::string_view(e));
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    check(MPI_Get_processor_name(name, &len), "locate");
    locate(std::string_view(name, static_cast<std::size_t>(std::max(len, 0))));
  }
  // The same with this rank's host named by the caller (ranks naming the same host share it):
  // for launchers whose processor names do not tell hosts apart.
  void locate(std::string_view host) {
    usable("locate");
    const std::uint64_t mine[2] = {hasher{}.str(host).value(), static_cast<std::uint64_t>(piece_bytes_)};
    std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size_));
    MPI_Request req;
    check(MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm_, &req), "locate");
    wait_collective(req, "locate");
    std::vector<std::uint64_t> hosts(static_cast<std::size_t>(size_));
    for (std::size_t r = 0; r < hosts.size(); ++r) {
      hosts[r] = all[2 * r];
      if (all[2 * r + 1] != mine[1])
        throw error("piece_bytes", "mpi_backend: rank " + std::to_string(r) + " cuts messages between hosts into pieces of " +
                                       std::to_string(all[2 * r + 1]) + " bytes, rank " + std::to_string(rank_) + " into " +
                                       std::to_string(mine[1]) + " (AUTOSYNC_MPI_PIECE_BYTES must be the same on every rank)");
    }
    host_ = std::move(hosts);
  }
  // Why the backend refuses operations ("" while usable).
  [[nodiscard]] const std::string& broken() const noexcept { return broken_; }
  // Tests the requests that timeouts left behind (a late peer may have completed them); true
  // when none is left, i.e. the backend is usable again. Every operation does this first.
  bool settle() noexcept {
    reap();
    return broken_.empty();
  }

  // --- collectives ---------------------------------------------------------------------------
  void all_reduce(void* buf, std::size_t n, dtype t) {
    usable("all_reduce");
    auto* b = static_cast<unsigned char*>(buf);
    for (std::size_t o = 0; o < n || o == 0; o += max_count_) {
      const int c = count(n, o);
      MPI_Request req;
      check(MPI_Iallreduce(MPI_IN_PLACE, b + o * size_of(t), c, mpi_detail::type_of(t), mpi_detail::sum_of(t), comm_, &req), "all_reduce");
      wait_collective(req, "all_reduce");
      if (n == 0) break;
    }
  }

  // send holds size()*n elements; this rank's recv gets block rank() summed.
  void reduce_scatter(const void* send, void* recv, std::size_t n, dtype t) {
    usable("reduce_scatter");
    const std::size_t es = size_of(t);
    if (n <= max_count_) {
      MPI_Request req;
      check(MPI_Ireduce_scatter_block(send, recv, static_cast<int>(n), mpi_detail::type_of(t), mpi_detail::sum_of(t), comm_, &req),
            "reduce_scatter");
      wait_collective(req, "reduce_scatter");
      return;
    }
    // chunk c of every block, packed so that MPI sees blocks of c elements
    const auto* s = static_cast<const unsigned char*>(send);
    std::vector<unsigned char> pack(static_cast<std::size_t>(size_) * max_count_ * es);
    for (std::size_t o = 0; o < n; o += max_count_) {
      const std::size_t c = std::min(max_count_, n - o);
      for (int r = 0; r < size_; ++r)
        std::memcpy(pack.data() + static_cast<std::size_t>(r) * c * es, s + (static_cast<std::size_t>(r) * n + o) * es, c * es);
      MPI_Request req;
      check(MPI_Ireduce_scatter_block(pack.data(), static_cast<unsigned char*>(recv) + o * es, static_cast<int>(c),
                                      mpi_detail::type_of(t), mpi_detail::sum_of(t), comm_, &req),
            "reduce_scatter");
      wait_collective(req, "reduce_scatter");
    }
  }

  // recv gets size()*n elements, block r from rank r. send may be recv + rank()*n (in place).
  void all_gather(const void* send, void* recv, std::size_t n, dtype t) {
    usable("all_gather");
    const std::size_t es = size_of(t);
    auto* rb = static_cast<unsigned char*>(recv);
    const bool in_place = send == rb + static_cast<std::size_t>(rank_) * n * es;
    if (n <= max_count_) {
      MPI_Request req;
      check(MPI_Iallgather(in_place ? MPI_IN_PLACE : send, static_cast<int>(n), mpi_detail::type_of(t), recv, static_cast<int>(n),
                           mpi_detail::type_of(t), comm_, &req),
            "all_gather");
      wait_collective(req, "all_gather");
      return;
    }
    std::vector<unsigned char> mine(max_count_ * es), pack(static_cast<std::size_t>(size_) * max_count_ * es);
    const auto* s = static_cast<const unsigned char*>(send);
    for (std::size_t o = 0; o < n; o += max_count_) {
      const std::size_t c = std::min(max_count_, n - o);
      std::memcpy(mine.data(), s + o * es, c * es);
      MPI_Request req;
      check(MPI_Iallgather(mine.data(), static_cast<int>(c), mpi_detail::type_of(t), pack.data(), static_cast<int>(c),
                           mpi_detail::type_of(t), comm_, &req),
            "all_gather");
      wait_collective(req, "all_gather");
      for (int r = 0; r < size_; ++r)
        std::memcpy(rb + (static_cast<std::size_t>(r) * n + o) * es, pack.data() + static_cast<std::size_t>(r) * c * es, c * es);
    }
  }

  // In place at root; other ranks' buf is left as it was.
  void reduce(void* buf, std::size_t n, dtype t, int root) {
    usable("reduce");
    check_rank(root, "root", "reduce");
    auto* b = static_cast<unsigned char*>(buf);
    for (std::size_t o = 0; o < n || o == 0; o += max_count_) {
      MPI_Request req;
      unsigned char* p = b + o * size_of(t);
      check(MPI_Ireduce(rank_ == root ? MPI_IN_PLACE : p, rank_ == root ? p : nullptr, count(n, o), mpi_detail::type_of(t),
                        mpi_detail::sum_of(t), root, comm_, &req),
            "reduce");
      wait_collective(req, "reduce");
      if (n == 0) break;
    }
  }

  void broadcast(void* buf, std::size_t n, dtype t, int root) {
    usable("broadcast");
    check_rank(root, "root", "broadcast");
    auto* b = static_cast<unsigned char*>(buf);
    for (std::size_t o = 0; o < n || o == 0; o += max_count_) {
      MPI_Request req;
      check(MPI_Ibcast(b + o * size_of(t), count(n, o), mpi_detail::type_of(t), root, comm_, &req), "broadcast");
      wait_collective(req, "broadcast");
      if (n == 0) break;
    }
  }

  void barrier() {
    usable("barrier");
    MPI_Request req;
    check(MPI_Ibarrier(comm_, &req), "barrier");
    wait_collective(req, "barrier");
  }

  // --- point to point ------------------------------------------------------------------------
  void send(const void* buf, std::size_t n, dtype t, int peer, int tag) {
    usable("send");
    check_rank(peer, "peer", "send");
    check_tag(tag, "send");
    std::vector<pending>& p = pieces_;
    p.clear();
    // MPI_Isend does not write the buffer; mem_piece is the mutable form both directions share
    post_piece(p, mem_piece{static_cast<unsigned char*>(const_cast<void*>(buf)), n}, peer, true, t, tag);
    wait_p2p(std::span<pending>(p), "send", tag);
  }

  void recv(void* buf, std::size_t n, dtype t, int peer, int tag) {
    usable("recv");
    check_rank(peer, "peer", "recv");
    check_tag(tag, "recv");
    std::vector<pending>& p = pieces_;
    p.clear();
    post_piece(p, mem_piece{static_cast<unsigned char*>(buf), n}, peer, false, t, tag);
    wait_p2p(std::span<pending>(p), "recv", tag);
  }

  // Send sn elements to dst and receive rn elements from src at once (rings: no deadlock).
  void sendrecv(const void* sbuf, std::size_t sn, int dst, void* rbuf, std::size_t rn, int src, dtype t, int tag) {
    usable("sendrecv");
    check_rank(dst, "dst", "sendrecv");
    check_rank(src, "src", "sendrecv");
    check_tag(tag, "sendrecv");
    std::vector<pending>& p = pieces_;
    p.clear();
    // the receive first, then the send, all pieces at once, one deadline (the peer cuts alike)
    post_piece(p, mem_piece{static_cast<unsigned char*>(rbuf), rn}, src, false, t, tag);
    post_piece(p, mem_piece{static_cast<unsigned char*>(const_cast<void*>(sbuf)), sn}, dst, true, t, tag);
    wait_p2p(std::span<pending>(p), "sendrecv", tag);
  }

  // Piece k of s is one message to dst, piece k of r one from src (-1: none); every receive is
  // posted first, then every send, and all are waited on together (one deadline). The collectives
  // use it to run on a bucket's tensors where they lie (exec::segmented). Pieces above
  // max_count() travel as several messages (the peer cuts its pieces the same way).
  void sendrecv_pieces(std::span<const mem_piece> s, int dst, std::span<const mem_piece> r, int src, dtype t, int tag) {
    usable("sendrecv");
    if (dst >= 0) check_rank(dst, "dst", "sendrecv");
    if (src >= 0) check_rank(src, "src", "sendrecv");
    check_tag(tag, "sendrecv");
    std::vector<pending>& p = pieces_;
    p.clear();
    auto post = [&](const mem_piece& x, int peer, bool is_send) { post_piece(p, x, peer, is_send, t, tag); };
    if (src >= 0)
      for (const auto& x : r) post(x, src, false);
    if (dst >= 0)
      for (const auto& x : s) post(x, dst, true);
    wait_p2p(std::span<pending>(p), "sendrecv", tag);
  }

  // Every piece of s one message to its peer, every piece of r one from its peer: every receive
  // posted first, then every send, all waited on together (one deadline). A parameter server
  // takes its pushes and hands out its pulls this way, side by side instead of one peer after
  // another. Pieces above max_count() travel as several messages (the peer cuts them alike).
  void sendrecv_many(std::span<const peer_piece> s, std::span<const peer_piece> r, dtype t, int tag) {
    usable("sendrecv");
    for (const auto& x : s) check_rank(x.peer, "dst", "sendrecv");
    for (const auto& x : r) check_rank(x.peer, "src", "sendrecv");
    check_tag(tag, "sendrecv");
    std::vector<pending>& p = pieces_;
    p.clear();
    for (const auto& x : r) post_piece(p, x.piece, x.peer, false, t, tag);
    for (const auto& x : s) post_piece(p, x.piece, x.peer, true, t, tag);
    wait_p2p(std::span<pending>(p), "sendrecv", tag);
  }

  // --- communicators -------------------------------------------------------------------------
  // Ranks with the same color form a new communicator ordered by key (ties by rank); color < 0:
  // not a member (returns an empty backend). The colors are exchanged first with a timed
  // all-gather, so a missing rank is an error, not a hang.
  [[nodiscard]] mpi_backend split(int color, int key) {
    usable("split");
    int mine[2] = {color, key};
    std::vector<int> all(2 * static_cast<std::size_t>(size_));
    MPI_Request req;
    check(MPI_Iallgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_, &req), "split");
    wait_collective(req, "split");
    MPI_Comm c = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &c), "split");
    mpi_backend out;
    if (c != MPI_COMM_NULL) out = mpi_backend(c, true, timeout_, piece_bytes_);
    out.timeout_ = timeout_;
    out.max_count_ = max_count_;
    if (out.valid()) out.locate();
    return out;
  }

  // Ends every rank of the job: a dead or stuck peer.
  [[noreturn]] void abort(std::string_view why) {
    std::fprintf(stderr, "autosync: rank %d aborts the job: %.*s\n", rank_, static_cast<int>(why.size()), why.data());
    std::fflush(stderr);
    MPI_Abort(valid() ? comm_ : MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  struct pending {
    MPI_Request req = MPI_REQUEST_NULL;
    int peer = -1;
    bool is_send = false;
  };
  struct zombie {
    MPI_Request req;
    bool p2p;
  };

  mpi_backend(MPI_Comm c, bool owned, double timeout, std::size_t piece_bytes)
      : comm_(c), owned_(owned), timeout_(timeout), piece_bytes_(piece_bytes) {
    if (c == MPI_COMM_NULL) throw error("comm", "mpi_backend: MPI_COMM_NULL");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag);
    tag_ub_ = flag && ub ? *ub : 32767;
  }

  void swap(mpi_backend& o) noexcept {
    std::swap(comm_, o.comm_);
    std::swap(owned_, o.owned_);
    std::swap(rank_, o.rank_);
    std::swap(size_, o.size_);
    std::swap(tag_ub_, o.tag_ub_);
    std::swap(timeout_, o.timeout_);
    std::swap(max_count_, o.max_count_);
    std::swap(piece_bytes_, o.piece_bytes_);
    std::swap(host_, o.host_);
    std::swap(broken_, o.broken_);
    std::swap(zombies_, o.zombies_);
    std::swap(pieces_, o.pieces_);
  }

  void release() noexcept {
    if (comm_ == MPI_COMM_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      reap();
      if (zombies_.empty() && owned_) MPI_Comm_free(&comm_);
      // Otherwise a timed-out operation is still pending on the communicator: MPI may progress
      // it at any later call (a late peer), so the communicator is deliberately left alive (a
      // pending non-blocking collective may not be freed, and freeing its communicator under it
      // crashes OpenMPI's progress engine). Finalize or abort ends it.
    }
    comm_ = MPI_COMM_NULL;
    zombies_.clear();
  }

  [[nodiscard]] int count(std::size_t n, std::size_t o) const noexcept {
    return static_cast<int>(o >= n ? 0 : std::min(max_count_, n - o));
  }
  // Elements per message to or from `peer` (max_count(), and piece_bytes() between hosts).
  [[nodiscard]] std::size_t per_message(int peer, dtype t) const noexcept {
    if (piece_bytes_ == 0 || !remote(peer)) return max_count_;
    return std::min(max_count_, std::max<std::size_t>(1, piece_bytes_ / size_of(t)));
  }

  void usable(const char* op) {
    if (!valid()) throw error("backend", std::string("mpi ") + op + ": this rank is not a member of the communicator (empty backend)");
    reap();
    if (!broken_.empty())
      throw error("rank " + std::to_string(rank_), std::string("mpi ") + op + ": the communicator is unusable after " + broken_);
  }

  void check(int rc, const char* op) const {
    if (rc != MPI_SUCCESS)
      throw error("rank " + std::to_string(rank_), std::string("mpi ") + op + " failed: " + mpi_detail::error_string(rc));
  }
  void check_rank(int r, const char* what, const char* op) const {
    if (r < 0 || r >= size_)
      throw error(what, std::string("mpi ") + op + ": " + std::to_string(r) + " is not a rank of this communicator of " +
                            std::to_string(size_));
  }
  void check_tag(int tag, const char* op) const {
    if (tag < 0 || tag > tag_ub_)
      throw error("tag", std::string("mpi ") + op + ": " + std::to_string(tag) + " is outside [0, " + std::to_string(tag_ub_) + "]");
  }

  // Requests posted before a failed post: cancelled where possible, otherwise left to reap().
  void abandon(std::vector<pending>& ps) noexcept {
    for (auto& x : ps) {
      if (x.req == MPI_REQUEST_NULL) continue;
      if (!x.is_send) MPI_Cancel(&x.req);
      zombies_.push_back({x.req, true});
      broken_ = "a failed sendrecv";
    }
    ps.clear();
  }

  // Retire requests left behind by earlier timeouts that have completed since.
  void reap() noexcept {
    for (std::size_t i = 0; i < zombies_.size();) {
      int done = 0;
      if (MPI_Test(&zombies_[i].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
        zombies_.erase(zombies_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    if (zombies_.empty()) broken_.clear();  // the late peer turned up: the ranks agree again
  }

  // Poll until `test` says done or the deadline passes. Returns false on timeout.
  //   spin      the first tests back to back (a peer on another core answers in microseconds);
  //   yield     then one test per std::this_thread::yield() for the first 10 ms: with more
  //             ranks than cores the peer we wait for needs this core, and a yield hands it over
  //             at once (a sleep would add the timer's slack, ~50-100 us, to every ring step);
  //   sleep     after 10 ms the wait is a slow or dead peer: sleep with a back-off up to 1 ms.
  // The deadline is checked on every test after the spin phase.
  template <class Test>
  bool poll(Test&& test, double limit) {
    using clock = std::chrono::steady_clock;
    constexpr int spin = 64;
    for (int i = 0; i < spin; ++i)
      if (test()) return true;
    const auto start = clock::now();
    const auto deadline = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(limit));
    const auto patient = start + std::chrono::milliseconds(10);
    int us = 10;
    for (;;) {
      if (test()) return true;
      const auto now = clock::now();
      if (now > deadline) return false;
      if (now < patient) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
        us = std::min(1000, us * 2);
      }
    }
  }

  void wait_collective(MPI_Request& req, const char* op) {
    int rc = MPI_SUCCESS;
    const bool done = poll(
        [&] {
          int flag = 0;
          rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
          return rc != MPI_SUCCESS || flag != 0;
        },
        timeout_);
    check(rc, op);
    if (done) return;
    zombies_.push_back({req, false});
    broken_ = std::string("a timed-out ") + op;
    throw error("rank " + std::to_string(rank_), "mpi " + std::string(op) + " on rank " + std::to_string(rank_) + " timed out after " +
                                                      mpi_detail::seconds(timeout_) + " s waiting for the other " +
                                                      std::to_string(size_ - 1) + " ranks of its communicator");
  }

  // Posts piece x to / from peer (several messages above max_count()) into p; on an MPI error the
  // pieces already posted are abandoned and the error thrown.
  void post_piece(std::vector<pending>& p, const mem_piece& x, int peer, bool is_send, dtype t, int tag) {
    const std::size_t es = size_of(t), c = per_message(peer, t);
    for (std::size_t o = 0; o < x.n || o == 0; o += c) {
      p.push_back({MPI_REQUEST_NULL, peer, is_send});
      unsigned char* at = x.at + std::min(o, x.n) * es;
      const int k = static_cast<int>(o >= x.n ? 0 : std::min(c, x.n - o));
      const int rc = is_send ? MPI_Isend(at, k, mpi_detail::type_of(t), peer, tag, comm_, &p.back().req)
                             : MPI_Irecv(at, k, mpi_detail::type_of(t), peer, tag, comm_, &p.back().req);
      if (rc != MPI_SUCCESS) {
        p.pop_back();
        abandon(p);
        check(rc, "sendrecv");
      }
      if (x.n == 0) break;
    }
  }

  void wait_p2p(std::span<pending> ps, const char* op, int tag) {
    int rc = MPI_SUCCESS;
    // Requests before `next` are done. A test stops at the first request still pending: one MPI
    // progress call per poll, not one per request (an exchange cut into pieces posts thousands).
    std::size_t next = 0;
    auto all_done = [&] {
      for (; next < ps.size(); ++next) {
        auto& p = ps[next];
        if (p.req == MPI_REQUEST_NULL) continue;
        int flag = 0;
        rc = MPI_Test(&p.req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return true;
        if (flag == 0) return false;
      }
      return true;
    };
    const bool done = poll(all_done, timeout_);
    check(rc, op);
    if (done) return;
    for (auto& p : ps) {  // timed out: retire what completed behind the first pending request
      if (p.req == MPI_REQUEST_NULL) continue;
      int flag = 0;
      if (MPI_Test(&p.req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
    }
    // Name the first peer still missing (a receive first: that is the one that did not come).
    int peer = -1;
    for (auto& p : ps)
      if (p.req != MPI_REQUEST_NULL && (peer < 0 || !p.is_send)) peer = p.peer;
    bool stuck_send = false;
    for (auto& p : ps) {
      if (p.req == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&p.req);
      MPI_Request r = p.req;
      const bool gone = poll(
          [&] {
            int flag = 0;
            return MPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag != 0;
          },
          std::min(1.0, timeout_));
      if (!gone) {
        zombies_.push_back({r, true});
        stuck_send = stuck_send || p.is_send;
        if (!p.is_send) broken_ = std::string("a timed-out ") + op;  // a receive that would not cancel
      }
    }
    if (stuck_send) broken_ = std::string("a timed-out ") + op;
    throw error("rank " + std::to_string(peer), "mpi " + std::string(op) + " on rank " + std::to_string(rank_) + " timed out after " +
                                                     mpi_detail::seconds(timeout_) + " s waiting for rank " + std::to_string(peer) +
                                                     " (tag " + std::to_string(tag) + ")");
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = -1, size_ = 0, tag_ub_ = 32767;
  double timeout_ = 60.0;
  std::size_t max_count_ = static_cast<std::size_t>(INT_MAX);
  std::size_t piece_bytes_ = 0;
  std::vector<std::uint64_t> host_;  // per rank: a hash of its host's name (empty: not located)
  std::string broken_;
  std::vector<zombie> zombies_;
  std::vector<pending> pieces_;  // sendrecv_pieces' requests (reused)
};

static_assert(Backend<mpi_backend>, "autosync: mpi_backend must satisfy exec::Backend");

}  // namespace autosync::exec
