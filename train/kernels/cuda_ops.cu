#include "train/kernels/cuda_ops.cuh"

#include <cuda_bf16.h>
#include <math_constants.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace jobctl::train::cuda {

namespace {

constexpr int kThreads = 256;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA kernel ") + what + ": " + cudaGetErrorString(e));
}

// Blocks for a grid-stride loop over `total` items: a function of the size only.
unsigned blocks_for(size_t total, int threads = kThreads) {
  const size_t b = (total + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(b, size_t{1} << 20)));
}

template <ActivationFn A>
__device__ __forceinline__ float act_fwd(float x) {
  if constexpr (A == ActivationFn::relu) return x > 0.0f ? x : 0.0f;
  else if constexpr (A == ActivationFn::gelu) return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
  else return x;
}

template <ActivationFn A>
__device__ __forceinline__ float act_grad(float x) {
  if constexpr (A == ActivationFn::relu) return x > 0.0f ? 1.0f : 0.0f;
  else if constexpr (A == ActivationFn::gelu)
    return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
  else return 1.0f;
}

// ---- bf16 ---------------------------------------------------------------------------------------

// Round to nearest even, as round_to_bf16 (bf16.h) on the host.
__device__ __forceinline__ bf16_t to_bf16_bits(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(bf16_t x) { return __uint_as_float(static_cast<uint32_t>(x) << 16); }

__global__ void to_bf16_kernel(size_t n, const float* __restrict__ src, bf16_t* __restrict__ dst) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = to_bf16_bits(src[i]);
}

// ---- gathers ------------------------------------------------------------------------------------

__global__ void gather_rows_kernel(const float* __restrict__ src, int width, const int32_t* __restrict__ idx,
                                   float* __restrict__ dst, bool vec4) {
  const int row = blockIdx.x;
  const float* s = src + static_cast<size_t>(idx[row]) * width;
  float* d = dst + static_cast<size_t>(row) * width;
  if (vec4) {
    const float4* s4 = reinterpret_cast<const float4*>(s);
    float4* d4 = reinterpret_cast<float4*>(d);
    for (int j = threadIdx.x; j < width / 4; j += blockDim.x) d4[j] = s4[j];
  } else {
    for (int j = threadIdx.x; j < width; j += blockDim.x) d[j] = s[j];
  }
}

__global__ void gather_labels_kernel(const int32_t* __restrict__ src, const int32_t* __restrict__ idx, int n,
                                     int32_t* __restrict__ dst) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[idx[i]];
}

// ---- bias + activation ----------------------------------------------------------------------------

template <ActivationFn A>
__global__ void bias_act_forward_kernel(size_t total, int cols, const float* __restrict__ bias, float* pre,
                                        float* out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float z = pre[i] + bias[i % cols];
    pre[i] = z;
    out[i] = act_fwd<A>(z);
  }
}

template <ActivationFn A>
__global__ void bias_act_forward_bf16_kernel(size_t total, int cols, const float* __restrict__ bias, float* pre,
                                             bf16_t* __restrict__ out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float z = pre[i] + bias[i % cols];
    pre[i] = z;
    out[i] = to_bf16_bits(act_fwd<A>(z));
  }
}

// Four consecutive elements of one row per thread (cols % 4 == 0).
template <ActivationFn A>
__global__ void bias_act_forward_vec4_kernel(size_t total4, int cols, const float* __restrict__ bias, float4* pre,
                                             float4* out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>((i * 4) % cols);
    float4 z = pre[i];
    z.x += bias[c];
    z.y += bias[c + 1];
    z.z += bias[c + 2];
    z.w += bias[c + 3];
    pre[i] = z;
    out[i] = make_float4(act_fwd<A>(z.x), act_fwd<A>(z.y), act_fwd<A>(z.z), act_fwd<A>(z.w));
  }
}

// Activation backward + column sums over rows [row_begin, row_end) for 32 columns per block:
// thread (tx, ty) owns column bx*32+tx and rows row_begin+ty, +8, +16, ... (in that order); the 8
// partial sums of a column are then added in ty order. Writes the result to out[c] (adds it when
// `accumulate`).
//
// Launch shape: rows are cut into chunks of kRowsPerChunk, one block per (chunk, 32 columns), and
// a second kernel adds the chunks' partial sums; only a problem of one chunk is summed directly.
// So a narrow layer (10 classes at batch 1024: 16 chunks) still spreads over many SMs instead of
// one block walking every row. The shape depends on the sizes only (fixed summation order).
constexpr int kColTile = 32;
constexpr int kRowLanes = 8;
constexpr int kRowsPerChunk = 64;

template <ActivationFn A>
__global__ void bias_act_backward_kernel(int rows, int cols, int rows_per_chunk, const float* __restrict__ pre,
                                         const float* dout, float* dpre, float* __restrict__ out, bool accumulate) {
  __shared__ float partial[kRowLanes][kColTile];
  // blockIdx.x: the chunk of rows (up to 2^31 - 1 of them); blockIdx.y: the block of columns.
  const int c = blockIdx.y * kColTile + threadIdx.x;
  const int row_begin = blockIdx.x * rows_per_chunk;
  const int row_end = min(rows, row_begin + rows_per_chunk);
  float acc = 0.0f;
  if (c < cols) {
    for (int r = row_begin + threadIdx.y; r < row_end; r += kRowLanes) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      const float v = dout[i] * act_grad<A>(pre[i]);
      dpre[i] = v;
      acc += v;
    }
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float s = partial[0][threadIdx.x];
    for (int k = 1; k < kRowLanes; ++k) s += partial[k][threadIdx.x];
    float* o = out + static_cast<size_t>(blockIdx.x) * cols + c;
    *o = accumulate ? *o + s : s;
  }
}

// dbias[c] = sum over chunks of partials[chunk, c]: thread t sums chunks t, t+256, ... in order,
// then a fixed shared-memory tree.
__global__ void column_sum_finish_kernel(int chunks, int cols, const float* __restrict__ partials,
                                         float* __restrict__ dbias, bool accumulate) {
  __shared__ float s[kThreads];
  const int c = blockIdx.x;
  float acc = 0.0f;
  for (int k = threadIdx.x; k < chunks; k += kThreads) acc += partials[static_cast<size_t>(k) * cols + c];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) dbias[c] = accumulate ? dbias[c] + s[0] : s[0];
}

template <ActivationFn A>
void launch_bias_backward(cudaStream_t st, int rows, int cols, const float* pre, const float* dout, float* dpre,
                          float* dbias, bool accumulate, float* scratch) {
  const dim3 block(kColTile, kRowLanes);
  const unsigned col_blocks = static_cast<unsigned>((cols + kColTile - 1) / kColTile);
  if (rows <= kRowsPerChunk) {
    bias_act_backward_kernel<A><<<dim3(1, col_blocks), block, 0, st>>>(rows, cols, rows, pre, dout, dpre, dbias,
                                                                      accumulate);
    check_launch("bias_activation_backward");
    return;
  }
  const int chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  bias_act_backward_kernel<A><<<dim3(static_cast<unsigned>(chunks), col_blocks), block, 0, st>>>(
      rows, cols, kRowsPerChunk, pre, dout, dpre, scratch, false);
  check_launch("bias_activation_backward(chunks)");
  column_sum_finish_kernel<<<static_cast<unsigned>(cols), kThreads, 0, st>>>(chunks, cols, scratch, dbias, accumulate);
  check_launch("bias_activation_backward(finish)");
}

// ---- softmax cross-entropy --------------------------------------------------------------------------

__device__ __forceinline__ float warp_sum_to_lane0(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

// Warp per row, 8 rows per block, as many blocks as the batch needs (the launch shape scales with
// the batch instead of one block walking all rows): the row's loss and its gradient.
__global__ void softmax_ce_kernel(int rows, int classes, const float* __restrict__ logits,
                                  const int32_t* __restrict__ labels, float grad_scale, float* __restrict__ dlogits,
                                  float* __restrict__ row_loss) {
  const int lane = threadIdx.x & 31;
  const int r = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (r >= rows) return;
  const float* x = logits + static_cast<size_t>(r) * classes;
  float* d = dlogits + static_cast<size_t>(r) * classes;
  float mx = -CUDART_INF_F;
  for (int j = lane; j < classes; j += 32) mx = fmaxf(mx, x[j]);
  for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  float sum = 0.0f;
  for (int j = lane; j < classes; j += 32) sum += expf(x[j] - mx);
  sum = __shfl_sync(0xffffffffu, warp_sum_to_lane0(sum), 0);
  const int y = labels[r];
  const float inv_sum = 1.0f / sum;
  for (int j = lane; j < classes; j += 32) d[j] = (expf(x[j] - mx) * inv_sum - (j == y ? 1.0f : 0.0f)) * grad_scale;
  if (lane == 0) row_loss[r] = logf(sum) - (x[y] - mx);
}

// One block: thread t sums rows t, t+256, ... in order, then a fixed tree; the mean goes to
// loss_log[loss_slot].
__global__ void mean_loss_kernel(int rows, const float* __restrict__ row_loss, float* __restrict__ loss_log,
                                 const StepScalars* __restrict__ scalars) {
  __shared__ float s[kThreads];
  float acc = 0.0f;
  for (int r = threadIdx.x; r < rows; r += kThreads) acc += row_loss[r];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss_log[scalars->loss_slot] = s[0] / static_cast<float>(rows);
}

// Warp per row: loss and whether the arg-max (lowest index on ties) is the label.
__global__ void softmax_ce_eval_kernel(int rows, int classes, const float* __restrict__ logits,
                                       const int32_t* __restrict__ labels, float* __restrict__ row_loss,
                                       float* __restrict__ row_correct) {
  const int lane = threadIdx.x & 31;
  const int r = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (r >= rows) return;
  const float* x = logits + static_cast<size_t>(r) * classes;
  float best = -CUDART_INF_F;
  int arg = classes;  // "none yet": lanes with no class keep it
  for (int j = lane; j < classes; j += 32) {
    if (arg == classes || x[j] > best) {
      best = x[j];
      arg = j;
    }
  }
  for (int off = 16; off > 0; off /= 2) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, off);
    const int oa = __shfl_xor_sync(0xffffffffu, arg, off);
    if (oa != classes && (arg == classes || ob > best || (ob == best && oa < arg))) {
      best = ob;
      arg = oa;
    }
  }
  float sum = 0.0f;
  for (int j = lane; j < classes; j += 32) sum += expf(x[j] - best);
  sum = warp_sum_to_lane0(sum);
  if (lane == 0) {
    const int y = labels[r];
    row_loss[r] = logf(sum) - (x[y] - best);
    row_correct[r] = arg == y ? 1.0f : 0.0f;
  }
}

// ---- convolution helpers and pooling (NHWC) -----------------------------------------------------------

template <class T>
__global__ void im2col3x3_kernel(size_t total, int h, int w, int c, const T* __restrict__ in, T* __restrict__ col) {
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(e % c);
    const size_t t = e / c;
    const int tap = static_cast<int>(t % 9);
    const size_t pix = t / 9;
    const int x = static_cast<int>(pix % w);
    const int y = static_cast<int>((pix / w) % h);
    const size_t b = pix / (static_cast<size_t>(w) * h);
    const int iy = y + tap / 3 - 1;
    const int ix = x + tap % 3 - 1;
    col[e] = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? in[((b * h + iy) * w + ix) * c + ch] : T{};
  }
}

__global__ void col2im3x3_kernel(size_t total, int h, int w, int c, const float* __restrict__ col,
                                 float* __restrict__ din) {
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(e % c);
    const size_t pix = e / c;
    const int x = static_cast<int>(pix % w);
    const int y = static_cast<int>((pix / w) % h);
    const size_t b = pix / (static_cast<size_t>(w) * h);
    float acc = 0.0f;
    for (int ky = 0; ky < 3; ++ky) {
      const int oy = y - ky + 1;
      if (oy < 0 || oy >= h) continue;
      for (int kx = 0; kx < 3; ++kx) {
        const int ox = x - kx + 1;
        if (ox < 0 || ox >= w) continue;
        acc += col[((b * h + oy) * w + ox) * 9 * c + (ky * 3 + kx) * c + ch];
      }
    }
    din[e] = acc;
  }
}

// Compares as fp32 (bf16 widens exactly), as the CPU reference.
template <class T>
__global__ void maxpool_forward_kernel(size_t total, int h, int w, int c, const T* __restrict__ in,
                                       T* __restrict__ out, uint8_t* __restrict__ argmax) {
  const int oh = h / 2, ow = w / 2;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(e % c);
    const size_t pix = e / c;
    const int ox = static_cast<int>(pix % ow);
    const int oy = static_cast<int>((pix / ow) % oh);
    const size_t b = pix / (static_cast<size_t>(ow) * oh);
    float best = 0.0f;
    T best_raw{};
    uint8_t arg = 0;
    for (int q = 0; q < 4; ++q) {
      const T raw = in[((b * h + 2 * oy + q / 2) * w + 2 * ox + q % 2) * c + ch];
      const float v = widen(raw);
      if (q == 0 || v > best) {
        best = v;
        best_raw = raw;
        arg = static_cast<uint8_t>(q);
      }
    }
    out[e] = best_raw;
    argmax[e] = arg;
  }
}

__global__ void maxpool_backward_kernel(size_t total, int h, int w, int c, const float* __restrict__ dout,
                                        const uint8_t* __restrict__ argmax, float* __restrict__ din) {
  const int oh = h / 2, ow = w / 2;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(e % c);
    const size_t pix = e / c;
    const int x = static_cast<int>(pix % w);
    const int y = static_cast<int>((pix / w) % h);
    const size_t b = pix / (static_cast<size_t>(w) * h);
    const int oy = y / 2, ox = x / 2;
    float v = 0.0f;
    if (oy < oh && ox < ow) {
      const size_t o = ((b * oh + oy) * ow + ox) * c + ch;
      if (argmax[o] == (y & 1) * 2 + (x & 1)) v = dout[o];
    }
    din[e] = v;
  }
}

// ---- global norm and optimizers ------------------------------------------------------------------------

constexpr int kNormMaxBlocks = 1024;

unsigned norm_blocks(size_t n) {
  const size_t b = (n + 2047) / 2048;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(b, kNormMaxBlocks)));
}

__global__ void sum_squares_partial_kernel(const float* __restrict__ x, size_t n, float* __restrict__ partial) {
  __shared__ float s[kThreads];
  float acc = 0.0f;
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  for (size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x; i < n; i += stride) acc += x[i] * x[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int st = kThreads / 2; st > 0; st /= 2) {
    if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void clip_finish_kernel(int parts, const float* __restrict__ partial, float max_norm,
                                   ClipState* __restrict__ state) {
  __shared__ float s[kNormMaxBlocks];
  s[threadIdx.x] = threadIdx.x < parts ? partial[threadIdx.x] : 0.0f;
  __syncthreads();
  for (int st = kNormMaxBlocks / 2; st > 0; st /= 2) {
    if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float norm = sqrtf(s[0]);
    state->norm = norm;
    state->scale = max_norm > 0.0f ? fminf(1.0f, max_norm / (norm + 1e-6f)) : 1.0f;
  }
}

__device__ __forceinline__ float adamw_one(float p, float g, float& m, float& v, float decay, float step_size,
                                           float inv_sqrt_bc2, float b1, float b2, float eps) {
  m = b1 * m + (1.0f - b1) * g;
  v = b2 * v + (1.0f - b2) * g * g;
  return p * decay - step_size * m / (sqrtf(v) * inv_sqrt_bc2 + eps);
}

__global__ void adamw_kernel(size_t n, float* __restrict__ params, const float* __restrict__ grads,
                             float* __restrict__ m, float* __restrict__ v, const StepScalars* __restrict__ sc,
                             const ClipState* __restrict__ clip, float b1, float b2, float eps, float wd,
                             bool vec4) {
  const float lr = sc->lr, gs = clip->scale;
  const float decay = 1.0f - lr * wd;
  const float step_size = lr / sc->bias_correction1;
  const float inv_sqrt_bc2 = 1.0f / sqrtf(sc->bias_correction2);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t n4 = vec4 ? n / 4 : 0;
  float4* p4 = reinterpret_cast<float4*>(params);
  const float4* g4 = reinterpret_cast<const float4*>(grads);
  float4* m4 = reinterpret_cast<float4*>(m);
  float4* v4 = reinterpret_cast<float4*>(v);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    float4 p = p4[i], g = g4[i], mm = m4[i], vv = v4[i];
    p.x = adamw_one(p.x, g.x * gs, mm.x, vv.x, decay, step_size, inv_sqrt_bc2, b1, b2, eps);
    p.y = adamw_one(p.y, g.y * gs, mm.y, vv.y, decay, step_size, inv_sqrt_bc2, b1, b2, eps);
    p.z = adamw_one(p.z, g.z * gs, mm.z, vv.z, decay, step_size, inv_sqrt_bc2, b1, b2, eps);
    p.w = adamw_one(p.w, g.w * gs, mm.w, vv.w, decay, step_size, inv_sqrt_bc2, b1, b2, eps);
    p4[i] = p;
    m4[i] = mm;
    v4[i] = vv;
  }
  for (size_t i = n4 * 4 + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    params[i] = adamw_one(params[i], grads[i] * gs, m[i], v[i], decay, step_size, inv_sqrt_bc2, b1, b2, eps);
}

__global__ void sgd_kernel(size_t n, float* __restrict__ params, const float* __restrict__ grads,
                           float* __restrict__ buf, const StepScalars* __restrict__ sc,
                           const ClipState* __restrict__ clip, float momentum, float wd) {
  const float lr = sc->lr, gs = clip->scale;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float g = grads[i] * gs + wd * params[i];
    const float b = momentum * buf[i] + g;
    buf[i] = b;
    params[i] -= lr * b;
  }
}

}  // namespace

// ---- launchers -------------------------------------------------------------------------------------------

void to_bf16(cudaStream_t s, const float* src, size_t n, bf16_t* dst) {
  if (n == 0) return;
  to_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, src, dst);
  check_launch("to_bf16");
}

void gather_rows(cudaStream_t s, const float* src, int width, const int32_t* idx, int n, float* dst) {
  if (n <= 0) return;
  const bool vec4 = width % 4 == 0 && aligned16(src) && aligned16(dst);
  gather_rows_kernel<<<static_cast<unsigned>(n), kThreads, 0, s>>>(src, width, idx, dst, vec4);
  check_launch("gather_rows");
}

void gather_labels(cudaStream_t s, const int32_t* src, const int32_t* idx, int n, int32_t* dst) {
  if (n <= 0) return;
  gather_labels_kernel<<<blocks_for(static_cast<size_t>(n)), kThreads, 0, s>>>(src, idx, n, dst);
  check_launch("gather_labels");
}

void bias_activation_forward(cudaStream_t s, int rows, int cols, const float* bias, ActivationFn act, float* pre,
                             float* out) {
  const size_t total = static_cast<size_t>(rows) * cols;
  if (total == 0) return;
  if (cols % 4 == 0 && aligned16(pre) && aligned16(out)) {
    const size_t t4 = total / 4;
    auto* p4 = reinterpret_cast<float4*>(pre);
    auto* o4 = reinterpret_cast<float4*>(out);
    switch (act) {
      case ActivationFn::none: bias_act_forward_vec4_kernel<ActivationFn::none><<<blocks_for(t4), kThreads, 0, s>>>(t4, cols, bias, p4, o4); break;
      case ActivationFn::relu: bias_act_forward_vec4_kernel<ActivationFn::relu><<<blocks_for(t4), kThreads, 0, s>>>(t4, cols, bias, p4, o4); break;
      case ActivationFn::gelu: bias_act_forward_vec4_kernel<ActivationFn::gelu><<<blocks_for(t4), kThreads, 0, s>>>(t4, cols, bias, p4, o4); break;
    }
  } else {
    switch (act) {
      case ActivationFn::none: bias_act_forward_kernel<ActivationFn::none><<<blocks_for(total), kThreads, 0, s>>>(total, cols, bias, pre, out); break;
      case ActivationFn::relu: bias_act_forward_kernel<ActivationFn::relu><<<blocks_for(total), kThreads, 0, s>>>(total, cols, bias, pre, out); break;
      case ActivationFn::gelu: bias_act_forward_kernel<ActivationFn::gelu><<<blocks_for(total), kThreads, 0, s>>>(total, cols, bias, pre, out); break;
    }
  }
  check_launch("bias_activation_forward");
}

void bias_activation_forward_bf16(cudaStream_t s, int rows, int cols, const float* bias, ActivationFn act,
                                  float* pre, bf16_t* out) {
  const size_t total = static_cast<size_t>(rows) * cols;
  if (total == 0) return;
  switch (act) {
    case ActivationFn::none: bias_act_forward_bf16_kernel<ActivationFn::none><<<blocks_for(total), kThreads, 0, s>>>(total, cols, bias, pre, out); break;
    case ActivationFn::relu: bias_act_forward_bf16_kernel<ActivationFn::relu><<<blocks_for(total), kThreads, 0, s>>>(total, cols, bias, pre, out); break;
    case ActivationFn::gelu: bias_act_forward_bf16_kernel<ActivationFn::gelu><<<blocks_for(total), kThreads, 0, s>>>(total, cols, bias, pre, out); break;
  }
  check_launch("bias_activation_forward_bf16");
}

size_t bias_backward_scratch(int rows, int cols) {
  if (rows <= kRowsPerChunk) return 0;
  return static_cast<size_t>((rows + kRowsPerChunk - 1) / kRowsPerChunk) * static_cast<size_t>(cols);
}

void bias_activation_backward(cudaStream_t s, int rows, int cols, ActivationFn act, const float* pre,
                              const float* dout, float* dpre, float* dbias, bool accumulate, float* scratch) {
  if (rows <= 0 || cols <= 0) return;
  switch (act) {
    case ActivationFn::none: launch_bias_backward<ActivationFn::none>(s, rows, cols, pre, dout, dpre, dbias, accumulate, scratch); break;
    case ActivationFn::relu: launch_bias_backward<ActivationFn::relu>(s, rows, cols, pre, dout, dpre, dbias, accumulate, scratch); break;
    case ActivationFn::gelu: launch_bias_backward<ActivationFn::gelu>(s, rows, cols, pre, dout, dpre, dbias, accumulate, scratch); break;
  }
}

void softmax_cross_entropy(cudaStream_t s, int rows, int classes, const float* logits, const int32_t* labels,
                           float grad_scale, float* dlogits, float* row_loss) {
  if (rows <= 0) return;
  const int rows_per_block = kThreads / 32;
  softmax_ce_kernel<<<static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), kThreads, 0, s>>>(
      rows, classes, logits, labels, grad_scale, dlogits, row_loss);
  check_launch("softmax_cross_entropy");
}

void mean_loss(cudaStream_t s, int rows, const float* row_loss, float* loss_log, const StepScalars* scalars) {
  if (rows <= 0) return;
  mean_loss_kernel<<<1, kThreads, 0, s>>>(rows, row_loss, loss_log, scalars);
  check_launch("mean_loss");
}

void softmax_cross_entropy_eval(cudaStream_t s, int rows, int classes, const float* logits, const int32_t* labels,
                                float* row_loss, float* row_correct) {
  if (rows <= 0) return;
  const int rows_per_block = kThreads / 32;
  softmax_ce_eval_kernel<<<static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), kThreads, 0, s>>>(
      rows, classes, logits, labels, row_loss, row_correct);
  check_launch("softmax_cross_entropy_eval");
}

void im2col3x3(cudaStream_t s, int n, int h, int w, int c, const float* in, float* col) {
  const size_t total = static_cast<size_t>(n) * h * w * 9 * c;
  if (total == 0) return;
  im2col3x3_kernel<float><<<blocks_for(total), kThreads, 0, s>>>(total, h, w, c, in, col);
  check_launch("im2col3x3");
}

void im2col3x3_bf16(cudaStream_t s, int n, int h, int w, int c, const bf16_t* in, bf16_t* col) {
  const size_t total = static_cast<size_t>(n) * h * w * 9 * c;
  if (total == 0) return;
  im2col3x3_kernel<bf16_t><<<blocks_for(total), kThreads, 0, s>>>(total, h, w, c, in, col);
  check_launch("im2col3x3_bf16");
}

void col2im3x3(cudaStream_t s, int n, int h, int w, int c, const float* col, float* din) {
  const size_t total = static_cast<size_t>(n) * h * w * c;
  if (total == 0) return;
  col2im3x3_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, h, w, c, col, din);
  check_launch("col2im3x3");
}

void maxpool2x2_forward(cudaStream_t s, int n, int h, int w, int c, const float* in, float* out, uint8_t* argmax) {
  const size_t total = static_cast<size_t>(n) * (h / 2) * (w / 2) * c;
  if (total == 0) return;
  maxpool_forward_kernel<float><<<blocks_for(total), kThreads, 0, s>>>(total, h, w, c, in, out, argmax);
  check_launch("maxpool2x2_forward");
}

void maxpool2x2_forward_bf16(cudaStream_t s, int n, int h, int w, int c, const bf16_t* in, bf16_t* out,
                             uint8_t* argmax) {
  const size_t total = static_cast<size_t>(n) * (h / 2) * (w / 2) * c;
  if (total == 0) return;
  maxpool_forward_kernel<bf16_t><<<blocks_for(total), kThreads, 0, s>>>(total, h, w, c, in, out, argmax);
  check_launch("maxpool2x2_forward_bf16");
}

void maxpool2x2_backward(cudaStream_t s, int n, int h, int w, int c, const float* dout, const uint8_t* argmax,
                         float* din) {
  const size_t total = static_cast<size_t>(n) * h * w * c;
  if (total == 0) return;
  maxpool_backward_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, h, w, c, dout, argmax, din);
  check_launch("maxpool2x2_backward");
}

size_t clip_scratch(size_t n) { return norm_blocks(n); }

void clip_by_global_norm(cudaStream_t s, const float* grads, size_t n, float max_norm, ClipState* state,
                         float* scratch) {
  const unsigned blocks = norm_blocks(n);
  sum_squares_partial_kernel<<<blocks, kThreads, 0, s>>>(grads, n, scratch);
  check_launch("clip_by_global_norm(partial)");
  clip_finish_kernel<<<1, kNormMaxBlocks, 0, s>>>(static_cast<int>(blocks), scratch, max_norm, state);
  check_launch("clip_by_global_norm(finish)");
}

void adamw_update(cudaStream_t s, size_t n, float* params, const float* grads, float* m, float* v,
                  const StepScalars* scalars, const ClipState* clip, float beta1, float beta2, float eps,
                  float weight_decay) {
  if (n == 0) return;
  const bool vec4 = aligned16(params) && aligned16(grads) && aligned16(m) && aligned16(v);
  adamw_kernel<<<blocks_for(vec4 ? std::max<size_t>(n / 4, 1) : n), kThreads, 0, s>>>(
      n, params, grads, m, v, scalars, clip, beta1, beta2, eps, weight_decay, vec4);
  check_launch("adamw_update");
}

void sgd_momentum_update(cudaStream_t s, size_t n, float* params, const float* grads, float* buf,
                         const StepScalars* scalars, const ClipState* clip, float momentum, float weight_decay) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, params, grads, buf, scalars, clip, momentum, weight_decay);
  check_launch("sgd_momentum_update");
}

}  // namespace jobctl::train::cuda
