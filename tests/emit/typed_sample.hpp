// tests/emit/typed_sample.hpp — the strategy the typed-execution test emits and runs on MPI
// (typed_mpi.cpp): a small model and eight groups covering every architecture, flat and
// hierarchical topologies, fp16 / bf16 / no compression, f32 / f64 / i32 tensors, a sparse
// embedding, a split tensor and a parameter server with local replication. Shared by the
// generator (generate.cpp --typed) and the test TU.
#pragma once

#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <string>
#include <vector>

namespace autosync::typed_sample {

inline model_spec model() {
  model_spec m;
  m.name = "typed-sample";
  m.forward_flops = 1e6;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, dtype t = dtype::f32, bool sparse = false) {
    tensor x;
    x.name = std::move(name);
    x.shape = std::move(shape);
    x.type = t;
    x.sparse = sparse;
    x.sparse_density = sparse ? 0.5 : 1.0;
    x.backward_flops = 1e5;
    m.tensors.push_back(x);
  };
  add("emb", {64, 16}, dtype::f32, true);
  add("conv1.weight", {32, 3, 3, 3});
  add("conv1.bias", {32});
  add("layer1.weight", {64, 64});
  add("layer1.bias", {64}, dtype::f64);
  add("layer2.weight", {128, 64});
  add("layer2.bias", {128});
  add("layer3.weight", {96, 40});
  add("layer3.bias", {40}, dtype::i32);
  add("head.weight", {10, 128});
  add("head.bias", {10});
  return m;
}

inline strategy_desc strategy() {
  strategy_desc s;
  s.name = "typed sample";
  s.groups = {
      describe<autosync::strategy<topo::hierarchical<topo::ring, topo::tree>, comp::fp16, fuse::bucket_cap<4096>>>(),                    // 0
      describe<autosync::strategy<topo::tree, fuse::unbounded>>(),                                                                           // 1
      describe<autosync::strategy<topo::halving_doubling, comp::bf16>>(),                                                                    // 2
      describe<autosync::strategy<arch::sharded, topo::ring, fuse::unbounded>>(),                                                           // 3
      describe<autosync::strategy<arch::sharded, topo::hierarchical<topo::halving_doubling, topo::ring>>>(),                                // 4
      describe<autosync::strategy<arch::parameter_server, part::even<2, 0>, repl::local, fuse::unbounded>>(),                               // 5
      describe<autosync::strategy<topo::hierarchical<topo::halving_doubling, topo::halving_doubling>, comp::fp16, sched::priority>>(),     // 6
      describe<autosync::strategy<arch::all_gather>>(),                                                                                      // 7
  };
  s.assignments = {
      {"emb", 7, 0, {}},
      {"conv1.weight", 0, 0, {}},
      {"conv1.bias", 0, 0, {}},
      {"layer1.weight", 1, 0, {}},
      {"layer1.bias", 1, 0, {}},
      {"layer2.weight", 2, 0, {}},
      {"layer2.bias", 3, 0, {}},
      {"layer3.weight", 3, 0, {}},
      {"layer3.bias", 4, 0, {}},
      {"head.weight", 0, 0, {5, 6}},  // split along axis 0: rows 0-4 to the parameter server, 5-9 to group 6
      {"head.bias", 6, 0, {}},
  };
  return s;
}

}  // namespace autosync::typed_sample
