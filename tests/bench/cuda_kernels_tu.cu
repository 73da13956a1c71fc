// The CUDA bucket kernels for bench_cuda_kernels (including kernels.cuh in one .cu file of a
// program registers its kernel table, exec/nccl/device_kernels.hpp).
#include <autosync/exec/nccl/kernels.cuh>
