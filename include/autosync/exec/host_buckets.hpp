// autosync/exec/host_buckets.hpp — how exec::executor runs a plan bucket on a backend whose
// buffers are host memory (MPI): the default of its bucket-runner customization point, with the
// interface of exec/nccl/bucket_runner.hpp (built as R(comms, plan, options), called as
// r.run(bucket, gradients) on the communication thread).
//
// A bucket runs in place in the user's buffer when it is one contiguous segment and travels
// uncompressed; on the tensors where they lie (exec::segmented, no pack or unpack copy) when
// direct(b, options.pack) says so; in place when this iteration's buffers happen to hold its
// segments back to back in fused order; otherwise packed into one scratch buffer (one bucket is
// in flight at a time). Compressed buckets are encoded with error feedback (a residual of one
// double per element, kept per bucket across iterations), summed in the wire dtype, decoded.
// Sparse buckets run one sparse_all_gather per segment (a row is touched when any byte of it is
// non-zero). With options.average the sums are divided by the world size (floating dtypes).
// exec/executor.hpp's header comment has the whole picture.
#pragma once

#include <autosync/exec/backend.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/exec/executor_options.hpp>
#include <autosync/exec/extension_codecs.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/model.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace autosync::exec {

template <Backend B>
class host_bucket_runner {
 public:
  // Sizes the scratch, wire and residual buffers for the plan's largest bucket; `p` must outlive
  // the runner (the executor owns both).
  host_bucket_runner(comms<B>& c, const plan& p, const executor_options& o) : comms_(&c), plan_(&p), opt_(o), ext_(p) {
    std::size_t scratch = 0, wire = 0;
    direct_.assign(p.buckets.size(), 0);
    for (std::size_t i = 0; i < p.buckets.size(); ++i) {
      const auto& b = p.buckets[i];
      direct_[i] = direct(b, opt_.pack) ? 1 : 0;
      if (!b.in_place() && !direct_[i]) scratch = std::max(scratch, static_cast<std::size_t>(b.elements) * size_of(b.type));
      if (b.compressed) wire = std::max(wire, static_cast<std::size_t>(b.elements));
    }
    fused_.resize(scratch);
    wire_.resize(wire);
    residual_.resize(p.buckets.size());
    if (opt_.error_feedback)
      for (std::size_t i = 0; i < p.buckets.size(); ++i)
        if (p.buckets[i].compressed) residual_[i].assign(static_cast<std::size_t>(p.buckets[i].elements), 0.0);
  }

  // Whether bucket b qualifies for running on the user's tensors without packing (the plan alone
  // decides, so every rank decides alike): an uncompressed all-reduce or sharded bucket on ring
  // or halving-doubling (flat, or both levels of a hierarchical all-reduce) whose runs hold at
  // least direct_run_bytes on average (packing::automatic), any such bucket (never), none (always).
  [[nodiscard]] static bool direct(const plan_bucket& b, packing mode) noexcept {
    if (!host_memory_backend<B> || mode == packing::always || b.compressed || b.hooked || b.in_place()) return false;
    auto flat = [](topology_kind k) { return k == topology_kind::ring || k == topology_kind::halving_doubling; };
    const auto& t = b.topology;
    if (b.kind == step_kind::all_reduce) {
      if (!flat(t.kind) && !(t.kind == topology_kind::hierarchical && flat(t.intra) && flat(t.inter))) return false;
    } else if (b.kind != step_kind::sharded || !flat(t.kind)) {
      return false;
    }
    if (mode == packing::never) return true;
    std::size_t runs = 0;
    for (const auto& sg : b.segments) runs += (sg.blocks == 1 || sg.stride == sg.block) ? 1 : static_cast<std::size_t>(sg.blocks);
    return static_cast<std::size_t>(b.elements) * size_of(b.type) >= runs * direct_run_bytes;
  }
  // Whether bucket b runs on the tensors where they lie (no packing).
  [[nodiscard]] bool unpacked(std::size_t b) const { return direct_.at(b) != 0; }

  // Runs buckets [first, last) together (exec/executor.hpp's parameter-server batches: the
  // uncompressed pieces of one fusion bucket on distinct server ranks, no local replication):
  // the servers sum their pieces at the same time (ps_push_pull_concurrent). Each piece is in
  // place, adjacent, or packed into a scratch of its own.
  void run_batch(std::uint32_t first, std::uint32_t last, std::span<const gradient> grads) {
    if (last - first <= 1) return run(first, grads);
    grads_ = grads;
    const std::size_t k = last - first;
    if (batch_fused_.size() < k) batch_fused_.resize(k);
    batch_pieces_.clear();
    batch_packed_.assign(k, 0);
    for (std::size_t i = 0; i < k; ++i) {
      const auto& b = plan_->buckets[first + i];
      unsigned char* data = b.in_place() ? tensor_at(b.segments[0].tensor, b.segments[0].offset) : adjacent(b);
      if (data == nullptr) {
        batch_fused_[i].resize(static_cast<std::size_t>(b.elements) * size_of(b.type));
        data = batch_fused_[i].data();
        pack(b, data);
        batch_packed_[i] = 1;
      }
      batch_pieces_.push_back(ps_piece{data, static_cast<std::size_t>(b.elements), b.server_rank});
    }
    const dtype t = plan_->buckets[first].type;
    const int p = comms_->world.size();
    ps_push_pull_concurrent(*comms_, std::span<const ps_piece>(batch_pieces_), t);
    for (std::size_t i = 0; i < k; ++i) {
      auto* data = static_cast<unsigned char*>(batch_pieces_[i].buf);
      if (opt_.average && p > 1) scale(data, batch_pieces_[i].n, t, 1.0 / p);
      if (batch_packed_[i]) unpack(plan_->buckets[first + i], data);
    }
  }

  // Runs bucket bi on this iteration's gradients (the communication thread, or finish()).
  void run(std::uint32_t bi, std::span<const gradient> grads) {
    grads_ = grads;
    const auto& b = plan_->buckets[bi];
    const auto n = static_cast<std::size_t>(b.elements);
    const int p = comms_->world.size();
    if (direct_[bi]) {
      run_direct(b);
      return;
    }
    unsigned char* data = b.in_place() ? tensor_at(b.segments[0].tensor, b.segments[0].offset) : adjacent(b);
    const bool packed = data == nullptr;
    if (packed) {
      data = fused_.data();
      pack(b, data);
    }
    unsigned char* buf = data;
    dtype t = b.type;
    const double s = b.compressed ? wire_scale(b.wire, p) : 1.0;
    if (b.compressed) {
      double* r = residual_[bi].empty() ? nullptr : residual_[bi].data();
      if (b.type == dtype::f32) encode(reinterpret_cast<const float*>(data), r, wire_.data(), n, b.wire, s);
      else encode(reinterpret_cast<const double*>(data), r, wire_.data(), n, b.wire, s);
      buf = reinterpret_cast<unsigned char*>(wire_.data());
      t = b.wire;
    }
    registry::wire_view w{buf, n, t};  // registered codecs (exec/extension_codecs.hpp): encode before ...
    if (b.hooked) w = ext_.encode(bi, data, n, b.type, p);
    buf = w.data;
    t = w.type;
    auto& c = *comms_;
    switch (b.kind) {
      case step_kind::all_reduce: all_reduce(c, buf, w.elements, t, b.topology); break;
      case step_kind::sharded:
        reduce_scatter(c, buf, w.elements, t, b.topology);
        all_gather(c, buf, w.elements, t, b.topology);
        break;
      case step_kind::parameter_server: ps_push_pull(c, buf, w.elements, t, b.server_rank, b.local); break;
      case step_kind::sparse_all_gather:
        for (const auto& sg : b.segments) {
          const auto re = static_cast<std::size_t>(sg.row_elements);
          const std::size_t rows = static_cast<std::size_t>(sg.elements()) / re;
          unsigned char* at = buf + static_cast<std::size_t>(sg.fused) * size_of(t);
          const auto touched = touched_rows(at, rows, re * size_of(t));
          sparse_all_gather(c, at, rows, re, t, std::span<const std::int64_t>(touched));
        }
        break;
    }
    if (b.hooked) ext_.decode(bi, w, p);  // ... and decode after the collective
    const double factor = opt_.average ? 1.0 / p : 1.0;
    if (b.compressed) {
      if (b.type == dtype::f32) decode(wire_.data(), reinterpret_cast<float*>(data), n, b.wire, s, factor);
      else decode(wire_.data(), reinterpret_cast<double*>(data), n, b.wire, s, factor);
    } else if (opt_.average && p > 1) {
      scale(data, n, b.type, factor);
    }
    if (packed) unpack(b, data);
  }

 private:
  unsigned char* tensor_at(std::uint32_t t, std::int64_t element) const {
    return static_cast<unsigned char*>(grads_[t].data) + static_cast<std::size_t>(element) * size_of(plan_->tensor_types[t]);
  }

  void pack(const plan_bucket& b, unsigned char* dst) const {
    const std::size_t es = size_of(b.type);
    for (const auto& s : b.segments)
      for (std::int64_t k = 0; k < s.blocks; ++k)
        std::memcpy(dst + static_cast<std::size_t>(s.fused + k * s.block) * es, tensor_at(s.tensor, s.offset + k * s.stride),
                    static_cast<std::size_t>(s.block) * es);
  }
  void unpack(const plan_bucket& b, const unsigned char* src) const {
    const std::size_t es = size_of(b.type);
    for (const auto& s : b.segments)
      for (std::int64_t k = 0; k < s.blocks; ++k)
        std::memcpy(tensor_at(s.tensor, s.offset + k * s.stride), src + static_cast<std::size_t>(s.fused + k * s.block) * es,
                    static_cast<std::size_t>(s.block) * es);
  }

  // The bucket's elements when this iteration's buffers already hold them in fused order, one
  // contiguous run (tensors allocated back to back, e.g. views into one flat gradient buffer):
  // the bucket then runs there, in place, like a one-tensor bucket. nullptr: pack and unpack.
  //   fused:  [ seg 0 | seg 1 | seg 2 ]        user memory:  t0 t1 t2 adjacent, in that order
  unsigned char* adjacent(const plan_bucket& b) const {
    if (b.segments.empty()) return nullptr;
    const std::size_t es = size_of(b.type);
    const auto& s0 = b.segments[0];
    const auto base = reinterpret_cast<std::uintptr_t>(tensor_at(s0.tensor, s0.offset)) - static_cast<std::uintptr_t>(s0.fused) * es;
    for (const auto& s : b.segments) {
      if (s.blocks != 1 && s.stride != s.block) return nullptr;
      if (reinterpret_cast<std::uintptr_t>(tensor_at(s.tensor, s.offset)) != base + static_cast<std::uintptr_t>(s.fused) * es) return nullptr;
    }
    return tensor_at(s0.tensor, s0.offset) - static_cast<std::size_t>(s0.fused) * es;
  }

  // buf *= factor for n elements of t (floating dtypes; f16/bf16 through f32, rounded to nearest even)
  static void scale(unsigned char* buf, std::size_t n, dtype t, double factor) {
    for (std::size_t i = 0; i < n; ++i) {
      unsigned char* e = buf + i * size_of(t);
      switch (t) {
        case dtype::f32: { float v; std::memcpy(&v, e, 4); v = static_cast<float>(v * factor); std::memcpy(e, &v, 4); break; }
        case dtype::f64: { double v; std::memcpy(&v, e, 8); v *= factor; std::memcpy(e, &v, 8); break; }
        case dtype::f16: { std::uint16_t h; std::memcpy(&h, e, 2); h = to_f16(static_cast<double>(from_f16(h)) * factor); std::memcpy(e, &h, 2); break; }
        case dtype::bf16: { std::uint16_t h; std::memcpy(&h, e, 2); h = to_bf16(static_cast<double>(from_bf16(h)) * factor); std::memcpy(e, &h, 2); break; }
        default: return;  // integers are summed, not averaged
      }
    }
  }

  // The touched rows of a [rows x row_elems] table of element size es: rows with a non-zero byte.
  static std::vector<std::int64_t> touched_rows(const unsigned char* buf, std::size_t rows, std::size_t row_bytes) {
    std::vector<std::int64_t> r;
    for (std::size_t i = 0; i < rows; ++i) {
      const unsigned char* row = buf + i * row_bytes;
      if (std::any_of(row, row + row_bytes, [](unsigned char c) { return c != 0; })) r.push_back(static_cast<std::int64_t>(i));
    }
    return r;
  }

  // An uncompressed bucket on the tensors where they lie (direct_[bi]): no pack, no unpack.
  void run_direct(const plan_bucket& b) {
    segmented& sv = segs_;
    sv = segmented(b.type);
    for (const auto& sg : b.segments) {
      if (sg.blocks == 1 || sg.stride == sg.block) sv.append(tensor_at(sg.tensor, sg.offset), static_cast<std::size_t>(sg.elements()));
      else
        for (std::int64_t k = 0; k < sg.blocks; ++k) sv.append(tensor_at(sg.tensor, sg.offset + k * sg.stride), static_cast<std::size_t>(sg.block));
    }
    auto& c = *comms_;
    if (b.kind == step_kind::all_reduce) {
      all_reduce(c, sv, b.topology);
    } else {
      reduce_scatter(c, sv, b.topology);
      all_gather(c, sv, b.topology);
    }
    const int p = c.world.size();
    if (opt_.average && p > 1)
      sv.for_each(0, sv.total(), [&](unsigned char* at, std::size_t n) { scale(at, n, b.type, 1.0 / p); });
  }

  comms<B>* comms_;
  const plan* plan_;
  executor_options opt_;
  std::span<const gradient> grads_;               // the bucket in flight's gradients
  std::vector<unsigned char> fused_;
  std::vector<std::vector<unsigned char>> batch_fused_;  // run_batch: a scratch per packed piece
  std::vector<ps_piece> batch_pieces_;
  std::vector<std::uint8_t> batch_packed_;              // one bucket's packed elements
  std::vector<std::uint16_t> wire_;               // one bucket's compressed elements
  std::vector<std::vector<double>> residual_;     // per bucket: error feedback
  std::vector<std::uint8_t> direct_;              // per bucket: runs unpacked (fixed at construction)
  segmented segs_;                                // the runs of the bucket in flight
  extension_codecs ext_;                          // per bucket: registered codecs (hooked buckets)
};

}  // namespace autosync::exec
