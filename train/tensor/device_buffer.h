// A typed array in a backend's memory (host memory for the CPU backend, device memory for CUDA).
//
// Ownership: a DeviceBuffer owns its allocation and frees it through the Backend it came from,
// which must outlive it. Move-only. Thread safety: as the Backend (one thread at a time).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "train/kernels/backend.h"

namespace jobctl::train {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, size_t count)
      : backend_(&backend), count_(count),
        data_(count ? static_cast<T*>(backend.allocate(count * sizeof(T))) : nullptr) {}
  ~DeviceBuffer() { reset(); }

  DeviceBuffer(DeviceBuffer&& o) noexcept
      : backend_(std::exchange(o.backend_, nullptr)), count_(std::exchange(o.count_, 0)),
        data_(std::exchange(o.data_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = std::exchange(o.backend_, nullptr);
      count_ = std::exchange(o.count_, 0);
      data_ = std::exchange(o.data_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }

  void upload(const T* src, size_t count, size_t offset = 0) {
    if (count) backend_->upload(data_ + offset, src, count * sizeof(T));
  }
  void upload(const std::vector<T>& src) { upload(src.data(), src.size()); }
  void download(T* dst, size_t count, size_t offset = 0) const {
    if (count) backend_->download(dst, data_ + offset, count * sizeof(T));
  }
  std::vector<T> to_host() const {
    std::vector<T> out(count_);
    download(out.data(), count_);
    return out;
  }

 private:
  void reset() {
    if (data_) backend_->deallocate(data_);
    data_ = nullptr;
    count_ = 0;
  }

  Backend* backend_ = nullptr;
  size_t count_ = 0;
  T* data_ = nullptr;
};

}  // namespace jobctl::train
