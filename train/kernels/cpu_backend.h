// The host implementation of Backend: OpenBLAS (or the portable GEMM) for matrix products and
// cpu_ops.h for everything else. Memory is ordinary host memory, so "device" pointers are host
// pointers and upload/download are copies.
//
// Threads: GEMMs use the BLAS thread pool (set_blas_threads); the other kernels split their work
// into fixed chunks over as many threads (cpu_parallel.h), which keeps their order of operations,
// and hence the bits, independent of the thread count.
//
// Thread safety: one thread at a time (as every Backend).
#pragma once

#include <vector>

#include "train/kernels/backend.h"

namespace jobctl::train {

class CpuBackend final : public Backend {
 public:
  // threads: BLAS threads (<= 0: leave the BLAS default, which is all cores).
  explicit CpuBackend(int threads = 0);

  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string device_name() const override;

  void* allocate(size_t bytes) override;
  void deallocate(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill_zero(void* dst, size_t bytes) override;
  void synchronize() override {}

  void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc) override;
  void gemm_bf16(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const bf16_t* a, int lda,
                 const bf16_t* b, int ldb, float beta, float* c, int ldc) override;
  void to_bf16(const float* src, size_t n, bf16_t* dst) override;
  void gather_rows(const float* src, int width, const int32_t* idx, int n, float* dst) override;
  void gather_labels(const int32_t* src, const int32_t* idx, int n, int32_t* dst) override;
  void bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                               float* out) override;
  void bias_activation_forward_bf16(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                    bf16_t* out) override;
  void bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre, const float* dout,
                                float* dpre, float* dbias, bool accumulate) override;
  void softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels, float grad_scale,
                             float* dlogits, float* row_loss) override;
  void mean_loss(int rows, const float* row_loss, float* loss_log, const StepScalars* scalars) override;
  void softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                  float* row_loss, float* row_correct) override;
  void im2col3x3(int n, int h, int w, int c, const float* in, float* col) override;
  void im2col3x3_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* col) override;
  void col2im3x3(int n, int h, int w, int c, const float* col, float* din) override;
  void conv3x3_relu_forward(int n, int h, int w, int c, int cout, const float* in, const float* weights,
                            const float* bias, float* col, float* out) override;
  void conv3x3_relu_backward(int n, int h, int w, int c, int cout, const float* col, const float* weights,
                             const float* out, float* dout, float* dweights, float* dbias, bool accumulate, float* dcol,
                             float* din) override;
  void maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) override;
  void maxpool2x2_forward_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* out, uint8_t* argmax) override;
  void maxpool2x2_backward(int n, int h, int w, int c, const float* dout, const uint8_t* argmax,
                           float* din) override;
  void clip_by_global_norm(const float* grads, size_t n, float max_norm, ClipState* state) override;
  void adamw_update(size_t n, float* params, const float* grads, float* m, float* v, const StepScalars* scalars,
                    const ClipState* clip, float beta1, float beta2, float eps, float weight_decay) override;
  void sgd_momentum_update(size_t n, float* params, const float* grads, float* buf, const StepScalars* scalars,
                           const ClipState* clip, float momentum, float weight_decay) override;

 private:
  // gemm_bf16 widens its operands here (exactly) and runs the fp32 GEMM.
  std::vector<float> widened_a_, widened_b_;
};

}  // namespace jobctl::train
