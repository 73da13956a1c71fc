// gbt_emit_generate <tests/data/gbt> <out dir>: writes emitted_<model>.hpp for every fixture model
// of this folder with gbt::emit_header (namespace gbt_emitted). Run at build time for
// gbt_emit_check (emit_check.cpp), which compiles the headers and compares them with the runtime
// forests: ctest gbt_emit_roundtrip.
#include <autosync/gbt/emit.hpp>
#include <autosync/gbt/lightgbm.hpp>
#include <autosync/gbt/xgboost.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gbt_emit_generate <tests/data/gbt> <out dir>\n");
    return 2;
  }
  try {
    const std::filesystem::path in = argv[1], out = argv[2];
    std::filesystem::create_directories(out);
    auto write = [&](const std::string& name, const autosync::gbt::forest& f) {
      const std::string tmp = (out / ("emitted_" + name + ".hpp.tmp")).string();
      std::ofstream(tmp, std::ios::binary) << autosync::gbt::emit_header(f, "gbt_emitted::" + name);
      std::filesystem::rename(tmp, out / ("emitted_" + name + ".hpp"));
    };
    for (const char* name : {"hand", "regression", "logistic", "poisson"})
      write(std::string("xgb_") + name, autosync::gbt::load_xgboost_json(in / (std::string("xgb_") + name + ".json")));
    for (const char* name : {"binary", "regression"})
      write(std::string("lgb_") + name, autosync::gbt::load_lightgbm_text(in / (std::string("lgb_") + name + ".txt")));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gbt_emit_generate: %s\n", e.what());
    return 1;
  }
  return 0;
}
