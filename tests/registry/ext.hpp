// tests/registry/ext.hpp — a compressor and a slot defined outside include/ (the registry's proof).
//
//   compression "fixed32" {"scale": s}: x -> round(x * s) as int32 on the wire, summed as
//     integers, decoded / s. Exact for integer-valued gradients whose sums fit in int32; halves
//     the wire bytes of f64 gradients (f32: the same bytes, 4 per element).
//   slot "prescale": "none" (default) | {"kind": "by", "factor": f}: multiply before the
//     collective, divide after (exact for powers of two); the bytes stay as they are; 2 flops
//     per element.
#pragma once

#include <autosync/policy/pack.hpp>
#include <autosync/registry/extensions.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace regtest {

// ---- compile-time policies ---------------------------------------------------------------------
template <int Scale = 1>
struct fixed32 {
  using slot = autosync::slot::compression;
  static constexpr std::string_view name = "fixed32";
  static constexpr bool lossless = false;
  static constexpr double wire_bytes_per_element = 4.0;
  static constexpr double flops_per_element = 2.0;
  static constexpr autosync::compression_value value{autosync::stable_id("fixed32"), {double(Scale), 0, 0}};
};

AUTOSYNC_SLOT_TAG(prescale);
struct no_prescale {
  using slot = prescale;
  static constexpr std::string_view name = "none";
  static constexpr autosync::ext_value value = autosync::ext_value::of("prescale", "none");
};
template <int Factor>
struct prescale_by {
  static_assert(Factor >= 1, "regtest: prescale_by<Factor>: Factor must be >= 1");
  using slot = prescale;
  static constexpr std::string_view name = "by";
  static constexpr autosync::ext_value value = autosync::ext_value::of("prescale", "by", {double(Factor), 0, 0});
};

// ---- codecs ------------------------------------------------------------------------------------
inline double load(const unsigned char* p, autosync::dtype t) {
  if (t == autosync::dtype::f64) { double v; std::memcpy(&v, p, 8); return v; }
  float v; std::memcpy(&v, p, 4); return v;
}
inline void store(unsigned char* p, autosync::dtype t, double v) {
  if (t == autosync::dtype::f64) { std::memcpy(p, &v, 8); return; }
  const auto f = static_cast<float>(v); std::memcpy(p, &f, 4);
}

struct fixed32_codec {
  double scale = 1.0;
  std::vector<std::int32_t> wire;
  autosync::registry::wire_view operator()(autosync::registry::codec_step step, const autosync::registry::wire_view& w,
                                           unsigned char* data, std::size_t n, autosync::dtype t, int) {
    const auto es = autosync::size_of(t);
    if (step == autosync::registry::codec_step::encode) {
      wire.resize(n);
      for (std::size_t i = 0; i < n; ++i) wire[i] = static_cast<std::int32_t>(std::llround(load(data + i * es, t) * scale));
      return {reinterpret_cast<unsigned char*>(wire.data()), n, autosync::dtype::i32};
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::int32_t v;
      std::memcpy(&v, w.data + i * 4, 4);
      store(data + i * es, t, static_cast<double>(v) / scale);
    }
    return {};
  }
};

struct prescale_codec {
  double factor = 1.0;
  autosync::registry::wire_view operator()(autosync::registry::codec_step step, const autosync::registry::wire_view&,
                                           unsigned char* data, std::size_t n, autosync::dtype t, int) const {
    const auto es = autosync::size_of(t);
    const double k = step == autosync::registry::codec_step::encode ? factor : 1.0 / factor;
    for (std::size_t i = 0; i < n; ++i) store(data + i * es, t, load(data + i * es, t) * k);
    return {data, n, t};
  }
};

inline bool floating(autosync::dtype t) { return t == autosync::dtype::f32 || t == autosync::dtype::f64; }

// ---- registration (static initialization) -------------------------------------------------------
inline autosync::registry::compression_entry fixed32_entry() {
  autosync::registry::compression_entry e;
  e.name = "fixed32";
  e.params = {{"scale", 1.0, 1e-6, 1e6, false}};
  e.lossless = false;
  e.applies = floating;
  e.wire_bytes = [](std::int64_t n, autosync::dtype, int, const autosync::param_list&, double) { return 4.0 * static_cast<double>(n); };
  e.flops_per_element = [](const autosync::param_list&) { return 2.0; };
  e.make_codec = [](const autosync::param_list& p, autosync::dtype, std::size_t) { return autosync::registry::bucket_codec(fixed32_codec{p[0], {}}); };
  e.cpp_type = [](const autosync::param_list& p) { return "regtest::fixed32<" + std::to_string(static_cast<int>(p[0])) + ">"; };
  e.header = "ext.hpp";
  return e;
}

inline autosync::registry::slot_entry prescale_entry() {
  autosync::registry::slot_entry e;
  e.name = "prescale";
  e.kinds = {{"none", {}}, {"by", {{"factor", 2.0, 1.0, 1024.0, true}}}};
  e.applies = floating;
  e.flops_per_element = [](const autosync::ext_value& x) { return x.kind == autosync::stable_id("by") ? 2.0 : 0.0; };
  e.make_codec = [](const autosync::ext_value& x, autosync::dtype, std::size_t) {
    return autosync::registry::bucket_codec(prescale_codec{x.kind == autosync::stable_id("by") ? x.params[0] : 1.0});
  };
  e.alternatives = [](const autosync::group_desc&) {
    return std::vector<autosync::ext_value>{autosync::ext_value::of("prescale", "none"), autosync::ext_value::of("prescale", "by", {2, 0, 0}),
                                            autosync::ext_value::of("prescale", "by", {4, 0, 0})};
  };
  e.cpp_type = [](const autosync::ext_value& x) {
    return x.kind == autosync::stable_id("by") ? "regtest::prescale_by<" + std::to_string(static_cast<int>(x.params[0])) + ">"
                                              : std::string("regtest::no_prescale");
  };
  e.header = "ext.hpp";
  return e;
}

inline const autosync::registry::registrar fixed32_registered{fixed32_entry()};
inline const autosync::registry::registrar prescale_registered{prescale_entry()};

}  // namespace regtest

template <>
struct autosync::default_policy<regtest::prescale> {
  using type = regtest::no_prescale;
};
