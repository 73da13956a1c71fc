// autosync/policy/fusion.hpp — slot `fusion`: how a group's items are packed into buckets.
//
// A group's items are taken in ready order and packed into buckets; a bucket closes when the
// next item would push it past its cap. The first bucket (the gradients ready first) has its
// own cap, as PyTorch DDP's 1 MiB first bucket. An item is never split across buckets (the
// partitioner splits tensors); an item larger than the cap travels in a bucket of its own.
//
//   bucket_cap<Cap, First = Cap>   Cap = 0: one item per bucket (no fusion)
//   unbounded                      the whole group in one bucket
#pragma once

#include <autosync/policy/slots.hpp>

#include <cstdint>
#include <limits>

namespace autosync {

struct fusion_value {
  std::uint64_t cap_bytes = 0;
  std::uint64_t first_cap_bytes = 0;
  friend constexpr bool operator==(const fusion_value&, const fusion_value&) = default;
};

inline constexpr std::uint64_t unbounded_bytes = std::numeric_limits<std::uint64_t>::max();

namespace fuse {
template <std::uint64_t Cap, std::uint64_t First = Cap>
struct bucket_cap {
  using slot = slot::fusion;
  static constexpr std::string_view name = "bucket_cap";
  static constexpr std::uint64_t cap_bytes = Cap;
  static constexpr std::uint64_t first_cap_bytes = First;
  static constexpr fusion_value value{Cap, First};
};
using none = bucket_cap<0>;
using unbounded = bucket_cap<unbounded_bytes>;
}  // namespace fuse

template <>
struct default_policy<slot::fusion> { using type = fuse::none; };


// JSON: {"cap_bytes": B, "first_cap_bytes": F} (F written only when it differs from B); read
// also as "none" (B = 0) or "unbounded".
template <>
struct slot_traits<slot::fusion> {
  using value_type = fusion_value;
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.fusion; }
  template <class W>
  static void write(W& w, const fusion_value& v) {
    w.object();
    w.set("cap_bytes", v.cap_bytes);
    if (v.first_cap_bytes != v.cap_bytes) w.set("first_cap_bytes", v.first_cap_bytes);
  }
  template <class R>
  static fusion_value read(R& r) {
    if (r.bare()) {
      const auto s = r.str();
      if (s == "none") return fuse::none::value;
      if (s == "unbounded") return fuse::unbounded::value;
      r.fail("unknown fusion '" + s + "' (valid: none, unbounded, or {\"cap_bytes\": B, \"first_cap_bytes\": F})");
    }
    r.expect_object("a fusion: {\"cap_bytes\": B, \"first_cap_bytes\": F}");
    r.keys({"cap_bytes", "first_cap_bytes"});
    fusion_value v;
    v.cap_bytes = r.u64("cap_bytes");
    v.first_cap_bytes = v.cap_bytes;  // as bucket_cap<Cap, First = Cap>
    if (r.has("first_cap_bytes")) v.first_cap_bytes = r.u64("first_cap_bytes");
    return v;
  }
  template <class H>
  static constexpr void hash(H& h, const fusion_value& v) noexcept {
    h.u64(v.cap_bytes).u64(v.first_cap_bytes);
  }
  [[nodiscard]] static std::string cpp_type(const fusion_value& v) {
    return "autosync::fuse::bucket_cap<" + std::to_string(v.cap_bytes) + "ull, " + std::to_string(v.first_cap_bytes) + "ull>";
  }
  static void validate(const fusion_value&, const std::string&) {}  // every pair is a policy; rules.hpp relates them
  static constexpr int search_order = 3;
};

}  // namespace autosync
