// autosync/exec/mpi/job.hpp — what a program on MPI_COMM_WORLD needs besides the backend: the
// ranks agreeing on a failure before they go on, and the MPI library's figures for a trial
// record (learn/run_record.hpp). Needs <mpi.h> (CMake target autosync::mpi).
//
//   std::string failure;
//   try { ...load inputs... } catch (const std::exception& e) { failure = e.what(); }
//   const int bad = exec::first_failing_rank(failure);   // collective: every rank calls it
//   if (bad >= 0) { if (bad == rank) report(failure); return 1; }   // every rank stops
#pragma once

#include <autosync/exec/mpi/backend.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstddef>
#include <string>

namespace autosync::exec {

// Collective over `comm`: every rank passes its own failure ("" for none). Returns the lowest
// rank whose failure is not empty, or -1 when none failed — the same answer on every rank, so
// all of them stop (or go on) together and none is left waiting in a later collective.
[[nodiscard]] inline int first_failing_rank(const std::string& failure, MPI_Comm comm = MPI_COMM_WORLD) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int mine = failure.empty() ? INT_MAX : rank;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  return first == INT_MAX ? -1 : first;
}

// MPI_Get_library_version, without trailing blanks: "Open MPI v4.1.4, package: ...".
[[nodiscard]] inline std::string mpi_library_version() {
  std::string v;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) v.assign(lib, static_cast<std::size_t>(std::max(len, 0)));
  while (!v.empty() && (std::isspace(static_cast<unsigned char>(v.back())) || v.back() == '\0')) v.pop_back();
  return v;
}

// "MPI_THREAD_MULTIPLE", ... for a thread level MPI provided (mpi_session::thread_level()).
[[nodiscard]] inline std::string thread_level_name(int level) { return mpi_detail::thread_level_name(level); }

}  // namespace autosync::exec
