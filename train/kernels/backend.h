// The device a network trains on: memory and every compute operation the models need.
//
// The model, optimizer and trainer are written once against this interface; CpuBackend runs the
// operations on the host (OpenBLAS GEMM + cpu_ops.h), CudaBackend on a GPU (cuBLAS + our kernels
// in cuda_ops.cuh). Pointers passed to the operations are the backend's own memory (host memory
// for the CPU, device memory for CUDA), obtained from allocate().
//
// Layout conventions: matrices are row-major; images are NHWC (batch, height, width, channels),
// so a 3x3 convolution is im2col into [N*H*W, 9*C] and one GEMM with the [Cout, 9*C] weights.
//
// Ordering: operations run in issue order (one CUDA stream); download() and synchronize() wait
// for everything issued before them. Determinism: every reduction has a fixed order that depends
// only on the sizes involved (never on thread timing or the number of SMs), so the same inputs on
// the same kind of hardware give the same bits.
//
// Ownership and thread safety: a Backend is used by one thread at a time. Memory from allocate()
// is owned by the caller and returned with deallocate() (DeviceBuffer does both).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace jobctl::train {

enum class DeviceKind { cpu, cuda };
enum class Transpose { no, yes };
enum class ActivationFn { none, relu, gelu };

// Per-step values that change every optimizer step. They live in backend memory and kernels read
// them from there (rather than as arguments), so that a recorded CUDA graph of a whole step can be
// replayed unchanged: the host uploads a new StepScalars before each replay.
struct StepScalars {
  float lr = 0;                // learning rate of this step
  float bias_correction1 = 1;  // AdamW: 1 - beta1^t
  float bias_correction2 = 1;  // AdamW: 1 - beta2^t
  int32_t loss_slot = 0;       // where the step's mean loss is written in the loss log
};
static_assert(sizeof(StepScalars) == 16);

// Global-norm clipping state, computed on the device: scale multiplies every gradient.
struct ClipState {
  float scale = 1;
  float norm = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const = 0;
  // For people: "cpu (2 threads, OpenBLAS Haswell)", "NVIDIA H100 80GB HBM3".
  virtual std::string device_name() const = 0;

  // ---- memory -------------------------------------------------------------------------------
  // Zero-filled, aligned to at least 64 bytes. Throws std::bad_alloc when out of memory.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p) = 0;
  // Host -> backend. `src` may be reused as soon as the call returns.
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  // Backend -> host; waits for the operations issued before it.
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void fill_zero(void* dst, size_t bytes) = 0;
  virtual void synchronize() = 0;

  // ---- a recorded step ----------------------------------------------------------------------
  // Runs `body`, a fixed sequence of operations on fixed buffers (no uploads, downloads or
  // allocation inside). The CUDA backend records it as a CUDA graph under `key` on a later call
  // and replays the graph from then on; the CPU backend just calls it. Callers must give a
  // different key whenever the sequence or its arguments differ.
  virtual void run_recorded(uint64_t key, const std::function<void()>& body) { (void)key; body(); }

  // ---- compute ------------------------------------------------------------------------------
  // C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C (C is not read when beta == 0).
  virtual void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) = 0;

  // dst[i, :] = src[idx[i], :] for i < n (rows of `width` floats); labels likewise.
  virtual void gather_rows(const float* src, int width, const int32_t* idx, int n, float* dst) = 0;
  virtual void gather_labels(const int32_t* src, const int32_t* idx, int n, int32_t* dst) = 0;

  // pre[r, c] += bias[c]; out[r, c] = act(pre[r, c]). `out` may equal `pre` when act == none.
  virtual void bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                       float* out) = 0;
  // dpre = dout * act'(pre) (dpre may equal dout); dbias[c] = sum over rows of dpre[r, c].
  virtual void bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre,
                                        const float* dout, float* dpre, float* dbias) = 0;

  // Softmax cross-entropy over `classes` logits per row, fused with its gradient:
  // dlogits = (softmax - onehot(label)) / rows; row_loss[r] = -log softmax[label];
  // loss_log[scalars->loss_slot] = mean of row_loss (fixed-order sum).
  virtual void softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels,
                                     float* dlogits, float* row_loss, float* loss_log,
                                     const StepScalars* scalars) = 0;
  // Evaluation: row_loss[r] and row_correct[r] (1 when the arg-max, lowest index on ties, is the
  // label, else 0).
  virtual void softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                          float* row_loss, float* row_correct) = 0;

  // 3x3, stride 1, padding 1 convolution helpers over NHWC images.
  // col[(n*H + y)*W + x, (ky*3 + kx)*C + c] = in[n, y+ky-1, x+kx-1, c] (0 outside the image).
  virtual void im2col3x3(int n, int h, int w, int c, const float* in, float* col) = 0;
  // The adjoint of im2col3x3: din[n, y, x, c] = sum of the col entries that read it (overwrites).
  virtual void col2im3x3(int n, int h, int w, int c, const float* col, float* din) = 0;

  // 2x2 max-pool, stride 2, over NHWC; output is n x (h/2) x (w/2) x c (odd edges dropped).
  // argmax holds the winning position 0..3 (dy*2 + dx; the first maximum on ties).
  virtual void maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) = 0;
  // din (n x h x w x c) = dout routed to the winning positions, 0 elsewhere (overwrites all of din).
  virtual void maxpool2x2_backward(int n, int h, int w, int c, const float* dout, const uint8_t* argmax,
                                   float* din) = 0;

  // Global L2 norm of grads[0..n) (fixed-order reduction) and the clip scale
  // min(1, max_norm / (norm + 1e-6)); max_norm <= 0 means no clipping (scale 1).
  virtual void clip_by_global_norm(const float* grads, size_t n, float max_norm, ClipState* state) = 0;

  // Decoupled AdamW (Loshchilov & Hutter), as torch.optim.AdamW: with g = grad * clip->scale,
  // m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
  // p = p * (1 - lr*wd) - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps).
  virtual void adamw_update(size_t n, float* params, const float* grads, float* m, float* v,
                            const StepScalars* scalars, const ClipState* clip, float beta1, float beta2, float eps,
                            float weight_decay) = 0;
  // SGD with momentum, as torch.optim.SGD (L2 weight decay added to the gradient, no dampening):
  // g = grad * clip->scale + wd * p; buf = momentum * buf + g; p -= lr * buf.
  virtual void sgd_momentum_update(size_t n, float* params, const float* grads, float* buf,
                                   const StepScalars* scalars, const ClipState* clip, float momentum,
                                   float weight_decay) = 0;
};

}  // namespace jobctl::train
