// autosync/exec/mpi/job.hpp — what a program on MPI_COMM_WORLD needs besides the backend: the
// ranks agreeing on a failure before they go on, and the MPI library's figures for a trial
// record (learn/run_record.hpp). Needs <mpi.h> (CMake target autosync::mpi).
//
//   std::string failure;
//   try { ...load inputs... } catch (const std::exception& e) { failure = e.what(); }
//   const int bad = exec::first_failing_rank(failure);   // collective: every rank calls it
//   if (bad >= 0) { if (bad == rank) report(failure); return 1; }   // every rank stops
//
// A program whose ranks may throw alone (a benchmark, a tool) can hand its main to run_mpi_job:
//
//   int main(int argc, char** argv) { return exec::run_mpi_job(argc, argv, "bench_x", [&] { return run(argc, argv); }); }
#pragma once

#include <autosync/exec/mpi/backend.hpp>
#include <autosync/exec/mpi/session.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <exception>
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

// Runs body() (returning the exit code) inside an mpi_session. An exception on one rank is
// printed as "name: what" and ends the whole job (MPI_Abort, exit 2): the other ranks would
// otherwise wait in a collective for it. A failure to start MPI is printed the same way (2).
template <class Body>
int run_mpi_job(int& argc, char**& argv, const char* name, Body&& body) {
  try {
    mpi_session session(argc, argv);
    try {
      return body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", name, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
  }
  return 2;
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
