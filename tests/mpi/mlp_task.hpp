// tests/mpi/mlp_task.hpp — the training task of tests/mpi/trainer.cpp and
// tests/mpi/convergence/compressors.cpp: the tanh MLP 64-128-128-10 of examples/trainer_support.hpp
// on 384 teacher-labelled Gaussian inputs (teacher 64-32-10), global batch 96 (a multiple of every
// rank count the tests run), SGD lr 0.1, 200 steps. Needs examples/ on the include path.
#pragma once

#include "trainer_support.hpp"

#include <cstdint>
#include <vector>

namespace autosync::exec::train::task {

inline const std::vector<int> widths{64, 128, 128, 10};
inline const std::vector<int> teacher{64, 32, 10};
inline constexpr std::uint64_t init_seed = 7, data_seed = 42;
inline constexpr int steps = 200;
inline constexpr int global_batch = 96;

inline const dataset& data() {
  static const dataset d = teacher_data(teacher, 384, data_seed);
  return d;
}

inline sgd_options options(float loss_scale = 1.0f) {
  sgd_options o;
  o.global_batch = global_batch;
  o.lr = 0.1f;
  o.loss_scale = loss_scale;
  return o;
}

}  // namespace autosync::exec::train::task
