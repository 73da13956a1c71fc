// examples/trainer_support.hpp — a small data-parallel trainer: an Eigen MLP on synthetic
// teacher data, with backward calling the executor's ready() layer by layer.
//
// This is the worked example of how a trainer drives an executor (examples/10_mpi_trainer.cpp
// runs it on MPI; tests/mpi/trainer.cpp checks it against single-process training). It needs
// Eigen3 (Debian: libeigen3-dev; CMake: find_package(Eigen3 NO_MODULE), target Eigen3::Eigen).
// An example helper, not a library header: it is not installed.
//
// The model: a multi-layer perceptron, widths w0 -> w1 -> ... -> wL, tanh on hidden layers, a
// softmax cross-entropy loss on the last. Layer l has a weight (w(l+1) x w(l), row-major) and a
// bias (w(l+1)); the model_spec (mlp_model) lists them in forward order
//   fc0.weight fc0.bias fc1.weight fc1.bias ... ,
// so backward order is the reverse, which is exactly the order backward() produces them in:
//
//   forward    x ──fc0──tanh──fc1──tanh──fc2──softmax── loss
//   backward                                   dZ2 = (p - onehot) / B
//              ready(fc2.bias) ready(fc2.weight)  dA1 = dZ2 W2    <- the collective of the last
//              ready(fc1.bias) ready(fc1.weight)  dA0 = dZ1 W1       bucket runs while the
//              ready(fc0.bias) ready(fc0.weight)                     layers before it compute
//
// One step of data parallelism over p ranks (train_step):
//
//   global batch k: rows [k*B, (k+1)*B) of the dataset (mod N)   B % p == 0
//   rank r: rows k*B + [r*B/p, (r+1)*B/p)   forward, mean loss over its B/p rows
//   session.begin(grads) (or executor.begin_iteration); backward, ready() per tensor; finish()  (average: the mean
//   of p equal-size shard means is the global batch mean)
//   every rank: W -= lr * grad  (the same averaged gradient everywhere: the replicas stay equal)
//
// Random numbers come from splitmix64 and Box-Muller (portable_rng): the same seed gives the same
// dataset and initial weights on every rank and every platform with IEEE doubles and a
// correctly rounded libm (the test compares ranks bitwise, never across machines).
//
// loss_scale multiplies the gradient that backward produces (dZ of the last layer) and
// train_step divides the learning rate by it: with a power of two the update is the same, bit
// for bit, while the gradients the executor sees are scaled (used to push gradients below what
// fp16 can represent and show what error feedback does).
#pragma once

#include <autosync/error.hpp>
#include <autosync/exec/executor.hpp>
#include <autosync/model.hpp>

#include <Eigen/Dense>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace autosync::exec::train {

using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using vector = Eigen::VectorXf;

// splitmix64 (Steele, Lea & Flood 2014) with Box-Muller normals: the same numbers everywhere,
// unlike std::normal_distribution, whose algorithm the standard leaves to the library.
class portable_rng {
 public:
  explicit portable_rng(std::uint64_t seed) noexcept : s_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // uniform in (0, 1]: 53 random bits, never 0 (log below)
  double uniform() noexcept { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  double normal() noexcept {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform())), a = 2.0 * std::numbers::pi * uniform();
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

 private:
  std::uint64_t s_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

inline void check_widths(const std::vector<int>& widths) {
  if (widths.size() < 2) throw error("widths", "an MLP needs at least an input and an output width");
  for (std::size_t i = 0; i < widths.size(); ++i)
    if (widths[i] < 1) throw error("widths[" + std::to_string(i) + "]", "must be >= 1, got " + std::to_string(widths[i]));
}

// The model_spec of an MLP trained with `batch_per_rank` rows per rank: two f32 tensors per
// layer in forward order. FLOPs per step: forward 2 B in out per layer; backward per weight
// 2 B in out for dW plus 2 B in out for the input gradient (none for the first layer), per bias
// B out.
[[nodiscard]] inline model_spec mlp_model(const std::vector<int>& widths, std::int64_t batch_per_rank, std::string name = "mlp") {
  check_widths(widths);
  if (batch_per_rank < 1) throw error("batch_per_rank", "must be >= 1, got " + std::to_string(batch_per_rank));
  model_spec m;
  m.name = std::move(name);
  m.batch_per_device = batch_per_rank;
  m.source = "examples/trainer_support.hpp: tanh MLP, softmax cross-entropy";
  const double B = static_cast<double>(batch_per_rank);
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const double in = widths[l], out = widths[l + 1];
    tensor w;
    w.name = "fc" + std::to_string(l) + ".weight";
    w.shape = {widths[l + 1], widths[l]};
    w.backward_flops = 2.0 * B * in * out * (l == 0 ? 1.0 : 2.0);
    tensor b;
    b.name = "fc" + std::to_string(l) + ".bias";
    b.shape = {widths[l + 1]};
    b.backward_flops = B * out;
    m.tensors.push_back(std::move(w));
    m.tensors.push_back(std::move(b));
    m.forward_flops += 2.0 * B * in * out;
  }
  m.validate();
  return m;
}

// Rows of Gaussian inputs and the class a fixed random teacher network gives each.
struct dataset {
  matrix x;             // rows x input width
  std::vector<int> y;   // class of each row, in [0, classes)
  int classes = 0;
};

class mlp {
 public:
  // Weights ~ N(0, gain^2 / fan_in), biases 0.
  mlp(std::vector<int> widths, std::uint64_t seed, float gain = 1.0f) : widths_(std::move(widths)) {
    check_widths(widths_);
    portable_rng rng(seed);
    const std::size_t L = widths_.size() - 1;
    w_.resize(L);
    b_.resize(L);
    dw_.resize(L);
    db_.resize(L);
    z_.resize(L);
    a_.resize(L + 1);
    for (std::size_t l = 0; l < L; ++l) {
      w_[l].resize(widths_[l + 1], widths_[l]);
      const double sd = gain / std::sqrt(static_cast<double>(widths_[l]));
      for (Eigen::Index i = 0; i < w_[l].size(); ++i) w_[l].data()[i] = static_cast<float>(sd * rng.normal());
      b_[l] = vector::Zero(widths_[l + 1]);
      dw_[l] = matrix::Zero(widths_[l + 1], widths_[l]);
      db_[l] = vector::Zero(widths_[l + 1]);
    }
  }

  [[nodiscard]] const std::vector<int>& widths() const noexcept { return widths_; }
  [[nodiscard]] std::size_t layers() const noexcept { return w_.size(); }
  [[nodiscard]] std::size_t tensors() const noexcept { return 2 * w_.size(); }
  [[nodiscard]] const matrix& weight(std::size_t l) const { return w_.at(l); }
  [[nodiscard]] const vector& bias(std::size_t l) const { return b_.at(l); }

  // The gradient buffers in model order (fc0.weight, fc0.bias, ...): what begin_iteration takes.
  // The buffers never move (backward writes them in place), so these stay valid.
  [[nodiscard]] std::vector<gradient> gradients() {
    std::vector<gradient> g;
    for (std::size_t l = 0; l < layers(); ++l) {
      g.push_back({dw_[l].data(), dtype::f32, static_cast<std::int64_t>(dw_[l].size())});
      g.push_back({db_[l].data(), dtype::f32, static_cast<std::int64_t>(db_[l].size())});
    }
    return g;
  }

  // Every parameter, model order, flattened (for comparisons).
  [[nodiscard]] std::vector<float> parameters() const {
    std::vector<float> p;
    for (std::size_t l = 0; l < layers(); ++l) {
      p.insert(p.end(), w_[l].data(), w_[l].data() + w_[l].size());
      p.insert(p.end(), b_[l].data(), b_[l].data() + b_[l].size());
    }
    return p;
  }

  // Class scores (rows x classes) of `x`.
  [[nodiscard]] matrix logits(const matrix& x) const {
    check_input(x);
    matrix a = x;
    for (std::size_t l = 0; l < layers(); ++l) {
      matrix z = (a * w_[l].transpose()).rowwise() + b_[l].transpose();
      a = l + 1 < layers() ? matrix(z.array().tanh()) : std::move(z);
    }
    return a;
  }

  // Forward on `rows` rows of `x` from `first`, keeping the activations for backward; returns
  // the mean cross-entropy over those rows.
  double forward(const matrix& x, std::span<const int> y, Eigen::Index first, Eigen::Index rows) {
    check_input(x);
    if (first < 0 || rows < 1 || first + rows > x.rows() || static_cast<std::size_t>(x.rows()) != y.size())
      throw error("rows", "forward: rows [" + std::to_string(first) + ", " + std::to_string(first + rows) + ") of a dataset of " +
                              std::to_string(x.rows()) + " inputs and " + std::to_string(y.size()) + " labels");
    a_[0] = x.middleRows(first, rows);
    y_.assign(y.begin() + first, y.begin() + first + rows);
    for (std::size_t l = 0; l < layers(); ++l) {
      z_[l] = (a_[l] * w_[l].transpose()).rowwise() + b_[l].transpose();
      if (l + 1 < layers()) a_[l + 1] = z_[l].array().tanh();
    }
    // softmax in place of the last pre-activation, the loss accumulated in double
    matrix& p = z_[layers() - 1];
    const int classes = widths_.back();
    double loss = 0.0;
    for (Eigen::Index r = 0; r < rows; ++r) {
      const int c = y_[static_cast<std::size_t>(r)];
      if (c < 0 || c >= classes) throw error("labels", "label " + std::to_string(c) + " is outside [0, " + std::to_string(classes) + ")");
      auto row = p.row(r);
      const float mx = row.maxCoeff();
      row = (row.array() - mx).exp();
      const float s = row.sum();
      row /= s;
      loss -= std::log(static_cast<double>(row(c)));
    }
    return loss / static_cast<double>(rows);
  }

  // Gradients of the mean loss of the last forward() (times loss_scale), last layer first;
  // calls ready(t) with the model tensor index t as soon as gradient t is final.
  template <class Ready>
  void backward(Ready&& ready, float loss_scale = 1.0f) {
    const std::size_t L = layers();
    matrix dz = z_[L - 1];  // softmax probabilities
    const Eigen::Index rows = dz.rows();
    if (rows == 0) throw error("backward", "backward() before forward()");
    for (Eigen::Index r = 0; r < rows; ++r) dz(r, y_[static_cast<std::size_t>(r)]) -= 1.0f;
    dz *= loss_scale / static_cast<float>(rows);
    for (std::size_t l = L; l-- > 0;) {
      db_[l].noalias() = dz.colwise().sum().transpose();
      ready(2 * l + 1);
      dw_[l].noalias() = dz.transpose() * a_[l];
      ready(2 * l);
      if (l == 0) break;
      matrix da = dz * w_[l];  // reads the weights, never the gradient buffers the executor owns now
      dz = da.array() * (1.0f - a_[l].array().square());
    }
  }

  // Plain SGD on the gradient buffers.
  void step(float lr) {
    for (std::size_t l = 0; l < layers(); ++l) {
      w_[l].noalias() -= lr * dw_[l];
      b_[l].noalias() -= lr * db_[l];
    }
  }

 private:
  void check_input(const matrix& x) const {
    if (x.cols() != widths_.front())
      throw error("x", "inputs have " + std::to_string(x.cols()) + " columns, the network takes " + std::to_string(widths_.front()));
  }

  std::vector<int> widths_;
  std::vector<matrix> w_, dw_, z_, a_;
  std::vector<vector> b_, db_;
  std::vector<int> y_;
};

// `rows` Gaussian inputs of width teacher_widths.front(), labelled with the argmax of a random
// teacher MLP (gain 2: a teacher with larger weights draws less trivial class boundaries).
[[nodiscard]] inline dataset teacher_data(const std::vector<int>& teacher_widths, Eigen::Index rows, std::uint64_t seed) {
  check_widths(teacher_widths);
  if (rows < 1) throw error("rows", "must be >= 1, got " + std::to_string(rows));
  const mlp teacher(teacher_widths, seed ^ 0x7eac4e7ull, 2.0f);
  portable_rng rng(seed);
  dataset d;
  d.classes = teacher_widths.back();
  d.x.resize(rows, teacher_widths.front());
  for (Eigen::Index i = 0; i < d.x.size(); ++i) d.x.data()[i] = static_cast<float>(rng.normal());
  const matrix scores = teacher.logits(d.x);
  d.y.resize(static_cast<std::size_t>(rows));
  for (Eigen::Index r = 0; r < rows; ++r) {
    Eigen::Index c = 0;
    scores.row(r).maxCoeff(&c);
    d.y[static_cast<std::size_t>(r)] = static_cast<int>(c);
  }
  return d;
}

struct sgd_options {
  Eigen::Index global_batch = 96;  // rows per step over all ranks; a multiple of the rank count
  float lr = 0.1f;
  float loss_scale = 1.0f;         // see the header comment; a power of two keeps updates exact
};

// The rows rank `rank` of `world` trains on at step `k`: [first, first + count).
struct shard_rows {
  Eigen::Index first = 0, count = 0;
};
[[nodiscard]] inline shard_rows rows_of(const dataset& d, const sgd_options& o, std::int64_t k, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world) throw error("rank", "rank " + std::to_string(rank) + " of " + std::to_string(world));
  if (o.global_batch < 1 || o.global_batch % world != 0)
    throw error("global_batch", std::to_string(o.global_batch) + " is not a positive multiple of the " + std::to_string(world) + " ranks");
  if (d.x.rows() % o.global_batch != 0)
    throw error("global_batch", "the dataset's " + std::to_string(d.x.rows()) + " rows are not a multiple of the batch " +
                                    std::to_string(o.global_batch));
  const Eigen::Index batches = d.x.rows() / o.global_batch, per = o.global_batch / world;
  return {(k % batches) * o.global_batch + rank * per, per};
}

// One data-parallel SGD step of `net` at step `k`: forward on this rank's shard, backward with
// ready() into `ex` (an executor compiled for mlp_model(widths, global_batch / world) with
// options.average, or an autosync::session, which averages by default), the step. Returns this
// rank's mean loss before the update.
template <class Executor>
double train_step(Executor& ex, mlp& net, const dataset& d, const sgd_options& o, std::int64_t k, int rank, int world,
                  iteration_timing* timing = nullptr) {
  if (!(o.lr > 0.0f) || !(o.loss_scale > 0.0f)) throw error("lr", "the learning rate and the loss scale must be > 0");
  const auto s = rows_of(d, o, k, rank, world);
  const double loss = net.forward(d.x, d.y, s.first, s.count);
  const auto grads = net.gradients();
  if constexpr (requires { ex.begin(std::span<const gradient>(grads)); }) ex.begin(std::span<const gradient>(grads));  // autosync::session
  else ex.begin_iteration(std::span<const gradient>(grads));                                                            // exec::executor
  net.backward([&](std::size_t t) { ex.ready(t); }, o.loss_scale);
  const auto t = ex.finish();
  if (timing) *timing = t;
  net.step(o.lr / o.loss_scale);
  return loss;
}

// The same step on one process over the whole global batch (the reference).
inline double train_step_single(mlp& net, const dataset& d, const sgd_options& o, std::int64_t k) {
  const auto s = rows_of(d, o, k, 0, 1);
  const double loss = net.forward(d.x, d.y, s.first, s.count);
  net.backward([](std::size_t) {}, o.loss_scale);
  net.step(o.lr / o.loss_scale);
  return loss;
}

}  // namespace autosync::exec::train
