// The element-wise, reduction, convolution-helper and optimizer kernels on the host.
//
// They are what CpuBackend runs, and they are the reference every CUDA kernel is tested against
// (tests/cuda_kernels_test.cpp). Semantics are those documented on Backend (backend.h); the
// functions here take the same arguments with scalars by value.
//
// Determinism: every reduction runs in a fixed order that depends only on the sizes. Sums that
// feed a single scalar (mean loss, squared norm) accumulate in double.
//
// Thread safety: pure functions over the buffers they are given.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/kernels/backend.h"

namespace jobctl::train::cpu {

float activate(ActivationFn act, float x);
// d act(x) / dx.
float activate_grad(ActivationFn act, float x);

void gather_rows(const float* src, int width, const int32_t* idx, int n, float* dst);
void gather_labels(const int32_t* src, const int32_t* idx, int n, int32_t* dst);

void bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre, float* out);
void bias_activation_forward_bf16(int rows, int cols, const float* bias, ActivationFn act, float* pre, bf16_t* out);
void bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre, const float* dout,
                              float* dpre, float* dbias, bool accumulate);

// bf16 conversions (bf16.h rounding), element by element.
void to_bf16(const float* src, size_t n, bf16_t* dst);
void from_bf16(const bf16_t* src, size_t n, float* dst);

// Per-row loss and gradient (scaled by grad_scale); mean_of() takes the mean of the row losses.
void softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels, float grad_scale,
                           float* dlogits, float* row_loss);
void softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                float* row_loss, float* row_correct);
// Fixed-order mean (double accumulation), rounded to float.
float mean_of(const float* x, int n);

void im2col3x3(int n, int h, int w, int c, const float* in, float* col);
void im2col3x3_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* col);
void col2im3x3(int n, int h, int w, int c, const float* col, float* din);
// The fused fp32 3x3 convolution + bias + ReLU (Backend::conv3x3_relu_forward / _backward): image
// blocks of about kConvBlockRows rows, each run through im2col, its product and the bias/ReLU (and
// backward: ReLU mask, the block's weight and bias gradients, its input gradient) while it is in
// cache; the blocks' weight and bias gradients are added in block order. The blocks depend on the
// sizes only.
void conv3x3_relu_forward(int n, int h, int w, int c, int cout, const float* in, const float* weights,
                          const float* bias, float* col, float* out);
void conv3x3_relu_backward(int n, int h, int w, int c, int cout, const float* col, const float* weights,
                           const float* out, float* dout, float* dweights, float* dbias, bool accumulate, float* dcol,
                           float* din);
void maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax);
void maxpool2x2_forward_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* out, uint8_t* argmax);
void maxpool2x2_backward(int n, int h, int w, int c, const float* dout, const uint8_t* argmax, float* din);

// Sum of squares (fixed order, double) and the clip state derived from it.
double sum_of_squares(const float* x, size_t n);
ClipState clip_state(double sum_sq, float max_norm);

void adamw_update(size_t n, float* params, const float* grads, float* m, float* v, float lr, float bias_correction1,
                  float bias_correction2, float grad_scale, float beta1, float beta2, float eps, float weight_decay);
void sgd_momentum_update(size_t n, float* params, const float* grads, float* buf, float lr, float grad_scale,
                         float momentum, float weight_decay);

}  // namespace jobctl::train::cpu
