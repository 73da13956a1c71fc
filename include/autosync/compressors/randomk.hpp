// autosync/compressors/randomk.hpp — "randomk": random-k sparsification with error feedback
// (exec/codecs/sparsify.hpp) as a value of the compression slot.
//
//   JSON      "randomk" or {"kind": "randomk", "density": 0.01}     k = ceil(density n), >= 1
//   C++       autosync::compressors::randomk<0.01>
//   per rank  a = e + g; the k indices come from the shared stream of (bucket, iteration): the
//             same on every rank, so only the values travel; e = a - sent.
//   exchange  one all-reduce of the k values (they sum in the network); the bucket is zero but
//             at the k indices.
//   bytes     per rank 2 (p - 1) / p 4 k: all-reduce equivalent 4 k.
//   guarantee error feedback conserves the sum exactly (as topk.hpp) on integer-valued data
//             whose sums stay exact in float.
#pragma once

#include <autosync/compressors/common.hpp>
#include <autosync/exec/codecs/random.hpp>
#include <autosync/exec/codecs/sparsify.hpp>

#include <cstdint>
#include <vector>

namespace autosync::compressors {

template <double Density = 0.01>
struct randomk {
  static_assert(Density > 0.0 && Density <= 1.0, "compression slot: autosync::compressors::randomk<Density>: Density must be in (0, 1]");
  using slot = slot::compression;
  static constexpr std::string_view name = "randomk";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 4.0 * Density;
  static constexpr double flops_per_element = flops_at(3.36);
  static constexpr compression_value value{stable_id("randomk"), {Density, 0, 0}};
};

namespace randomk_detail {
namespace sp = exec::codecs::sparsify;

struct exchange {
  std::size_t n = 0;
  double density = 0.01;
  std::uint64_t seed = 0, iteration = 0;
  sp::state st;
  std::vector<std::uint32_t> idx;
  std::vector<float> val;
  // State: the exchange count (it keys the shared indices) and the error-feedback residual.
  void save(registry::state_writer& w) const {
    w.put(iteration);
    save_feedback(w, st);
  }
  void load(registry::state_reader& r) {
    r.get(iteration, "iteration");
    load_feedback(r, st, n);
  }
  void operator()(unsigned char* data, registry::exchange_comm& comm) {
    const auto x = floats(data, n);
    sp::options o;
    o.density = density;
    o.random = true;
    sp::select(x, st, o, exec::codecs::counter_rng(seed, exec::codecs::stream_of(seed, iteration)), idx, val);
    comm.all_reduce(val.data(), val.size());
    std::fill(x.begin(), x.end(), 0.0f);
    for (std::size_t j = 0; j < idx.size(); ++j) x[idx[j]] = val[j];
    ++iteration;
  }
};
}  // namespace randomk_detail

inline registry::compression_entry randomk_entry() {
  namespace sp = exec::codecs::sparsify;
  registry::compression_entry e;
  e.name = "randomk";
  e.params = {{"density", 0.01, 1e-6, 1.0, false}};
  e.applies = f32_only;
  e.exchange = registry::exchange_kind::all_reduce;
  e.wire_bytes = [](std::int64_t n, dtype, int, const param_list& q, double) {
    return static_cast<double>(sp::randk_wire_bytes(static_cast<std::size_t>(n), q[0]));
  };
  e.flops_per_element = [](const param_list&) { return flops_at(3.36); };
  e.nominal_bits = [](const param_list& q) { return 32.0 * q[0]; };
  e.alternatives = {param_list{0.01, 0, 0}, param_list{0.1, 0, 0}};
  e.make_exchange = [](const param_list& q, const registry::exchange_context& x) {
    return registry::bucket_exchange(randomk_detail::exchange{x.elements, q[0], x.seed, 0, {}, {}, {}});
  };
  e.cpp_type = [](const param_list& q) { return "autosync::compressors::randomk<" + spell(q[0]) + ">"; };
  e.header = "autosync/compressors/randomk.hpp";
  return e;
}

inline const registry::registrar randomk_registered{randomk_entry()};

}  // namespace autosync::compressors
