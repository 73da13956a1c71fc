// tests/emit/generate.cpp — writes the sample strategy (sample.hpp) as a header:
//   emit_generate <output header>
// The ctest `emit_roundtrip` (run.cmake) then compiles check.cpp against that header.
#include "sample.hpp"

#include <autosync/strategy/emit.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: emit_generate <output header>\n";
    return 2;
  }
  try {
    const auto text = autosync::emit_header(autosync::emit_sample::make(), "emitted::sample");
    std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      std::cerr << "cannot write " << argv[1] << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
