// autosync/exec/hash.hpp — 64-bit fingerprints of models and strategies for the setup handshake.
//
// Before the first iteration every rank of a job must run the same plan: if one rank was given
// another strategy (a stale strategy.json, a different search seed) the ranks would post
// different collectives and hang. The executor's setup() all-gathers these fingerprints and
// compares them:
//
//   rank 0: model 9f3c..  strategy 41aa..  groups [a1.. 07.. 5e.. c2..]
//   rank 2: model 9f3c..  strategy 77e0..  groups [a1.. 07.. 5e.. 19..]   -> "differs at group 3"
//
// A group's fingerprint covers its group_desc AND the pieces assigned to it (tensor name,
// split axis, shard index, shard count), so moving a tensor from one group to another changes
// the fingerprints of both groups. Every field is fed with its size or a tag first, so no two
// different inputs are concatenations of each other. The hash is FNV-1a over bytes, finished
// with the splitmix64 finalizer; it detects accidents, it is not a cryptographic digest.
// Everything here is constexpr and independent of the process (no pointers, no std::hash).
#pragma once

#include <autosync/model.hpp>
#include <autosync/registry/core.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <bit>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

namespace autosync::exec {

class hasher {
 public:
  constexpr hasher& bytes(std::uint64_t v, int n) noexcept {
    for (int i = 0; i < n; ++i) h_ = (h_ ^ ((v >> (8 * i)) & 0xffu)) * 1099511628211ull;
    return *this;
  }
  constexpr hasher& u64(std::uint64_t v) noexcept { return bytes(v, 8); }
  constexpr hasher& i64(std::int64_t v) noexcept { return u64(static_cast<std::uint64_t>(v)); }
  constexpr hasher& f64(double v) noexcept { return u64(std::bit_cast<std::uint64_t>(v)); }
  constexpr hasher& str(std::string_view s) noexcept {
    u64(s.size());
    for (char c : s) bytes(static_cast<unsigned char>(c), 1);
    return *this;
  }
  [[nodiscard]] constexpr std::uint64_t value() const noexcept {
    std::uint64_t z = h_;  // splitmix64 finalizer: every input bit reaches every output bit
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t h_ = 14695981039346656037ull;
};

constexpr void hash_into(hasher& h, const tensor& t) noexcept {
  h.str(t.name).u64(t.shape.size());
  for (auto d : t.shape) h.i64(d);
  h.u64(static_cast<std::uint64_t>(t.type)).u64(t.sparse ? 1 : 0).f64(t.sparse_density).i64(t.ready_order);
}

// Every core slot's value (its slot_traits<Slot>::hash, in slot_list order), then the extension
// slots present (ids are stable_id of names, so every rank and run agrees).
constexpr void hash_into(hasher& h, const group_desc& g) noexcept {
  for_each_core_slot([&]<class Slot>(std::type_identity<Slot>) { slot_traits<Slot>::hash(h, slot_traits<Slot>::field(g)); });
  for (const auto& x : g.ext.v) {
    if (x.slot == 0) break;
    h.str("ext").u64(x.slot).u64(x.kind);
    for (double p : x.params) h.f64(p);
  }
}

// What is synchronized: tensor names, shapes, dtypes, sparsity and ready order (not the FLOPs:
// they only feed the cost model).
[[nodiscard]] constexpr std::uint64_t model_hash(const model_spec& m) noexcept {
  hasher h;
  h.str("model").u64(m.tensors.size());
  for (const auto& t : m.tensors) hash_into(h, t);
  return h.value();
}

// One fingerprint per group: its group_desc and, in assignment order, every piece assigned to
// it: (tensor name, split axis, shard index, shard count); a whole tensor is (name, -1, 0, 1).
[[nodiscard]] constexpr std::vector<std::uint64_t> group_hashes(const strategy_desc& s) {
  std::vector<hasher> hs(s.groups.size());
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    hs[g].str("group").u64(g);
    hash_into(hs[g], s.groups[g]);
  }
  auto feed = [&](std::int32_t g, std::string_view name, std::int64_t axis, std::int64_t shard, std::int64_t count) {
    if (g < 0 || static_cast<std::size_t>(g) >= hs.size()) return;  // invalid strategies: the whole-strategy hash still differs
    hs[static_cast<std::size_t>(g)].str(name).i64(axis).i64(shard).i64(count);
  };
  for (const auto& a : s.assignments) {
    if (!a.split()) {
      feed(a.group, a.tensor, -1, 0, 1);
    } else {
      const auto k = static_cast<std::int64_t>(a.shard_groups.size());
      for (std::int64_t i = 0; i < k; ++i) feed(a.shard_groups[static_cast<std::size_t>(i)], a.tensor, a.split_axis, i, k);
    }
  }
  std::vector<std::uint64_t> out(hs.size());
  for (std::size_t g = 0; g < hs.size(); ++g) out[g] = hs[g].value();
  return out;
}

// The whole strategy: its name is left out (two ranks may label one strategy differently);
// the group fingerprints, the group count and the raw assignment list are in.
[[nodiscard]] constexpr std::uint64_t strategy_hash(const strategy_desc& s) {
  hasher h;
  h.str("strategy").u64(s.groups.size());
  for (auto g : group_hashes(s)) h.u64(g);
  h.u64(s.assignments.size());
  for (const auto& a : s.assignments) {
    h.str(a.tensor).i64(a.group).i64(a.split_axis).u64(a.shard_groups.size());
    for (auto g : a.shard_groups) h.i64(g);
  }
  return h.value();
}

}  // namespace autosync::exec
