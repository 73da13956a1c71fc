// autosync/policy/slots.hpp — the aspects of a synchronization decision, as slot tags.
//
// A policy is an empty tag or a struct of `static constexpr` members with
//   using slot = slot::<aspect>;            which slot it fills
//   static constexpr std::string_view name;  its name in JSON and in messages
//   static constexpr <value type> value;     the runtime descriptor piece it stands for
// Slots are defined by the registry (autosync/registry/values.hpp explains its two halves):
//   a core slot: its tag here (AUTOSYNC_SLOT_TAG), its place in `slot_list`, its header
//     policy/<slot>.hpp (policies, value, `default_policy`, and `slot_traits`: its descriptor
//     field, JSON spelling, hash, emitted policy, validation and search order — see the end of
//     this file), its member of group_desc and, where it constrains another slot, a rule in
//     registry/rules.hpp. strategy<...>'s checks, describe, JSON, hashing, emit_header,
//     validate_group and the search's aspects iterate slot_list (registry/core.hpp); the cost
//     model and the executor read the values they model by name.
//   an extension slot (user code, nothing under include/ changes): a tag made with
//     AUTOSYNC_SLOT_TAG in the user's namespace, policies whose `value` is an ext_value, a
//     `default_policy` specialization, and a runtime entry registered with
//     autosync::registry::add_slot (JSON, validation, search, cost and executor hooks).
#pragma once

#include <autosync/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <string>
#include <type_traits>

namespace autosync {

template <class... Ts>
struct type_list {
  static constexpr std::size_t size = sizeof...(Ts);
};

// A slot tag: its name, and the check strategy<...> runs for it (a static_assert message has
// to be a literal, so each tag carries its own).
#define AUTOSYNC_SLOT_TAG(id)                                                                     \
  struct id {                                                                                     \
    static constexpr std::string_view name = #id;                                                 \
    template <int Count>                                                                          \
    static constexpr bool unique() {                                                              \
      static_assert(Count <= 1, "autosync::strategy: two policies for slot '" #id "'");           \
      return Count <= 1;                                                                          \
    }                                                                                             \
    template <bool Has>                                                                           \
    static consteval bool has_traits() {                                                          \
      static_assert(Has, "autosync: core slot '" #id "' has no complete slot_traits<slot::" #id     \
                         "> (policy/slots.hpp lists what it must define)");                        \
      return Has;                                                                                 \
    }                                                                                             \
  }

namespace slot {
AUTOSYNC_SLOT_TAG(architecture);
AUTOSYNC_SLOT_TAG(partitioner);
AUTOSYNC_SLOT_TAG(placement);
AUTOSYNC_SLOT_TAG(replication);
AUTOSYNC_SLOT_TAG(topology);
AUTOSYNC_SLOT_TAG(compression);
AUTOSYNC_SLOT_TAG(fusion);
AUTOSYNC_SLOT_TAG(schedule);
}  // namespace slot

// The slots of a group strategy, in canonical order (the order of basic_strategy's arguments).
using slot_list = type_list<slot::architecture, slot::partitioner, slot::placement, slot::replication,
                            slot::topology, slot::compression, slot::fusion, slot::schedule>;

// Specialized next to each slot's policies.
template <class Slot>
struct default_policy;

// A policy: has a slot, a name and a value.
template <class P>
concept Policy = requires {
  typename P::slot;
  { P::name } -> std::convertible_to<std::string_view>;
  P::value;
};

template <class P, class Slot>
concept PolicyFor = Policy<P> && std::same_as<typename P::slot, Slot>;

template <class P> concept ArchitecturePolicy = PolicyFor<P, slot::architecture>;
template <class P> concept PartitionerPolicy  = PolicyFor<P, slot::partitioner>;
template <class P> concept PlacementPolicy    = PolicyFor<P, slot::placement>;
template <class P> concept ReplicationPolicy  = PolicyFor<P, slot::replication>;
template <class P> concept TopologyPolicy     = PolicyFor<P, slot::topology>;
template <class P> concept CompressionPolicy  = PolicyFor<P, slot::compression> && requires {
  { P::lossless } -> std::convertible_to<bool>;
  { P::wire_bytes_per_element } -> std::convertible_to<double>;
  { P::flops_per_element } -> std::convertible_to<double>;
};
template <class P> concept FusionPolicy       = PolicyFor<P, slot::fusion>;
template <class P> concept SchedulePolicy     = PolicyFor<P, slot::schedule>;

// Runtime enums get their names from one table each; `enum_names<E>` is specialized next to E.
template <class E>
struct enum_names;

template <class E>
[[nodiscard]] constexpr std::string_view name_of(E e) noexcept
  requires requires { enum_names<E>::names; }
{
  const auto i = static_cast<std::size_t>(e);
  return i < enum_names<E>::names.size() ? enum_names<E>::names[i] : std::string_view{"?"};
}

template <class E>
[[nodiscard]] constexpr bool parse_enum(std::string_view s, E& out) noexcept {
  for (std::size_t i = 0; i < enum_names<E>::names.size(); ++i)
    if (enum_names<E>::names[i] == s) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

// "a, b, c": for error messages that list the valid names.
template <class E>
[[nodiscard]] inline std::string_view valid_names_list() {
  static const std::string s = [] {
    std::string r;
    for (auto n : enum_names<E>::names) {
      if (!r.empty()) r += ", ";
      r += n;
    }
    return r;
  }();
  return s;
}

// ---- the core slots' run-time traits ------------------------------------------------------
// Each core slot defines, next to its policies (policy/<slot>.hpp; the compression slot's is in
// registry/compression_slot.hpp because it reads the registry), one specialization
//
//   template <> struct slot_traits<slot::X> {
//     using value_type = ...;                                         its descriptor piece
//     template <class G> static constexpr auto& field(G& g) noexcept;  its member of group_desc
//     template <class W> static void write(W& w, const value_type&);   its spelling (JSON)
//     template <class R> static value_type read(R& r);                  and back; errors at r's field
//     template <class H> static constexpr void hash(H& h, const value_type&) noexcept;
//     static std::string cpp_type(const value_type&);                  the policy emit_header writes
//     static void validate(const value_type&, const std::string& f);   throws error(f[.part], why)
//     static constexpr int search_order;                               its aspect's place in the search
//   };
//
// and everything that reads or writes a whole group (describe, JSON, hashing, emit, validation,
// the search's aspects) iterates slot_list through these (registry/core.hpp). W and R are
// spelling adapters (io/json/strategy.hpp has the JSON ones): W::name(s) writes a bare name,
// W::kind(k) starts {"kind": k, ...}, W::object() an object without a kind, W::set(key, v) a
// member; R reads the same shapes back (R::bare(), R::kind_enum<E>(...), R::u64(key), ...).
template <class Slot>
struct slot_traits;

// The traits of a slot whose value is a plain enum named by enum_names<E> (a bare name in JSON,
// `autosync::<Ns>::<name>` as a policy).
template <class E, class Slot>
struct enum_slot_traits {
  using value_type = E;
  template <class W>
  static void write(W& w, E v) {
    w.name(name_of(v));
  }
  template <class R>
  static E read(R& r) {
    return r.template enum_name<E>(Slot::name);
  }
  template <class H>
  static constexpr void hash(H& h, E v) noexcept {
    h.u64(static_cast<std::uint64_t>(v));
  }
  static void validate(E v, const std::string& f) {
    if (static_cast<std::size_t>(v) >= enum_names<E>::names.size()) throw error(f, "unknown value");
  }
  [[nodiscard]] static std::string policy_in(std::string_view ns, E v) {
    return "autosync::" + std::string(ns) + "::" + std::string(name_of(v));
  }
};

}  // namespace autosync
