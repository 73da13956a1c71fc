// tests/mpi/harness_main.cpp — main() of every tests/mpi executable (see harness.hpp).
//   mpirun -np 4 ./autosync_mpi_collectives [-tc=<substring>] [-q]
#include "harness.hpp"

#include <autosync/exec/mpi/backend.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  using autosync::exec::mpi_backend;
  try {
    autosync::exec::mpi_session session(argc, argv);
    std::string filter;
    bool quiet = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strncmp(argv[i], "-tc=", 4) == 0) filter = argv[i] + 4;
      if (std::strcmp(argv[i], "-q") == 0) quiet = true;
    }
    auto tally = mpi_backend::world();  // the harness' own communicator: cases cannot disturb it
    auto& s = autosync::mpitest::st();
    s.rank = tally.rank();
    std::int64_t failed_cases = 0, total_failures = 0, ran = 0;
    for (const auto& tc : autosync::mpitest::registry()) {
      if (!filter.empty() && std::string(tc.name).find(filter) == std::string::npos) continue;
      ++ran;
      const long before = s.failures;
      s.printed = 0;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        tc.fn();
      } catch (const autosync::mpitest::require_failed&) {
      } catch (const std::exception& e) {
        autosync::mpitest::fail(tc.file, tc.line, std::string("uncaught exception in '") + tc.name + "': " + e.what());
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::int64_t f[2] = {s.failures - before, s.failures - before > 0 ? 1 : 0};
      tally.all_reduce(f, 2, autosync::dtype::i64);
      total_failures += f[0];
      failed_cases += f[0] > 0;
      if (s.rank == 0 && (!quiet || f[0] > 0))
        std::printf("[%d ranks] %-60s %s (%.2f s)%s\n", tally.size(), tc.name, f[0] ? "FAILED" : "ok", secs,
                    f[0] ? (" — " + std::to_string(f[0]) + " failures on " + std::to_string(f[1]) + " ranks").c_str() : "");
      std::fflush(stdout);
    }
    std::int64_t checks = s.checks;
    tally.all_reduce(&checks, 1, autosync::dtype::i64);
    if (s.rank == 0)
      std::printf("[%d ranks] %lld cases, %lld checks, %lld failed cases\n", tally.size(), static_cast<long long>(ran),
                  static_cast<long long>(checks), static_cast<long long>(failed_cases));
    if (ran == 0) {
      if (s.rank == 0) std::fprintf(stderr, "no test case matches '%s'\n", filter.c_str());
      return 1;
    }
    return total_failures > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi test harness: %s\n", e.what());
    return 1;
  }
}
