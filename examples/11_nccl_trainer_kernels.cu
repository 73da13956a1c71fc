// 11 — the CUDA half of the GPU trainer (examples/11_nccl_trainer.cpp has the story): the MLP's
// forward / backward / SGD kernels, plain and unoptimized (one thread per output element), and —
// by including exec/nccl/kernels.cuh — the bucket kernels the NCCL executor runs.
#include <autosync/exec/nccl/kernels.cuh>

#include <cuda_runtime.h>

#include <cstddef>

namespace ex11 {

namespace {

constexpr int threads = 256;
unsigned blocks(long n) { return static_cast<unsigned>((n + threads - 1) / threads); }

// Y[B x out] = X[B x in] W^T + b, then tanh when `act`.
__global__ void linear_forward_kernel(const float* X, const float* W, const float* b, float* Y, int B, int in, int out, bool act) {
  const long i = static_cast<long>(blockIdx.x) * threads + threadIdx.x;
  if (i >= static_cast<long>(B) * out) return;
  const int r = static_cast<int>(i / out), o = static_cast<int>(i % out);
  float s = b[o];
  for (int k = 0; k < in; ++k) s += X[static_cast<long>(r) * in + k] * W[static_cast<long>(o) * in + k];
  Y[i] = act ? tanhf(s) : s;
}

// dlogits = (softmax(logits) - onehot(label)) * scale; loss += -log softmax[label] (per row).
__global__ void softmax_xent_kernel(const float* logits, const int* labels, float* dlogits, double* loss, int B, int C, float scale) {
  const int r = static_cast<int>(blockIdx.x) * threads + threadIdx.x;
  if (r >= B) return;
  const float* z = logits + static_cast<long>(r) * C;
  float m = z[0];
  for (int c = 1; c < C; ++c) m = fmaxf(m, z[c]);
  float sum = 0.0f;
  for (int c = 0; c < C; ++c) sum += expf(z[c] - m);
  for (int c = 0; c < C; ++c) {
    const float pc = expf(z[c] - m) / sum;
    dlogits[static_cast<long>(r) * C + c] = (pc - (c == labels[r] ? 1.0f : 0.0f)) * scale;
  }
  atomicAdd(loss, static_cast<double>(logf(sum) + m - z[labels[r]]));
}

// dW[out x in] = dY^T X, db = column sums of dY.
__global__ void linear_backward_params_kernel(const float* dY, const float* X, float* dW, float* db, int B, int in, int out) {
  const long i = static_cast<long>(blockIdx.x) * threads + threadIdx.x;
  if (i < static_cast<long>(out) * in) {
    const int o = static_cast<int>(i / in), k = static_cast<int>(i % in);
    float s = 0.0f;
    for (int r = 0; r < B; ++r) s += dY[static_cast<long>(r) * out + o] * X[static_cast<long>(r) * in + k];
    dW[i] = s;
  }
  if (i < out) {
    float s = 0.0f;
    for (int r = 0; r < B; ++r) s += dY[static_cast<long>(r) * out + i];
    db[i] = s;
  }
}

// dX[B x in] = (dY W) * (1 - A^2): the gradient through the previous layer's tanh (A its output).
__global__ void linear_backward_input_kernel(const float* dY, const float* W, const float* A, float* dX, int B, int in, int out) {
  const long i = static_cast<long>(blockIdx.x) * threads + threadIdx.x;
  if (i >= static_cast<long>(B) * in) return;
  const int r = static_cast<int>(i / in), k = static_cast<int>(i % in);
  float s = 0.0f;
  for (int o = 0; o < out; ++o) s += dY[static_cast<long>(r) * out + o] * W[static_cast<long>(o) * in + k];
  dX[i] = s * (1.0f - A[i] * A[i]);
}

__global__ void sgd_kernel(float* w, const float* g, long n, float lr) {
  const long i = static_cast<long>(blockIdx.x) * threads + threadIdx.x;
  if (i < n) w[i] -= lr * g[i];
}

}  // namespace

cudaError_t linear_forward(const float* X, const float* W, const float* b, float* Y, int B, int in, int out, bool act, cudaStream_t s) {
  linear_forward_kernel<<<blocks(static_cast<long>(B) * out), threads, 0, s>>>(X, W, b, Y, B, in, out, act);
  return cudaGetLastError();
}
cudaError_t softmax_xent(const float* logits, const int* labels, float* dlogits, double* loss, int B, int C, float scale, cudaStream_t s) {
  softmax_xent_kernel<<<blocks(B), threads, 0, s>>>(logits, labels, dlogits, loss, B, C, scale);
  return cudaGetLastError();
}
cudaError_t linear_backward_params(const float* dY, const float* X, float* dW, float* db, int B, int in, int out, cudaStream_t s) {
  linear_backward_params_kernel<<<blocks(static_cast<long>(out) * in > out ? static_cast<long>(out) * in : out), threads, 0, s>>>(dY, X, dW, db, B,
                                                                                                                                   in, out);
  return cudaGetLastError();
}
cudaError_t linear_backward_input(const float* dY, const float* W, const float* A, float* dX, int B, int in, int out, cudaStream_t s) {
  linear_backward_input_kernel<<<blocks(static_cast<long>(B) * in), threads, 0, s>>>(dY, W, A, dX, B, in, out);
  return cudaGetLastError();
}
cudaError_t sgd(float* w, const float* g, long n, float lr, cudaStream_t s) {
  sgd_kernel<<<blocks(n), threads, 0, s>>>(w, g, n, lr);
  return cudaGetLastError();
}

}  // namespace ex11
