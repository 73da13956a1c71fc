// The MPI subcommands' (`run`, `calibrate`) way to fail: every rank agrees on the first failure
// (exec::first_failing_rank) before any goes on, the lowest failing rank prints it, and every
// rank exits with 1 — none is left hanging in a later collective.
#pragma once

#include <autosync/exec/mpi/job.hpp>

#include <iostream>
#include <string>

namespace autosync_cli {

// Every rank calls this with its own failure ("" for none). True when no rank failed.
inline bool all_ok(const std::string& failure, int rank) {
  const int first = autosync::exec::first_failing_rank(failure);
  if (first < 0) return true;
  if (first == rank)
    std::cerr << ("autosync: error: " + (rank == 0 ? std::string() : "rank " + std::to_string(rank) + ": ") + failure + "\n") << std::flush;
  return false;
}

}  // namespace autosync_cli
