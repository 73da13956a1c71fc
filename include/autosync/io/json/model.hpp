// autosync/io/json/model.hpp — a model as JSON (every field not marked "required" may be
// omitted and takes the C++ default):
//
//   model:    {"name": "resnet50", "batch_per_device": 32, "forward_flops": 1.2e10, "source": "...",
//              "tensors": [                                                          <- required
//                {"name": "conv1.weight", "shape": [64, 3, 7, 7],                    <- required
//                 "dtype": "f32", "sparse": false, "sparse_density": 1.0,
//                 "backward_flops": 1.2e9, "ready_order": 3, "ready_time": 0.0042}, ...],
//              "precision": "pytorch-fp32" | "fp32" | "tf32" | "bf16" | "fp16",
//              "layers": [{"name": "conv1", "kind": "conv", "tensor": 0, "m": 401408, "n": 64,
//                          "k": 147, "count": 1, "groups": 1, "elements": 4816896, "outputs": 0, "bias": false,
//                          "causal": false, "input_grad": false, "weight_grad": true,
//                          "bias_grad": true, "recompute": false, "channels_last": false, "upcast": false, "fp32_input": false}, ...],
//              "measured_forward": 0.0064, "measured_backward": 0.0129, "measured_on": "H100"}
//
// precision, layers and the measured profile feed the compute model (cost/compute.hpp; model.hpp
// documents the layer kinds and fields). A profile is every tensor's ready_time (seconds after
// backward starts) with measured_forward / measured_backward, as written by
// examples/export_pytorch_model.py --profile.
//
// Writing omits tensor fields that hold their default; from_json(to_json(m)) == m.
// Part of io/json.hpp (io/json/text.hpp: how errors are located).
#pragma once

#include <autosync/error.hpp>
#include <autosync/io/json/fields.hpp>
#include <autosync/io/json/pretty.hpp>
#include <autosync/io/json/text.hpp>
#include <autosync/model.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace autosync {
namespace detail::jio {

[[nodiscard]] inline std::string dtype_names() {
  std::string r;
  for (auto t : all_dtypes) {
    if (!r.empty()) r += ", ";
    r += name_of(t);
  }
  return r;
}

[[nodiscard]] inline tensor read_tensor(const json& j, const std::string& f) {
  expect_object(j, f, "a tensor");
  check_keys(j, f, {"name", "shape", "dtype", "sparse", "sparse_density", "backward_flops", "ready_order", "ready_time"});
  tensor t;
  t.name = read_string(require(j, f, "name"), member(f, "name"));
  const auto fs = member(f, "shape");
  const json& shape = require(j, f, "shape");
  expect_array(shape, fs);
  if (shape.size() > 32) throw error(fs, "has " + std::to_string(shape.size()) + " dimensions (at most 32)");
  for (std::size_t d = 0; d < shape.size(); ++d)
    t.shape.push_back(read_int(shape[d], element(fs, d), std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()));
  if (const json* v = find(j, "dtype")) {
    const auto s = read_string(*v, member(f, "dtype"));
    const auto dt = parse_dtype(s);
    if (!dt) throw error(member(f, "dtype"), "unknown dtype '" + s + "' (valid: " + dtype_names() + ")");
    t.type = *dt;
  }
  if (const json* v = find(j, "sparse")) t.sparse = read_bool(*v, member(f, "sparse"));
  if (const json* v = find(j, "sparse_density")) t.sparse_density = read_double(*v, member(f, "sparse_density"));
  if (const json* v = find(j, "backward_flops")) t.backward_flops = read_double(*v, member(f, "backward_flops"));
  if (const json* v = find(j, "ready_order")) t.ready_order = read_int32(*v, member(f, "ready_order"));
  if (const json* v = find(j, "ready_time")) t.ready_time = read_double(*v, member(f, "ready_time"));
  return t;
}

// A layer of the compute model (model.hpp `layer`).
[[nodiscard]] inline layer read_layer(const json& j, const std::string& f) {
  expect_object(j, f, "a layer");
  check_keys(j, f, {"name", "kind", "tensor", "m", "n", "k", "count", "groups", "elements", "outputs", "bias", "causal", "input_grad",
                    "weight_grad", "bias_grad", "recompute", "channels_last", "upcast", "fp32_input"});
  layer l;
  if (const json* v = find(j, "name")) l.name = read_string(*v, member(f, "name"));
  const auto kind = read_string(require(j, f, "kind"), member(f, "kind"));
  const auto k = parse_layer_kind(kind);
  if (!k) {
    std::string valid;
    for (auto x : all_layer_kinds) valid += (valid.empty() ? "" : ", ") + std::string(name_of(x));
    throw error(member(f, "kind"), "unknown layer kind '" + kind + "' (valid: " + valid + ")");
  }
  l.kind = *k;
  constexpr std::int64_t big = std::int64_t{1} << 52;
  if (const json* v = find(j, "tensor")) l.tensor = static_cast<std::int32_t>(read_int(*v, member(f, "tensor"), -1, std::numeric_limits<std::int32_t>::max()));
  for (auto [key, dst] : {std::pair<const char*, std::int64_t*>{"m", &l.m}, {"n", &l.n}, {"k", &l.k}, {"count", &l.count},
                          {"groups", &l.groups}, {"elements", &l.elements}, {"outputs", &l.outputs}})
    if (const json* v = find(j, key)) *dst = read_int(*v, member(f, key), 0, big);
  for (auto [key, dst] : {std::pair<const char*, bool*>{"bias", &l.bias}, {"causal", &l.causal}, {"input_grad", &l.input_grad},
                          {"weight_grad", &l.weight_grad}, {"bias_grad", &l.bias_grad},
                          {"recompute", &l.recompute}, {"channels_last", &l.channels_last}, {"upcast", &l.upcast}, {"fp32_input", &l.fp32_input}})
    if (const json* v = find(j, key)) *dst = read_bool(*v, member(f, key));
  return l;
}

[[nodiscard]] inline model_spec read_model(const json& j) {
  expect_object(j, "", "a model");
  check_keys(j, "", {"name", "batch_per_device", "forward_flops", "source", "tensors", "precision", "layers", "measured_forward",
                     "measured_backward", "measured_on"});
  model_spec m;
  if (const json* v = find(j, "name")) m.name = read_string(*v, "name");
  if (const json* v = find(j, "source")) m.source = read_string(*v, "source");
  if (const json* v = find(j, "batch_per_device"))
    m.batch_per_device = read_int(*v, "batch_per_device", 0, std::numeric_limits<std::int64_t>::max());
  if (const json* v = find(j, "forward_flops")) m.forward_flops = read_double(*v, "forward_flops");
  const json& ts = require(j, "", "tensors");
  expect_array(ts, "tensors");
  m.tensors.reserve(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) m.tensors.push_back(read_tensor(ts[i], element("tensors", i)));
  if (const json* v = find(j, "precision")) {
    const auto s = read_string(*v, "precision");
    const auto p = parse_precision(s);
    if (!p) throw error("precision", "unknown precision '" + s + "' (valid: pytorch-fp32, fp32, tf32, bf16, fp16)");
    m.training_precision = *p;
  }
  if (const json* v = find(j, "layers")) {
    expect_array(*v, "layers");
    m.layers.reserve(v->size());
    for (std::size_t i = 0; i < v->size(); ++i) m.layers.push_back(read_layer((*v)[i], element("layers", i)));
  }
  if (const json* v = find(j, "measured_forward")) m.measured_forward = read_double(*v, "measured_forward");
  if (const json* v = find(j, "measured_backward")) m.measured_backward = read_double(*v, "measured_backward");
  if (const json* v = find(j, "measured_on")) m.measured_on = read_string(*v, "measured_on");
  m.validate();
  return m;
}

[[nodiscard]] inline ojson write_model(const model_spec& m) {
  ojson j;
  j["name"] = m.name;
  j["batch_per_device"] = m.batch_per_device;
  j["forward_flops"] = m.forward_flops;
  j["source"] = m.source;
  ojson ts = ojson::array();
  const tensor def{};
  for (const auto& t : m.tensors) {
    ojson o;
    o["name"] = t.name;
    o["shape"] = t.shape;
    o["dtype"] = std::string(name_of(t.type));
    if (t.sparse != def.sparse) o["sparse"] = t.sparse;
    if (t.sparse_density != def.sparse_density) o["sparse_density"] = t.sparse_density;
    if (t.backward_flops != def.backward_flops) o["backward_flops"] = t.backward_flops;
    if (t.ready_order != def.ready_order) o["ready_order"] = t.ready_order;
    if (t.ready_time != def.ready_time) o["ready_time"] = t.ready_time;
    ts.push_back(std::move(o));
  }
  j["tensors"] = std::move(ts);
  if (m.training_precision != precision::pytorch_fp32) j["precision"] = std::string(name_of(m.training_precision));
  if (!m.layers.empty()) {
    ojson ls = ojson::array();
    const layer ld{};
    for (const auto& l : m.layers) {
      ojson o;
      o["name"] = l.name;
      o["kind"] = std::string(name_of(l.kind));
      o["tensor"] = l.tensor;
      for (auto [key, v, d] : {std::tuple<const char*, std::int64_t, std::int64_t>{"m", l.m, ld.m}, {"n", l.n, ld.n}, {"k", l.k, ld.k},
                               {"count", l.count, ld.count}, {"groups", l.groups, ld.groups}, {"elements", l.elements, ld.elements},
                               {"outputs", l.outputs, ld.outputs}})
        if (v != d) o[key] = v;
      for (auto [key, v, d] : {std::tuple<const char*, bool, bool>{"bias", l.bias, ld.bias}, {"causal", l.causal, ld.causal},
                               {"input_grad", l.input_grad, ld.input_grad}, {"weight_grad", l.weight_grad, ld.weight_grad},
                               {"bias_grad", l.bias_grad, ld.bias_grad}, {"recompute", l.recompute, ld.recompute},
                               {"channels_last", l.channels_last, ld.channels_last},
                               {"upcast", l.upcast, ld.upcast}, {"fp32_input", l.fp32_input, ld.fp32_input}})
        if (v != d) o[key] = v;
      ls.push_back(std::move(o));
    }
    j["layers"] = std::move(ls);
  }
  if (m.measured_forward != 0.0) j["measured_forward"] = m.measured_forward;
  if (m.measured_backward != 0.0) j["measured_backward"] = m.measured_backward;
  if (!m.measured_on.empty()) j["measured_on"] = m.measured_on;
  return j;
}

}  // namespace detail::jio

// nlohmann ADL hooks: `nlohmann::json j = m; j.get<model_spec>()` (validated).
template <detail::jio::basic_json_type J>
void to_json(J& j, const model_spec& m) { j = J(detail::jio::write_model(m)); }
template <detail::jio::basic_json_type J>
void from_json(const J& j, model_spec& m) { m = detail::jio::read_model(detail::jio::as_json(j)); }

namespace io {

// The JSON value of a model (keys in the documented order), and back (validated; errors carry the
// field path: a value has no lines).
[[nodiscard]] inline nlohmann::ordered_json to_json(const model_spec& m) { return detail::jio::write_model(m); }
[[nodiscard]] inline model_spec model_from_json(const nlohmann::json& j) { return j.get<model_spec>(); }

// Text and files; `file` names the source in messages ("model.json:14: 'field': ...").
[[nodiscard]] inline model_spec parse_model(std::string_view text, const std::string& file = "<model>") {
  return detail::jio::parse_text(text, file, [](const nlohmann::json& j) { return detail::jio::read_model(j); });
}
[[nodiscard]] inline std::string to_json_text(const model_spec& m) { return detail::jio::to_text(detail::jio::write_model(m)); }
[[nodiscard]] inline model_spec load_model_file(const std::filesystem::path& path) {
  return parse_model(detail::jio::read_file(path), path.string());
}
inline void save_model_file(const std::filesystem::path& path, const model_spec& m) { detail::jio::write_file(path, to_json_text(m)); }

}  // namespace io
}  // namespace autosync
