// autosync/compressors/common.hpp — what the built-in family of registered compressors shares.
//
// The family (int8.hpp, qsgd.hpp, topk.hpp, randomk.hpp, powersgd.hpp; all.hpp includes them)
// registers each compressor in the slot registry (registry/extensions.hpp) at static
// initialization: a JSON name with documented defaults, a cost (the all-reduce equivalent bytes
// of its exchange, registry::allreduce_equivalent, and encode + decode work), a compile-time
// policy type for emit_header, and an exchange that replaces the bucket's collective on MPI.
//
// Work per element. The cost model charges flops_per_element x elements / the node's codec rate
// (cost/fabric.hpp codec_rate: on the MPI backend one CPU core at fp16's measured rate). The
// built-in fp16 codec is charged 2 flops per element; each compressor here is charged in
// proportion to its measured encode + decode time on one core against fp16's (tests/bench/
// codecs.cpp, 4 Mi fp32 elements, one run on a loaded 2-core machine: fp16 0.49 GB/s, int8
// 2.11, QSGD s=4 0.41, NUQSGD 0.28, top-k 1 % 0.41, random-k 1 % 3.36, PowerSGD 4096 x 1024
// rank 1 2.67 and rank 4 0.86 GB/s):  flops = 2 x 0.49 / rate.
//
// Only f32 buckets are compressed (`applies`); other dtypes travel as they are.
#pragma once

#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/compression.hpp>
#include <autosync/registry/extensions.hpp>

#include <cstdio>
#include <cstring>
#include <span>
#include <string>

namespace autosync::compressors {

// The fp16 anchor of the work figures above (GB/s of fp32 input, encode + decode, one core).
inline constexpr double fp16_rate_gbs = 0.49;
[[nodiscard]] constexpr double flops_at(double rate_gbs) noexcept { return 2.0 * fp16_rate_gbs / rate_gbs; }

[[nodiscard]] inline bool f32_only(dtype t) noexcept { return t == dtype::f32; }

// A parameter as a C++ template argument (emit_header): shortest decimal that reads back exactly.
[[nodiscard]] inline std::string spell(double v) {
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// An error-feedback state (exec/codecs/sparsify.hpp sparsify::state) of an n-element bucket:
// its vectors are empty (never used) or n long.
template <class State>
void save_feedback(registry::state_writer& w, const State& st) {
  w.put(st.residual);
  w.put(st.momentum);
}
template <class State>
void load_feedback(registry::state_reader& r, State& st, std::size_t n) {
  r.get(st.residual, "residual", n);
  r.get(st.momentum, "momentum", n);
  for (const auto* v : {&st.residual, &st.momentum})
    if (!v->empty() && v->size() != n)
      throw error(r.field(), std::string(v == &st.residual ? "residual" : "momentum") + ": " + std::to_string(v->size()) +
                                 " elements, the bucket has " + std::to_string(n));
}

// The packed bucket of an exchange as floats.
[[nodiscard]] inline std::span<float> floats(unsigned char* data, std::size_t n) noexcept {
  return {reinterpret_cast<float*>(data), n};
}

}  // namespace autosync::compressors
