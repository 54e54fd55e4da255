#include "train/kernels/cpu_backend.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "train/kernels/cpu_ops.h"
#include "train/kernels/cpu_parallel.h"
#include "train/kernels/gemm.h"

namespace jobctl::train {

CpuBackend::CpuBackend(int threads) { set_blas_threads(threads); }

std::string CpuBackend::device_name() const {
  const int t = blas_threads();
  return "cpu (" + std::to_string(t) + (t == 1 ? " thread, " : " threads, ") + blas_description() + ")";
}

void* CpuBackend::allocate(size_t bytes) {
  // Large buffers (datasets, big layers) are 2 MiB-aligned and marked for transparent huge pages:
  // on a VM every 4 KiB page fault is expensive, and a dataset is hundreds of thousands of pages.
  constexpr size_t kHuge = size_t{2} << 20;
  const bool huge = bytes >= 2 * kHuge;
  const size_t align = huge ? kHuge : 64;
  const size_t rounded = bytes == 0 ? align : (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  std::memset(p, 0, rounded);
  return p;
}

void CpuBackend::deallocate(void* p) { std::free(p); }
void CpuBackend::upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::download(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::copy(void* dst, const void* src, size_t bytes) { std::memmove(dst, src, bytes); }
void CpuBackend::fill_zero(void* dst, size_t bytes) { std::memset(dst, 0, bytes); }

void CpuBackend::gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) {
  train::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void CpuBackend::gemm_bf16(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const bf16_t* a, int lda,
                           const bf16_t* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  // The stored extent of op(A) [m, k] and op(B) [k, n] with their row strides.
  const size_t a_rows = static_cast<size_t>(ta == Transpose::yes ? k : m);
  const size_t b_rows = static_cast<size_t>(tb == Transpose::yes ? n : k);
  const size_t a_count = a_rows == 0 ? 0 : (a_rows - 1) * static_cast<size_t>(lda) + (ta == Transpose::yes ? m : k);
  const size_t b_count = b_rows == 0 ? 0 : (b_rows - 1) * static_cast<size_t>(ldb) + (tb == Transpose::yes ? k : n);
  if (widened_a_.size() < a_count) widened_a_.resize(a_count);
  if (widened_b_.size() < b_count) widened_b_.resize(b_count);
  cpu::from_bf16(a, a_count, widened_a_.data());
  cpu::from_bf16(b, b_count, widened_b_.data());
  train::gemm(ta, tb, m, n, k, alpha, widened_a_.data(), lda, widened_b_.data(), ldb, beta, c, ldc);
}

void CpuBackend::to_bf16(const float* src, size_t n, bf16_t* dst) { cpu::to_bf16(src, n, dst); }

void CpuBackend::gather_rows(const float* src, int width, const int32_t* idx, int n, float* dst) {
  cpu::gather_rows(src, width, idx, n, dst);
}
void CpuBackend::gather_labels(const int32_t* src, const int32_t* idx, int n, int32_t* dst) {
  cpu::gather_labels(src, idx, n, dst);
}
void CpuBackend::bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                         float* out) {
  cpu::bias_activation_forward(rows, cols, bias, act, pre, out);
}
void CpuBackend::bias_activation_forward_bf16(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                              bf16_t* out) {
  cpu::bias_activation_forward_bf16(rows, cols, bias, act, pre, out);
}
void CpuBackend::bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre,
                                          const float* dout, float* dpre, float* dbias, bool accumulate) {
  cpu::bias_activation_backward(rows, cols, act, pre, dout, dpre, dbias, accumulate);
}
void CpuBackend::softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels,
                                       float grad_scale, float* dlogits, float* row_loss) {
  cpu::softmax_cross_entropy(rows, classes, logits, labels, grad_scale, dlogits, row_loss);
}
void CpuBackend::mean_loss(int rows, const float* row_loss, float* loss_log, const StepScalars* scalars) {
  loss_log[scalars->loss_slot] = cpu::mean_of(row_loss, rows);
}
void CpuBackend::softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                            float* row_loss, float* row_correct) {
  cpu::softmax_cross_entropy_eval(rows, classes, logits, labels, row_loss, row_correct);
}
void CpuBackend::im2col3x3(int n, int h, int w, int c, const float* in, float* col) {
  cpu::im2col3x3(n, h, w, c, in, col);
}
void CpuBackend::im2col3x3_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* col) {
  cpu::im2col3x3_bf16(n, h, w, c, in, col);
}
void CpuBackend::col2im3x3(int n, int h, int w, int c, const float* col, float* din) {
  cpu::col2im3x3(n, h, w, c, col, din);
}
void CpuBackend::conv3x3_relu_forward(int n, int h, int w, int c, int cout, const float* in, const float* weights,
                                      const float* bias, float* col, float* out) {
  cpu::conv3x3_relu_forward(n, h, w, c, cout, in, weights, bias, col, out);
}
void CpuBackend::conv3x3_relu_backward(int n, int h, int w, int c, int cout, const float* col, const float* weights,
                                       const float* out, float* dout, float* dweights, float* dbias, bool accumulate,
                                       float* dcol, float* din) {
  cpu::conv3x3_relu_backward(n, h, w, c, cout, col, weights, out, dout, dweights, dbias, accumulate, dcol, din);
}
void CpuBackend::maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) {
  cpu::maxpool2x2_forward(n, h, w, c, in, out, argmax);
}
void CpuBackend::maxpool2x2_forward_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* out,
                                         uint8_t* argmax) {
  cpu::maxpool2x2_forward_bf16(n, h, w, c, in, out, argmax);
}
void CpuBackend::maxpool2x2_backward(int n, int h, int w, int c, const float* dout, const uint8_t* argmax,
                                     float* din) {
  cpu::maxpool2x2_backward(n, h, w, c, dout, argmax, din);
}
void CpuBackend::clip_by_global_norm(const float* grads, size_t n, float max_norm, ClipState* state) {
  *state = cpu::clip_state(cpu::sum_of_squares(grads, n), max_norm);
}
void CpuBackend::adamw_update(size_t n, float* params, const float* grads, float* m, float* v,
                              const StepScalars* scalars, const ClipState* clip, float beta1, float beta2, float eps,
                              float weight_decay) {
  cpu::adamw_update(n, params, grads, m, v, scalars->lr, scalars->bias_correction1, scalars->bias_correction2,
                    clip->scale, beta1, beta2, eps, weight_decay);
}
void CpuBackend::sgd_momentum_update(size_t n, float* params, const float* grads, float* buf,
                                     const StepScalars* scalars, const ClipState* clip, float momentum,
                                     float weight_decay) {
  cpu::sgd_momentum_update(n, params, grads, buf, scalars->lr, clip->scale, momentum, weight_decay);
}

}  // namespace jobctl::train
