// autosync/exec/nccl/bucket_walk.hpp — how one thread of a bucket kernel walks its bucket: the
// per-thread code of exec/nccl/kernels.cuh, written once for the device and for the host test
// (tests/cuda/kernel_logic.cpp runs these very functions on host memory, every load and store
// checked against the bucket's bytes).
//
// A bucket kernel moves the n fused elements of a bucket between the tensors (the rows of
// ew::segment_row, fused order) and fused-side arrays (the packed bucket, the wire, the
// residual). The work is cut into groups of G consecutive fused elements, G = 16 bytes / the
// smallest element size of the arrays the kernel touches, so every fused-side array holds a
// group in whole 16-byte vectors, 16-byte aligned when the array is (cudaMalloc'd buffers are).
//
//   a grid-stride loop over steps; step s of block b holds the groups
//       (s * grid + b) * T * U + j * T + tid,   j = 0 .. U-1      (T threads per block)
//   consecutive threads take consecutive groups: a warp touches 512 contiguous bytes per j
//   phase 1: every load of the step's U groups, nothing stored in between, so U x 16..96 bytes
//            per thread are in flight at once (a load cannot wait behind a possibly aliasing store)
//   phase 2: compute and store
//
// The tensor side of a group (element size ts, the group's G * ts bytes at address p):
//   one contiguous row, p 16-byte aligned         128-bit loads / stores
//   one contiguous row, p misaligned by a bytes    loads: the aligned 16-byte blocks covering
//                                                  [p, p + G ts) when they lie inside the row,
//                                                  shifted into place (a funnel shift of words);
//                                                  stores, and loads at the row's edges: one
//                                                  element at a time
//   crossing a row boundary, a strided row,        one element at a time (its row found by
//   the bucket's last partial group                locate_after, then tensor_element)
// No load reads, and no store writes, a byte outside the bucket's own segments: another bucket
// in flight may be writing the rest of the tensor.
//
// The memory policy `Mem` supplies the accesses: ld16 / st16 (16 aligned bytes, as 4 words)
// and ld<T> / st<T> (one element). kernels.cuh passes the device's, the host test one that
// records and checks every access.
#pragma once

#include <autosync/exec/nccl/elementwise.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

// #pragma unroll for the device compiler only (the host compiler of nvcc's host pass warns).
#if defined(__CUDA_ARCH__)
#define AUTOSYNC_UNROLL _Pragma("unroll")
#else
#define AUTOSYNC_UNROLL
#endif

namespace autosync::exec::nccl::ew {

struct vec16 {
  std::uint32_t w[4];
};

// The low 32 bits of (hi:lo) >> b, b in [0, 31].
AUTOSYNC_HD std::uint32_t funnel(std::uint32_t lo, std::uint32_t hi, unsigned b) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, b);
#else
  return b == 0 ? lo : (lo >> b) | (hi << (32u - b));
#endif
}

// Element k of a group held as 32-bit words (little endian, as the device and x86 store them).
// T is an unsigned storage type of 2, 4 or 8 bytes; k is a constant after unrolling.
template <class T>
AUTOSYNC_HD T get(const std::uint32_t* w, int k) {
  if constexpr (sizeof(T) == 2) return static_cast<T>(w[k >> 1] >> ((k & 1) * 16));
  else if constexpr (sizeof(T) == 4) return static_cast<T>(w[k]);
  else return static_cast<T>(w[2 * k]) | (static_cast<T>(w[2 * k + 1]) << 32);
}
template <class T>
AUTOSYNC_HD void set(std::uint32_t* w, int k, T v) {
  if constexpr (sizeof(T) == 2) {
    const int sh = (k & 1) * 16;
    w[k >> 1] = (w[k >> 1] & ~(0xffffu << sh)) | (static_cast<std::uint32_t>(v) << sh);
  } else if constexpr (sizeof(T) == 4) {
    w[k] = static_cast<std::uint32_t>(v);
  } else {
    w[2 * k] = static_cast<std::uint32_t>(v);
    w[2 * k + 1] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) >> 32);
  }
}

// out[i] = the words of x shifted down by `a` bytes (a < 16): x holds WT / 4 + 1 aligned vectors.
template <int WT, int Q>
AUTOSYNC_HD void shifted(const std::uint32_t* x, unsigned b, std::uint32_t* out) {
  AUTOSYNC_UNROLL
  for (int i = 0; i < WT; ++i) out[i] = funnel(x[Q + i], x[Q + i + 1], b);
}
template <int WT>
AUTOSYNC_HD void shift_words(const std::uint32_t* x, unsigned a, std::uint32_t* out) {
  const unsigned b = (a & 3u) * 8u;
  switch (a >> 2) {  // four copies with constant indices: the words stay in registers
    case 0: shifted<WT, 0>(x, b, out); break;
    case 1: shifted<WT, 1>(x, b, out); break;
    case 2: shifted<WT, 2>(x, b, out); break;
    default: shifted<WT, 3>(x, b, out); break;
  }
}

AUTOSYNC_HD bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

// The grid of a kernel over `groups` groups: one step per block covers threads x U groups; never
// more blocks than one full wave (`wave` blocks: the SM count times the blocks one SM runs at
// once), never fewer than one. The grid-stride loop does the rest, so there is no partial wave.
AUTOSYNC_HD unsigned grid_blocks(std::int64_t groups, int threads, int per_thread, int wave) {
  const std::int64_t per_block = static_cast<std::int64_t>(threads) * per_thread;
  const std::int64_t need = (groups + per_block - 1) / per_block;
  const std::int64_t w = wave < 1 ? 1 : wave;
  return static_cast<unsigned>(need < 1 ? 1 : (need < w ? need : w));
}

// How a group's tensor side is accessed (kernel_logic.cpp counts them; the kernels do not need it).
enum class access : std::uint8_t { vector, funnel, elements_in_row, elements };

// ---- the tensor side of one group -------------------------------------------------------------
// The row of fused element e0 (r: a row at or before it), and whether the group [e0, e0 + count)
// lies in that one contiguous row. `p` its tensor address, [lo, hi) the row's tensor bytes.
template <class TS>
struct group_place {
  int row = 0;
  bool contiguous = false;
  const unsigned char* p = nullptr;
  const unsigned char* lo = nullptr;
  const unsigned char* hi = nullptr;
};
template <class TS, int G>
AUTOSYNC_HD group_place<TS> place(const segment_row* rows, int nrows, void* const* tensors, std::int64_t n, std::int64_t e0, int count, int r) {
  group_place<TS> g;
  g.row = locate_after(rows, nrows, r, e0);
  const segment_row& s = rows[g.row];
  const std::int64_t row_end = g.row + 1 < nrows ? rows[g.row + 1].fused : n;
  if (count == G && s.blocks == 1 && e0 + G <= row_end) {
    const auto* t = static_cast<const unsigned char*>(tensors[s.tensor]);
    g.contiguous = true;
    g.lo = t + static_cast<std::uint64_t>(s.offset) * sizeof(TS);
    g.hi = g.lo + static_cast<std::uint64_t>(row_end - s.fused) * sizeof(TS);
    g.p = g.lo + static_cast<std::uint64_t>(e0 - s.fused) * sizeof(TS);
  }
  return g;
}

// Loads the G elements of the group at fused e0 (count <= G valid) into w. Returns the row of
// its last element (the next group starts from there).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Mem, class TS, int G>
AUTOSYNC_HD int load_tensor(const segment_row* rows, int nrows, void* const* tensors, std::int64_t n, std::int64_t e0, int count, int r,
                            std::uint32_t* w, access* how = nullptr) {
  constexpr int WT = G * static_cast<int>(sizeof(TS)) / 4, V = WT / 4;
  static_assert(WT % 4 == 0, "autosync: bucket_walk: a group is a whole number of 16-byte vectors");
  const auto g = place<TS, G>(rows, nrows, tensors, n, e0, count, r);
  if (g.contiguous) {
    if (aligned16(g.p)) {
      if (how) *how = access::vector;
  AUTOSYNC_UNROLL
      for (int v = 0; v < V; ++v) {
        const vec16 x = Mem::ld16(g.p + 16 * v);
        for (int i = 0; i < 4; ++i) w[4 * v + i] = x.w[i];
      }
      return g.row;
    }
    const unsigned a = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(g.p) & 15u);
    const unsigned char* b = g.p - a;
    if (b >= g.lo && b + 16 * (V + 1) <= g.hi) {
      if (how) *how = access::funnel;
      std::uint32_t x[4 * (V + 1)];
  AUTOSYNC_UNROLL
      for (int v = 0; v <= V; ++v) {
        const vec16 y = Mem::ld16(b + 16 * v);
        for (int i = 0; i < 4; ++i) x[4 * v + i] = y.w[i];
      }
      shift_words<WT>(x, a, w);
      return g.row;
    }
    if (how) *how = access::elements_in_row;
    const auto* q = reinterpret_cast<const TS*>(g.p);
  AUTOSYNC_UNROLL
    for (int k = 0; k < G; ++k) set<TS>(w, k, Mem::ld(q + k));
    return g.row;
  }
  if (how) *how = access::elements;
  int row = g.row;
  AUTOSYNC_UNROLL
  for (int k = 0; k < G; ++k) {
    if (k >= count) break;
    const std::int64_t e = e0 + k;
    row = locate_after(rows, nrows, row, e);
    const segment_row& s = rows[row];
    set<TS>(w, k, Mem::ld(static_cast<const TS*>(tensors[s.tensor]) + tensor_element(s, e)));
  }
  return row;
}

// Stores the group's count elements from w to the tensors (the mirror of load_tensor; a
// misaligned contiguous group is stored element by element: a wider store would write bytes
// outside the row).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Mem, class TS, int G>
AUTOSYNC_HD int store_tensor(const segment_row* rows, int nrows, void* const* tensors, std::int64_t n, std::int64_t e0, int count, int r,
                             const std::uint32_t* w, access* how = nullptr) {
  constexpr int WT = G * static_cast<int>(sizeof(TS)) / 4, V = WT / 4;
  static_assert(WT % 4 == 0, "autosync: bucket_walk: a group is a whole number of 16-byte vectors");
  const auto g = place<TS, G>(rows, nrows, tensors, n, e0, count, r);
  if (g.contiguous) {
    auto* p = const_cast<unsigned char*>(g.p);
    if (aligned16(p)) {
      if (how) *how = access::vector;
  AUTOSYNC_UNROLL
      for (int v = 0; v < V; ++v) {
        vec16 x;
        for (int i = 0; i < 4; ++i) x.w[i] = w[4 * v + i];
        Mem::st16(p + 16 * v, x);
      }
      return g.row;
    }
    if (how) *how = access::elements_in_row;
    auto* q = reinterpret_cast<TS*>(p);
  AUTOSYNC_UNROLL
    for (int k = 0; k < G; ++k) Mem::st(q + k, get<TS>(w, k));
    return g.row;
  }
  if (how) *how = access::elements;
  int row = g.row;
  AUTOSYNC_UNROLL
  for (int k = 0; k < G; ++k) {
    if (k >= count) break;
    const std::int64_t e = e0 + k;
    row = locate_after(rows, nrows, row, e);
    const segment_row& s = rows[row];
    Mem::st(static_cast<TS*>(tensors[s.tensor]) + tensor_element(s, e), get<TS>(w, k));
  }
  return row;
}

// ---- a fused-side array (packed bucket, wire, residual): group e0 / G at base + e0 ------------
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Mem, class FS, int G>
AUTOSYNC_HD void load_side(const FS* base, std::int64_t e0, int count, std::uint32_t* w) {
  constexpr int V = G * static_cast<int>(sizeof(FS)) / 16;
  const FS* p = base + e0;
  if (count == G && aligned16(p)) {
  AUTOSYNC_UNROLL
    for (int v = 0; v < V; ++v) {
      const vec16 x = Mem::ld16(reinterpret_cast<const unsigned char*>(p) + 16 * v);
      for (int i = 0; i < 4; ++i) w[4 * v + i] = x.w[i];
    }
    return;
  }
  AUTOSYNC_UNROLL
  for (int k = 0; k < G; ++k)
    if (k < count) set<FS>(w, k, Mem::ld(p + k));
}
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Mem, class FS, int G>
AUTOSYNC_HD void store_side(FS* base, std::int64_t e0, int count, const std::uint32_t* w) {
  constexpr int V = G * static_cast<int>(sizeof(FS)) / 16;
  FS* p = base + e0;
  if (count == G && aligned16(p)) {
  AUTOSYNC_UNROLL
    for (int v = 0; v < V; ++v) {
      vec16 x;
      for (int i = 0; i < 4; ++i) x.w[i] = w[4 * v + i];
      Mem::st16(reinterpret_cast<unsigned char*>(p) + 16 * v, x);
    }
    return;
  }
  AUTOSYNC_UNROLL
  for (int k = 0; k < G; ++k)
    if (k < count) Mem::st(p + k, get<FS>(w, k));
}

// ---- the thread -------------------------------------------------------------------------------
// Op: static constexpr bool gather (tensors -> fused side) or not (fused side -> tensors);
// tensor_t (the tensors' unsigned storage type), G, U, side_words; members rows, nrows, tensors,
// n; load<Mem>(e0, count, side) (phase 1: the fused-side inputs); gather: finish<Mem>(e0, count,
// tensor_words, side) (phase 2: compute and store the fused side); scatter: compute(count, side,
// tensor_words) (phase 2, then the tensors are stored here).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Mem, class Op>
AUTOSYNC_HD void run_thread(const Op& op, std::int64_t block, std::int64_t grid, int threads, int tid) {
  constexpr int G = Op::G, U = Op::U, SW = Op::side_words;
  using TS = typename Op::tensor_t;
  constexpr int WT = G * static_cast<int>(sizeof(TS)) / 4;
  const std::int64_t groups = (op.n + G - 1) / G;
  const std::int64_t per_step = static_cast<std::int64_t>(threads) * U;
  for (std::int64_t base = block * per_step; base < groups; base += grid * per_step) {
    const std::int64_t first = base + tid;
    if (first >= groups) break;  // so are this thread's later groups of the step
    std::uint32_t tw[U][WT] = {};
    std::uint32_t sw[U][SW] = {};
    std::int64_t e0[U];
    int cnt[U];
    const int r0 = locate(op.rows, op.nrows, first * G);
    int r = r0;
  AUTOSYNC_UNROLL
    for (int j = 0; j < U; ++j) {  // phase 1: loads only
      const std::int64_t g = first + static_cast<std::int64_t>(j) * threads;
      e0[j] = g * G;
      cnt[j] = g < groups ? static_cast<int>(op.n - e0[j] < G ? op.n - e0[j] : G) : 0;
      if (cnt[j] == 0) continue;
      if constexpr (Op::gather) r = load_tensor<Mem, TS, G>(op.rows, op.nrows, op.tensors, op.n, e0[j], cnt[j], r, tw[j]);
      op.template load<Mem>(e0[j], cnt[j], sw[j]);
    }
    r = r0;
  AUTOSYNC_UNROLL
    for (int j = 0; j < U; ++j) {  // phase 2: compute and store
      if (cnt[j] == 0) continue;
      if constexpr (Op::gather) {
        op.template finish<Mem>(e0[j], cnt[j], tw[j], sw[j]);
      } else {
        op.compute(cnt[j], sw[j], tw[j]);
        r = store_tensor<Mem, TS, G>(op.rows, op.nrows, op.tensors, op.n, e0[j], cnt[j], r, tw[j]);
      }
    }
  }
}

// ---- the operations ---------------------------------------------------------------------------
// The common part: the bucket's rows and tensors.
struct bucket_view {
  const segment_row* rows = nullptr;
  int nrows = 0;
  void* const* tensors = nullptr;
  std::int64_t n = 0;
};

// tensors -> fused, raw element copies (TS: 2, 4 or 8 bytes).
template <class TS>
struct pack_op : bucket_view {
  static constexpr bool gather = true;
  using tensor_t = TS;
  static constexpr int G = 16 / static_cast<int>(sizeof(TS)), U = 4, side_words = 1;
  TS* fused = nullptr;
  template <class Mem>
  AUTOSYNC_HD void load(std::int64_t, int, std::uint32_t*) const {}
  template <class Mem>
  AUTOSYNC_HD void finish(std::int64_t e0, int count, const std::uint32_t* tw, const std::uint32_t*) const {
    store_side<Mem, TS, G>(fused, e0, count, tw);
  }
};

// fused -> tensors, raw copies (factor 1).
template <class TS>
struct unpack_op : bucket_view {
  static constexpr bool gather = false;
  using tensor_t = TS;
  static constexpr int G = 16 / static_cast<int>(sizeof(TS)), U = 4, side_words = G * static_cast<int>(sizeof(TS)) / 4;
  const TS* fused = nullptr;
  template <class Mem>
  AUTOSYNC_HD void load(std::int64_t e0, int count, std::uint32_t* sw) const {
    load_side<Mem, TS, G>(fused, e0, count, sw);
  }
  AUTOSYNC_HD void compute(int, const std::uint32_t* sw, std::uint32_t* tw) const {
  AUTOSYNC_UNROLL
    for (int i = 0; i < side_words; ++i) tw[i] = sw[i];
  }
};

// fused -> tensors times factor: f32 / f64 (T), or 16-bit (wire w) through average_16.
template <class T>
struct unpack_average_op : bucket_view {
  static constexpr bool gather = false;
  using tensor_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static constexpr int G = 16 / static_cast<int>(sizeof(T)), U = 4, side_words = 4;
  const tensor_t* fused = nullptr;
  double factor = 1.0;
  template <class Mem>
  AUTOSYNC_HD void load(std::int64_t e0, int count, std::uint32_t* sw) const {
    load_side<Mem, tensor_t, G>(fused, e0, count, sw);
  }
  AUTOSYNC_HD void compute(int, const std::uint32_t* sw, std::uint32_t* tw) const {
  AUTOSYNC_UNROLL
    for (int k = 0; k < G; ++k) {
      if constexpr (sizeof(T) == 4) {
        set<std::uint32_t>(tw, k, bits_of(average_f32(float_of(get<std::uint32_t>(sw, k)), factor)));
      } else {
        const std::uint64_t u = get<std::uint64_t>(sw, k);
        double d;
#if defined(__CUDA_ARCH__)
        d = __longlong_as_double(static_cast<long long>(u));
#else
        std::memcpy(&d, &u, sizeof d);
#endif
        set<std::uint64_t>(tw, k, bits_of(average_f64(d, factor)));
      }
    }
  }
};
struct unpack_average16_op : bucket_view {
  static constexpr bool gather = false;
  using tensor_t = std::uint16_t;
  static constexpr int G = 8, U = 4, side_words = 4;
  const std::uint16_t* fused = nullptr;
  wire16 w = wire16::f16;
  double factor = 1.0;
  template <class Mem>
  AUTOSYNC_HD void load(std::int64_t e0, int count, std::uint32_t* sw) const {
    load_side<Mem, std::uint16_t, G>(fused, e0, count, sw);
  }
  AUTOSYNC_HD void compute(int, const std::uint32_t* sw, std::uint32_t* tw) const {
  AUTOSYNC_UNROLL
    for (int k = 0; k < G; ++k) set<std::uint16_t>(tw, k, average_16(get<std::uint16_t>(sw, k), w, factor));
  }
};

AUTOSYNC_HD double double_of(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
#endif
}

// tensors (f32 / f64: T) -> wire (f16 / bf16 bits), with the residual of error feedback (or none).
template <class T>
struct pack_encode_op : bucket_view {
  static constexpr bool gather = true;
  using tensor_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static constexpr int G = 8, U = sizeof(T) == 4 ? 2 : 1, side_words = 16;  // the residual: 8 doubles
  std::uint16_t* wire = nullptr;
  double* residual = nullptr;  // or null: no error feedback
  wire16 w = wire16::f16;
  double scale = 1.0, inv_scale = 1.0;
  template <class Mem>
  AUTOSYNC_HD void load(std::int64_t e0, int count, std::uint32_t* sw) const {
    if (residual) load_side<Mem, std::uint64_t, G>(reinterpret_cast<const std::uint64_t*>(residual), e0, count, sw);
  }
  template <class Mem>
  AUTOSYNC_HD void finish(std::int64_t e0, int count, const std::uint32_t* tw, std::uint32_t* sw) const {
    std::uint32_t out[4] = {};
  AUTOSYNC_UNROLL
    for (int k = 0; k < G; ++k) {
      double x;
      if constexpr (sizeof(T) == 4) x = static_cast<double>(float_of(get<std::uint32_t>(tw, k)));
      else x = double_of(get<std::uint64_t>(tw, k));
      if (residual) {
        double r = double_of(get<std::uint64_t>(sw, k));
        set<std::uint16_t>(out, k, encode_one(x, &r, w, scale, inv_scale));
        set<std::uint64_t>(sw, k, bits_of(r));
      } else {
        set<std::uint16_t>(out, k, encode_one(x, nullptr, w, scale, inv_scale));
      }
    }
    store_side<Mem, std::uint16_t, G>(wire, e0, count, out);
    if (residual) store_side<Mem, std::uint64_t, G>(reinterpret_cast<std::uint64_t*>(residual), e0, count, sw);
  }
};

// wire -> tensors (T), x = widen(h) * k, k = factor / scale.
template <class T>
struct decode_unpack_op : bucket_view {
  static constexpr bool gather = false;
  using tensor_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  static constexpr int G = 8, U = 4, side_words = 4;
  const std::uint16_t* wire = nullptr;
  wire16 w = wire16::f16;
  double k = 1.0;
  template <class Mem>
  AUTOSYNC_HD void load(std::int64_t e0, int count, std::uint32_t* sw) const {
    load_side<Mem, std::uint16_t, G>(wire, e0, count, sw);
  }
  AUTOSYNC_HD void compute(int, const std::uint32_t* sw, std::uint32_t* tw) const {
  AUTOSYNC_UNROLL
    for (int i = 0; i < G; ++i) {
      const double x = decode_one(get<std::uint16_t>(sw, i), w, k);
      if constexpr (sizeof(T) == 4) set<std::uint32_t>(tw, i, bits_of(static_cast<float>(x)));
      else set<std::uint64_t>(tw, i, bits_of(x));
    }
  }
};

// The per-element averages of run_scale_thread on storage bits.
struct average_f32_bits {
  double factor;
  AUTOSYNC_HD std::uint32_t operator()(std::uint32_t u) const { return bits_of(average_f32(float_of(u), factor)); }
};
struct average_f64_bits {
  double factor;
  AUTOSYNC_HD std::uint64_t operator()(std::uint64_t u) const { return bits_of(average_f64(double_of(u), factor)); }
};
struct average16_bits {
  wire16 w;
  double factor;
  AUTOSYNC_HD std::uint16_t operator()(std::uint16_t u) const { return average_16(u, w, factor); }
};

// ---- the in-place average of one contiguous buffer (an in-place bucket), any alignment --------
// The first `head` elements (up to the first 16-byte boundary) and the last partial group one at
// a time, the groups between with vectors. TS the storage type, f the per-element operation.
template <class TS>
AUTOSYNC_HD std::int64_t head_elements(const void* buf, std::int64_t n) {
  const auto a = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(buf) & 15u);
  if (a == 0) return 0;
  if (a % static_cast<std::int64_t>(sizeof(TS)) != 0) return n;  // never aligned: every element alone
  const std::int64_t h = (16 - a) / static_cast<std::int64_t>(sizeof(TS));
  return h < n ? h : n;
}
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Mem, class TS, int U, class F>
AUTOSYNC_HD void run_scale_thread(TS* buf, std::int64_t n, F f, std::int64_t block, std::int64_t grid, int threads, int tid) {
  constexpr int G = 16 / static_cast<int>(sizeof(TS)), W = 4;
  const std::int64_t head = head_elements<TS>(buf, n);
  if (block == 0) {
    for (std::int64_t i = tid; i < head; i += threads) Mem::st(buf + i, f(Mem::ld(buf + i)));
  }
  TS* body = buf + head;
  const std::int64_t m = n - head, groups = (m + G - 1) / G;
  const std::int64_t per_step = static_cast<std::int64_t>(threads) * U;
  for (std::int64_t base = block * per_step; base < groups; base += grid * per_step) {
    std::uint32_t x[U][W] = {};
    int cnt[U];
  AUTOSYNC_UNROLL
    for (int j = 0; j < U; ++j) {
      const std::int64_t g = base + tid + static_cast<std::int64_t>(j) * threads;
      cnt[j] = g < groups ? static_cast<int>(m - g * G < G ? m - g * G : G) : 0;
      if (cnt[j] > 0) load_side<Mem, TS, G>(body, g * G, cnt[j], x[j]);
    }
  AUTOSYNC_UNROLL
    for (int j = 0; j < U; ++j) {
      if (cnt[j] == 0) continue;
  AUTOSYNC_UNROLL
      for (int k = 0; k < G; ++k) set<TS>(x[j], k, f(get<TS>(x[j], k)));
      store_side<Mem, TS, G>(body, (base + tid + static_cast<std::int64_t>(j) * threads) * G, cnt[j], x[j]);
    }
  }
}

}  // namespace autosync::exec::nccl::ew
