// The CUDA implementation of Backend: cuBLAS for the matrix products, cuda_ops.cuh for the rest,
// all on one stream, everything kept in device memory. Steps run through run_recorded() are
// captured once as a CUDA graph and replayed (a small MLP step is a few dozen short kernels, and
// replaying a graph costs far less CPU time than launching them one by one). Graphs are kept per
// (owner, key) and dropped with their owner (drop_recorded), so a graph never runs on another
// owner's buffers or on freed ones.
//
// This header is plain C++ (no CUDA types), so that code compiled without nvcc can create one.
// In a build without CUDA (JOBCTL_HAVE_CUDA undefined) these functions do not exist; use
// make_backend() (make_backend.h), which knows.
//
// Thread safety: one thread at a time (as every Backend).
#pragma once

#include <memory>
#include <string>

#include "train/kernels/backend.h"

namespace jobctl::train {

// Number of usable CUDA devices; 0 when there is no driver, no device, or the runtime fails.
int cuda_device_count();

struct CudaBackendOptions {
  int device = 0;
  bool graphs = true;  // record run_recorded() bodies as CUDA graphs
};

// Throws std::runtime_error when the device cannot be initialised.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);

}  // namespace jobctl::train
