#include "train/kernels/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <utility>
#include <stdexcept>
#include <string>

#include "train/kernels/cuda_ops.cuh"

namespace jobctl::train {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS ") + what + ": status " + std::to_string(static_cast<int>(s)));
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options) : graphs_enabled_(options.graphs) {
    check(cudaSetDevice(options.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, options.device), "cudaGetDeviceProperties");
    name_ = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&blas_), "cublasCreate");
    check(cublasSetStream(blas_, stream_), "cublasSetStream");
    // A fixed workspace: cuBLAS must not allocate while a graph is being captured, and a fixed
    // workspace also keeps its choice of kernels (and so its results) the same run after run.
    check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc(workspace)");
    check(cublasSetWorkspace(blas_, workspace_, kWorkspaceBytes), "cublasSetWorkspace");
    // Plain fp32 products (no TF32): the precision the CPU path and PyTorch's default use.
    check(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cudaHostAlloc(&staging_, kSlots * kSlotBytes, cudaHostAllocDefault), "cudaHostAlloc");
    for (auto& e : slot_done_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  }

  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    drop_graphs();
    for (auto& e : slot_done_) cudaEventDestroy(e);
    cudaFreeHost(staging_);
    if (scratch_) cudaFree(scratch_);
    cudaFree(workspace_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }

  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  DeviceKind kind() const override { return DeviceKind::cuda; }
  std::string device_name() const override { return name_; }

  void* allocate(size_t bytes) override {
    void* p = nullptr;
    const size_t n = bytes == 0 ? 16 : bytes;
    const cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw std::bad_alloc();
    }
    check(e, "cudaMalloc");
    check(cudaMemsetAsync(p, 0, n, stream_), "cudaMemsetAsync");
    return p;
  }

  void deallocate(void* p) override {
    cudaStreamSynchronize(stream_);
    cudaFree(p);
  }

  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    if (capturing_) throw std::logic_error("upload inside a recorded step");
    if (bytes <= kSlotBytes) {
      // Small per-step uploads go through a pinned ring so the copy is truly asynchronous and the
      // host can run ahead of the GPU; a slot is reused only once its previous copy has finished.
      const size_t slot = next_slot_++ % kSlots;
      check(cudaEventSynchronize(slot_done_[slot]), "cudaEventSynchronize");
      char* stage = static_cast<char*>(staging_) + slot * kSlotBytes;
      std::memcpy(stage, src, bytes);
      check(cudaMemcpyAsync(dst, stage, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync(H2D)");
      check(cudaEventRecord(slot_done_[slot], stream_), "cudaEventRecord");
      return;
    }
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync(H2D)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync(D2H)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync(D2D)");
  }

  void fill_zero(void* dst, size_t bytes) override {
    if (bytes) check(cudaMemsetAsync(dst, 0, bytes, stream_), "cudaMemsetAsync");
  }

  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  void run_recorded(uint64_t owner, uint64_t step_key, const std::function<void()>& body) override {
    if (!graphs_enabled_) {
      body();
      return;
    }
    const GraphKey key{owner, step_key};
    if (auto it = graphs_.find(key); it != graphs_.end()) {
      check(cudaGraphLaunch(it->second, stream_), "cudaGraphLaunch");
      return;
    }
    if (!warmed_.count(key)) {
      // The first run is eager: cuBLAS picks its kernels and scratch memory reaches its size
      // outside any capture.
      body();
      warmed_.insert(key);
      return;
    }
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    capturing_ = true;
    cudaGraph_t graph = nullptr;
    try {
      body();
    } catch (...) {
      capturing_ = false;
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    capturing_ = false;
    check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(e, "cudaGraphInstantiate");
    graphs_[key] = exec;
    check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
  }

  void drop_recorded(uint64_t owner) override {
    // The owner's buffers are about to be freed: no graph of it may be launched again. Wait for
    // the ones in flight before destroying them.
    cudaStreamSynchronize(stream_);
    for (auto it = graphs_.lower_bound(GraphKey{owner, 0}); it != graphs_.end() && it->first.first == owner;) {
      cudaGraphExecDestroy(it->second);
      it = graphs_.erase(it);
    }
    for (auto it = warmed_.lower_bound(GraphKey{owner, 0}); it != warmed_.end() && it->first == owner;)
      it = warmed_.erase(it);
  }

  void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc) override {
    if (m <= 0 || n <= 0) return;
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
    const cublasOperation_t op_a = ta == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = tb == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(cublasSgemm(blas_, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc), "cublasSgemm");
  }

  void gemm_bf16(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const bf16_t* a, int lda,
                 const bf16_t* b, int ldb, float beta, float* c, int ldc) override {
    if (m <= 0 || n <= 0) return;
    // bf16 operands on the tensor cores, fp32 accumulation and output (CUBLAS_COMPUTE_32F).
    const cublasOperation_t op_a = ta == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = tb == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(cublasGemmEx(blas_, op_b, op_a, n, m, k, &alpha, b, CUDA_R_16BF, ldb, a, CUDA_R_16BF, lda, &beta, c,
                       CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx(bf16)");
  }

  void to_bf16(const float* src, size_t n, bf16_t* dst) override { cuda::to_bf16(stream_, src, n, dst); }

  void gather_rows(const float* src, int width, const int32_t* idx, int n, float* dst) override {
    cuda::gather_rows(stream_, src, width, idx, n, dst);
  }
  void gather_labels(const int32_t* src, const int32_t* idx, int n, int32_t* dst) override {
    cuda::gather_labels(stream_, src, idx, n, dst);
  }
  void bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                               float* out) override {
    cuda::bias_activation_forward(stream_, rows, cols, bias, act, pre, out);
  }
  void bias_activation_forward_bf16(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                    bf16_t* out) override {
    cuda::bias_activation_forward_bf16(stream_, rows, cols, bias, act, pre, out);
  }
  void bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre, const float* dout,
                                float* dpre, float* dbias, bool accumulate) override {
    float* s = scratch(cuda::bias_backward_scratch(rows, cols));
    cuda::bias_activation_backward(stream_, rows, cols, act, pre, dout, dpre, dbias, accumulate, s);
  }
  void softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels, float grad_scale,
                             float* dlogits, float* row_loss) override {
    cuda::softmax_cross_entropy(stream_, rows, classes, logits, labels, grad_scale, dlogits, row_loss);
  }
  void mean_loss(int rows, const float* row_loss, float* loss_log, const StepScalars* scalars) override {
    cuda::mean_loss(stream_, rows, row_loss, loss_log, scalars);
  }
  void softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                  float* row_loss, float* row_correct) override {
    cuda::softmax_cross_entropy_eval(stream_, rows, classes, logits, labels, row_loss, row_correct);
  }
  void im2col3x3(int n, int h, int w, int c, const float* in, float* col) override {
    cuda::im2col3x3(stream_, n, h, w, c, in, col);
  }
  void im2col3x3_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* col) override {
    cuda::im2col3x3_bf16(stream_, n, h, w, c, in, col);
  }
  void col2im3x3(int n, int h, int w, int c, const float* col, float* din) override {
    cuda::col2im3x3(stream_, n, h, w, c, col, din);
  }
  void maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) override {
    cuda::maxpool2x2_forward(stream_, n, h, w, c, in, out, argmax);
  }
  void maxpool2x2_forward_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* out,
                               uint8_t* argmax) override {
    cuda::maxpool2x2_forward_bf16(stream_, n, h, w, c, in, out, argmax);
  }
  void maxpool2x2_backward(int n, int h, int w, int c, const float* dout, const uint8_t* argmax,
                           float* din) override {
    cuda::maxpool2x2_backward(stream_, n, h, w, c, dout, argmax, din);
  }
  void clip_by_global_norm(const float* grads, size_t n, float max_norm, ClipState* state) override {
    float* s = scratch(cuda::clip_scratch(n));
    cuda::clip_by_global_norm(stream_, grads, n, max_norm, state, s);
  }
  void adamw_update(size_t n, float* params, const float* grads, float* m, float* v, const StepScalars* scalars,
                    const ClipState* clip, float beta1, float beta2, float eps, float weight_decay) override {
    cuda::adamw_update(stream_, n, params, grads, m, v, scalars, clip, beta1, beta2, eps, weight_decay);
  }
  void sgd_momentum_update(size_t n, float* params, const float* grads, float* buf, const StepScalars* scalars,
                           const ClipState* clip, float momentum, float weight_decay) override {
    cuda::sgd_momentum_update(stream_, n, params, grads, buf, scalars, clip, momentum, weight_decay);
  }

 private:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  static constexpr size_t kSlots = 16;
  static constexpr size_t kSlotBytes = size_t{64} << 10;

  // Scratch memory for two-pass reductions, grown (outside capture only) to the largest need.
  float* scratch(size_t floats) {
    if (floats <= scratch_floats_) return scratch_;
    if (capturing_) throw std::logic_error("CUDA scratch would grow during graph capture");
    synchronize();
    // Recorded graphs point at the old scratch: drop them; they are recorded again on demand.
    drop_graphs();
    const size_t want = std::max(floats, scratch_floats_ * 2);
    if (scratch_) cudaFree(scratch_);
    scratch_ = nullptr;
    scratch_floats_ = 0;
    check(cudaMalloc(&scratch_, want * sizeof(float)), "cudaMalloc(scratch)");
    scratch_floats_ = want;
    return scratch_;
  }

  void drop_graphs() {
    for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
    graphs_.clear();
    warmed_.clear();
  }

  bool graphs_enabled_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  void* staging_ = nullptr;
  std::array<cudaEvent_t, kSlots> slot_done_{};
  size_t next_slot_ = 0;
  float* scratch_ = nullptr;
  size_t scratch_floats_ = 0;
  bool capturing_ = false;
  // (owner, key): graphs of different owners never mix, and an owner's go with its buffers.
  using GraphKey = std::pair<uint64_t, uint64_t>;
  std::map<GraphKey, cudaGraphExec_t> graphs_;
  std::set<GraphKey> warmed_;
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace jobctl::train
