// autosync/learn/run_record.hpp — the trial record of a measured run: the per-rank timings of
// every measured iteration gathered into iteration samples, the host's environment, and the
// table of iterations `autosync run` prints.
//
//   // every rank measured (sync, exposed, iteration) per iteration; rank 0 gathered them,
//   // rank-major: [rank][iteration][3]
//   rec.iterations = learn::iterations_from_ranks(gathered, ranks, iters);
//   rec.environment = learn::host_environment(ranks, mpi_library, thread_level, "0.1.0");
//   learn::print_iterations(std::cout, rec.iterations);
//   learn::append_record("trials.jsonl", rec);
//
// The MPI side (library version, thread level) comes from the caller (exec/mpi/job.hpp), so
// this header needs no MPI.
#pragma once

#include <autosync/error.hpp>
#include <autosync/learn/records.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace autosync::learn {

// The compiler this program was built with: "GCC 12.2.0", "clang 16.0.6 ...".
[[nodiscard]] inline std::string compiler_name() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown compiler";
#endif
}

// Now, UTC, ISO 8601: "2024-05-01T12:00:00Z".
[[nodiscard]] inline std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The environment of a run on this host: hostname, compiler and timestamp filled in here, the
// communication library's figures given.
[[nodiscard]] inline environment_info host_environment(int ranks, std::string comm_library, std::string thread_level,
                                                       std::string autosync_version) {
  environment_info e;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) e.hostname = host;
  e.mpi_library = std::move(comm_library);
  e.ranks = ranks;
  e.thread_level = std::move(thread_level);
  e.compiler = compiler_name();
  e.autosync_version = std::move(autosync_version);
  e.timestamp = utc_timestamp();
  return e;
}

// The iteration samples of `ranks` ranks' timings, gathered rank-major: rank r's iteration i is
// the three seconds (sync, exposed, iteration) at gathered[(r * iterations + i) * 3].
[[nodiscard]] inline std::vector<iteration_sample> iterations_from_ranks(std::span<const double> gathered, int ranks, int iterations) {
  if (ranks < 1 || iterations < 0 ||
      gathered.size() != static_cast<std::size_t>(ranks) * static_cast<std::size_t>(iterations) * 3)
    throw error("iterations_from_ranks", "expected " + std::to_string(ranks) + " ranks x " + std::to_string(iterations) +
                                             " iterations x 3 times, got " + std::to_string(gathered.size()) + " numbers");
  std::vector<iteration_sample> out;
  for (int i = 0; i < iterations; ++i) {
    std::vector<double> sy, xp, itr;
    for (int r = 0; r < ranks; ++r) {
      const double* row =
          gathered.data() + (static_cast<std::size_t>(r) * static_cast<std::size_t>(iterations) + static_cast<std::size_t>(i)) * 3;
      sy.push_back(row[0]);
      xp.push_back(row[1]);
      itr.push_back(row[2]);
    }
    out.push_back(iteration_sample::from_ranks(std::move(sy), std::move(xp), std::move(itr)));
  }
  return out;
}

// The table of measured iterations (maxima over the ranks) and its median row:
//     iter        sync     exposed   iteration   (max over ranks)
//        1     0.13 ms     0.11 ms     0.37 ms
//     median  0.14 ms     0.12 ms     0.36 ms
inline void print_iterations(std::ostream& os, const std::vector<iteration_sample>& its) {
  auto ms = [](double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
    return std::string(buf);
  };
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const auto n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  os << "  iter        sync     exposed   iteration   (max over ranks)\n";
  std::vector<double> sy, xp, itr;
  for (std::size_t i = 0; i < its.size(); ++i) {
    const auto& x = its[i];
    char line[128];
    std::snprintf(line, sizeof line, "  %4d  %10s  %10s  %10s\n", static_cast<int>(i + 1), ms(x.sync).c_str(), ms(x.exposed).c_str(),
                  ms(x.iteration).c_str());
    os << line;
    sy.push_back(x.sync);
    xp.push_back(x.exposed);
    itr.push_back(x.iteration);
  }
  char line[160];
  std::snprintf(line, sizeof line, "  median %8s  %10s  %10s\n", ms(median(sy)).c_str(), ms(median(xp)).c_str(), ms(median(itr)).c_str());
  os << line;
}

}  // namespace autosync::learn
