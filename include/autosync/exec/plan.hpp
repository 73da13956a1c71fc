// autosync/exec/plan.hpp — what an executor runs every iteration, compiled once from a strategy.
//
// compile_plan(model, cluster, strategy, layout) is a pure function: every rank compiles the
// same plan from the same inputs (the executor's setup() checks that they had the same
// inputs). No backend is involved.
//
//   strategy ──expand──> items ──fuse_buckets──> fusion buckets ──split──> plan buckets
//   (groups)          (tensor or    (per group, in ready order,         (one dtype and, for
//                      shard)        the fusion caps: the rule of        PS, one server each)
//                                    strategy/fusion.hpp, which the
//                                    cost model prices)
//
// A plan bucket is one communication step on one fused buffer:
//
//   segments (tensor t, offset, block, stride, blocks)         fused buffer
//   t3 [ whole tensor, contiguous        ] ─────────────────> [ t3 ........ | t7 s1 | t7 s1 | ... ]
//   t7 [ a b | c d | e f ]  axis-1 shard {b,d,f}:  offset 1,    fused offset 0       12 ...
//                           block 1, stride 2, blocks 3  ───────────────────────────^
//
// An axis-k shard [b, e) of a tensor of shape d0 x .. x dn is `outer` = d0..d(k-1) blocks of
// (e - b) * inner elements (inner = d(k+1)..dn), `stride` = dk * inner apart, starting at
// b * inner. Axis-0 shards and whole tensors are one block (contiguous); adjacent contiguous
// pieces of one tensor in one bucket are merged. A bucket that is a single contiguous segment
// and travels uncompressed is reduced in place in the user's buffer; others are packed into
// the fused buffer and unpacked after.
//
// Step kinds (exec/collectives.hpp realizes them over the backend):
//   all_reduce         all_reduce(topology)
//   sharded            reduce_scatter(topology) then all_gather(topology): ZeRO-2's gradient
//                      path, every rank ends with the whole sum
//   parameter_server   ps_push_pull(server_rank, local replication)
//   sparse_all_gather  per segment: the touched rows (rows with a non-zero element) of every
//                      rank, summed (Horovod's sparse path)
// Compression: a floating bucket larger than the compressor's wire format travels as f16 or
// bf16 (exec/compress.hpp wire_dtype); others travel as they are.
//
// Server placement: items carry a server index s of cluster.server_nodes() (placement is
// resolved by autosync::expand). The plan maps s to a rank of the `layout` (the ranks actually
// running: world_size ranks, ranks_per_node consecutive ranks per node, N = world_size /
// ranks_per_node nodes):
//   co-located servers (no server_only node): server s lives on node s mod N, on its first
//     rank (s * ranks_per_node when the layout matches the cluster: the first rank of the s-th
//     server node);
//   dedicated server nodes (S of them): server s -> rank floor(s * world_size / S) (the ranks
//     stand in for the server nodes, spread evenly over the job).
//
// Order: buckets are numbered in fuse_buckets' ready order (ties: creation order; the cost
// model's numbers), the pieces of one split fusion bucket in first-appearance order. The fifo
// order is that number.
// `key` orders what the executor launches among buckets that are ready: priority groups first,
// the lowest forward tensor index first (ByteScheduler), then fifo buckets by number —
// cost/estimate.hpp step 6.
#pragma once

#include <autosync/cluster.hpp>
#include <autosync/error.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/exec/hash.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/fusion.hpp>
#include <autosync/strategy/items.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace autosync::exec {

// The ranks that run the plan.
struct layout {
  int world_size = 1;
  int ranks_per_node = 1;
  [[nodiscard]] constexpr int nodes() const noexcept { return ranks_per_node > 0 ? world_size / ranks_per_node : 0; }
  friend constexpr bool operator==(const layout&, const layout&) = default;
};

enum class step_kind : std::uint8_t { all_reduce, sharded, parameter_server, sparse_all_gather };

[[nodiscard]] constexpr std::string_view name_of(step_kind k) noexcept {
  constexpr std::array<std::string_view, 4> names{"all_reduce", "sharded", "parameter_server", "sparse_all_gather"};
  return names[static_cast<std::size_t>(k)];
}

// A strided piece of one tensor: `blocks` blocks of `block` elements, `stride` apart, from
// element `offset` of the tensor (row-major); at `fused` in the bucket's fused buffer.
struct segment {
  std::uint32_t tensor = 0;
  std::int64_t offset = 0;
  std::int64_t block = 0;
  std::int64_t stride = 0;
  std::int64_t blocks = 1;
  std::int64_t fused = 0;
  std::int64_t row_elements = 0;  // sparse_all_gather: elements per axis-0 row (0 otherwise)
  [[nodiscard]] constexpr std::int64_t elements() const noexcept { return block * blocks; }
  [[nodiscard]] constexpr bool contiguous() const noexcept { return blocks == 1; }
  friend constexpr bool operator==(const segment&, const segment&) = default;
};

struct plan_bucket {
  std::uint32_t group = 0;          // strategy group
  std::uint32_t source = 0;         // the fusion bucket it comes from (fuse_buckets' number)
  step_kind kind = step_kind::all_reduce;
  topology_value topology{};        // all_reduce / sharded
  std::int32_t server = -1;         // parameter_server: index into cluster.server_nodes()
  std::int32_t server_rank = -1;    // parameter_server: the rank that sums
  bool local = false;               // parameter_server: local replication
  dtype type = dtype::f32;          // every segment's tensor has this dtype
  compression_value compression{};  // the group's compressor
  ext_values ext{};                 // the group's extension slots (registry/extensions.hpp)
  bool hooked = false;              // registered codecs run before/after its collective (exec/extension_codecs.hpp)
  bool compressed = false;          // travels as `wire` (else as `type`)
  dtype wire = dtype::f32;
  std::vector<segment> segments;
  std::int64_t elements = 0;        // sum of the segments: the fused buffer's length
  std::uint32_t tensors = 0;        // distinct tensors it waits for
  std::uint32_t ready_position = 0; // backward-order position of its last tensor
  std::uint32_t min_tensor = 0;     // lowest forward tensor index
  bool priority = false;            // the group's schedule is priority
  std::uint64_t key = 0;            // launch order among ready buckets (lower first)
  [[nodiscard]] constexpr bool in_place() const noexcept {
    return !compressed && segments.size() == 1 && segments[0].contiguous();
  }
  friend constexpr bool operator==(const plan_bucket&, const plan_bucket&) = default;
};

struct plan {
  layout ranks{};
  std::vector<plan_bucket> buckets;                 // numbered in fifo order
  std::vector<std::vector<std::uint32_t>> feeds;    // per tensor: the buckets it feeds, ascending
  std::vector<std::int64_t> tensor_elements;        // per tensor: its element count
  std::vector<dtype> tensor_types;                  // per tensor: its dtype
  std::vector<std::int64_t> tensor_rows;            // per tensor: shape[0] (1 for a scalar): its matrix view
  std::uint64_t model_fingerprint = 0;              // exec::model_hash
  std::uint64_t strategy_fingerprint = 0;           // exec::strategy_hash
  std::vector<std::uint64_t> group_fingerprints;    // exec::group_hashes
  bool any_priority = false;
  friend constexpr bool operator==(const plan&, const plan&) = default;
};

namespace detail {

// The segment of item `it` (an axis-k range of a tensor).
[[nodiscard]] constexpr segment segment_of(const tensor& t, const sync_item& it) noexcept {
  const auto k = static_cast<std::size_t>(it.axis);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    if (d < k) outer *= t.shape[d];
    if (d > k) inner *= t.shape[d];
  }
  segment s;
  s.tensor = it.tensor;
  s.offset = it.begin * inner;
  s.block = (it.end - it.begin) * inner;
  s.stride = t.shape[k] * inner;
  s.blocks = outer;
  if (s.block == s.stride || s.blocks == 1) {  // adjacent blocks: one contiguous piece
    s.block *= s.blocks;
    s.blocks = 1;
    s.stride = s.block;
  }
  if (t.sparse) s.row_elements = t.slice_elements(0);
  return s;
}

}  // namespace detail

// Compiles the plan. Validates the model, the cluster, the strategy (against both) and the
// layout; throws autosync::error naming the first bad field.
[[nodiscard]] inline plan compile_plan(const model_spec& m, const cluster_spec& c, const strategy_desc& s, const layout& lay) {
  m.validate();
  c.validate();
  s.validate(m, c);
  if (lay.world_size < 1) throw error("layout.world_size", "must be >= 1, got " + std::to_string(lay.world_size));
  if (lay.ranks_per_node < 1 || lay.world_size % lay.ranks_per_node != 0)
    throw error("layout.ranks_per_node", "must be >= 1 and divide world_size " + std::to_string(lay.world_size) + ", got " +
                                             std::to_string(lay.ranks_per_node));

  plan p;
  p.ranks = lay;
  p.model_fingerprint = model_hash(m);
  p.strategy_fingerprint = strategy_hash(s);
  p.group_fingerprints = group_hashes(s);
  p.tensor_elements.reserve(m.tensors.size());
  for (const auto& t : m.tensors) {
    p.tensor_elements.push_back(t.elements());
    p.tensor_types.push_back(t.type);
    p.tensor_rows.push_back(t.shape.empty() ? 1 : t.shape[0]);
  }

  const auto items = expand(m, c, s);
  const auto fused = fuse_buckets(s, items);
  const auto order = m.backward_order();
  std::vector<std::uint32_t> position(m.tensors.size());
  for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = static_cast<std::uint32_t>(k);

  const int S = c.server_count();
  const bool dedicated = c.has_dedicated_servers();
  auto server_rank = [&](int sv) {
    if (dedicated) return static_cast<int>(static_cast<std::int64_t>(sv) * lay.world_size / S);
    return (sv % lay.nodes()) * lay.ranks_per_node;
  };

  std::vector<std::uint8_t> covered;  // per item: assigned to a bucket (compile-time self-check)
  covered.assign(items.size(), 0);
  for (std::uint32_t fb = 0; fb < fused.size(); ++fb) {
    const auto& b = fused[fb];
    const auto& g = s.groups[b.group];
    const std::size_t first = p.buckets.size();
    // A codec priced by each piece's shape (registry tensor_wire_bytes: PowerSGD's matrices)
    // compresses each item as the cost model prices it: adjacent rows of a tensor stay pieces
    // of their own (merged, two shards were one matrix, priced as two: up to 32x apart).
    const auto* ce = is_extension_id(g.compression.id) ? registry::find_compression(g.compression.id) : nullptr;
    const bool shape_priced = ce != nullptr && static_cast<bool>(ce->tensor_wire_bytes);
    for (auto ii : b.items) {
      const auto& it = items[ii];
      if (covered[ii]++) throw error("plan", "internal: item " + std::to_string(ii) + " in two fusion buckets");
      const auto& t = m.tensors[it.tensor];
      const std::int32_t sv = g.architecture == architecture_kind::parameter_server ? it.server : -1;
      // the piece of this fusion bucket with the item's dtype (and server)
      std::size_t pb = first;
      while (pb < p.buckets.size() && !(p.buckets[pb].type == t.type && p.buckets[pb].server == sv)) ++pb;
      if (pb == p.buckets.size()) {
        plan_bucket nb;
        nb.group = b.group;
        nb.source = fb;
        switch (g.architecture) {
          case architecture_kind::all_reduce: nb.kind = step_kind::all_reduce; break;
          case architecture_kind::sharded: nb.kind = step_kind::sharded; break;
          case architecture_kind::parameter_server: nb.kind = step_kind::parameter_server; break;
          case architecture_kind::all_gather: nb.kind = step_kind::sparse_all_gather; break;
        }
        nb.topology = g.topology;
        nb.server = sv;
        nb.server_rank = sv >= 0 ? server_rank(sv) : -1;
        nb.local = sv >= 0 && g.replication == replication_kind::local;
        nb.type = t.type;
        nb.compression = g.compression;
        nb.ext = g.ext;
        if (is_extension_id(g.compression.id) || !g.ext.empty()) nb.hooked = registry::has_codecs(g.compression, g.ext, t.type);
        if (const auto w = wire_dtype(g.compression, t.type)) {
          nb.compressed = true;
          nb.wire = *w;
        } else {
          nb.wire = t.type;
        }
        if (nb.hooked && nb.compressed)
          throw error("groups[" + std::to_string(it.group) + "].compression",
                      "a built-in compressor together with extension-slot codecs is not supported by the executor");
        nb.priority = g.schedule == schedule_kind::priority;
        nb.min_tensor = it.tensor;
        p.buckets.push_back(std::move(nb));
      }
      auto& out = p.buckets[pb];
      auto seg = detail::segment_of(t, it);
      seg.fused = out.elements;
      auto& segs = out.segments;
      const bool by_shape = out.hooked && shape_priced;  // out.compression is g.compression
      if (!by_shape && !segs.empty() && segs.back().tensor == seg.tensor && segs.back().contiguous() && seg.contiguous() &&
          segs.back().offset + segs.back().block == seg.offset) {
        segs.back().block += seg.block;  // the next rows of the same tensor: one piece
        segs.back().stride = segs.back().block;
      } else {
        if (std::none_of(segs.begin(), segs.end(), [&](const segment& x) { return x.tensor == seg.tensor; })) ++out.tensors;
        segs.push_back(seg);
      }
      out.elements += seg.elements();
      out.ready_position = std::max(out.ready_position, position[it.tensor]);
      out.min_tensor = std::min(out.min_tensor, it.tensor);
    }
  }
  for (std::size_t i = 0; i < covered.size(); ++i)
    if (!covered[i]) throw error("plan", "internal: item " + std::to_string(i) + " in no fusion bucket");

  p.feeds.assign(m.tensors.size(), {});
  for (std::uint32_t bi = 0; bi < p.buckets.size(); ++bi) {
    auto& b = p.buckets[bi];
    b.key = b.priority ? (static_cast<std::uint64_t>(b.min_tensor) << 32) | bi : (std::uint64_t{1} << 63) | bi;
    p.any_priority = p.any_priority || b.priority;
    for (const auto& sg : b.segments) {
      auto& f = p.feeds[sg.tensor];
      if (f.empty() || f.back() != bi) f.push_back(bi);
    }
  }
  return p;
}

// A fingerprint of everything in the plan (two ranks with equal hashes run the same steps).
[[nodiscard]] constexpr std::uint64_t plan_hash(const plan& p) noexcept {
  hasher h;
  h.str("plan").i64(p.ranks.world_size).i64(p.ranks.ranks_per_node);
  h.u64(p.model_fingerprint).u64(p.strategy_fingerprint).u64(p.buckets.size());
  for (const auto& b : p.buckets) {
    h.u64(b.group).u64(b.source).u64(static_cast<std::uint64_t>(b.kind));
    h.u64(static_cast<std::uint64_t>(b.topology.kind)).u64(static_cast<std::uint64_t>(b.topology.intra)).u64(static_cast<std::uint64_t>(b.topology.inter));
    h.i64(b.server).i64(b.server_rank).u64(b.local).u64(static_cast<std::uint64_t>(b.type)).u64(b.compression);
    if (b.hooked) {  // registered codecs: which ones, with which parameters
      h.str("hooked").u64(b.compression.id);
      for (double x : b.compression.params) h.f64(x);
      for (const auto& x : b.ext.v) h.u64(x.slot).u64(x.kind).f64(x.params[0]).f64(x.params[1]).f64(x.params[2]);
    }
    h.u64(b.compressed).u64(static_cast<std::uint64_t>(b.wire)).i64(b.elements).u64(b.tensors).u64(b.ready_position);
    h.u64(b.min_tensor).u64(b.priority).u64(b.key).u64(b.segments.size());
    for (const auto& sg : b.segments)
      h.u64(sg.tensor).i64(sg.offset).i64(sg.block).i64(sg.stride).i64(sg.blocks).i64(sg.fused).i64(sg.row_elements);
  }
  return h.value();
}

}  // namespace autosync::exec
