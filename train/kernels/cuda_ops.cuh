// CUDA kernels of the training core and their host-side launchers (internal to the CUDA backend).
//
// Each launcher mirrors one function of cpu_ops.h (the CPU reference it is tested against in
// tests/cuda_kernels_test.cpp) and enqueues its work on `stream` without synchronising.
//
// Determinism: no kernel uses atomics to accumulate. Reductions give each thread a fixed set of
// elements, summed in a fixed order, then combine threads in a fixed tree; grid sizes depend only
// on the problem sizes, never on the device (SM count), so results are bit-reproducible on the same
// GPU model and toolkit.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "train/kernels/backend.h"

namespace jobctl::train::cuda {

void to_bf16(cudaStream_t s, const float* src, size_t n, bf16_t* dst);

void gather_rows(cudaStream_t s, const float* src, int width, const int32_t* idx, int n, float* dst);
void gather_labels(cudaStream_t s, const int32_t* src, const int32_t* idx, int n, int32_t* dst);

void bias_activation_forward(cudaStream_t s, int rows, int cols, const float* bias, ActivationFn act, float* pre,
                             float* out);
void bias_activation_forward_bf16(cudaStream_t s, int rows, int cols, const float* bias, ActivationFn act,
                                  float* pre, bf16_t* out);
// Scratch floats that bias_activation_backward needs for a rows x cols problem.
size_t bias_backward_scratch(int rows, int cols);
void bias_activation_backward(cudaStream_t s, int rows, int cols, ActivationFn act, const float* pre,
                              const float* dout, float* dpre, float* dbias, bool accumulate, float* scratch);

void softmax_cross_entropy(cudaStream_t s, int rows, int classes, const float* logits, const int32_t* labels,
                           float grad_scale, float* dlogits, float* row_loss);
void mean_loss(cudaStream_t s, int rows, const float* row_loss, float* loss_log, const StepScalars* scalars);
void softmax_cross_entropy_eval(cudaStream_t s, int rows, int classes, const float* logits, const int32_t* labels,
                                float* row_loss, float* row_correct);

void im2col3x3(cudaStream_t s, int n, int h, int w, int c, const float* in, float* col);
void im2col3x3_bf16(cudaStream_t s, int n, int h, int w, int c, const bf16_t* in, bf16_t* col);
void col2im3x3(cudaStream_t s, int n, int h, int w, int c, const float* col, float* din);
void maxpool2x2_forward(cudaStream_t s, int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax);
void maxpool2x2_forward_bf16(cudaStream_t s, int n, int h, int w, int c, const bf16_t* in, bf16_t* out,
                             uint8_t* argmax);
void maxpool2x2_backward(cudaStream_t s, int n, int h, int w, int c, const float* dout, const uint8_t* argmax,
                         float* din);

size_t clip_scratch(size_t n);
void clip_by_global_norm(cudaStream_t s, const float* grads, size_t n, float max_norm, ClipState* state,
                         float* scratch);

void adamw_update(cudaStream_t s, size_t n, float* params, const float* grads, float* m, float* v,
                  const StepScalars* scalars, const ClipState* clip, float beta1, float beta2, float eps,
                  float weight_decay);
void sgd_momentum_update(cudaStream_t s, size_t n, float* params, const float* grads, float* buf,
                         const StepScalars* scalars, const ClipState* clip, float momentum, float weight_decay);

}  // namespace jobctl::train::cuda
