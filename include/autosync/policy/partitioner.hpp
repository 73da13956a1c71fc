// autosync/policy/partitioner.hpp — slot `partitioner`: how a tensor is split into shards.
//
//   none             the tensor travels whole
//   even<K, Axis>    K shards along Axis: each gets floor(d/K) slices, the first d mod K one more
//                    (AutoDist's partitioner string "K,1" for axis 0)
//   by_bytes<B>      along axis 0, as many even shards as needed so none exceeds B bytes
//                    (BytePS's BYTEPS_PARTITION_BYTES; a shard is at least one slice)
//
//   d = 10, K = 4:   [0 1 2][3 4 5][6 7][8 9]
#pragma once

#include <autosync/policy/slots.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace autosync {

enum class partitioner_kind : std::uint8_t { none, even, by_bytes };
template <>
struct enum_names<partitioner_kind> {
  static constexpr std::array<std::string_view, 3> names{"none", "even", "by_bytes"};
};

struct partitioner_value {
  partitioner_kind kind = partitioner_kind::none;
  std::int32_t shards = 1;       // even: K
  std::int32_t axis = 0;         // even: the split axis (by_bytes: always 0)
  std::uint64_t max_bytes = 0;   // by_bytes: B
  friend constexpr bool operator==(const partitioner_value&, const partitioner_value&) = default;
};

namespace detail {
// How many shards the by_bytes partitioner cuts d rows of row_bytes each into: ceil(total /
// max_bytes), at least 1 and at most d (a tensor within the cap: 1, without a division).
// expand cuts them (strategy/items.hpp); strategy_desc::validate counts them.
[[nodiscard]] constexpr std::int64_t by_bytes_shards(std::int64_t d, std::uint64_t row_bytes, std::uint64_t max_bytes) noexcept {
  const std::uint64_t total = static_cast<std::uint64_t>(d) * row_bytes;
  return total <= max_bytes ? 1 : std::clamp<std::int64_t>(static_cast<std::int64_t>((total + max_bytes - 1) / max_bytes), 1, d);
}
}  // namespace detail

namespace part {
struct none {
  using slot = slot::partitioner;
  static constexpr std::string_view name = "none";
  static constexpr partitioner_value value{};
};
template <int K, int Axis = 0>
struct even {
  static_assert(K >= 1, "autosync: partitioner even<K, Axis>: K (shard count) must be >= 1");
  static_assert(Axis >= 0, "autosync: partitioner even<K, Axis>: Axis must be >= 0");
  using slot = slot::partitioner;
  static constexpr std::string_view name = "even";
  static constexpr int shards = K;
  static constexpr int axis = Axis;
  static constexpr partitioner_value value{partitioner_kind::even, K, Axis, 0};
};
template <std::uint64_t B>
struct by_bytes {
  static_assert(B >= 1, "autosync: partitioner by_bytes<B>: B (max shard bytes) must be >= 1");
  using slot = slot::partitioner;
  static constexpr std::string_view name = "by_bytes";
  static constexpr std::uint64_t max_bytes = B;
  static constexpr partitioner_value value{partitioner_kind::by_bytes, 1, 0, B};
};
}  // namespace part

template <>
struct default_policy<slot::partitioner> { using type = part::none; };

// Shard s of K along a dimension of size d: [begin, end). Requires 1 <= K <= d.
struct slice_range {
  std::int64_t begin = 0, end = 0;
};
[[nodiscard]] constexpr slice_range even_shard(std::int64_t d, std::int64_t k, std::int64_t s) noexcept {
  const std::int64_t base = d / k, extra = d % k;
  const std::int64_t b = s * base + (s < extra ? s : extra);
  return {b, b + base + (s < extra ? 1 : 0)};
}


// JSON: "none" | {"kind": "even", "shards": K, "axis": A} | {"kind": "by_bytes", "max_bytes": B}
template <>
struct slot_traits<slot::partitioner> {
  using value_type = partitioner_value;
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.partitioner; }
  template <class W>
  static void write(W& w, const partitioner_value& p) {
    switch (p.kind) {
      case partitioner_kind::even:
        w.kind("even");
        w.set("shards", static_cast<std::int64_t>(p.shards));
        w.set("axis", static_cast<std::int64_t>(p.axis));
        break;
      case partitioner_kind::by_bytes:
        w.kind("by_bytes");
        w.set("max_bytes", p.max_bytes);
        break;
      default: w.name(name_of(p.kind)); break;
    }
  }
  template <class R>
  static partitioner_value read(R& r) {
    partitioner_value p;
    if (r.bare()) {
      p.kind = r.template enum_name<partitioner_kind>("partitioner");
      if (p.kind == partitioner_kind::even) r.fail("'even' needs its numbers: {\"kind\": \"even\", \"shards\": K, \"axis\": A}");
      if (p.kind == partitioner_kind::by_bytes) r.fail("'by_bytes' needs its number: {\"kind\": \"by_bytes\", \"max_bytes\": B}");
      return p;
    }
    r.expect_object("a partitioner: \"none\", {\"kind\": \"even\", ...} or {\"kind\": \"by_bytes\", ...}");
    p.kind = r.template kind_enum<partitioner_kind>("partitioner");
    switch (p.kind) {
      case partitioner_kind::none: r.keys({"kind"}, "for partitioner 'none'"); break;
      case partitioner_kind::even:
        r.keys({"kind", "shards", "axis"}, "for partitioner 'even'");
        p.shards = r.i32("shards");
        if (r.has("axis")) p.axis = r.i32("axis");
        break;
      case partitioner_kind::by_bytes:
        r.keys({"kind", "max_bytes"}, "for partitioner 'by_bytes'");
        p.max_bytes = r.u64("max_bytes");
        break;
    }
    return p;
  }
  template <class H>
  static constexpr void hash(H& h, const partitioner_value& p) noexcept {
    h.u64(static_cast<std::uint64_t>(p.kind)).i64(p.shards).i64(p.axis).u64(p.max_bytes);
  }
  [[nodiscard]] static std::string cpp_type(const partitioner_value& p) {
    switch (p.kind) {
      case partitioner_kind::even: return "autosync::part::even<" + std::to_string(p.shards) + ", " + std::to_string(p.axis) + ">";
      case partitioner_kind::by_bytes: return "autosync::part::by_bytes<" + std::to_string(p.max_bytes) + "ull>";
      default: return "autosync::part::none";
    }
  }
  static void validate(const partitioner_value& p, const std::string& f) {
    switch (p.kind) {
      case partitioner_kind::none: break;
      case partitioner_kind::even:
        if (p.shards < 1) throw error(f + ".shards", "must be >= 1");
        if (p.axis < 0) throw error(f + ".axis", "must be >= 0");
        break;
      case partitioner_kind::by_bytes:
        if (p.max_bytes < 1) throw error(f + ".max_bytes", "must be >= 1");
        break;
      default: throw error(f + ".kind", "unknown value");
    }
  }
  static constexpr int search_order = 7;
};

}  // namespace autosync
