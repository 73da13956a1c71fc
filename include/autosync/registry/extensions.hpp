// autosync/registry/extensions.hpp — compressors and slots registered by code outside include/.
//
// A user adds, in their own files and with no change under include/:
//   - a compression value: autosync::registry::add_compression(compression_entry{...})
//   - a whole slot:        autosync::registry::add_slot(slot_entry{...})
// usually from a namespace-scope `inline const autosync::registry::registrar r{entry};` so the
// entry exists before main() runs. Entries are keyed by name; their ids are stable_id(name)
// (registry/values.hpp), so JSON, hashes and plans never depend on registration order.
//
// What an entry says, and who reads it:
//   kinds, params, defaults    JSON read/write of a group (io/json/strategy.hpp), validate_group
//   cpp_type, header           emit_header: the policy type it writes, and the header to include
//   alternatives               the search's one-aspect proposals (search/space.hpp)
//   wire_bytes, flops          the cost model: bytes one rank sends, encode+decode work
//                              (strategy/items.hpp wire_bytes_of, cost/timeline_steps.hpp)
//   make_codec                 the MPI executor: a per-bucket transform before the collective
//                              and its inverse after (exec/host_buckets.hpp)
//   check                      run-time rules against the other slots (validate_group)
// Compile-time rules of an extension slot live in its policy types (a static_assert in the
// policy, or a requires-clause on it). Registration is not thread-safe: do it during static
// initialization or before starting threads; lookups afterwards are read-only.
#pragma once

#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/compression.hpp>
#include <autosync/registry/values.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autosync {

struct group_desc;

namespace registry {

// One numeric parameter of a kind: its JSON key, default and accepted range.
struct param_spec {
  std::string name;
  double default_value = 0.0;
  double min = 0.0, max = 1e300;
  bool integer = false;
};

// What the collective runs on after a codec's encode: `elements` values of `type` at `data`.
struct wire_view {
  unsigned char* data = nullptr;
  std::size_t elements = 0;
  dtype type = dtype::f32;
};

// A per-bucket codec: one function object (its state, such as a wire buffer or an
// error-feedback residual, lives in it and persists across iterations), called twice per run:
//   codec(codec_step::encode, {}, data, n, type, ranks)  -> what the collective sums (its own
//                                                           buffer, or `data` rewritten in place)
//   codec(codec_step::decode, wire, data, n, type, ranks) -> writes the bucket's sum into `data`
// Every rank runs the same codecs in the same order. (A function object rather than a class
// hierarchy: no <memory> in a header that every strategy reader includes.)
enum class codec_step : std::uint8_t { encode, decode };
using bucket_codec = std::function<wire_view(codec_step, const wire_view& wire, unsigned char* data, std::size_t elements, dtype type, int ranks)>;
using codec_factory = std::function<bucket_codec(const param_list&, dtype, std::size_t elements)>;

// Bytes one rank sends for `elements` elements of `type` at `ranks` ranks, given the bytes
// before this stage (`bytes_in`: the dtype's size times elements, or what an earlier stage left).
using wire_bytes_fn = std::function<double(std::int64_t elements, dtype type, int ranks, const param_list&, double bytes_in)>;

struct compression_entry {
  std::string name;                     // its JSON name, e.g. "int16"
  std::vector<param_spec> params;       // {"kind": name, <param>: value, ...}
  bool lossless = false;                // lossy compressors are proposed only with allow_lossy
  std::function<bool(dtype)> applies;   // the gradient dtypes it encodes (others travel as they are)
  wire_bytes_fn wire_bytes;             // required
  std::function<double(const param_list&)> flops_per_element;  // encode + decode; empty: 0
  codec_factory make_codec;             // required for execution
  std::function<std::string(const param_list&)> cpp_type;     // emit: the policy type it spells
  std::string header;                   // emit: #include <header> for that type
};

struct kind_spec {
  std::string name;
  std::vector<param_spec> params;
};

struct slot_entry {
  std::string name;                     // its JSON key in a group, e.g. "prescale"
  std::vector<kind_spec> kinds;         // kinds[0] with its default params is the slot's default
  std::function<bool(dtype)> applies;   // the gradient dtypes it transforms; empty: every dtype
  // cost: the bytes after this stage (empty: unchanged) and the work per element (empty: 0)
  std::function<double(std::int64_t elements, dtype type, int ranks, const ext_value&, double bytes_in)> wire_bytes;
  std::function<double(const ext_value&)> flops_per_element;
  // executor: the per-bucket transform (empty: nothing runs for this slot)
  std::function<bucket_codec(const ext_value&, dtype, std::size_t elements)> make_codec;
  // search: the values proposed for a group (empty: every kind with its default parameters)
  std::function<std::vector<ext_value>(const group_desc&)> alternatives;
  // validation: a message when the value does not go with the group's other slots ("" = fine)
  std::function<std::string(const group_desc&, const ext_value&)> check;
  // emit: the policy type of a value, and the header that declares it
  std::function<std::string(const ext_value&)> cpp_type;
  std::string header;
};

namespace detail {
inline std::vector<compression_entry>& compression_table() {
  static std::vector<compression_entry> t;
  return t;
}
inline std::vector<slot_entry>& slot_table() {
  static std::vector<slot_entry> t;
  return t;
}
inline void check_params(const std::vector<param_spec>& ps, const std::string& what) {
  if (ps.size() > max_params)
    throw error(what, "has " + std::to_string(ps.size()) + " parameters; at most " + std::to_string(max_params) + " are supported");
}
}  // namespace detail

// Registers a compressor. Throws autosync::error when the name is empty, taken by a built-in or
// another entry, or the entry lacks wire_bytes.
void add_compression(compression_entry e);
// Registers a slot. Throws when the name is empty or taken, or it has no kinds.
void add_slot(slot_entry e);

// Registration at static-initialization time: `inline const registrar r{entry};`.
struct registrar {
  explicit registrar(compression_entry e) { add_compression(std::move(e)); }
  explicit registrar(slot_entry e) { add_slot(std::move(e)); }
};

[[nodiscard]] inline const std::vector<compression_entry>& compressions() noexcept { return detail::compression_table(); }
[[nodiscard]] inline const std::vector<slot_entry>& slots() noexcept { return detail::slot_table(); }

[[nodiscard]] inline const compression_entry* find_compression(compression_id id) noexcept {
  for (const auto& e : detail::compression_table())
    if (stable_id(e.name) == id) return &e;
  return nullptr;
}
[[nodiscard]] inline const compression_entry* find_compression(std::string_view name) noexcept {
  for (const auto& e : detail::compression_table())
    if (e.name == name) return &e;
  return nullptr;
}
[[nodiscard]] inline const slot_entry* find_slot(std::uint32_t id) noexcept {
  for (const auto& e : detail::slot_table())
    if (stable_id(e.name) == id) return &e;
  return nullptr;
}
[[nodiscard]] inline const slot_entry* find_slot(std::string_view name) noexcept {
  for (const auto& e : detail::slot_table())
    if (e.name == name) return &e;
  return nullptr;
}
[[nodiscard]] inline const kind_spec* find_kind(const slot_entry& s, std::uint32_t id) noexcept {
  for (const auto& k : s.kinds)
    if (stable_id(k.name) == id) return &k;
  return nullptr;
}
[[nodiscard]] inline const kind_spec* find_kind(const slot_entry& s, std::string_view name) noexcept {
  for (const auto& k : s.kinds)
    if (k.name == name) return &k;
  return nullptr;
}

// The parameters with their defaults.
[[nodiscard]] inline param_list defaults(const std::vector<param_spec>& ps) noexcept {
  param_list p{};
  for (std::size_t i = 0; i < ps.size() && i < p.size(); ++i) p[i] = ps[i].default_value;
  return p;
}
// A slot's default value (its first kind, default parameters).
[[nodiscard]] inline ext_value default_value(const slot_entry& s) noexcept {
  return ext_value{stable_id(s.name), stable_id(s.kinds.front().name), defaults(s.kinds.front().params)};
}
// A value of slot `s`: kind by name, parameters in declaration order (missing ones default).
[[nodiscard]] inline ext_value value_of(const slot_entry& s, const kind_spec& k, const param_list& p) noexcept {
  return ext_value{stable_id(s.name), stable_id(k.name), p};
}

// "" when p fits the specs, else "<param>: <why>".
[[nodiscard]] inline std::string param_problem(const std::vector<param_spec>& specs, const param_list& p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i >= specs.size()) {
      if (p[i] != 0.0) return "params[" + std::to_string(i) + "]: this kind has only " + std::to_string(specs.size()) + " parameter(s)";
      continue;
    }
    const auto& s = specs[i];
    if (!(p[i] >= s.min && p[i] <= s.max))
      return s.name + ": " + std::to_string(p[i]) + " is outside [" + std::to_string(s.min) + ", " + std::to_string(s.max) + "]";
    if (s.integer && p[i] != static_cast<double>(static_cast<std::int64_t>(p[i]))) return s.name + ": must be an integer";
  }
  return {};
}

[[nodiscard]] inline std::string compression_names() {
  std::string r;
  for (const auto& e : detail::compression_table()) r += (r.empty() ? "" : ", ") + e.name;
  return r;
}

// Whether a group's registered codecs act on a bucket of dtype t (what plan compilation marks
// as plan_bucket::hooked). Throws naming the compressor or slot when one has no executor codec.
[[nodiscard]] inline bool has_codecs(const compression_value& c, const ext_values& ext, dtype t) {
  bool any = false;
  for (const auto& x : ext.v) {
    if (x.slot == 0) break;
    const auto* se = find_slot(x.slot);
    if (!se) throw error("ext", "slot id " + std::to_string(x.slot) + " is not registered in this process");
    if (se->make_codec && (!se->applies || se->applies(t))) any = true;
  }
  if (is_extension_id(c.id)) {
    const auto* e = find_compression(c.id);
    if (!e) throw error("compression", "compressor id " + std::to_string(c.id) + " is not registered in this process");
    if (!e->applies || e->applies(t)) {
      if (!e->make_codec) throw error("compression", "registered compressor '" + e->name + "' has no make_codec: it cannot run");
      any = true;
    }
  }
  return any;
}

inline void add_compression(compression_entry e) {
  if (e.name.empty()) throw error("registry.compression", "an extension compressor needs a name");
  if (::autosync::parse_compression(e.name)) throw error("registry.compression." + e.name, "is a built-in compressor");
  if (!e.wire_bytes) throw error("registry.compression." + e.name, "needs wire_bytes (the cost model reads it)");
  detail::check_params(e.params, "registry.compression." + e.name);
  for (const auto& o : detail::compression_table())
    if (stable_id(o.name) == stable_id(e.name))
      throw error("registry.compression." + e.name, o.name == e.name ? "is registered twice" : "its id collides with '" + o.name + "'");
  detail::compression_table().push_back(std::move(e));
}

inline void add_slot(slot_entry e) {
  if (e.name.empty()) throw error("registry.slot", "an extension slot needs a name");
  if (e.kinds.empty()) throw error("registry.slot." + e.name, "an extension slot needs at least one kind (the first is its default)");
  const bool core = []<class... Slots>(type_list<Slots...>, std::string_view n) { return ((Slots::name == n) || ...); }(slot_list{}, e.name);
  if (core) throw error("registry.slot." + e.name, "is a core slot");
  for (const auto& k : e.kinds) detail::check_params(k.params, "registry.slot." + e.name + "." + k.name);
  for (const auto& o : detail::slot_table())
    if (stable_id(o.name) == stable_id(e.name))
      throw error("registry.slot." + e.name, o.name == e.name ? "is registered twice" : "its id collides with slot '" + o.name + "'");
  detail::slot_table().push_back(std::move(e));
}

}  // namespace registry

// ---- compressors, built-in and registered, by value ---------------------------------------------

// Its name ("?" when unknown).
[[nodiscard]] inline std::string compression_name(const compression_value& c) {
  if (!is_extension_id(c.id)) {
    const auto i = find_compression(c.id);
    return i ? std::string(i->name) : std::string("?");
  }
  const auto* e = registry::find_compression(c.id);
  return e ? e->name : std::string("?");
}
// Every compressor's name, built-ins first: for messages.
[[nodiscard]] inline std::string all_compression_names() {
  std::string r = compression_names_list();
  for (const auto& e : registry::compressions()) r += ", " + e.name;
  return r;
}
// Whether a compressor is lossless (unknown ids: false).
[[nodiscard]] inline bool compression_lossless(compression_id id) noexcept {
  if (!is_extension_id(id)) {
    const auto i = find_compression(id);
    return i && i->lossless;
  }
  const auto* e = registry::find_compression(id);
  return e && e->lossless;
}

}  // namespace autosync
