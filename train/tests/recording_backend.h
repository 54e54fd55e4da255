// A CpuBackend behind the CUDA backend's graph-cache contract, so the contract can be tested on
// a machine without a GPU: run_recorded() runs a body eagerly the first time it sees (owner, key),
// records it on the second call without running it (as stream capture does), then replays the
// recording from then on. A recording holds the operations with their raw pointers, exactly like
// a CUDA graph, so replaying it for another owner uses that owner's buffers, and replaying it
// after they were freed touches freed memory.
//
// Every replayed operation checks first that each pointer it uses lies in a live allocation; one
// that does not is counted (stale_replays()) and skipped instead of run. `key_by_owner = false`
// keys recordings by the caller's key alone, as the cache did before owners existed, so a test
// can show that it catches that.
//
// It also counts allocated bytes (requested sizes): live_bytes(), peak_bytes(). Freed memory is
// kept until the backend goes, so no address is reused.
//
// Thread safety: one thread at a time (as every Backend).
#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "train/kernels/cpu_backend.h"

namespace jobctl::train::testing {

class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(bool key_by_owner = true) : key_by_owner_(key_by_owner) {}
  ~RecordingBackend() override {
    for (void* p : freed_) inner_.deallocate(p);
  }
  RecordingBackend(const RecordingBackend&) = delete;
  RecordingBackend& operator=(const RecordingBackend&) = delete;

  int64_t stale_replays() const { return stale_replays_; }
  int64_t replays() const { return replays_; }
  size_t recordings() const { return recordings_.size(); }
  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }

  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string device_name() const override { return "recording " + inner_.device_name(); }

  void* allocate(size_t bytes) override {
    void* p = inner_.allocate(bytes);
    live_[reinterpret_cast<uintptr_t>(p)] = bytes;
    live_bytes_ += static_cast<int64_t>(bytes);
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
    return p;
  }
  void deallocate(void* p) override {
    auto it = live_.find(reinterpret_cast<uintptr_t>(p));
    if (it != live_.end()) {
      live_bytes_ -= static_cast<int64_t>(it->second);
      live_.erase(it);
    }
    // Quarantined until the backend goes: a freed address is never handed out again, so a stale
    // replay cannot land on someone else's buffer and always shows as stale.
    freed_.push_back(p);
  }
  void upload(void* dst, const void* src, size_t bytes) override {
    outside_capture("upload");
    inner_.upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    outside_capture("download");
    inner_.download(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    op({dst, src}, [=, this] { inner_.copy(dst, src, bytes); });
  }
  void fill_zero(void* dst, size_t bytes) override {
    op({dst}, [=, this] { inner_.fill_zero(dst, bytes); });
  }
  void synchronize() override {}

  void run_recorded(uint64_t owner, uint64_t key, const std::function<void()>& body) override {
    const Key k{key_by_owner_ ? owner : 0, key};
    if (auto it = recordings_.find(k); it != recordings_.end()) {
      replay(it->second);
      return;
    }
    if (!warmed_.count(k)) {
      warmed_.insert({k, true});
      body();
      return;
    }
    capture_ = &recordings_[k];
    body();
    capture_ = nullptr;
    replay(recordings_[k]);
  }
  void drop_recorded(uint64_t owner) override {
    if (!key_by_owner_) return;  // the old cache never forgot anything
    std::erase_if(recordings_, [owner](const auto& e) { return e.first.first == owner; });
    std::erase_if(warmed_, [owner](const auto& e) { return e.first.first == owner; });
  }

  void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc) override {
    op({a, b, c}, [=, this] { inner_.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
  }
  void gemm_bf16(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const bf16_t* a, int lda,
                 const bf16_t* b, int ldb, float beta, float* c, int ldc) override {
    op({a, b, c}, [=, this] { inner_.gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
  }
  void to_bf16(const float* src, size_t n, bf16_t* dst) override {
    op({src, dst}, [=, this] { inner_.to_bf16(src, n, dst); });
  }
  void gather_rows(const float* src, int width, const int32_t* idx, int n, float* dst) override {
    op({src, idx, dst}, [=, this] { inner_.gather_rows(src, width, idx, n, dst); });
  }
  void gather_labels(const int32_t* src, const int32_t* idx, int n, int32_t* dst) override {
    op({src, idx, dst}, [=, this] { inner_.gather_labels(src, idx, n, dst); });
  }
  void bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                               float* out) override {
    op({bias, pre, out}, [=, this] { inner_.bias_activation_forward(rows, cols, bias, act, pre, out); });
  }
  void bias_activation_forward_bf16(int rows, int cols, const float* bias, ActivationFn act, float* pre,
                                    bf16_t* out) override {
    op({bias, pre, out}, [=, this] { inner_.bias_activation_forward_bf16(rows, cols, bias, act, pre, out); });
  }
  void bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre, const float* dout,
                                float* dpre, float* dbias, bool accumulate) override {
    op({pre, dout, dpre, dbias},
       [=, this] { inner_.bias_activation_backward(rows, cols, act, pre, dout, dpre, dbias, accumulate); });
  }
  void softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels, float grad_scale,
                             float* dlogits, float* row_loss) override {
    op({logits, labels, dlogits, row_loss}, [=, this] {
      inner_.softmax_cross_entropy(rows, classes, logits, labels, grad_scale, dlogits, row_loss);
    });
  }
  void mean_loss(int rows, const float* row_loss, float* loss_log, const StepScalars* scalars) override {
    op({row_loss, loss_log, scalars}, [=, this] { inner_.mean_loss(rows, row_loss, loss_log, scalars); });
  }
  void softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                  float* row_loss, float* row_correct) override {
    op({logits, labels, row_loss, row_correct},
       [=, this] { inner_.softmax_cross_entropy_eval(rows, classes, logits, labels, row_loss, row_correct); });
  }
  void im2col3x3(int n, int h, int w, int c, const float* in, float* col) override {
    op({in, col}, [=, this] { inner_.im2col3x3(n, h, w, c, in, col); });
  }
  void im2col3x3_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* col) override {
    op({in, col}, [=, this] { inner_.im2col3x3_bf16(n, h, w, c, in, col); });
  }
  void col2im3x3(int n, int h, int w, int c, const float* col, float* din) override {
    op({col, din}, [=, this] { inner_.col2im3x3(n, h, w, c, col, din); });
  }
  void conv3x3_relu_forward(int n, int h, int w, int c, int cout, const float* in, const float* weights,
                            const float* bias, float* col, float* out) override {
    op({in, weights, bias, col, out}, [=, this] { inner_.conv3x3_relu_forward(n, h, w, c, cout, in, weights, bias, col, out); });
  }
  void conv3x3_relu_backward(int n, int h, int w, int c, int cout, const float* col, const float* weights,
                             const float* out, float* dout, float* dweights, float* dbias, bool accumulate, float* dcol,
                             float* din) override {
    op({col, weights, out, dout, dweights, dbias, dcol, din}, [=, this] {
      inner_.conv3x3_relu_backward(n, h, w, c, cout, col, weights, out, dout, dweights, dbias, accumulate, dcol, din);
    });
  }
  void maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) override {
    op({in, out, argmax}, [=, this] { inner_.maxpool2x2_forward(n, h, w, c, in, out, argmax); });
  }
  void maxpool2x2_forward_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* out, uint8_t* argmax) override {
    op({in, out, argmax}, [=, this] { inner_.maxpool2x2_forward_bf16(n, h, w, c, in, out, argmax); });
  }
  void maxpool2x2_backward(int n, int h, int w, int c, const float* dout, const uint8_t* argmax,
                           float* din) override {
    op({dout, argmax, din}, [=, this] { inner_.maxpool2x2_backward(n, h, w, c, dout, argmax, din); });
  }
  void clip_by_global_norm(const float* grads, size_t n, float max_norm, ClipState* state) override {
    op({grads, state}, [=, this] { inner_.clip_by_global_norm(grads, n, max_norm, state); });
  }
  void adamw_update(size_t n, float* params, const float* grads, float* m, float* v, const StepScalars* scalars,
                    const ClipState* clip, float beta1, float beta2, float eps, float weight_decay) override {
    op({params, grads, m, v, scalars, clip}, [=, this] {
      inner_.adamw_update(n, params, grads, m, v, scalars, clip, beta1, beta2, eps, weight_decay);
    });
  }
  void sgd_momentum_update(size_t n, float* params, const float* grads, float* buf, const StepScalars* scalars,
                           const ClipState* clip, float momentum, float weight_decay) override {
    op({params, grads, buf, scalars, clip},
       [=, this] { inner_.sgd_momentum_update(n, params, grads, buf, scalars, clip, momentum, weight_decay); });
  }

 private:
  using Key = std::pair<uint64_t, uint64_t>;
  struct Op {
    std::vector<const void*> pointers;
    std::function<void()> run;
  };

  void outside_capture(const char* what) const {
    if (capture_) throw std::logic_error(std::string(what) + " inside a recorded step");
  }
  void op(std::vector<const void*> pointers, std::function<void()> run) {
    if (capture_) capture_->push_back(Op{std::move(pointers), std::move(run)});
    else run();
  }
  bool live(const void* p) const {
    if (!p) return true;
    const auto u = reinterpret_cast<uintptr_t>(p);
    auto it = live_.upper_bound(u);
    if (it == live_.begin()) return false;
    --it;
    return u < it->first + std::max<size_t>(it->second, 1);
  }
  void replay(const std::vector<Op>& ops) {
    ++replays_;
    for (const Op& o : ops) {
      bool ok = true;
      for (const void* p : o.pointers) ok = ok && live(p);
      if (!ok) {
        ++stale_replays_;
        continue;
      }
      o.run();
    }
  }

  bool key_by_owner_;
  CpuBackend inner_{1};
  std::map<uintptr_t, size_t> live_;
  std::vector<void*> freed_;
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
  std::map<Key, std::vector<Op>> recordings_;
  std::map<Key, bool> warmed_;
  std::vector<Op>* capture_ = nullptr;
  int64_t replays_ = 0;
  int64_t stale_replays_ = 0;
};

}  // namespace jobctl::train::testing
