// Command-line reading shared by the trainer examples (10_mpi_trainer, 11_nccl_trainer): a flag's
// value, and a number checked against its range. Errors name the flag.
#pragma once

#include <autosync/error.hpp>

#include <cstdlib>
#include <string>

namespace examples {

struct arg_reader {
  int argc;
  char** argv;

  // The value after flag argv[i] (i moves to it).
  const char* value(int& i) const {
    if (i + 1 >= argc) throw autosync::error(argv[i], "needs a value");
    return argv[++i];
  }
  // The value after flag argv[i] as a number in [lo, hi].
  double number(int& i, double lo, double hi) const {
    const char* flag = argv[i];
    const char* v = value(i);
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(x >= lo && x <= hi))
      throw autosync::error(flag, std::string("expects a number in [") + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
    return x;
  }
};

}  // namespace examples
