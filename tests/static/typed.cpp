// Typed execution at compile time: which collective and codec the policy types select
// (exec/collective.hpp, exec/codec.hpp), and the static strategy an emitted header names.
// Compiled, never run.
#include <autosync/exec/codec.hpp>
#include <autosync/exec/collective.hpp>
#include <autosync/exec/compress.hpp>
#include <autosync/strategy/static_strategy.hpp>

#include <type_traits>

namespace {
using namespace autosync;
using namespace autosync::exec;

// codec<C>::wire_dtype is exactly the plan's rule (exec::wire_dtype of the compressor's id).
template <class C>
constexpr bool same_wire_rule() {
  for (auto t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::i32, dtype::i64})
    if (codec<C>::wire_dtype(t) != wire_dtype(C::value, t)) return false;
  return true;
}
static_assert(same_wire_rule<comp::none>() && same_wire_rule<comp::fp16>() && same_wire_rule<comp::bf16>());
static_assert(!codec<comp::none>::compresses && codec<comp::fp16>::compresses && codec<comp::bf16>::compresses);
static_assert(codec<comp::fp16>::wire == dtype::f16 && codec<comp::bf16>::wire == dtype::bf16);
static_assert(codec<comp::fp16>::scale(4) == 0.25 && codec<comp::fp16>::scale(5) == 0.125 && codec<comp::bf16>::scale(8) == 1.0);
static_assert(codec<comp::fp16>::wire_bytes(10, dtype::f32) == 20 && codec<comp::fp16>::wire_bytes(10, dtype::i32) == 40);
static_assert(codec<comp::none>::wire_bytes(10, dtype::f64) == 80);

// A compressor with no codec travels uncompressed: codec_of names codec<comp::none>.
struct sketch {
  using slot = slot::compression;
  static constexpr std::string_view name = "sketch";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 1.0;
  static constexpr double flops_per_element = 4.0;
  static constexpr compression_id value = 200;
};
static_assert(std::is_same_v<codec_of<sketch>, codec<comp::none>>);
static_assert(std::is_same_v<codec_of<comp::fp16>, codec<comp::fp16>>);

// Runs on the tensors where they lie: ring and halving-doubling (flat, or both levels of a
// hierarchical all-reduce); sharded flat only; never the tree, the parameter server or sparse.
using hd = topo::halving_doubling;
static_assert(collective<arch::all_reduce, topo::ring>::segmented && collective<arch::all_reduce, hd>::segmented);
static_assert(!collective<arch::all_reduce, topo::tree>::segmented);
static_assert(collective<arch::all_reduce, topo::hierarchical<hd, topo::ring>>::segmented);
static_assert(!collective<arch::all_reduce, topo::hierarchical<topo::ring, topo::tree>>::segmented);
static_assert(collective<arch::sharded, hd>::segmented && !collective<arch::sharded, topo::hierarchical<hd, hd>>::segmented);
static_assert(!collective<arch::parameter_server, topo::ring>::segmented && !collective<arch::all_gather, topo::ring>::segmented);

// static_strategy: groups by index, and the descriptor it stands for.
using s2 = static_strategy<strategy<topo::tree, comp::bf16>, strategy<arch::sharded, topo::hierarchical<hd, topo::ring>>>;
static_assert(s2::size == 2 && StaticStrategy<s2> && !StaticStrategy<s2::groups>);
static_assert(std::is_same_v<s2::group<1>::topology, topo::hierarchical<hd, topo::ring>>);
static_assert(to_descriptor<s2>(std::array<static_assignment, 0>{}).groups.size() == 2);
}  // namespace
