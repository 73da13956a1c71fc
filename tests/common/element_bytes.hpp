// One gradient element as bytes of its dtype, for the multi-rank tests that fill buffers with
// exact integer values and read the sums back (tests/mpi/executor.cpp, tests/mpi/fault/).
// f16/bf16 go through the library's own conversions (exec/compress.hpp); other dtypes are not
// written (store) and read as 0 (load).
#pragma once

#include <autosync/exec/compress.hpp>
#include <autosync/model.hpp>

#include <cstdint>
#include <cstring>

namespace autosync::testing {

inline void store(unsigned char* at, dtype t, double v) {
  switch (t) {
    case dtype::f32: { const float f = static_cast<float>(v); std::memcpy(at, &f, 4); break; }
    case dtype::f64: std::memcpy(at, &v, 8); break;
    case dtype::f16: { const auto h = exec::to_f16(v); std::memcpy(at, &h, 2); break; }
    case dtype::bf16: { const auto h = exec::to_bf16(v); std::memcpy(at, &h, 2); break; }
    default: break;
  }
}

inline double load(const unsigned char* at, dtype t) {
  switch (t) {
    case dtype::f32: { float f; std::memcpy(&f, at, 4); return f; }
    case dtype::f64: { double d; std::memcpy(&d, at, 8); return d; }
    case dtype::f16: { std::uint16_t h; std::memcpy(&h, at, 2); return exec::from_f16(h); }
    case dtype::bf16: { std::uint16_t h; std::memcpy(&h, at, 2); return exec::from_bf16(h); }
    default: return 0.0;
  }
}

}  // namespace autosync::testing
