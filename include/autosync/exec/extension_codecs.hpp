// autosync/exec/extension_codecs.hpp — the executor hook of the slot registry.
//
// A plan bucket whose group uses a registered compressor or extension slots with a codec
// (registry/extensions.hpp) is `hooked`: before its collective the host bucket runner calls
// encode, after it decode. The stages run in a fixed order every rank shares: the extension
// slots in slot-id order, then the compressor; decode runs them backwards. Each bucket owns its
// codec objects, so state such as an error-feedback residual persists across iterations.
//
//   packed bucket (n x f32) --slot codec--> (n x f32) --compressor--> wire (n x i32, ...)
//        ^                                                                 | collective (sum)
//        +------ decode, stages backwards <--------------------------------+
//
// A compressor that owns its exchange (registry::compression_entry::make_exchange) is not a
// stage: after the slot codecs' encode, its per-bucket exchange runs INSTEAD of the bucket's
// collective, on the world's ranks through backend_exchange_comm (below), and leaves the sum.
// The exchange is built with the bucket's matrices (its segments that are whole rows of a
// tensor, viewed as shape[0] x the rest) and a seed every rank derives alike (the group's
// fingerprint and the bucket's number).
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/backend.hpp>
#include <autosync/exec/codecs/random.hpp>
#include <autosync/exec/exchange_note.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/registry/extensions.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace autosync::exec {

// The exchange_comm of a Backend: bytes travel as i32 words (the Backend concept has no byte
// type; payloads are padded to whole words, the padding unread), the all-to-all as size() - 1
// deadlock-free sendrecv steps (step k: to rank + k, from rank - k).
template <Backend B>
class backend_exchange_comm final : public registry::exchange_comm {
 public:
  explicit backend_exchange_comm(B& b) : b_(&b) {}
  [[nodiscard]] int rank() const override { return b_->rank(); }
  [[nodiscard]] int size() const override { return b_->size(); }
  void all_reduce(float* x, std::size_t n) override {
    if (n > 0) b_->all_reduce(x, n, dtype::f32);
  }
  void all_gather(const void* send, void* recv, std::size_t bytes) override {
    const std::size_t w = words(bytes), p = static_cast<std::size_t>(size());
    out_.assign(w, 0u);
    in_.assign(w * p, 0u);
    if (bytes > 0) std::memcpy(out_.data(), send, bytes);
    b_->all_gather(out_.data(), in_.data(), w, dtype::i32);
    for (std::size_t r = 0; r < p; ++r) std::memcpy(static_cast<unsigned char*>(recv) + r * bytes, in_.data() + r * w, bytes);
  }
  void all_to_all(const void* send, void* recv, std::size_t bytes) override {
    const std::size_t w = words(bytes);
    const int p = size(), me = rank();
    out_.assign(w * static_cast<std::size_t>(p), 0u);
    in_.assign(w * static_cast<std::size_t>(p), 0u);
    for (int r = 0; r < p; ++r)
      std::memcpy(out_.data() + static_cast<std::size_t>(r) * w, static_cast<const unsigned char*>(send) + static_cast<std::size_t>(r) * bytes, bytes);
    std::copy_n(out_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * w), w,
                in_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * w));
    for (int k = 1; k < p; ++k) {
      const int dst = (me + k) % p, src = (me - k + p) % p;
      b_->sendrecv(out_.data() + static_cast<std::size_t>(dst) * w, w, dst, in_.data() + static_cast<std::size_t>(src) * w, w, src,
                   dtype::i32, 0);
    }
    for (int r = 0; r < p; ++r)
      std::memcpy(static_cast<unsigned char*>(recv) + static_cast<std::size_t>(r) * bytes, in_.data() + static_cast<std::size_t>(r) * w, bytes);
  }

 private:
  [[nodiscard]] static constexpr std::size_t words(std::size_t bytes) noexcept { return (bytes + 3) / 4; }
  B* b_;
  std::vector<std::uint32_t> out_, in_;
};

// The exchange context of plan bucket b (number bi) of plan p.
[[nodiscard]] inline registry::exchange_context exchange_context_of(const plan& p, std::size_t bi) {
  const auto& b = p.buckets[bi];
  registry::exchange_context x;
  x.elements = static_cast<std::size_t>(b.elements);
  x.type = b.type;
  const std::uint64_t gf = b.group < p.group_fingerprints.size() ? p.group_fingerprints[b.group] : 0;
  x.seed = codecs::splitmix64(gf ^ codecs::splitmix64(bi));
  for (const auto& s : b.segments) {
    if (!s.contiguous() || s.tensor >= p.tensor_elements.size()) continue;
    const std::int64_t rows = s.tensor < p.tensor_rows.size() ? p.tensor_rows[s.tensor] : 1;
    const std::int64_t all = p.tensor_elements[s.tensor];
    if (rows <= 1 || all <= 0 || all % rows != 0) continue;
    const std::int64_t cols = all / rows;
    if (cols <= 1 || s.offset % cols != 0 || s.elements() % cols != 0 || s.elements() / cols < 2) continue;
    x.matrices.push_back({static_cast<std::size_t>(s.fused), static_cast<std::size_t>(s.elements() / cols), static_cast<std::size_t>(cols)});
  }
  std::sort(x.matrices.begin(), x.matrices.end(), [](const auto& a, const auto& c) { return a.offset < c.offset; });
  return x;
}

class extension_codecs {
 public:
  extension_codecs() = default;
  explicit extension_codecs(const plan& p) : chains_(p.buckets.size()) {
    for (std::size_t i = 0; i < p.buckets.size(); ++i) {
      const auto& b = p.buckets[i];
      if (!b.hooked) continue;
      const auto n = static_cast<std::size_t>(b.elements);
      for (const auto& x : b.ext.v) {
        if (x.slot == 0) break;
        const auto* se = registry::find_slot(x.slot);
        if (se && se->make_codec && (!se->applies || se->applies(b.type))) chains_[i].push_back(se->make_codec(x, b.type, n));
      }
      if (is_extension_id(b.compression.id))
        if (const auto* e = registry::find_compression(b.compression.id); e && (!e->applies || e->applies(b.type))) {
          if (e->make_exchange) {
            exchanges_.resize(p.buckets.size());
            types_.resize(p.buckets.size());
            elements_.resize(p.buckets.size());
            auto x = exchange_context_of(p, i);
            x.note = [log = notes_, bucket = static_cast<std::uint32_t>(i)](std::string_view key, double value) {
              log->notes.push_back(exchange_note{bucket, log->calls[bucket], std::string(key), value});
            };
            notes_->calls.resize(p.buckets.size(), 0);
            exchanges_[i] = e->make_exchange(b.compression.params, x);
            types_[i] = b.type;
            elements_[i] = n;
          } else if (e->make_codec) {
            chains_[i].push_back(e->make_codec(b.compression.params, b.type, n));
          }
        }
      wires_.resize(p.buckets.size());
    }
  }

  // Whether bucket bi's compressor owns its exchange (it replaces the collective).
  [[nodiscard]] bool exchanges(std::size_t bi) const noexcept { return bi < exchanges_.size() && static_cast<bool>(exchanges_[bi]); }
  // Runs bucket bi's exchange on the encoded data (the slot codecs' output): the sum over ranks.
  void exchange(std::size_t bi, registry::wire_view w, registry::exchange_comm& comm) {
    if (w.type != types_[bi] || w.elements != elements_[bi])
      throw error("buckets[" + std::to_string(bi) + "].compression",
                  "an extension slot's codec changed the bucket's dtype or length; a compressor that owns its exchange needs the bucket as it is");
    exchanges_[bi](w.data, comm);
    ++notes_->calls[bi];
  }
  // The exchanges' state (registry::bucket_exchange::save): per bucket with an exchange, its
  // number, its exchange count and its state's bytes. load() reads it into the exchanges of the
  // same plan, and names the bucket whose state does not fit. Between iterations only.
  void save(registry::state_writer& w) const {
    std::uint64_t count = 0;
    for (const auto& e : exchanges_) count += e ? 1 : 0;
    w.put(count);
    for (std::size_t i = 0; i < exchanges_.size(); ++i) {
      if (!exchanges_[i]) continue;
      registry::state_writer one;
      exchanges_[i].save(one);
      w.put(static_cast<std::uint64_t>(i));
      w.put(notes_->calls.at(i));
      w.put_bytes(one.bytes());
    }
  }
  void load(registry::state_reader& r) {
    std::uint64_t count = 0, want = 0;
    for (const auto& e : exchanges_) want += e ? 1 : 0;
    r.get(count, "exchanges");
    if (count != want)
      throw error(r.field(), "exchanges: " + std::to_string(count) + " buckets with a compressor's exchange saved, this plan has " + std::to_string(want));
    for (std::size_t i = 0; i < exchanges_.size(); ++i) {
      if (!exchanges_[i]) continue;
      std::uint64_t bucket = 0;
      std::int64_t calls = 0;
      r.get(bucket, "bucket");
      if (bucket != i) throw error(r.field(), "bucket " + std::to_string(bucket) + " saved where this plan's bucket " + std::to_string(i) + " has an exchange");
      r.get(calls, "exchange count");
      if (calls < 0) throw error(r.field(), "exchange count: negative");
      registry::state_reader one(r.get_bytes("exchange state"), r.field() + ".buckets[" + std::to_string(i) + "]");
      exchanges_[i].load(one);
      one.finish();
      notes_->calls.at(i) = calls;
    }
  }

  // What the exchanges reported so far (registry::exchange_context::note), in call order. Read
  // it between iterations: the communication thread appends during one.
  [[nodiscard]] const std::vector<exchange_note>& notes() const noexcept { return notes_->notes; }

  // Before bucket bi's collective: what the collective runs on.
  registry::wire_view encode(std::size_t bi, unsigned char* data, std::size_t n, dtype t, int ranks) {
    registry::wire_view w{data, n, t};
    auto& stages = wires_[bi];
    stages.clear();
    for (auto& c : chains_[bi]) {
      stages.push_back(w);
      w = c(registry::codec_step::encode, registry::wire_view{}, w.data, w.elements, w.type, ranks);
    }
    return w;
  }
  // After it: the stages backwards, each writing into the buffer the stage before it encoded.
  void decode(std::size_t bi, registry::wire_view w, int ranks) {
    auto& stages = wires_[bi];
    for (std::size_t k = chains_[bi].size(); k-- > 0;) {
      const auto& in = stages[k];
      (void)chains_[bi][k](registry::codec_step::decode, w, in.data, in.elements, in.type, ranks);
      w = in;
    }
  }

 private:
  std::vector<std::vector<registry::bucket_codec>> chains_;
  std::vector<std::vector<registry::wire_view>> wires_;  // per bucket: each stage's input
  std::vector<registry::bucket_exchange> exchanges_;     // per bucket: a compressor's own exchange (or empty)
  std::vector<dtype> types_;                             // per bucket with an exchange: its dtype and length
  std::vector<std::size_t> elements_;
  struct note_log {
    std::vector<exchange_note> notes;
    std::vector<std::int64_t> calls;  // per bucket: exchanges run so far (the note's iteration)
  };
  std::shared_ptr<note_log> notes_ = std::make_shared<note_log>();  // shared with the exchanges' note sinks
};

}  // namespace autosync::exec
