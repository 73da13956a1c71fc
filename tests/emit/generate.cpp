// tests/emit/generate.cpp — writes the sample strategy (sample.hpp) as a header:
//   emit_generate <output header>
//   emit_generate --typed <output header>     typed_sample.hpp's strategy, namespace emitted::typed
// The ctest `emit_roundtrip` (run.cmake) then compiles check.cpp against the first; the build
// compiles typed_mpi.cpp against the second (ctest emit.typed_mpi.np<N>).
#include "sample.hpp"
#include "typed_sample.hpp"

#include <autosync/strategy/emit.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const bool typed = argc == 3 && std::string(argv[1]) == "--typed";
  if (argc != 2 && !typed) {
    std::cerr << "usage: emit_generate [--typed] <output header>\n";
    return 2;
  }
  const char* path = argv[argc - 1];
  try {
    const auto text = typed ? autosync::emit_header(autosync::typed_sample::strategy(), "emitted::typed")
                            : autosync::emit_header(autosync::emit_sample::make(), "emitted::sample");
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      std::cerr << "cannot write " << path << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
