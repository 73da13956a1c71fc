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
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/plan.hpp>
#include <autosync/registry/extensions.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace autosync::exec {

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
        if (const auto* e = registry::find_compression(b.compression.id); e && e->make_codec && (!e->applies || e->applies(b.type)))
          chains_[i].push_back(e->make_codec(b.compression.params, b.type, n));
      wires_.resize(p.buckets.size());
    }
  }

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
};

}  // namespace autosync::exec
