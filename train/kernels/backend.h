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
// Precision: every operation computes in fp32. The *_bf16 operations read or write bfloat16 values
// (bf16_t: the upper 16 bits of an IEEE-754 float; fp32 -> bf16 rounds to nearest even), and
// gemm_bf16 multiplies bf16 operands exactly and accumulates in fp32 (tensor cores on the GPU, an
// fp32 GEMM over the widened operands on the CPU), so the two backends differ only in the order
// of the fp32 sums, as for gemm.
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
using bf16_t = uint16_t;  // a bfloat16 bit pattern
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

  // ---- recorded steps -----------------------------------------------------------------------
  // Runs `body`, a fixed sequence of operations on fixed buffers (no uploads, downloads or
  // allocation inside). The CUDA backend records it as a CUDA graph under (owner, key) on a later
  // call and replays the graph from then on; the CPU backend just calls it. An owner is whoever
  // owns the buffers the body uses (RecordedSteps below hands out owners); within an owner, callers
  // must give a different key whenever the sequence or its arguments differ. A recorded graph
  // holds raw pointers, so it must never outlive its owner's buffers: drop_recorded(owner) forgets
  // every graph of that owner, and owners are never reused.
  uint64_t new_recording_owner() { return next_recording_owner_++; }
  virtual void run_recorded(uint64_t owner, uint64_t key, const std::function<void()>& body) {
    (void)owner;
    (void)key;
    body();
  }
  virtual void drop_recorded(uint64_t owner) { (void)owner; }

  // ---- compute ------------------------------------------------------------------------------
  // C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C (C is not read when beta == 0).
  virtual void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) = 0;

  // The same product over bf16 operands: exact products, fp32 accumulation, fp32 C.
  virtual void gemm_bf16(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const bf16_t* a, int lda,
                         const bf16_t* b, int ldb, float beta, float* c, int ldc) = 0;
  // dst[i] = src[i] rounded to the nearest bf16 (ties to even; NaN stays NaN).
  virtual void to_bf16(const float* src, size_t n, bf16_t* dst) = 0;

  // dst[i, :] = src[idx[i], :] for i < n (rows of `width` floats); labels likewise.
  virtual void gather_rows(const float* src, int width, const int32_t* idx, int n, float* dst) = 0;
  virtual void gather_labels(const int32_t* src, const int32_t* idx, int n, int32_t* dst) = 0;

  // pre[r, c] += bias[c]; out[r, c] = act(pre[r, c]). `out` may equal `pre` (it then holds act(pre)).
  virtual void bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                       float* out) = 0;
  // The same with a bf16 output: out[r, c] = bf16(act(pre[r, c])).
  virtual void bias_activation_forward_bf16(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                            bf16_t* out) = 0;
  // dpre = dout * act'(pre) (dpre may equal dout); dbias[c] = sum over rows of dpre[r, c], or
  // dbias[c] += that sum when `accumulate` (gradient accumulation over micro-batches).
  virtual void bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre,
                                        const float* dout, float* dpre, float* dbias, bool accumulate) = 0;

  // Softmax cross-entropy over `classes` logits per row, fused with its gradient:
  // dlogits = (softmax - onehot(label)) * grad_scale; row_loss[r] = -log softmax[label].
  // grad_scale is 1 / (rows of the whole optimizer step), so micro-batches add up to the batch.
  virtual void softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels,
                                     float grad_scale, float* dlogits, float* row_loss) = 0;
  // loss_log[scalars->loss_slot] = mean of row_loss[0..rows) (fixed-order sum).
  virtual void mean_loss(int rows, const float* row_loss, float* loss_log, const StepScalars* scalars) = 0;
  // Evaluation: row_loss[r] and row_correct[r] (1 when the arg-max, lowest index on ties, is the
  // label, else 0).
  virtual void softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                          float* row_loss, float* row_correct) = 0;

  // 3x3, stride 1, padding 1 convolution helpers over NHWC images.
  // col[(n*H + y)*W + x, (ky*3 + kx)*C + c] = in[n, y+ky-1, x+kx-1, c] (0 outside the image).
  virtual void im2col3x3(int n, int h, int w, int c, const float* in, float* col) = 0;
  virtual void im2col3x3_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* col) = 0;
  // The adjoint of im2col3x3: din[n, y, x, c] = sum of the col entries that read it (overwrites).
  virtual void col2im3x3(int n, int h, int w, int c, const float* col, float* din) = 0;

  // A whole fp32 3x3 convolution + bias + ReLU layer, forward: col = im2col3x3(in) (kept for the
  // weight gradient), out = relu(col weights^T + bias) with weights [cout, 9c]. By default the
  // operations above one after the other; a backend may fuse them (the CPU does, image by image,
  // so each block of col is still in cache when the product reads it).
  virtual void conv3x3_relu_forward(int n, int h, int w, int c, int cout, const float* in, const float* weights,
                                    const float* bias, float* col, float* out) {
    const int rows = n * h * w, k = 9 * c;
    im2col3x3(n, h, w, c, in, col);
    gemm(Transpose::no, Transpose::yes, rows, cout, k, 1.0f, col, k, weights, k, 0.0f, out, cout);
    bias_activation_forward(rows, cout, bias, ActivationFn::relu, out, out);
  }
  // Its backward from dout (overwritten with the pre-activation gradient; `out` gives the ReLU
  // mask): dweights and dbias written, or added to when `accumulate`; din (when not null) =
  // col2im3x3(dpre weights), with dcol ([n*h*w, 9c]) as scratch.
  virtual void conv3x3_relu_backward(int n, int h, int w, int c, int cout, const float* col, const float* weights,
                                     const float* out, float* dout, float* dweights, float* dbias, bool accumulate,
                                     float* dcol, float* din) {
    const int rows = n * h * w, k = 9 * c;
    bias_activation_backward(rows, cout, ActivationFn::relu, out, dout, dout, dbias, accumulate);
    gemm(Transpose::yes, Transpose::no, cout, k, rows, 1.0f, dout, cout, col, k, accumulate ? 1.0f : 0.0f, dweights, k);
    if (din) {
      gemm(Transpose::no, Transpose::no, rows, k, cout, 1.0f, dout, cout, weights, k, 0.0f, dcol, k);
      col2im3x3(n, h, w, c, dcol, din);
    }
  }

  // 2x2 max-pool, stride 2, over NHWC; output is n x (h/2) x (w/2) x c (odd edges dropped).
  // argmax holds the winning position 0..3 (dy*2 + dx; the first maximum on ties).
  virtual void maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) = 0;
  virtual void maxpool2x2_forward_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* out,
                                       uint8_t* argmax) = 0;
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

 private:
  uint64_t next_recording_owner_ = 1;
};

// The recorded steps of one owner (a Trainer): a fresh owner id from the backend, and every graph
// recorded under it dropped when this goes away. Declare it after the buffers its steps use, so
// it is destroyed (and the graphs forgotten) before they are freed. Not copyable or movable.
class RecordedSteps {
 public:
  explicit RecordedSteps(Backend& backend) : backend_(backend), owner_(backend.new_recording_owner()) {}
  ~RecordedSteps() { backend_.drop_recorded(owner_); }
  RecordedSteps(const RecordedSteps&) = delete;
  RecordedSteps& operator=(const RecordedSteps&) = delete;

  void run(uint64_t key, const std::function<void()>& body) { backend_.run_recorded(owner_, key, body); }
  uint64_t owner() const { return owner_; }

 private:
  Backend& backend_;
  uint64_t owner_;
};

}  // namespace jobctl::train
