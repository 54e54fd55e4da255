#include "train/kernels/cpu_ops.h"

#include "train/kernels/bf16.h"
#include "train/kernels/cpu_parallel.h"
#include "train/kernels/gemm.h"
#include "train/kernels/target_clones.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace jobctl::train::cpu {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

inline float widen(float x) { return x; }
inline float widen(bf16_t x) { return bf16_to_float(x); }
}  // namespace

float activate(ActivationFn act, float x) {
  switch (act) {
    case ActivationFn::none: return x;
    case ActivationFn::relu: return x > 0.0f ? x : 0.0f;
    case ActivationFn::gelu: return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
  }
  return x;
}

float activate_grad(ActivationFn act, float x) {
  switch (act) {
    case ActivationFn::none: return 1.0f;
    case ActivationFn::relu: return x > 0.0f ? 1.0f : 0.0f;
    case ActivationFn::gelu:
      return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
  }
  return 1.0f;
}

void gather_rows(const float* src, int width, const int32_t* index, int n, float* dst) {
  const size_t row_bytes = static_cast<size_t>(width) * sizeof(float);
  for (int i = 0; i < n; ++i)
    std::memcpy(dst + static_cast<size_t>(i) * width, src + static_cast<size_t>(index[i]) * width, row_bytes);
}

void gather_labels(const int32_t* src, const int32_t* index, int n, int32_t* dst) {
  for (int i = 0; i < n; ++i) dst[i] = src[index[i]];
}

JOBCTL_CPU_CLONES
static void bias_activation_forward_serial(int rows, int cols, const float* bias, ActivationFn act, float* pre, float* out) {
  const size_t cs = static_cast<size_t>(cols);
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
    float* p = pre + r * cs;
    float* o = out + r * cs;
    switch (act) {
      case ActivationFn::none:
        for (size_t c = 0; c < cs; ++c) o[c] = p[c] = p[c] + bias[c];
        break;
      case ActivationFn::relu:
        for (size_t c = 0; c < cs; ++c) {
          const float z = p[c] + bias[c];
          p[c] = z;
          o[c] = z > 0.0f ? z : 0.0f;
        }
        break;
      case ActivationFn::gelu:
        for (size_t c = 0; c < cs; ++c) {
          const float z = p[c] + bias[c];
          p[c] = z;
          o[c] = activate(ActivationFn::gelu, z);
        }
        break;
    }
  }
}

JOBCTL_CPU_CLONES
static void bias_activation_forward_bf16_serial(int rows, int cols, const float* bias, ActivationFn act, float* pre, bf16_t* out) {
  const size_t cs = static_cast<size_t>(cols);
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
    float* p = pre + r * cs;
    bf16_t* o = out + r * cs;
    for (size_t c = 0; c < cs; ++c) {
      const float z = p[c] + bias[c];
      p[c] = z;
      o[c] = round_to_bf16(act == ActivationFn::relu ? (z > 0.0f ? z : 0.0f) : activate(act, z));
    }
  }
}

JOBCTL_CPU_CLONES
static void to_bf16_serial(const float* src, size_t n, bf16_t* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = round_to_bf16(src[i]);
}

JOBCTL_CPU_CLONES
static void from_bf16_serial(const bf16_t* src, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
}

// Rows [0, rows) of the problem: dpre, and the column sums into acc[0..cols) (double, in row order).
JOBCTL_CPU_CLONES
static void bias_activation_backward_serial(int rows, int cols, ActivationFn act, const float* pre,
                                            const float* dout, float* dpre, double* acc) {
  const size_t cs = static_cast<size_t>(cols);
  std::fill(acc, acc + cs, 0.0);
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
    const float* p = pre + r * cs;
    const float* g = dout + r * cs;
    float* d = dpre + r * cs;
    switch (act) {
      case ActivationFn::none:
        for (size_t c = 0; c < cs; ++c) d[c] = g[c];
        break;
      case ActivationFn::relu:
        // Both operands loaded unconditionally, so the select vectorises (no data-dependent
        // branch: ReLU signs are random and a branch would mispredict half the time).
        for (size_t c = 0; c < cs; ++c) {
          const float gv = g[c];
          d[c] = p[c] > 0.0f ? gv : 0.0f;
        }
        break;
      case ActivationFn::gelu:
        for (size_t c = 0; c < cs; ++c) d[c] = g[c] * activate_grad(ActivationFn::gelu, p[c]);
        break;
    }
    for (size_t c = 0; c < cs; ++c) acc[c] += static_cast<double>(d[c]);
  }
}

JOBCTL_CPU_CLONES
void softmax_cross_entropy(int rows, int classes, const float* logits, const int32_t* labels, float grad_scale,
                           float* dlogits, float* row_loss) {
  const size_t k = static_cast<size_t>(classes);
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
    const float* x = logits + r * k;
    float* d = dlogits + r * k;
    float mx = x[0];
    for (size_t j = 1; j < k; ++j) mx = std::max(mx, x[j]);
    float sum = 0.0f;
    for (size_t j = 0; j < k; ++j) {
      d[j] = std::exp(x[j] - mx);
      sum += d[j];
    }
    const size_t y = static_cast<size_t>(labels[r]);
    row_loss[r] = std::log(sum) - (x[y] - mx);
    const float inv_sum = 1.0f / sum;
    for (size_t j = 0; j < k; ++j) d[j] = (d[j] * inv_sum - (j == y ? 1.0f : 0.0f)) * grad_scale;
  }
}

void softmax_cross_entropy_eval(int rows, int classes, const float* logits, const int32_t* labels,
                                float* row_loss, float* row_correct) {
  const size_t k = static_cast<size_t>(classes);
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
    const float* x = logits + r * k;
    float mx = x[0];
    size_t arg = 0;
    for (size_t j = 1; j < k; ++j) {
      if (x[j] > mx) {
        mx = x[j];
        arg = j;
      }
    }
    float sum = 0.0f;
    for (size_t j = 0; j < k; ++j) sum += std::exp(x[j] - mx);
    const size_t y = static_cast<size_t>(labels[r]);
    row_loss[r] = std::log(sum) - (x[y] - mx);
    row_correct[r] = arg == y ? 1.0f : 0.0f;
  }
}

float mean_of(const float* x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  return n > 0 ? static_cast<float>(s / n) : 0.0f;
}

template <class T>
[[gnu::always_inline]] inline void im2col3x3_impl(int n, int h, int w, int c, const T* in, T* col) {
  const size_t cs = static_cast<size_t>(c);
  const size_t row_len = 9 * cs;
  for (int b = 0; b < n; ++b) {
    for (int y = 0; y < h; ++y) {
      T* dst_row = col + (static_cast<size_t>(b) * h + y) * w * row_len;
      for (int ky = 0; ky < 3; ++ky) {
        const int iy = y + ky - 1;
        const bool row_inside = iy >= 0 && iy < h;
        const T* src = row_inside ? in + (static_cast<size_t>(b) * h + iy) * w * cs : nullptr;
        for (int kx = 0; kx < 3; ++kx) {
          const size_t tap = static_cast<size_t>(ky * 3 + kx) * cs;
          for (int x = 0; x < w; ++x) {
            T* d = dst_row + static_cast<size_t>(x) * row_len + tap;
            const int ix = x + kx - 1;
            if (!row_inside || ix < 0 || ix >= w) {
              for (size_t ch = 0; ch < cs; ++ch) d[ch] = T{};
            } else {
              const T* sp = src + static_cast<size_t>(ix) * cs;
              for (size_t ch = 0; ch < cs; ++ch) d[ch] = sp[ch];
            }
          }
        }
      }
    }
  }
}

JOBCTL_CPU_CLONES
static void im2col3x3_serial(int n, int h, int w, int c, const float* in, float* col) {
  im2col3x3_impl(n, h, w, c, in, col);
}

JOBCTL_CPU_CLONES
static void im2col3x3_bf16_serial(int n, int h, int w, int c, const bf16_t* in, bf16_t* col) {
  im2col3x3_impl(n, h, w, c, in, col);
}

JOBCTL_CPU_CLONES
static void col2im3x3_serial(int n, int h, int w, int c, const float* col, float* din) {
  const size_t cs = static_cast<size_t>(c);
  const size_t row_len = 9 * cs;
  for (int b = 0; b < n; ++b) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        float* d = din + ((static_cast<size_t>(b) * h + y) * w + x) * cs;
        std::fill(d, d + cs, 0.0f);
        // Input (y, x) is read by output (oy, ox) = (y - ky + 1, x - kx + 1) at tap (ky, kx).
        for (int ky = 0; ky < 3; ++ky) {
          const int oy = y - ky + 1;
          if (oy < 0 || oy >= h) continue;
          for (int kx = 0; kx < 3; ++kx) {
            const int ox = x - kx + 1;
            if (ox < 0 || ox >= w) continue;
            const float* s = col + ((static_cast<size_t>(b) * h + oy) * w + ox) * row_len +
                             static_cast<size_t>(ky * 3 + kx) * cs;
            for (size_t ch = 0; ch < cs; ++ch) d[ch] += s[ch];
          }
        }
      }
    }
  }
}

// Compares as fp32 (bf16 widens exactly), so both precisions pick the same winner for the same values.
template <class T>
[[gnu::always_inline]] inline void maxpool2x2_forward_impl(int n, int h, int w, int c, const T* in, T* out, uint8_t* argmax) {
  const int oh = h / 2, ow = w / 2;
  const size_t cs = static_cast<size_t>(c);
  for (int b = 0; b < n; ++b) {
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        const size_t o = ((static_cast<size_t>(b) * oh + oy) * ow + ox) * cs;
        const T* p[4];
        for (int q = 0; q < 4; ++q)
          p[q] = in + ((static_cast<size_t>(b) * h + 2 * oy + q / 2) * w + 2 * ox + q % 2) * cs;
        for (size_t ch = 0; ch < cs; ++ch) {
          float best = widen(p[0][ch]);
          T best_raw = p[0][ch];
          uint8_t arg = 0;
          for (uint8_t q = 1; q < 4; ++q) {
            const float v = widen(p[q][ch]);
            if (v > best) {
              best = v;
              best_raw = p[q][ch];
              arg = q;
            }
          }
          out[o + ch] = best_raw;
          argmax[o + ch] = arg;
        }
      }
    }
  }
}

JOBCTL_CPU_CLONES
static void maxpool2x2_forward_serial(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) {
  maxpool2x2_forward_impl(n, h, w, c, in, out, argmax);
}

JOBCTL_CPU_CLONES
static void maxpool2x2_forward_bf16_serial(int n, int h, int w, int c, const bf16_t* in, bf16_t* out, uint8_t* argmax) {
  maxpool2x2_forward_impl(n, h, w, c, in, out, argmax);
}

JOBCTL_CPU_CLONES
static void maxpool2x2_backward_serial(int n, int h, int w, int c, const float* dout, const uint8_t* argmax, float* din) {
  // One pass over din: every input position of a window gets the window's gradient or 0; rows and
  // columns past the last full window (odd sizes) get 0.
  const int oh = h / 2, ow = w / 2;
  const size_t cs = static_cast<size_t>(c);
  for (int b = 0; b < n; ++b) {
    for (int y = 0; y < h; ++y) {
      float* row = din + (static_cast<size_t>(b) * h + y) * w * cs;
      if (y / 2 >= oh) {
        std::fill(row, row + static_cast<size_t>(w) * cs, 0.0f);
        continue;
      }
      const int dy = y & 1;
      const size_t orow = (static_cast<size_t>(b) * oh + y / 2) * ow;
      for (int ox = 0; ox < ow; ++ox) {
        const float* g = dout + (orow + ox) * cs;
        const uint8_t* a = argmax + (orow + ox) * cs;
        float* left = row + static_cast<size_t>(2 * ox) * cs;
        float* right = left + cs;
        const uint8_t q_left = static_cast<uint8_t>(dy * 2), q_right = static_cast<uint8_t>(dy * 2 + 1);
        for (size_t ch = 0; ch < cs; ++ch) {
          const float gv = g[ch];
          const uint8_t av = a[ch];
          left[ch] = av == q_left ? gv : 0.0f;
          right[ch] = av == q_right ? gv : 0.0f;
        }
      }
      if (w % 2) std::fill(row + static_cast<size_t>(w - 1) * cs, row + static_cast<size_t>(w) * cs, 0.0f);
    }
  }
}

JOBCTL_CPU_CLONES
double sum_of_squares(const float* x, size_t n) {
  // Eight interleaved partial sums (so the loop vectorises), combined in a fixed tree.
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) s[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
  for (size_t j = 0; i < n; ++i, ++j) s[j] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

ClipState clip_state(double sum_sq, float max_norm) {
  ClipState st;
  st.norm = static_cast<float>(std::sqrt(sum_sq));
  st.scale = 1.0f;
  if (max_norm > 0.0f) st.scale = std::min(1.0f, max_norm / (st.norm + 1e-6f));
  return st;
}

JOBCTL_CPU_CLONES
static void adamw_update_serial(size_t n, float* params, const float* grads, float* m, float* v, float lr, float bias_correction1,
                  float bias_correction2, float grad_scale, float beta1, float beta2, float eps, float weight_decay) {
  const float decay = 1.0f - lr * weight_decay;
  const float one_minus_b1 = 1.0f - beta1;
  const float one_minus_b2 = 1.0f - beta2;
  const float step_size = lr / bias_correction1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(bias_correction2);
  for (size_t i = 0; i < n; ++i) {
    const float g = grads[i] * grad_scale;
    const float mi = beta1 * m[i] + one_minus_b1 * g;
    const float vi = beta2 * v[i] + one_minus_b2 * g * g;
    m[i] = mi;
    v[i] = vi;
    params[i] = params[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

JOBCTL_CPU_CLONES
static void sgd_momentum_update_serial(size_t n, float* params, const float* grads, float* buf, float lr, float grad_scale,
                         float momentum, float weight_decay) {
  for (size_t i = 0; i < n; ++i) {
    const float g = grads[i] * grad_scale + weight_decay * params[i];
    const float b = momentum * buf[i] + g;
    buf[i] = b;
    params[i] -= lr * b;
  }
}

}  // namespace jobctl::train::cpu

namespace jobctl::train::cpu {

// ---- the parallel entry points: independent images, rows or elements per chunk --------------------

namespace {

// Chunks of about 64 KiB of output: big enough that handing one to a thread costs nothing, small
// enough that two threads share the work evenly.
size_t grain(size_t bytes_per_item) { return std::max<size_t>(1, (size_t{64} << 10) / std::max<size_t>(bytes_per_item, 1)); }
size_t image(int h, int w, int c) { return static_cast<size_t>(h) * w * c; }

}  // namespace

void bias_activation_forward(int rows, int cols, const float* bias, ActivationFn act, float* pre, float* out) {
  const size_t cs = static_cast<size_t>(cols);
  parallel_for(static_cast<size_t>(rows), grain(cs * 8), [&](size_t r0, size_t r1) {
    bias_activation_forward_serial(static_cast<int>(r1 - r0), cols, bias, act, pre + r0 * cs, out + r0 * cs);
  });
}

void bias_activation_forward_bf16(int rows, int cols, const float* bias, ActivationFn act, float* pre, bf16_t* out) {
  const size_t cs = static_cast<size_t>(cols);
  parallel_for(static_cast<size_t>(rows), grain(cs * 6), [&](size_t r0, size_t r1) {
    bias_activation_forward_bf16_serial(static_cast<int>(r1 - r0), cols, bias, act, pre + r0 * cs, out + r0 * cs);
  });
}

void to_bf16(const float* src, size_t n, bf16_t* dst) {
  parallel_for(n, grain(6), [&](size_t i0, size_t i1) { to_bf16_serial(src + i0, i1 - i0, dst + i0); });
}

void from_bf16(const bf16_t* src, size_t n, float* dst) {
  parallel_for(n, grain(6), [&](size_t i0, size_t i1) { from_bf16_serial(src + i0, i1 - i0, dst + i0); });
}

void bias_activation_backward(int rows, int cols, ActivationFn act, const float* pre, const float* dout, float* dpre,
                              float* dbias, bool accumulate) {
  // Column sums per chunk of kRows rows (double, in row order), then the chunks in order: a fixed
  // order for a given size, whatever the number of threads.
  constexpr size_t kRows = 1024;
  const size_t cs = static_cast<size_t>(cols);
  const size_t chunks = (static_cast<size_t>(rows) + kRows - 1) / kRows;
  std::vector<double> partial(chunks * cs);
  parallel_for(static_cast<size_t>(rows), kRows, [&](size_t r0, size_t r1) {
    bias_activation_backward_serial(static_cast<int>(r1 - r0), cols, act, pre + r0 * cs, dout + r0 * cs,
                                    dpre + r0 * cs, partial.data() + r0 / kRows * cs);
  });
  for (size_t c = 0; c < cs; ++c) {
    double s = 0;
    for (size_t k = 0; k < chunks; ++k) s += partial[k * cs + c];
    dbias[c] = accumulate ? dbias[c] + static_cast<float>(s) : static_cast<float>(s);
  }
}

void im2col3x3(int n, int h, int w, int c, const float* in, float* col) {
  const size_t img = image(h, w, c);
  parallel_for(static_cast<size_t>(n), grain(img * 36), [&](size_t b0, size_t b1) {
    im2col3x3_serial(static_cast<int>(b1 - b0), h, w, c, in + b0 * img, col + b0 * img * 9);
  });
}

void im2col3x3_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* col) {
  const size_t img = image(h, w, c);
  parallel_for(static_cast<size_t>(n), grain(img * 18), [&](size_t b0, size_t b1) {
    im2col3x3_bf16_serial(static_cast<int>(b1 - b0), h, w, c, in + b0 * img, col + b0 * img * 9);
  });
}

void col2im3x3(int n, int h, int w, int c, const float* col, float* din) {
  const size_t img = image(h, w, c);
  parallel_for(static_cast<size_t>(n), grain(img * 36), [&](size_t b0, size_t b1) {
    col2im3x3_serial(static_cast<int>(b1 - b0), h, w, c, col + b0 * img * 9, din + b0 * img);
  });
}

namespace {

// Images per block of the fused convolution: about 1024 rows of im2col, at least one image.
size_t conv_block_images(int h, int w) { return std::max<size_t>(1, 1024 / std::max<size_t>(static_cast<size_t>(h) * w, 1)); }

}  // namespace

void conv3x3_relu_forward(int n, int h, int w, int c, int cout, const float* in, const float* weights,
                          const float* bias, float* col, float* out) {
  const size_t img = image(h, w, c), pixels = static_cast<size_t>(h) * w, k = 9 * static_cast<size_t>(c);
  parallel_for(static_cast<size_t>(n), conv_block_images(h, w), [&](size_t b0, size_t b1) {
    const int images = static_cast<int>(b1 - b0);
    const int rows = images * h * w;
    float* col_b = col + b0 * pixels * k;
    float* out_b = out + b0 * pixels * static_cast<size_t>(cout);
    im2col3x3_serial(images, h, w, c, in + b0 * img, col_b);
    gemm_single_thread(Transpose::no, Transpose::yes, rows, cout, static_cast<int>(k), 1.0f, col_b, static_cast<int>(k),
                       weights, static_cast<int>(k), 0.0f, out_b, cout);
    bias_activation_forward_serial(rows, cout, bias, ActivationFn::relu, out_b, out_b);
  });
}

void conv3x3_relu_backward(int n, int h, int w, int c, int cout, const float* col, const float* weights,
                           const float* out, float* dout, float* dweights, float* dbias, bool accumulate, float* dcol,
                           float* din) {
  const size_t img = image(h, w, c), pixels = static_cast<size_t>(h) * w, k = 9 * static_cast<size_t>(c);
  const size_t co = static_cast<size_t>(cout);
  const size_t per_block = conv_block_images(h, w);
  const size_t blocks = (static_cast<size_t>(n) + per_block - 1) / per_block;
  std::vector<float> dw_partial(blocks * co * k);
  std::vector<double> db_partial(blocks * co);
  parallel_for(static_cast<size_t>(n), per_block, [&](size_t b0, size_t b1) {
    const size_t block = b0 / per_block;
    const int images = static_cast<int>(b1 - b0);
    const int rows = images * h * w;
    const size_t r0 = b0 * pixels;
    float* g = dout + r0 * co;
    bias_activation_backward_serial(rows, cout, ActivationFn::relu, out + r0 * co, g, g, db_partial.data() + block * co);
    gemm_single_thread(Transpose::yes, Transpose::no, cout, static_cast<int>(k), rows, 1.0f, g, cout, col + r0 * k,
                       static_cast<int>(k), 0.0f, dw_partial.data() + block * co * k, static_cast<int>(k));
    if (din) {
      gemm_single_thread(Transpose::no, Transpose::no, rows, static_cast<int>(k), cout, 1.0f, g, cout, weights,
                         static_cast<int>(k), 0.0f, dcol + r0 * k, static_cast<int>(k));
      col2im3x3_serial(images, h, w, c, dcol + r0 * k, din + b0 * img);
    }
  });
  parallel_for(co * k, grain(4 * blocks), [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      float s = 0.0f;
      for (size_t b = 0; b < blocks; ++b) s += dw_partial[b * co * k + i];
      dweights[i] = accumulate ? dweights[i] + s : s;
    }
  });
  for (size_t j = 0; j < co; ++j) {
    double s = 0;
    for (size_t b = 0; b < blocks; ++b) s += db_partial[b * co + j];
    dbias[j] = accumulate ? dbias[j] + static_cast<float>(s) : static_cast<float>(s);
  }
}

void maxpool2x2_forward(int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) {
  const size_t img = image(h, w, c), pooled = image(h / 2, w / 2, c);
  parallel_for(static_cast<size_t>(n), grain(img * 4), [&](size_t b0, size_t b1) {
    maxpool2x2_forward_serial(static_cast<int>(b1 - b0), h, w, c, in + b0 * img, out + b0 * pooled,
                              argmax + b0 * pooled);
  });
}

void maxpool2x2_forward_bf16(int n, int h, int w, int c, const bf16_t* in, bf16_t* out, uint8_t* argmax) {
  const size_t img = image(h, w, c), pooled = image(h / 2, w / 2, c);
  parallel_for(static_cast<size_t>(n), grain(img * 2), [&](size_t b0, size_t b1) {
    maxpool2x2_forward_bf16_serial(static_cast<int>(b1 - b0), h, w, c, in + b0 * img, out + b0 * pooled,
                                   argmax + b0 * pooled);
  });
}

void maxpool2x2_backward(int n, int h, int w, int c, const float* dout, const uint8_t* argmax, float* din) {
  const size_t img = image(h, w, c), pooled = image(h / 2, w / 2, c);
  parallel_for(static_cast<size_t>(n), grain(img * 4), [&](size_t b0, size_t b1) {
    maxpool2x2_backward_serial(static_cast<int>(b1 - b0), h, w, c, dout + b0 * pooled, argmax + b0 * pooled,
                               din + b0 * img);
  });
}

void adamw_update(size_t n, float* params, const float* grads, float* m, float* v, float lr, float bias_correction1,
                  float bias_correction2, float grad_scale, float beta1, float beta2, float eps, float weight_decay) {
  parallel_for(n, grain(16), [&](size_t i0, size_t i1) {
    adamw_update_serial(i1 - i0, params + i0, grads + i0, m + i0, v + i0, lr, bias_correction1, bias_correction2,
                        grad_scale, beta1, beta2, eps, weight_decay);
  });
}

void sgd_momentum_update(size_t n, float* params, const float* grads, float* buf, float lr, float grad_scale,
                         float momentum, float weight_decay) {
  parallel_for(n, grain(12), [&](size_t i0, size_t i1) {
    sgd_momentum_update_serial(i1 - i0, params + i0, grads + i0, buf + i0, lr, grad_scale, momentum, weight_decay);
  });
}

}  // namespace jobctl::train::cpu
