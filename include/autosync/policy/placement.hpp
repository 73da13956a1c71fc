// autosync/policy/placement.hpp — slot `placement`: which server holds a parameter-server shard.
//
//   round_robin     item i of the group goes to server i mod S (in the group's item order)
//   load_balanced   greedy: each item (largest first) to the server whose load / bandwidth is
//                   least after adding it (AutoDist PSLoadBalancing, bandwidth-proportional)
//   pinned<I>       every item on server I
//   hashed          server = FNV-1a(tensor name, shard) mod S (BytePS key hashing)
// Placement is only read by parameter_server groups.
#pragma once

#include <autosync/policy/slots.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace autosync {

enum class placement_kind : std::uint8_t { round_robin, load_balanced, pinned, hashed };
template <>
struct enum_names<placement_kind> {
  static constexpr std::array<std::string_view, 4> names{"round_robin", "load_balanced", "pinned", "hashed"};
};

struct placement_value {
  placement_kind kind = placement_kind::round_robin;
  std::int32_t server = 0;  // pinned: I
  friend constexpr bool operator==(const placement_value&, const placement_value&) = default;
};

namespace place {
struct round_robin {
  using slot = slot::placement;
  static constexpr std::string_view name = "round_robin";
  static constexpr placement_value value{placement_kind::round_robin, 0};
};
struct load_balanced {
  using slot = slot::placement;
  static constexpr std::string_view name = "load_balanced";
  static constexpr placement_value value{placement_kind::load_balanced, 0};
};
template <int I>
struct pinned {
  static_assert(I >= 0, "autosync: placement pinned<I>: I (server index) must be >= 0");
  using slot = slot::placement;
  static constexpr std::string_view name = "pinned";
  static constexpr int server = I;
  static constexpr placement_value value{placement_kind::pinned, I};
};
struct hashed {
  using slot = slot::placement;
  static constexpr std::string_view name = "hashed";
  static constexpr placement_value value{placement_kind::hashed, 0};
};
}  // namespace place

template <>
struct default_policy<slot::placement> { using type = place::round_robin; };

// FNV-1a over the tensor name and the shard index: the hashed placement's key. It is computed
// in two parts, so that a caller placing many strategies of one model (cost::evaluator) hashes
// each name once: placement_hash(name, shard) == placement_hash_of(placement_name_hash(name), shard).
[[nodiscard]] constexpr std::uint64_t placement_name_hash(std::string_view name) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}
[[nodiscard]] constexpr std::uint64_t placement_hash_of(std::uint64_t name_hash, std::uint64_t shard) noexcept {
  std::uint64_t h = name_hash;
  for (int i = 0; i < 8; ++i) h = (h ^ ((shard >> (8 * i)) & 0xffu)) * 1099511628211ull;
  return h;
}
[[nodiscard]] constexpr std::uint64_t placement_hash(std::string_view name, std::uint64_t shard) noexcept {
  return placement_hash_of(placement_name_hash(name), shard);
}


// JSON: "round_robin" | "load_balanced" | "hashed" | {"kind": "pinned", "server": I}
template <>
struct slot_traits<slot::placement> {
  using value_type = placement_value;
  template <class G>
  static constexpr auto& field(G& g) noexcept { return g.placement; }
  template <class W>
  static void write(W& w, const placement_value& p) {
    if (p.kind != placement_kind::pinned) return w.name(name_of(p.kind));
    w.kind("pinned");
    w.set("server", static_cast<std::int64_t>(p.server));
  }
  template <class R>
  static placement_value read(R& r) {
    placement_value p;
    if (r.bare()) {
      p.kind = r.template enum_name<placement_kind>("placement");
      if (p.kind == placement_kind::pinned) r.fail("'pinned' needs its server: {\"kind\": \"pinned\", \"server\": I}");
      return p;
    }
    r.expect_object("a placement: a name or {\"kind\": \"pinned\", \"server\": I}");
    p.kind = r.template kind_enum<placement_kind>("placement");
    if (p.kind == placement_kind::pinned) {
      r.keys({"kind", "server"}, "for placement 'pinned'");
      p.server = r.i32("server");
    } else {
      r.keys({"kind"}, "for placement '" + std::string(name_of(p.kind)) + "'");
    }
    return p;
  }
  template <class H>
  static constexpr void hash(H& h, const placement_value& p) noexcept {
    h.u64(static_cast<std::uint64_t>(p.kind)).i64(p.server);
  }
  [[nodiscard]] static std::string cpp_type(const placement_value& p) {
    if (p.kind == placement_kind::pinned) return "autosync::place::pinned<" + std::to_string(p.server) + ">";
    return "autosync::place::" + std::string(name_of(p.kind));
  }
  static void validate(const placement_value& p, const std::string& f) {
    if (static_cast<std::size_t>(p.kind) >= enum_names<placement_kind>::names.size()) throw error(f + ".kind", "unknown value");
    if (p.kind == placement_kind::pinned && p.server < 0) throw error(f + ".server", "must be >= 0");
  }
  static constexpr int search_order = 5;
};

}  // namespace autosync
