// autosync/exec/nccl/backend.hpp — the NCCL (GPU) backend. Host code: compiled by the host
// compiler against <cuda_runtime_api.h> and <nccl.h> (CMake target autosync::nccl); the
// kernels it needs for the executor live in exec/nccl/kernels.cuh (nvcc).
//
//   int main(int argc, char** argv) {
//     autosync::exec::mpi_session mpi(argc, argv);
//     auto boot = autosync::exec::mpi_backend::world();                 // MPI: bootstrap only
//     auto world = autosync::exec::nccl_backend::bootstrap(boot, local_rank % gpus);
//     auto c = autosync::exec::comms<autosync::exec::nccl_backend>::make(std::move(world), gpus);
//     autosync::exec::all_reduce(c, dev_grad, n, autosync::dtype::f32, topology);
//   }
//
// One nccl_backend is one NCCL communicator on one CUDA device with its own non-blocking
// stream. Communicators are created non-blocking (ncclConfig_t::blocking = 0), so nothing the
// backend does can hang: every operation is enqueued on the backend's stream and waited with a
// polling loop that checks cudaStreamQuery and ncclCommGetAsyncError against a deadline of
// timeout() seconds (default 60, AUTOSYNC_TIMEOUT_S overrides it). On an NCCL error or a
// timeout the communicator is aborted (ncclCommAbort: its kernels return) and the operation
// throws
//
//   autosync::error("rank 3", "nccl all_reduce on rank 3 timed out after 60 s (a peer did not
//                              take part); the communicator was aborted")
//   autosync::error("rank 0", "nccl broadcast on rank 0 failed: invalid argument (...)")
//
// with NCCL's / CUDA's own error string; the backend is then unusable (every operation throws).
//
// Buffers: device memory (cudaMalloc, managed memory) is used as it is. Host memory (what the
// executor's handshake and readiness rounds pass) is staged through a device buffer of the
// backend, found by cudaPointerGetAttributes — slower, but the same calls work on both.
//
// dtypes: f32, f64, f16, bf16, i32, i64 -> ncclFloat32, ncclFloat64, ncclFloat16, ncclBfloat16,
// ncclInt32, ncclInt64; the reduction is ncclSum. NCCL sums f16/bf16 in its own arithmetic.
//
// Point-to-point: NCCL has no tags. `tag` is checked (>= 0) and otherwise unused: messages
// between two ranks match in the order they are posted, which is what exec/collectives.hpp
// does (one message per pair and phase). `sendrecv` and `group` run their transfers inside
// ncclGroupStart/ncclGroupEnd (deadlock-free exchanges, many peers at once).
//
// Topologies (the overloads of exec::all_reduce & co. at the end of this header, picked over
// the generic ones of exec/collectives.hpp for comms<nccl_backend>):
//   ring / tree / halving_doubling   one NCCL collective on the world communicator; NCCL picks
//                                    its algorithm — steer it to the searched one with the
//                                    autosync tuner plugin (examples/nccl_tuner, README) or
//                                    NCCL_ALGO. NCCL has no halving-doubling all-reduce.
//   hierarchical<I, O>               intra reduce-scatter, inter all-reduce of my block, intra
//                                    all-gather, on the split communicators of comms::make (the
//                                    tail of n mod g elements: one world all-reduce)
//   sharded (RS + AG)                ncclReduceScatter + ncclAllGather in place; even_shard's
//                                    uneven blocks go through a padded staging buffer
//   parameter server                 ncclReduce to the server rank + ncclBroadcast from it; with
//                                    local replication: intra reduce to the node leader, the
//                                    leaders' reduce + broadcast on the inter communicator, intra
//                                    broadcast
//   sparse_all_gather                a dense all-reduce of the table (the same sums: untouched
//                                    rows are zero); NCCL has no variable-size all-gather
//
// abort(reason) aborts the communicator, then ends the process (std::abort, after the hook set
// with set_job_abort — e.g. MPI_Abort of the bootstrap communicator — when there is one).
//
// Layout: nccl/communicator.hpp (the class), nccl/collectives.hpp (the topology overloads),
// nccl/bucket_runner.hpp (the executor's device path), included here in that order.
#pragma once

#include <autosync/exec/nccl/communicator.hpp>
#include <autosync/exec/nccl/collectives.hpp>
#include <autosync/exec/nccl/bucket_runner.hpp>
