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
//   make_exchange, exchange    the MPI executor, for a compressor whose payloads the network
//                              cannot sum: a per-bucket object that replaces the collective
//                              (see "Compressors that own their exchange" below)
//   tensor_wire_bytes          the cost model, when the bytes depend on the tensor's shape (a
//                              strided piece, a range along an axis >= 1 that is not the whole
//                              axis, comes as a 1-D tensor: the executor packs it as a flat run)
//   nominal_bits, alternatives the search's lossy budget and its proposals (search/constraints.hpp)
//   check                      run-time rules against the other slots (validate_group)
// Compile-time rules of an extension slot live in its policy types (a static_assert in the
// policy, or a requires-clause on it). Registration is not thread-safe: do it during static
// initialization or before starting threads; lookups afterwards are read-only.
#pragma once

#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/policy/compression.hpp>
#include <autosync/registry/exchange_state.hpp>
#include <autosync/registry/values.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
// hierarchy: no <memory> in a header that every strategy reader includes.) A codec's state is
// opaque to the executor: save_state() does not hold it, so a codec whose state must survive a
// checkpoint (error feedback across a restart) is written as an exchange (make_exchange below),
// whose save and load are part of the executor's state.
enum class codec_step : std::uint8_t { encode, decode };
using bucket_codec = std::function<wire_view(codec_step, const wire_view& wire, unsigned char* data, std::size_t elements, dtype type, int ranks)>;
using codec_factory = std::function<bucket_codec(const param_list&, dtype, std::size_t elements)>;

// Bytes one rank sends for `elements` elements of `type` at `ranks` ranks, given the bytes
// before this stage (`bytes_in`: the dtype's size times elements, or what an earlier stage left).
using wire_bytes_fn = std::function<double(std::int64_t elements, dtype type, int ranks, const param_list&, double bytes_in)>;

// ---- Compressors that own their exchange -------------------------------------------------------
//
// A codec (make_codec) turns a bucket into something the bucket's own collective SUMS. That
// fits fixed-point and half-precision codecs, not quantized or sparse payloads: int8 min-max
// needs a reduce-scatter of quantized shards with a dequantize-sum-requantize step, QSGD and
// top-k an all-gather of payloads, PowerSGD two dependent all-reduces with an orthogonalization
// between. Such a compressor registers `make_exchange`: a per-bucket object built once (its
// state persists across iterations: error-feedback residuals, PowerSGD's Q, an iteration count
// that keys a random stream every rank derives alike) and called once per iteration with the
// packed bucket and an exchange_comm, the few collectives any backend offers, on the world's
// ranks. It leaves the SUM over ranks in the bucket (the executor averages afterwards when asked).
// Extension-slot codecs still run around it. The cost model reads `exchange` to price it:
//
//   exchange          what one rank sends for a payload of c bytes        all-reduce equivalent S
//   all_reduce        2 (p - 1) / p c        (ring)                        c
//   two_all_reduces   2 (p - 1) / p c        (c: both buffers together)    c
//   scatter_gather    2 (p - 1) / p c        (all-to-all + all-gather)     c
//   all_gather        (p - 1) c              (linear in p)                 p c / 2
//
// wire_bytes (and tensor_wire_bytes) return S, the bytes of a ring all-reduce that sends what
// the exchange sends (allreduce_equivalent below), so every collective model prices it.
enum class exchange_kind : std::uint8_t { all_reduce, two_all_reduces, scatter_gather, all_gather };

[[nodiscard]] constexpr std::string_view name_of(exchange_kind k) noexcept {
  switch (k) {
    case exchange_kind::two_all_reduces: return "two all-reduces";
    case exchange_kind::scatter_gather: return "scatter-gather";
    case exchange_kind::all_gather: return "all-gather";
    default: return "all-reduce";
  }
}
// The bytes S of a ring all-reduce that sends, per rank, what `k` sends for a payload of
// `payload` bytes per rank (the table above).
[[nodiscard]] constexpr double allreduce_equivalent(exchange_kind k, double payload, int ranks) noexcept {
  return k == exchange_kind::all_gather ? payload * static_cast<double>(ranks < 1 ? 1 : ranks) / 2.0 : payload;
}

// The collectives an exchange may call, on every rank of the world in the same order. Bytes
// travel as bytes (a backend without a byte type pads to whole words; the padding is unread).
class exchange_comm {
 public:
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  virtual void all_reduce(float* x, std::size_t n) = 0;                                // in place, sum
  virtual void all_gather(const void* send, void* recv, std::size_t bytes) = 0;        // recv: size() x bytes
  virtual void all_to_all(const void* send, void* recv, std::size_t bytes) = 0;        // block r of send to rank r
 protected:
  exchange_comm() = default;
  exchange_comm(const exchange_comm&) = default;
  exchange_comm& operator=(const exchange_comm&) = default;
  ~exchange_comm() = default;
};

// A piece of the packed bucket that is a matrix: `rows` x `cols` row-major elements at `offset`
// (a whole tensor viewed as shape[0] x the rest, or a block of its rows). Elements of the bucket
// that no matrix covers are 1-D pieces.
struct bucket_matrix {
  std::size_t offset = 0, rows = 0, cols = 0;
};
struct exchange_context {
  std::size_t elements = 0;              // the packed bucket's length
  dtype type = dtype::f32;
  std::vector<bucket_matrix> matrices;   // in bucket order, non-overlapping
  std::uint64_t seed = 0;                // the bucket's identity: the same on every rank
  // Where an exchange reports what it decided (e.g. Accordion's level and ratio): the executor
  // keeps each note with its bucket and iteration, and trial records carry them. May be empty.
  std::function<void(std::string_view key, double value)> note;
};
// Called once per iteration: data holds this rank's packed bucket (`elements` of the context's
// type) and, on return, the sum over the world's ranks. Built from any callable F with that
// call; when F also has
//     void save(state_writer&) const;   void load(state_reader&);
// (registry/exchange_state.hpp) its state can be saved and restored (stateful() is true), so a
// job that restarts from a checkpoint resumes with the same residuals, Q, levels and counters.
// A load reads into an exchange built for the same bucket and parameters, and must consume
// exactly what save wrote.
class bucket_exchange {
 public:
  bucket_exchange() = default;
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, bucket_exchange> && std::is_invocable_v<std::remove_cvref_t<F>&, unsigned char*, exchange_comm&>)
  bucket_exchange(F&& f)  // NOLINT(google-explicit-constructor): any exchange callable converts
      : fn_([g = std::remove_cvref_t<F>(std::forward<F>(f))](call& c) mutable {
          using G = std::remove_cvref_t<F>;
          constexpr bool has_state = requires(const G& cg, G& mg, state_writer& w, state_reader& r) {
            cg.save(w);
            mg.load(r);
          };
          switch (c.op) {
            case call::op_t::run: g(c.data, *c.comm); break;
            case call::op_t::save:
              if constexpr (has_state) g.save(*c.out);
              break;
            case call::op_t::load:
              if constexpr (has_state) g.load(*c.in);
              break;
            case call::op_t::query: c.stateful = has_state; break;
          }
        }) {}

  void operator()(unsigned char* data, exchange_comm& comm) const {
    call c{call::op_t::run, data, &comm};
    fn_(c);
  }
  explicit operator bool() const noexcept { return static_cast<bool>(fn_); }
  // Whether its state can be saved (an exchange without state saves nothing).
  [[nodiscard]] bool stateful() const {
    call c{call::op_t::query};
    if (fn_) fn_(c);
    return c.stateful;
  }
  void save(state_writer& w) const {
    call c{call::op_t::save};
    c.out = &w;
    if (fn_) fn_(c);
  }
  void load(state_reader& r) const {
    call c{call::op_t::load};
    c.in = &r;
    if (fn_) fn_(c);
  }

 private:
  struct call {
    enum class op_t : std::uint8_t { run, save, load, query } op;
    unsigned char* data = nullptr;
    exchange_comm* comm = nullptr;
    state_writer* out = nullptr;
    state_reader* in = nullptr;
    bool stateful = false;
  };
  std::function<void(call&)> fn_;
};
using exchange_factory = std::function<bucket_exchange(const param_list&, const exchange_context&)>;

// Bytes (the all-reduce equivalent) for `elements` elements of tensor t, shape known.
using tensor_wire_bytes_fn = std::function<double(const tensor& t, std::int64_t elements, int ranks, const param_list&, double bytes_in)>;

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
  // Compressors that own their exchange (above): the exchange replaces the bucket's collective.
  exchange_kind exchange = exchange_kind::all_reduce;
  exchange_factory make_exchange;
  tensor_wire_bytes_fn tensor_wire_bytes;  // preferred over wire_bytes by the cost model when set
  // Bits per element of a large f32 tensor (a square 1024 x 1024 matrix where the shape
  // matters): the lossy budget's compression ratio is 32 / nominal_bits. Empty: 32 (ratio 1).
  std::function<double(const param_list&)> nominal_bits;
  // The parameter sets the search proposes (empty: the defaults only).
  std::vector<param_list> alternatives;
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
// The registered compressor of id when it owns its exchange (make_exchange): it replaces a
// group's collective with its own exchange among all ranks, so the group's architecture and
// topology run nothing (strategy/descriptor.hpp validate_group: all_reduce or sharded, ring).
[[nodiscard]] inline const compression_entry* exchange_owner(compression_id id) noexcept {
  if (!is_extension_id(id)) return nullptr;
  const auto* e = find_compression(id);
  return e && e->make_exchange ? e : nullptr;
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

using autosync::number_text;

// "" when p fits the specs, else "<param>: <why>".
[[nodiscard]] inline std::string param_problem(const std::vector<param_spec>& specs, const param_list& p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i >= specs.size()) {
      if (p[i] != 0.0) return "params[" + std::to_string(i) + "]: this kind has only " + std::to_string(specs.size()) + " parameter(s)";
      continue;
    }
    const auto& s = specs[i];
    if (!(p[i] >= s.min && p[i] <= s.max))
      return s.name + ": " + number_text(p[i]) + " is outside [" + number_text(s.min) + ", " + number_text(s.max) + "]";
    if (s.integer && p[i] != static_cast<double>(static_cast<std::int64_t>(p[i]))) return s.name + ": must be an integer";
  }
  return {};
}

// The parameter sets the search proposes for a compressor: its alternatives, else its defaults.
[[nodiscard]] inline std::vector<param_list> proposed_params(const compression_entry& e) {
  return e.alternatives.empty() ? std::vector<param_list>{defaults(e.params)} : e.alternatives;
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
      if (!e->make_codec && !e->make_exchange)
        throw error("compression", "registered compressor '" + e->name + "' has no make_codec or make_exchange: it cannot run");
      any = true;
    }
  }
  return any;
}

inline void add_compression(compression_entry e) {
  if (e.name.empty()) throw error("registry.compression", "an extension compressor needs a name");
  if (::autosync::parse_compression(e.name)) throw error("registry.compression." + e.name, "is a built-in compressor");
  if (!e.wire_bytes && !e.tensor_wire_bytes) throw error("registry.compression." + e.name, "needs wire_bytes (the cost model reads it)");
  for (const auto& a : e.alternatives)
    if (const auto why = param_problem(e.params, a); !why.empty()) throw error("registry.compression." + e.name + ".alternatives", why);
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
