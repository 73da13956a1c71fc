// autosync/strategy/fusion.hpp — the fusion rule: which items of a group travel together.
//
// Per group, the items in ready order (backward order; the items of one tensor in expand's
// order) are packed into buckets. The first bucket of a group holds at most
// fusion.first_cap_bytes, the others fusion.cap_bytes (dense bytes: the size of the fusion
// buffer); a bucket closes when the next item would push it past its cap; an item larger than
// the cap travels alone; cap 0 = one item per bucket. A bucket is ready when its last item is.
// Buckets are numbered in ready order; ties keep creation order (a bucket is created when the
// next item of its group closes it, the buckets still open at the end in group order).
//
//   fusion_closes(f, first, n, bytes, item)  the rule for one item: does the group's open
//                                            bucket (n items, `bytes`) close before it joins?
//   fuse_buckets(s, items)                   every bucket of a strategy: group, items, ready
//                                            position; pure, constexpr
//
// The cost model's timeline (cost/timeline_steps.hpp, fuse_items) applies fusion_closes inside
// its own pass over the items; the plan compiler (exec/plan.hpp) takes fuse_buckets' buckets.
// Both give the same buckets for every strategy (tests/unit/fusion.cpp).
#pragma once

#include <autosync/policy/fusion.hpp>
#include <autosync/strategy/descriptor.hpp>
#include <autosync/strategy/items.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace autosync {

// Whether a group's open bucket of `open_items` items and `open_bytes` dense bytes closes
// before an item of `item_bytes` joins it. `first_bucket`: the open bucket is the group's first.
[[nodiscard]] constexpr bool fusion_closes(const fusion_value& f, bool first_bucket, std::uint64_t open_items, std::uint64_t open_bytes,
                                           std::uint64_t item_bytes) noexcept {
  const std::uint64_t cap = first_bucket ? f.first_cap_bytes : f.cap_bytes;
  return open_items > 0 && (f.cap_bytes == 0 || item_bytes > cap || open_bytes + item_bytes > cap);
}

struct fusion_bucket {
  std::uint32_t group = 0;
  std::vector<std::uint32_t> items;  // indices into the items, in ready order
  std::uint32_t ready = 0;           // ready position of its last item (sync_item::ready)
  friend constexpr bool operator==(const fusion_bucket&, const fusion_bucket&) = default;
};

// The buckets of strategy s over its items (expand(m, c, s): every item's group and ready
// position set), numbered in ready order.
[[nodiscard]] constexpr std::vector<fusion_bucket> fuse_buckets(const strategy_desc& s, const std::vector<sync_item>& items) {
  // counting sort by ready position: the visiting order, items of one position in index order
  std::uint32_t positions = 0;
  for (const auto& it : items) positions = it.ready + 1 > positions ? it.ready + 1 : positions;
  std::vector<std::uint32_t> start(positions + 1, 0), order(items.size());
  for (const auto& it : items) ++start[it.ready + 1];
  for (std::size_t k = 1; k <= positions; ++k) start[k] += start[k - 1];
  for (std::uint32_t i = 0; i < items.size(); ++i) order[start[items[i].ready]++] = i;

  struct open_bucket {
    std::vector<std::uint32_t> items;
    std::uint64_t bytes = 0;
    std::uint32_t ready = 0;
    bool first = true;
  };
  std::vector<open_bucket> open(s.groups.size());
  std::vector<fusion_bucket> created;
  auto close = [&](std::uint32_t g) {
    auto& o = open[g];
    if (o.items.empty()) return;
    created.push_back(fusion_bucket{g, std::move(o.items), o.ready});
    o.items = {};
    o.bytes = 0;
    o.first = false;
  };
  for (const auto i : order) {
    const auto& it = items[i];
    const auto ib = static_cast<std::uint64_t>(it.bytes);
    auto& o = open[it.group];
    if (fusion_closes(s.groups[it.group].fusion, o.first, o.items.size(), o.bytes, ib)) close(it.group);
    open[it.group].items.push_back(i);
    open[it.group].bytes += ib;
    open[it.group].ready = it.ready;
  }
  for (std::uint32_t g = 0; g < s.groups.size(); ++g) close(g);

  // ready order, ties in creation order (counting sort again)
  std::vector<std::uint32_t> at(positions + 1, 0);
  for (const auto& b : created) ++at[b.ready + 1];
  for (std::size_t k = 1; k <= positions; ++k) at[k] += at[k - 1];
  std::vector<fusion_bucket> out(created.size());
  for (auto& b : created) out[at[b.ready]++] = std::move(b);
  return out;
}

}  // namespace autosync
