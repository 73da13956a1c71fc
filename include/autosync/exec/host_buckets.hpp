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
// non-zero). A hooked bucket (a registered compressor or extension-slot codec) runs its codecs
// (exec/extension_codecs.hpp) right before and after its collective; a registered compressor
// that owns its exchange runs that exchange instead of the collective. With options.average the sums are divided by the world size (floating dtypes).
// exec/executor.hpp's header comment has the whole picture.
//
// Typed buckets. The work of one bucket is run_as<Arch, Topo, Comp>(bucket, gradients): the
// collective<Arch, Topo> (exec/collective.hpp) and the codec<Comp> (exec/codec.hpp) of its
// group's policies, with no branch on a slot left inside. This runner visits each group's
// values once, when it is built (visit_bucket: Boost.Hana over the closed policy sets,
// strategy/dispatch.hpp), and keeps one function per bucket, the run_as<...> of its group.
// exec/typed_executor.hpp's runner calls run_as<...> of a static strategy's group types directly
// (no dispatch at all). Both run the same instantiations: the same bytes, bit for bit.
//
//   plan bucket (kind, topology, compression id) ──visit once per group──> run_as<A, T, C>
//   static_strategy<G0, G1, ...> ──fold over the group index──────────────> run_as<A, T, C>
//
// The codec-independent part (stage, the step, average, unpack: run_plain<collective>) is one
// instantiation per collective; run_coded<collective, codec> adds encode and decode.
#pragma once

#include <autosync/exec/backend.hpp>
#include <autosync/exec/codec.hpp>
#include <autosync/exec/collective.hpp>
#include <autosync/exec/collectives.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/exec/executor_options.hpp>
#include <autosync/exec/extension_codecs.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/dispatch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace autosync::exec {

// The architecture policy of a plan step kind, and whether its collective reads the topology.
[[nodiscard]] constexpr architecture_kind architecture_of(step_kind k) noexcept {
  switch (k) {
    case step_kind::sharded: return architecture_kind::sharded;
    case step_kind::parameter_server: return architecture_kind::parameter_server;
    case step_kind::sparse_all_gather: return architecture_kind::all_gather;
    default: return architecture_kind::all_reduce;
  }
}
template <class Arch>
inline constexpr bool topology_matters = std::is_same_v<Arch, arch::all_reduce> || std::is_same_v<Arch, arch::sharded>;

// Calls f(std::type_identity<Arch>{}, std::type_identity<Topo>{}, std::type_identity<Comp>{})
// with the policies of plan bucket b's group: its step kind, topology and compressor visited
// (strategy/dispatch.hpp's visit_slot over the closed policy sets; a bucket runner calls this
// once per group, when it is built). The parameter server and the sparse all-gather do not read
// the topology: Topo is topo::ring for them (one instantiation instead of twelve). Throws
// autosync::error naming the slot for a value no policy has, and for a sharded bucket on a tree
// (validate_group rejects those strategies: they are not instantiated).
template <class F>
decltype(auto) visit_bucket(const plan_bucket& b, F&& f) {
  group_desc g;
  g.architecture = architecture_of(b.kind);
  g.topology = b.topology;
  // a registered (extension) compressor runs through the bucket's hook (exec/extension_codecs.hpp)
  // around the collective: the typed part is then codec<comp::none>
  g.compression = is_extension_id(b.compression.id) ? compression_value(comp::none::value) : b.compression;
  return visit_slot<slot::architecture>(g, [&](auto a) -> decltype(auto) {
    using A = typename decltype(a)::type;
    return visit_slot<slot::compression>(g, [&](auto c) -> decltype(auto) {
      if constexpr (topology_matters<A>)
        return visit_slot<slot::topology>(g, [&](auto t) -> decltype(auto) {
          using T = typename decltype(t)::type;
          if constexpr (std::is_same_v<A, arch::sharded> && !topology_ops<T>::sharded_ok)
            throw error("topology", "sharded groups need a reduce-scatter: ring, halving_doubling or hierarchical with a non-tree intra");
          return f(a, t, c);
        });
      else
        return f(a, std::type_identity<topo::ring>{}, c);
    });
  });
}

template <Backend B>
class host_bucket_runner {
 public:
  // Sizes the scratch, wire and residual buffers for the plan's largest bucket; `p` must outlive
  // the runner (the executor owns both).
  host_bucket_runner(comms<B>& c, const plan& p, const executor_options& o) : host_bucket_runner(c, p, o, 0) {
    // one visit per group (its buckets share architecture, topology and compression)
    ops_.assign(p.buckets.size(), nullptr);
    std::vector<run_fn> of_group;
    for (std::size_t i = 0; i < p.buckets.size(); ++i) {
      const auto& b = p.buckets[i];
      if (b.group >= of_group.size()) of_group.resize(b.group + 1, nullptr);
      if (of_group[b.group] == nullptr) of_group[b.group] = dispatch(b, static_cast<std::uint32_t>(i));
      ops_[i] = of_group[b.group];
    }
  }

 private:
  void size_buffers(const plan& p) {
    std::size_t scratch = 0, wire = 0;
    direct_.assign(p.buckets.size(), 0);
    for (std::size_t i = 0; i < p.buckets.size(); ++i) {
      const auto& b = p.buckets[i];
      direct_[i] = direct(b, opt_.pack, opt_.direct_run_bytes) ? 1 : 0;
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

 public:
  // Whether bucket b qualifies for running on the user's tensors without packing (the plan alone
  // decides, so every rank decides alike): an uncompressed all-reduce or sharded bucket on ring
  // or halving-doubling (flat, or both levels of a hierarchical all-reduce) whose runs hold at
  // least `run_bytes` on average (packing::automatic; executor_options::direct_run_bytes), any such
  // bucket (never), none (always).
  [[nodiscard]] static bool direct(const plan_bucket& b, packing mode, std::size_t run_bytes = direct_run_bytes) noexcept {
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
    return static_cast<std::size_t>(b.elements) * size_of(b.type) >= runs * run_bytes;
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

  // Runs bucket bi on this iteration's gradients (the communication thread, or finish()): the
  // run_as<...> of its group, chosen when the runner was built.
  void run(std::uint32_t bi, std::span<const gradient> grads) { ops_[bi](*this, bi, grads); }

  // The one implementation of a bucket: pack (unless in place or on the runs where they lie),
  // encode with codec<Comp>, collective<Arch, Topo>, decode (or average), unpack. Arch, Topo and
  // Comp must be the policies of the bucket's group (the runners check that when they are built).
  template <class Arch, class Topo, class Comp>
  void run_as(std::uint32_t bi, std::span<const gradient> grads) {
    using coll = collective<Arch, Topo>;
    using cod = codec_of<Comp>;
    grads_ = grads;
    const auto& b = plan_->buckets[bi];
    if constexpr (coll::segmented) {
      if (direct_[bi]) return run_direct<coll>(b);
    }
    if constexpr (cod::compresses) {
      if (b.compressed) return run_coded<coll, cod>(bi, b);
    }
    run_plain<coll>(bi, b);
  }

  // Throws autosync::error naming the bucket when bucket bi is not one of a group with policies
  // (Arch, Topo, Comp): another step kind, topology (where it matters) or compressor, or a wire
  // dtype that is not the codec's.
  template <class Arch, class Topo, class Comp>
  static void check_bucket(const plan_bucket& b, std::uint32_t bi) {
    using cod = codec_of<Comp>;
    const std::string f = "buckets[" + std::to_string(bi) + "]";
    if (architecture_of(b.kind) != Arch::value)
      throw error(f + ".kind", std::string(name_of(b.kind)) + " is not the group's architecture " + std::string(Arch::name));
    if (topology_matters<Arch> && !(b.topology == Topo::value))
      throw error(f + ".topology", "the bucket's topology is not the group's " + std::string(Topo::name));
    const bool hooked_none = is_extension_id(b.compression.id) && std::is_same_v<Comp, comp::none>;  // see visit_bucket
    if (b.compression.id != static_cast<compression_id>(Comp::value) && !hooked_none)
      throw error(f + ".compression", "compressor id " + std::to_string(b.compression.id) + " is not the group's " + std::string(Comp::name));
    if constexpr (cod::compresses) {
      if (b.compressed && b.wire != cod::wire) throw error(f + ".wire", "the wire dtype is not " + std::string(Comp::name) + "'s");
    } else if (b.compressed) {
      throw error(f + ".compressed", std::string(Comp::name) + " has no executor codec; the bucket cannot travel compressed");
    }
  }

  // What the buckets' exchanges reported (exec/exchange_note.hpp); read between iterations.
  [[nodiscard]] const std::vector<exchange_note>& exchange_notes() const noexcept { return ext_.notes(); }

  // The state carried across iterations: the built-in codecs' error-feedback residuals, per
  // bucket, then the registered compressors' exchanges (exec/extension_codecs.hpp). Between
  // iterations only.
  void save_state(registry::state_writer& w) const {
    w.put(static_cast<std::uint64_t>(residual_.size()));
    for (const auto& r : residual_) w.put(r);
    ext_.save(w);
  }
  void load_state(registry::state_reader& r) {
    std::uint64_t n = 0;
    r.get(n, "buckets");
    if (n != residual_.size()) throw error(r.field(), "buckets: " + std::to_string(n) + " saved, this plan has " + std::to_string(residual_.size()));
    for (std::size_t b = 0; b < residual_.size(); ++b) {
      std::vector<double> v;
      r.get_exact(v, "residual", residual_[b].size());
      residual_[b] = std::move(v);
    }
    ext_.load(r);
  }

 protected:
  using run_fn = void (*)(host_bucket_runner&, std::uint32_t, std::span<const gradient>);
  struct no_dispatch {};
  // For runners that choose run_as<...> themselves (exec/typed_executor.hpp): no visit.
  host_bucket_runner(comms<B>& c, const plan& p, const executor_options& o, no_dispatch) : host_bucket_runner(c, p, o, 0) {}

  [[nodiscard]] const plan& compiled() const noexcept { return *plan_; }

 private:
  // Sizes the buffers (both constructors).
  host_bucket_runner(comms<B>& c, const plan& p, const executor_options& o, int) : comms_(&c), plan_(&p), opt_(o), ext_(p) {
    size_buffers(p);
  }

  template <class Arch, class Topo, class Comp>
  static void run_fn_of(host_bucket_runner& r, std::uint32_t bi, std::span<const gradient> grads) {
    r.template run_as<Arch, Topo, Comp>(bi, grads);
  }
  // The run_as<...> of bucket b's group (visit_bucket; checked against the bucket).
  static run_fn dispatch(const plan_bucket& b, std::uint32_t bi) {
    return visit_bucket(b, [&](auto a, auto t, auto c) -> run_fn {
      using A = typename decltype(a)::type;
      using T = typename decltype(t)::type;
      using C = typename decltype(c)::type;
      check_bucket<A, T, C>(b, bi);
      return &run_fn_of<A, T, C>;
    });
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

  // The bucket's elements where the step runs: in the user's buffer (one contiguous segment, or
  // the segments back to back in this iteration's memory), else packed into the fused buffer.
  unsigned char* stage(const plan_bucket& b, bool& packed) {
    unsigned char* data = b.in_place() ? tensor_at(b.segments[0].tensor, b.segments[0].offset) : adjacent(b);
    packed = data == nullptr;
    if (packed) {
      data = fused_.data();
      pack(b, data);
    }
    return data;
  }

  // An uncompressed bucket, in place or packed: the step in the bucket's dtype, the average, unpack.
  // (One instantiation per collective: the codec does not change it.)
  template <class Coll>
  void run_plain(std::uint32_t bi, const plan_bucket& b) {
    bool packed = false;
    unsigned char* data = stage(b, packed);
    const int p = comms_->world.size();
    const auto n = static_cast<std::size_t>(b.elements);
    if (b.hooked) {  // registered codecs (exec/extension_codecs.hpp): encode before, decode after
      const registry::wire_view w = ext_.encode(bi, data, n, b.type, p);
      if (ext_.exchanges(bi)) {  // a compressor that owns its exchange: it replaces the collective
        backend_exchange_comm<B> xc(comms_->world);
        ext_.exchange(bi, w, xc);
      } else {
        Coll::run(*comms_, b, w.data, w.elements, w.type);
      }
      ext_.decode(bi, w, p);
    } else {
      Coll::run(*comms_, b, data, n, b.type);
    }
    if (opt_.average && p > 1) scale(data, n, b.type, 1.0 / p);
    if (packed) unpack(b, data);
  }

  // A compressed bucket: encode (error feedback in residual_[bi]), the step in the wire dtype,
  // decode (with the average), unpack.
  template <class Coll, class Codec>
  void run_coded(std::uint32_t bi, const plan_bucket& b) {
    bool packed = false;
    unsigned char* data = stage(b, packed);
    const auto n = static_cast<std::size_t>(b.elements);
    const int p = comms_->world.size();
    const double s = Codec::scale(p);
    const std::span<std::uint16_t> wire(wire_.data(), n);
    const std::span<double> residual(residual_[bi]);  // empty: no error feedback
    if (b.type == dtype::f32) Codec::encode(std::span<const float>(reinterpret_cast<const float*>(data), n), wire, residual, s);
    else Codec::encode(std::span<const double>(reinterpret_cast<const double*>(data), n), wire, residual, s);
    Coll::run(*comms_, b, reinterpret_cast<unsigned char*>(wire_.data()), n, Codec::wire);
    const double factor = opt_.average ? 1.0 / p : 1.0;
    if (b.type == dtype::f32) Codec::decode(std::span<const std::uint16_t>(wire), std::span<float>(reinterpret_cast<float*>(data), n), s, factor);
    else Codec::decode(std::span<const std::uint16_t>(wire), std::span<double>(reinterpret_cast<double*>(data), n), s, factor);
    if (packed) unpack(b, data);
  }

  // An uncompressed bucket on the tensors where they lie (direct_[bi]): no pack, no unpack.
  template <class Coll>
  void run_direct(const plan_bucket& b) {
    segmented& sv = segs_;
    sv = segmented(b.type);
    for (const auto& sg : b.segments) {
      if (sg.blocks == 1 || sg.stride == sg.block) sv.append(tensor_at(sg.tensor, sg.offset), static_cast<std::size_t>(sg.elements()));
      else
        for (std::int64_t k = 0; k < sg.blocks; ++k) sv.append(tensor_at(sg.tensor, sg.offset + k * sg.stride), static_cast<std::size_t>(sg.block));
    }
    Coll::run(*comms_, b, sv);
    const int p = comms_->world.size();
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
  std::vector<run_fn> ops_;                       // per bucket: run_as<...> of its group (runtime path)
  extension_codecs ext_;                          // per bucket: registered codecs (hooked buckets)
};

}  // namespace autosync::exec
