// tests/cuda/nccl_collectives.cpp — the backend-neutral collective test bodies of
// tests/mpi/collective_checks.hpp (the very ones tests/mpi/collectives.cpp runs on MPI), on NCCL:
// every topology x dtype x size x node shape gives the exact sum (all_reduce, reduce_scatter's
// even_shard blocks, all_gather), integer dtypes, the parameter server with every server rank
// and both replication settings, sparse all-gather. The buffers are host memory (the backend
// stages them), as in the MPI run.
//
// One rank per GPU (rank r on device r mod the device count; NCCL refuses two ranks on one GPU):
//   mpirun -np <GPUs> build/tests/cuda/autosync_cuda_nccl_collectives       (tests/cuda/run-gpu-checks.sh)
// ctest runs it as one rank (cuda.nccl_collectives). Linked with tests/mpi/harness_main.cpp (MPI
// bootstraps NCCL); exits 77 (skipped) before MPI starts when there is no CUDA device.
#include "../mpi/collective_checks.hpp"
#include "../mpi/harness.hpp"

#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/nccl/backend.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <vector>

using namespace autosync;
using namespace autosync::exec;
using namespace autosync::mpitest;

namespace {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// Before main (and MPI): no device, nothing to test here.
const bool no_device_skips = [] {
  if (device_count() > 0) return false;
  std::printf("SKIPPED: no CUDA device (cudaGetDeviceCount found none); the NCCL backend needs a GPU per rank\n");
  std::fflush(stdout);
  std::_Exit(77);
}();

// The NCCL communicators of one node shape, made once (NCCL communicators are costly).
comms<nccl_backend>& nccl_comms(int ranks_per_node) {
  static std::map<int, std::unique_ptr<comms<nccl_backend>>> made;
  auto& slot = made[ranks_per_node];
  if (!slot) {
    auto boot = mpi_backend::world();
    auto world = nccl_backend::bootstrap(boot, boot.rank() % device_count());
    world.set_job_abort([](std::string_view) { MPI_Abort(MPI_COMM_WORLD, 1); });
    slot = std::make_unique<comms<nccl_backend>>(comms<nccl_backend>::make(std::move(world), ranks_per_node));
  }
  return *slot;
}

int world_size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

// The sizes of tests/mpi/collectives.cpp (0, 1, small primes, n < p, non-multiples of p, and
// sizes spanning NCCL's chunks).
std::vector<std::size_t> sizes(int p, bool first_shape) {
  std::vector<std::size_t> s{0, 1, 2, 7, 13, 31, 97, 1009, 70001};
  if (p > 1) s.push_back(static_cast<std::size_t>(p - 1));
  s.push_back(static_cast<std::size_t>(3 * p + 1));
  s.push_back(static_cast<std::size_t>(5 * p + 2));
  if (first_shape) s.push_back(std::size_t{1} << 20);
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}
std::vector<int> node_shapes(int p) {
  std::set<int> s{1, p};
  if (p % 2 == 0) s.insert(2);
  return {s.begin(), s.end()};
}
template <class Body>
void for_each_shape(Body body) {
  const int p = world_size();
  for (int rpn : node_shapes(p)) {
    CONTEXT("nccl ranks_per_node=" << rpn);
    body(nccl_comms(rpn), all_topologies(rpn == 1, true), sizes(p, rpn == 1));
  }
}

}  // namespace

TEST_CASE("nccl all_reduce: every topology x dtype x size x node shape is exact") {
  for_each_shape([](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>& sz) {
    check_all_reduce(c, topos, float_dtypes, sz);
  });
}

TEST_CASE("nccl reduce_scatter: block even_shard(n, p, r) of rank r holds the exact sum") {
  for_each_shape([](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>& sz) {
    check_reduce_scatter(c, topos, float_dtypes, sz);
  });
}

TEST_CASE("nccl all_gather: every rank ends with every rank's block") {
  for_each_shape([](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>& sz) {
    check_all_gather(c, topos, float_dtypes, sz);
  });
}

TEST_CASE("nccl integer dtypes sum exactly too (i32, i64)") {
  const dtype ints[] = {dtype::i32, dtype::i64};
  const std::size_t sz[] = {0, 1, 5, 1000};
  for_each_shape([&](auto& c, const std::vector<topology_value>& topos, const std::vector<std::size_t>&) {
    check_all_reduce(c, topos, ints, sz);
  });
}

TEST_CASE("nccl ps_push_pull: every server rank, with and without local replication") {
  const int p = world_size();
  const std::vector<std::size_t> sz{0, 1, 7, static_cast<std::size_t>(3 * p + 1), 1009, std::size_t{1} << 18};
  for (int rpn : node_shapes(p)) check_ps_push_pull(nccl_comms(rpn), float_dtypes, sz);
}

TEST_CASE("nccl sparse_all_gather: touched rows summed, untouched rows zero") {
  check_sparse_all_gather(nccl_comms(1), float_dtypes);
}
