// autosync/strategy/items.hpp — a strategy applied to a model: the list of sync items.
//
// An item is what one group synchronizes for one tensor: the whole tensor, or one shard of
// it (a range along one axis). Items carry their bytes on the wire (after compression, or
// touched rows for sparse gradients) and, for parameter_server groups, the server that
// holds them (placement resolved here, once). The cost model and the plan compiler both read
// items; nothing here depends on either. Every function is constexpr.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// A lambda or function called once per item or job on the cost model's hot path, inlined where
// the compiler allows it (GCC and clang; nvcc's front end and others ignore the hint).
#ifndef AUTOSYNC_ALWAYS_INLINE
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define AUTOSYNC_ALWAYS_INLINE __attribute__((always_inline))
#else
#define AUTOSYNC_ALWAYS_INLINE
#endif
#endif

namespace autosync {

struct sync_item {
  std::uint32_t tensor = 0;      // index into model.tensors
  std::uint32_t group = 0;       // index into strategy.groups
  std::int32_t axis = 0;         // the axis of [begin, end)
  std::int64_t begin = 0, end = 0;
  std::int64_t elements = 0;
  std::int64_t bytes = 0;        // dense bytes in the tensor's dtype
  std::int64_t wire_bytes = 0;   // what one rank sends for this item (compressed / touched rows)
  std::int32_t server = -1;      // parameter_server: index into cluster.server_nodes()
  std::uint32_t ready = 0;       // the tensor's position in backward order (0 = ready first)
  bool sparse = false;
  double codec_flops = 0.0;      // encode + decode work of registered codecs and extension slots
};

// Bytes per element on the wire for a tensor of `type` under a compressor that sends `per` bytes
// per element (0: none): `per` for a floating tensor it shrinks, else the element's own size.
[[nodiscard]] constexpr double wire_per_element_at(dtype type, double per) noexcept {
  return shrinks(type, per) ? per : static_cast<double>(size_of(type));
}

// Bytes per element on the wire for `t` under built-in compressor `c` (the tensor's own size
// when c does not shrink it).
[[nodiscard]] constexpr double wire_per_element(const tensor& t, compression_id c) noexcept {
  const auto info = find_compression(c);
  return wire_per_element_at(t.type, info ? info->wire_bytes_per_element : 0.0);
}

// Bytes one rank sends for `elements` elements of `t` at `per` bytes per element (wire_per_element).
[[nodiscard]] constexpr std::int64_t wire_bytes_at(const tensor& t, std::int64_t elements, std::int64_t rows, double per) noexcept {
  if (!t.sparse) return static_cast<std::int64_t>(static_cast<double>(elements) * per + 0.5);
  // Sparse: touched rows (at least one) plus one 8-byte index per row.
  const double touched = std::max(1.0, static_cast<double>(rows) * t.sparse_density);
  const double row_elems = rows > 0 ? static_cast<double>(elements) / static_cast<double>(rows) : 0.0;
  return static_cast<std::int64_t>(touched * (row_elems * per + 8.0) + 0.5);
}

// An item's wire bytes at `per` bytes per element: its touched rows and their indices when `t` is
// sparse and the group sends touched rows (detail::group_codec::touched), else every element.
[[nodiscard]] constexpr std::int64_t item_wire_bytes(const tensor& t, std::int64_t elements, std::int64_t rows, double per,
                                                     bool touched) noexcept {
  return touched ? wire_bytes_at(t, elements, rows, per) : static_cast<std::int64_t>(static_cast<double>(elements) * per + 0.5);
}

// Bytes one rank sends for `elements` elements of `t` under compressor `c`.
[[nodiscard]] constexpr std::int64_t wire_bytes_of(const tensor& t, std::int64_t elements, std::int64_t rows,
                                                   compression_id c) noexcept {
  return wire_bytes_at(t, elements, rows, wire_per_element(t, c));
}

// The cost hook of the registry (registry/extensions.hpp): bytes one rank sends and the codec
// work for `elements` elements of `t` in group g at `ranks` ranks, when g uses a registered
// compressor or extension slots. Stages run as the executor runs them: the extension slots in
// slot-id order, then the compressor; a stage whose `applies` rejects the dtype passes the
// bytes through. Sparse tensors send touched rows (as wire_bytes_of) plus 8-byte indices.
struct codec_cost {
  std::int64_t wire_bytes = 0;
  double flops = 0.0;
};
// `strided`: the piece is a range along an axis >= 1 that is not the whole axis, so not one run
// of the tensor's memory; the executor packs it flat (no rows x cols matrix), and a
// shape-dependent compressor (tensor_wire_bytes: PowerSGD) prices it as a 1-D tensor.
[[nodiscard]] inline codec_cost extension_cost(const tensor& t, std::int64_t elements, std::int64_t rows, const group_desc& g, int ranks,
                                               bool strided = false) {
  const double dense = static_cast<double>(elements) * size_of(t.type);
  double bytes = dense, flops = 0.0;
  for (const auto& x : g.ext.v) {
    if (x.slot == 0) break;
    const auto* se = registry::find_slot(x.slot);
    if (!se || (se->applies && !se->applies(t.type))) continue;
    if (se->wire_bytes) bytes = se->wire_bytes(elements, t.type, ranks, x, bytes);
    if (se->flops_per_element) flops += se->flops_per_element(x) * static_cast<double>(elements);
  }
  if (is_extension_id(g.compression.id)) {
    const auto* e = registry::find_compression(g.compression.id);
    if (e && (!e->applies || e->applies(t.type))) {
      if (e->tensor_wire_bytes && strided) {
        tensor flat;
        flat.type = t.type;
        flat.shape = {elements};
        bytes = e->tensor_wire_bytes(flat, elements, ranks, g.compression.params, bytes);
      } else {
        bytes = e->tensor_wire_bytes ? e->tensor_wire_bytes(t, elements, ranks, g.compression.params, bytes)
                                     : e->wire_bytes(elements, t.type, ranks, g.compression.params, bytes);
      }
      if (e->flops_per_element) flops += e->flops_per_element(g.compression.params) * static_cast<double>(elements);
    }
  } else if (const auto info = find_compression(g.compression.id)) {  // a built-in compressor after the extension stages
    if (shrinks(t.type, info->wire_bytes_per_element))
      bytes *= info->wire_bytes_per_element / size_of(t.type);
  }
  if (!t.sparse) return {static_cast<std::int64_t>(bytes + 0.5), flops};
  const double touched = std::max(1.0, static_cast<double>(rows) * t.sparse_density);
  const double frac = rows > 0 ? touched / static_cast<double>(rows) : 1.0;
  return {static_cast<std::int64_t>(bytes * frac + touched * 8.0 + 0.5), flops * frac};
}

// Whether group g's codecs price a fused bucket as a whole: the executor runs a registered
// compressor and extension-slot codecs once per bucket piece of one dtype (exec/plan.hpp), on
// its elements packed, so a top-k bucket keeps ceil(density n) of all its n elements and an int8
// bucket has one header, where the sum of its tensors' prices counts one of each per tensor.
// True in an all_reduce or sharded group (a parameter-server or all-gather bucket is priced per
// item), unless the compressor prices each piece by its shape (tensor_wire_bytes: PowerSGD's
// matrices, which the plan keeps apart).
[[nodiscard]] inline bool priced_per_bucket(const group_desc& g) {
  if (g.architecture != architecture_kind::all_reduce && g.architecture != architecture_kind::sharded) return false;
  if (is_extension_id(g.compression.id)) {
    const auto* e = registry::find_compression(g.compression.id);
    return e != nullptr && !e->tensor_wire_bytes;
  }
  return !g.ext.empty();
}

// The bytes one rank sends for a bucket piece of `elements` dense elements of `type` in group g
// (priced_per_bucket(g)): extension_cost of the piece as one flat tensor.
[[nodiscard]] inline std::int64_t piece_wire_bytes(dtype type, std::int64_t elements, const group_desc& g, int ranks) {
  tensor flat;
  flat.type = type;
  flat.shape = {elements};
  return extension_cost(flat, elements, elements, g, ranks).wire_bytes;
}

namespace detail {

// What a group's codec does to its items' bytes, worked out once per group: `ext`, a registered
// compressor or extension slots (extension_cost prices each item); else `per`, the built-in
// compressor's wire bytes per element (0: none; wire_per_element_at applies it to a dtype).
// `touched`: a sparse tensor sends its touched rows and their indices (wire_bytes_at), which the
// executor does only for architecture all_gather on a host backend (one sparse_all_gather per
// segment); a parameter server pushes and pulls a sparse tensor's dense bytes, and so does the
// device backend's all_gather (one all-reduce of the bucket): expand_into clears it on an NCCL
// cluster.
struct group_codec {
  bool ext = false;
  bool touched = false;
  double per = 0.0;
};
[[nodiscard]] constexpr group_codec codec_of(const group_desc& g) {
  group_codec c;
  c.touched = g.architecture == architecture_kind::all_gather;
  // (not a const bool: its initializer would be manifestly constant-evaluated, and
  // is_constant_evaluated() true there)
  if (!std::is_constant_evaluated()) c.ext = is_extension_id(g.compression.id) || !g.ext.empty();
  if (!c.ext) {
    const auto info = find_compression(g.compression.id);
    c.per = info && info->wire_bytes_per_element > 0.0 ? info->wire_bytes_per_element : 0.0;
  }
  return c;
}

// The items of tensor ti's range [b, e) along `axis` in group g (number gi), its codec `gc`
// (codec_of(g)).
constexpr void add_items(std::vector<sync_item>& out, const model_spec& m, std::uint32_t ti, std::uint32_t ready,
                         const group_desc& g, std::uint32_t gi, std::int32_t axis, std::int64_t b, std::int64_t e, int ranks,
                         group_codec gc) {
  const auto& t = m.tensors[ti];
  const auto slice = t.slice_elements(static_cast<std::size_t>(axis));
  const bool ext = gc.ext;
  const double per = ext ? 0.0 : wire_per_element_at(t.type, gc.per);
  const std::int64_t esize = size_of(t.type);
  std::int32_t slice_axis = axis;
  std::int64_t slice_of_axis = slice;
  // the tensor's fields the items read, in locals: the items' stores cannot alias them
  const bool sparse = t.sparse;
  const std::int64_t rows0 = t.shape[0];
  auto push = [&](std::int32_t ax, std::int64_t pb, std::int64_t pe) AUTOSYNC_ALWAYS_INLINE {  // once per item: inlined
    if (ax != slice_axis) {
      slice_axis = ax;
      slice_of_axis = t.slice_elements(static_cast<std::size_t>(ax));
    }
    const std::int64_t elements = (pe - pb) * slice_of_axis;
    const std::int64_t rows = ax == 0 ? (pe - pb) : rows0;
    std::int64_t wire = 0;
    double codec_flops = 0.0;
    if (ext) {
      const auto c = extension_cost(t, elements, rows, g, ranks, ax != 0 && pe - pb != t.shape[static_cast<std::size_t>(ax)]);
      wire = c.wire_bytes;
      codec_flops = c.flops;
    } else {
      wire = item_wire_bytes(t, elements, rows, per, sparse && gc.touched);
    }
    out.push_back(sync_item{ti, gi, ax, pb, pe, elements, elements * esize, wire, -1, ready, sparse, codec_flops});
  };
  // even_shard(d, k, s) for s = 0..k-1 from lo, shard by shard (one division per tensor; none
  // for a tensor that stays whole, the most common case)
  auto shards = [&](std::int32_t ax, std::int64_t lo, std::int64_t d, std::int64_t k) AUTOSYNC_ALWAYS_INLINE {
    if (k == 1) {
      push(ax, lo, lo + d);
      return;
    }
    for (std::int64_t s = 0, base = d / k, extra = d % k; s < k; ++s) {
      const std::int64_t hi = lo + base + (s < extra ? 1 : 0);
      push(ax, lo, hi);
      lo = hi;
    }
  };
  switch (g.partitioner.kind) {
    case partitioner_kind::none: push(axis, b, e); break;
    case partitioner_kind::even: {
      const std::int32_t ax = g.partitioner.axis;
      if (ax < 0 || static_cast<std::size_t>(ax) >= t.shape.size())  // (validate() refuses it first; expand alone must not read past the shape)
        throw error("partitioner.axis", "axis " + std::to_string(ax) + " of tensor '" + t.name + "', which has " +
                                            std::to_string(t.shape.size()) + " axes");
      // A whole tensor (axis is its own) is cut along the partitioner's axis.
      const std::int64_t pb = (ax == axis) ? b : 0;
      const std::int64_t pe = (ax == axis) ? e : t.shape[static_cast<std::size_t>(ax)];
      const std::int64_t d = pe - pb;
      shards(ax, pb, d, std::min<std::int64_t>(g.partitioner.shards, d));
      break;
    }
    case partitioner_kind::by_bytes: {
      const std::int64_t d = e - b;
      shards(0, b, d, by_bytes_shards(d, static_cast<std::uint64_t>(slice) * size_of(t.type), g.partitioner.max_bytes));
      break;
    }
  }
}
constexpr void add_items(std::vector<sync_item>& out, const model_spec& m, std::uint32_t ti, std::uint32_t ready,
                         const group_desc& g, std::uint32_t gi, std::int32_t axis, std::int64_t b, std::int64_t e, int ranks = 0) {
  add_items(out, m, ti, ready, g, gi, axis, b, e, ranks, codec_of(g));
}
}  // namespace detail

// Per tensor of m: placement_name_hash of its name (the hashed placement's key, less the shard).
[[nodiscard]] constexpr std::vector<std::uint64_t> tensor_name_hashes(const model_spec& m) {
  std::vector<std::uint64_t> h(m.tensors.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = placement_name_hash(m.tensors[i].name);
  return h;
}

// expand() into `items` (cleared; its capacity is reused), given `ready[t]` = the position of
// tensor t in m.backward_order() and, optionally, `name_hash` = tensor_name_hashes(m): for
// evaluators that expand many strategies of one model (cost::evaluator) and must not sort,
// allocate or hash names per call. Without name_hash, hashed placement hashes each item's name.
constexpr void expand_into(std::vector<sync_item>& items, const model_spec& m, const cluster_spec& c, const strategy_desc& s,
                           const std::vector<std::uint32_t>& ready, std::span<const std::uint64_t> name_hash = {}) {
  items.clear();
  // assignment of each tensor, by forward index
  std::vector<const assignment*> by_tensor(m.tensors.size(), nullptr);
  for (std::size_t k = 0; k < s.assignments.size(); ++k) {
    const auto& a = s.assignments[k];
    if (k < m.tensors.size() && m.tensors[k].name == a.tensor) {  // the usual case: model order
      by_tensor[k] = &a;
      continue;
    }
    for (std::size_t i = 0; i < m.tensors.size(); ++i)
      if (m.tensors[i].name == a.tensor) { by_tensor[i] = &a; break; }
  }
  items.reserve(m.tensors.size());
  const int ranks = c.world_size();
  // Per group, once per call: its codec (detail::codec_of), and whether a whole tensor is one
  // plain item (no partitioner, no registered codec or extension slot). The plain item is
  // add_items' one item for partitioner none, written here with the same arithmetic: the cost
  // model expands every strategy it evaluates.
  // Likewise a dense tensor in a group whose partitioner is by_bytes (no registered codec or
  // extension slot): add_items' shards along axis 0, written here with the same arithmetic.
  std::vector<detail::group_codec> codec(s.groups.size());
  std::vector<std::uint8_t> plain(s.groups.size(), 0), by_bytes(s.groups.size(), 0);
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    codec[gi] = detail::codec_of(s.groups[gi]);
    if (c.backend == collective_backend::nccl) codec[gi].touched = false;  // the device backend all-reduces a sparse bucket
    plain[gi] = s.groups[gi].partitioner.kind == partitioner_kind::none && !codec[gi].ext ? 1 : 0;
    by_bytes[gi] = s.groups[gi].partitioner.kind == partitioner_kind::by_bytes && !codec[gi].ext ? 1 : 0;
  }
  for (std::uint32_t ti = 0; ti < m.tensors.size(); ++ti) {
    const auto* a = by_tensor[ti];
    if (a == nullptr) continue;
    const auto& t = m.tensors[ti];
    if (!a->split()) {
      const auto gi = static_cast<std::size_t>(a->group);
      if (plain[gi]) {
        const std::int64_t esize = size_of(t.type);
        auto& it = items.emplace_back();
        it.tensor = ti;
        it.group = static_cast<std::uint32_t>(gi);
        it.end = t.shape[0];
        it.elements = t.shape[0] * t.slice_elements(0);
        it.bytes = it.elements * esize;
        it.wire_bytes = item_wire_bytes(t, it.elements, t.shape[0], wire_per_element_at(t.type, codec[gi].per), codec[gi].touched);
        it.ready = ready[ti];
        it.sparse = t.sparse;
        continue;
      }
      if (by_bytes[gi] && !t.sparse) {
        const std::int64_t esize = size_of(t.type);
        const std::int64_t slice = t.slice_elements(0);
        const double per = wire_per_element_at(t.type, codec[gi].per);
        const std::int64_t d = t.shape[0];
        const std::int64_t k = detail::by_bytes_shards(d, static_cast<std::uint64_t>(slice) * static_cast<std::uint64_t>(esize),
                                                       s.groups[gi].partitioner.max_bytes);
        const std::int64_t base = k == 1 ? d : d / k, extra = k == 1 ? 0 : d % k;  // most tensors fit: no division
        for (std::int64_t sh = 0, lo = 0; sh < k; ++sh) {
          const std::int64_t hi = lo + base + (sh < extra ? 1 : 0);
          auto& it = items.emplace_back();
          it.tensor = ti;
          it.group = static_cast<std::uint32_t>(gi);
          it.begin = lo;
          it.end = hi;
          it.elements = (hi - lo) * slice;
          it.bytes = it.elements * esize;
          it.wire_bytes = static_cast<std::int64_t>(static_cast<double>(it.elements) * per + 0.5);
          it.ready = ready[ti];
          lo = hi;
        }
        continue;
      }
      detail::add_items(items, m, ti, ready[ti], s.groups[gi], static_cast<std::uint32_t>(gi), 0, 0, t.shape[0], ranks, codec[gi]);
    } else {
      const auto d = t.shape[static_cast<std::size_t>(a->split_axis)];
      const auto k = static_cast<std::int64_t>(a->shard_groups.size());
      for (std::int64_t sh = 0; sh < k; ++sh) {
        const auto r = even_shard(d, k, sh);
        const auto gi = a->shard_groups[static_cast<std::size_t>(sh)];
        detail::add_items(items, m, ti, ready[ti], s.groups[static_cast<std::size_t>(gi)], static_cast<std::uint32_t>(gi),
                          a->split_axis, r.begin, r.end, ranks, codec[static_cast<std::size_t>(gi)]);
      }
    }
  }

  // Placement of parameter-server items.
  if (!has_parameter_servers(s)) return;
  std::vector<double> bw;
  for (const auto& n : c.nodes) {
    const bool dedicated = c.has_dedicated_servers();
    if (n.server_only == dedicated) bw.push_back(n.nic_bandwidth());
  }
  const auto S = static_cast<std::int64_t>(bw.size());
  if (S == 0) return;
  std::vector<double> load(bw.size(), 0.0);
  std::vector<std::int64_t> rr(s.groups.size(), 0);
  std::vector<std::size_t> balanced;
  // per group: 0 when not a parameter server, else 1 + its placement kind
  std::vector<std::uint8_t> place(s.groups.size(), 0);
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi)
    if (s.groups[gi].architecture == architecture_kind::parameter_server)
      place[gi] = static_cast<std::uint8_t>(1 + static_cast<int>(s.groups[gi].placement.kind));
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& it = items[i];
    const auto p = place[it.group];
    if (p == 0) continue;
    switch (static_cast<placement_kind>(p - 1)) {
      case placement_kind::round_robin: {  // the group's k-th item to server k mod S (counted, not divided)
        auto& next = rr[it.group];
        it.server = static_cast<std::int32_t>(next);
        next = next + 1 == S ? 0 : next + 1;
        break;
      }
      case placement_kind::pinned: it.server = s.groups[it.group].placement.server; break;
      case placement_kind::hashed: {
        // shard index within its tensor: count earlier items of the same tensor
        std::uint64_t shard = 0;
        for (std::size_t j = i; j > 0 && items[j - 1].tensor == it.tensor; --j) ++shard;
        const std::uint64_t nh = it.tensor < name_hash.size() ? name_hash[it.tensor] : placement_name_hash(m.tensors[it.tensor].name);
        it.server = static_cast<std::int32_t>(placement_hash_of(nh, shard) % static_cast<std::uint64_t>(S));
        break;
      }
      case placement_kind::load_balanced: balanced.push_back(i); continue;
    }
    load[static_cast<std::size_t>(it.server)] += static_cast<double>(it.wire_bytes);
  }
  // Greedy least-loaded (relative to bandwidth), largest item first, ties by item order. `balanced`
  // is in item order, so items of equal wire bytes are already in tie order: with few distinct
  // sizes (a model's shards repeat a handful of shapes) the order is a counting sort by size,
  // largest first; otherwise a sort of (-wire bytes, index) pairs. The same order either way.
  // The same pass sums the shards' bytes in integers for the one-bandwidth path below (no chain
  // of floating-point adds), each at most `limit` and the sum at most twice it (exact below it;
  // wire bytes are >= 0, so the sum is below the limit only if every partial sum is).
  constexpr std::int64_t limit = 1'000'000'000'000;
  std::int64_t shard_bytes = 0, widest = 0;
  std::vector<std::size_t> order(balanced.size());
  {
    constexpr std::size_t few = 32;
    std::vector<std::int64_t> sizes;
    std::vector<std::uint8_t> kind(balanced.size());
    std::array<std::size_t, few> count{};  // per size (in order of appearance)
    std::size_t last = 0;
    bool counted = true;
    const sync_item* its = items.data();
    for (std::size_t k = 0; k < balanced.size(); ++k) {
      const auto w = its[balanced[k]].wire_bytes;
      widest = std::max(widest, w);
      shard_bytes = std::min(shard_bytes + std::min(w, limit), 2 * limit);  // saturated: never overflows
      if (!counted) continue;
      if (last >= sizes.size() || sizes[last] != w) {
        last = static_cast<std::size_t>(std::find(sizes.begin(), sizes.end(), w) - sizes.begin());
        if (last == sizes.size()) {
          if (sizes.size() == few) {
            counted = false;
            continue;
          }
          sizes.push_back(w);
        }
      }
      kind[k] = static_cast<std::uint8_t>(last);
      ++count[last];
    }
    if (counted) {
      std::array<std::size_t, few> rank{}, at{};  // a size's place from the largest; the next slot of its items
      for (std::size_t a = 0; a < sizes.size(); ++a)
        for (std::size_t b = 0; b < sizes.size(); ++b) rank[a] += sizes[b] > sizes[a] ? 1 : 0;  // sizes are distinct
      std::array<std::size_t, few> by_rank{};
      for (std::size_t a = 0; a < sizes.size(); ++a) by_rank[rank[a]] = count[a];
      std::array<std::size_t, few> start{};
      for (std::size_t r = 1; r < sizes.size(); ++r) start[r] = start[r - 1] + by_rank[r - 1];
      for (std::size_t a = 0; a < sizes.size(); ++a) at[a] = start[rank[a]];
      std::size_t* out = order.data();
      for (std::size_t k = 0; k < balanced.size(); ++k) out[at[kind[k]]++] = balanced[k];
    } else {
      std::vector<std::pair<std::int64_t, std::size_t>> pairs;
      pairs.reserve(balanced.size());
      for (auto i : balanced) pairs.emplace_back(-items[i].wire_bytes, i);
      std::sort(pairs.begin(), pairs.end());
      for (std::size_t k = 0; k < pairs.size(); ++k) order[k] = pairs[k].second;
    }
  }
  const bool one_bw = std::all_of(bw.begin(), bw.end(), [&](double v) { return v == bw[0]; });
  const std::size_t servers = load.size();
  sync_item* its = items.data();
  if (one_bw) {
    // Below 1e12 bytes in all, every load is an exact integer and no two sums load + w are within
    // 1e-12 of each other unless equal: the rule below picks the first least-loaded server, which
    // integers find without the rounding the loop below guards against (same servers, bit for bit).
    double total = 0.0;
    for (const double l : load) total += l;
    if (widest < limit && shard_bytes < limit && total < 1e12 && total + static_cast<double>(shard_bytes) < 1e12) {
      std::vector<std::int64_t> il(servers);
      std::int64_t* loads = il.data();
      for (std::size_t sv = 0; sv < servers; ++sv) loads[sv] = static_cast<std::int64_t>(load[sv]);
      for (const auto i : order) {
        std::size_t best = 0;
        std::int64_t least = loads[0];
        for (std::size_t sv = 1; sv < servers; ++sv)
          if (loads[sv] < least) {
            least = loads[sv];
            best = sv;
          }
        its[i].server = static_cast<std::int32_t>(best);
        loads[best] = least + its[i].wire_bytes;
      }
      return;
    }
  }
  double* ld = load.data();  // in locals: the stores below cannot alias them
  const double* bws = bw.data();
  for (const auto i : order) {
    auto& it = its[i];
    const double w = static_cast<double>(it.wire_bytes);
    std::size_t best = 0;
    if (one_bw) {
      // One bandwidth: (load + w) / bw is monotone in load + w, so the smallest quotient is that of
      // the least load; the first server whose exact quotient equals it wins, as in the general
      // loop (a load more than 1e-12 above the least divides to a larger quotient: only those near it
      // are divided). The same servers, bit for bit, with about one division per item, not one per server.
      // A server whose load + w is the least itself wins without a division (its quotient is q).
      double least = ld[0] + w;
      for (std::size_t sv = 1; sv < servers; ++sv) least = std::min(least, ld[sv] + w);
      for (std::size_t sv = 0; sv < servers; ++sv) {
        const double x = ld[sv] + w;
        if (x == least || (x - least <= least * 1e-12 && x / bws[0] == least / bws[0])) {
          best = sv;
          break;
        }
      }
    } else {
      double best_t = 0;
      for (std::size_t sv = 0; sv < servers; ++sv) {
        const double t = (ld[sv] + w) / bws[sv];
        if (sv == 0 || t < best_t) { best = sv; best_t = t; }
      }
    }
    it.server = static_cast<std::int32_t>(best);
    ld[best] += w;
  }
}

// The strategy's items in (forward tensor order, shard order), servers resolved. The strategy
// must be valid for the model and cluster (strategy_desc::validate).
[[nodiscard]] constexpr std::vector<sync_item> expand(const model_spec& m, const cluster_spec& c, const strategy_desc& s) {
  const auto order = m.backward_order();
  std::vector<std::uint32_t> ready(m.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) ready[order[i]] = static_cast<std::uint32_t>(i);
  std::vector<sync_item> items;
  expand_into(items, m, c, s, ready);
  return items;
}

}  // namespace autosync
