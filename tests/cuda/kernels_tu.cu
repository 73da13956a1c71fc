// The CUDA bucket kernels of the NCCL executor for the test programs: including kernels.cuh in
// one .cu file of a program registers its kernel table (exec/nccl/device_kernels.hpp).
#include <autosync/exec/nccl/kernels.cuh>
