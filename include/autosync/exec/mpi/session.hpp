// autosync/exec/mpi/session.hpp — MPI for the backend (exec/mpi/backend.hpp): mpi_session (RAII
// for MPI_Init_thread / MPI_Finalize, refusing a thread level below MPI_THREAD_SERIALIZED), the
// dtype -> MPI type and sum mapping (f16 and bf16 travel as MPI_UINT16_T and are summed by two
// user-defined MPI_Ops, in f32 rounded to nearest even), MPI error strings and the default
// timeout (AUTOSYNC_TIMEOUT_S, or 60 s). Needs <mpi.h> (CMake target autosync::mpi).
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/collectives/sum.hpp>
#include <autosync/model.hpp>

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only (MPI-2 C++ bindings are deprecated and unused)
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace autosync::exec {

namespace mpi_detail {

[[nodiscard]] inline std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "thread level " + std::to_string(level);
  }
}

[[nodiscard]] inline std::string error_string(int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(msg, static_cast<std::size_t>(len));
}

inline void f16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_into(inout, in, static_cast<std::size_t>(*len), dtype::f16);
}
inline void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_into(inout, in, static_cast<std::size_t>(*len), dtype::bf16);
}

// The two user-defined sums, created once per process (after MPI_Init), freed by MPI_Finalize.
struct half_ops {
  MPI_Op f16 = MPI_OP_NULL, bf16 = MPI_OP_NULL;
};
[[nodiscard]] inline const half_ops& ops() {
  static const half_ops o = [] {
    half_ops h;
    if (MPI_Op_create(&f16_sum, 1, &h.f16) != MPI_SUCCESS || MPI_Op_create(&bf16_sum, 1, &h.bf16) != MPI_SUCCESS)
      throw error("MPI_Op_create", "mpi backend: cannot create the f16/bf16 sum operations");
    return h;
  }();
  return o;
}

[[nodiscard]] inline MPI_Datatype type_of(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return MPI_FLOAT;
    case dtype::f64: return MPI_DOUBLE;
    case dtype::i32: return MPI_INT32_T;
    case dtype::i64: return MPI_INT64_T;
    case dtype::f16:
    case dtype::bf16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}
[[nodiscard]] inline MPI_Op sum_of(dtype t) {
  if (t == dtype::f16) return ops().f16;
  if (t == dtype::bf16) return ops().bf16;
  return MPI_SUM;
}

// AUTOSYNC_TIMEOUT_S, or 60 s.
[[nodiscard]] inline double default_timeout() {
  const char* s = std::getenv("AUTOSYNC_TIMEOUT_S");
  if (s == nullptr || *s == '\0') return 60.0;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || !(v > 0.0) || v > 1e9)
    throw error("AUTOSYNC_TIMEOUT_S", std::string("'") + s + "' is not a positive number of seconds");
  return v;
}

// AUTOSYNC_MPI_PIECE_BYTES, or 32 KiB: the largest message between hosts (mpi_backend::piece_bytes).
[[nodiscard]] inline std::size_t default_piece_bytes() {
  const char* s = std::getenv("AUTOSYNC_MPI_PIECE_BYTES");
  if (s == nullptr || *s == '\0') return std::size_t{32} << 10;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || *s == '-' || v > (std::uint64_t{1} << 40))
    throw error("AUTOSYNC_MPI_PIECE_BYTES", std::string("'") + s + "' is not a byte count in [0, 2^40] (0: never cut)");
  return static_cast<std::size_t>(v);
}

[[nodiscard]] inline std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

}  // namespace mpi_detail

// RAII for MPI_Init_thread / MPI_Finalize. If MPI is already initialized the session only
// checks the thread level and leaves finalization to whoever initialized it.
class mpi_session {
 public:
  mpi_session(int& argc, char**& argv, int required = MPI_THREAD_MULTIPLE, int minimum = MPI_THREAD_SERIALIZED)
      : mpi_session(&argc, &argv, required, minimum) {}
  explicit mpi_session(int required = MPI_THREAD_MULTIPLE, int minimum = MPI_THREAD_SERIALIZED)
      : mpi_session(nullptr, nullptr, required, minimum) {}
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;
  ~mpi_session() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && !finalized) MPI_Finalize();
  }

  [[nodiscard]] int thread_level() const noexcept { return provided_; }
  [[nodiscard]] bool owns() const noexcept { return owns_; }

 private:
  mpi_session(int* argc, char*** argv, int required, int minimum) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      MPI_Query_thread(&provided_);
    } else {
      if (MPI_Init_thread(argc, argv, required, &provided_) != MPI_SUCCESS)
        throw error("MPI_Init_thread", "mpi_session: MPI_Init_thread failed");
      owns_ = true;
    }
    if (provided_ < minimum) {
      if (owns_) MPI_Finalize();
      owns_ = false;
      throw error("MPI_Init_thread", "mpi_session: the MPI library provides " + mpi_detail::thread_level_name(provided_) +
                                         ", autosync needs at least " + mpi_detail::thread_level_name(minimum) +
                                         " (the executor calls MPI from its communication thread)");
    }
  }
  int provided_ = MPI_THREAD_SINGLE;
  bool owns_ = false;
};

}  // namespace autosync::exec
