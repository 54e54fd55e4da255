// Memory of the activations a transformer keeps for its backward pass, per GPU (Korthikanti et al.,
// "Reducing Activation Recomputation in Large Transformer Models", 2022, section 4).
//
// Per layer, s sequence length, b micro-batch, h hidden size, a heads, in 16-bit:
//   no recomputation:        s·b·h·(34 + 5·a·s/h)                   (Eq. 1)
//   tensor parallel t:       s·b·h·(10 + 24/t + 5·a·s/(h·t))        (Eq. 2; no sequence parallelism)
//   selective recomputation: s·b·h·34/t                             (Eq. 6; with sequence parallelism)
//   full recomputation:      s·b·h·2                                (the layer's input, section 5)
// The paper's terms, which these functions keep apart so that fp32 training is counted too: 16
// values of s·b·h per layer (attention: the QKV input, Q, K, V, the output projection's input;
// the MLP's input, GeLU input 4, second linear's input 4; two LayerNorm inputs), each of `e` bytes
// (2 in 16-bit, 4 in fp32), plus two dropout masks of one byte; and per head two a·s²·b values
// (the softmax output and its dropout's output) plus that dropout's one-byte mask: 34 = 16·2 + 2,
// 5 = 2·2 + 1. Of those, the LayerNorm inputs, the QKV and MLP inputs and the two masks (4·e + 2:
// 10 in 16-bit) are replicated on every tensor-parallel GPU; the rest is split t ways.
// Outside the layers (section 4.3): the embedding's dropout mask s·b·h, the final LayerNorm's and
// the output projection's inputs 2·e·s·b·h, and the logits the cross entropy keeps in fp32,
// 4·s·b·v, split t ways (the paper's 4·s·b·h·(1 + v/h)/t plus the mask it lists beside it).
//
// Thread safety: pure functions.
#pragma once

#include "train/spec/transformer_workload.h"

namespace jobctl::cost {

struct ActivationShape {
  double seq_len = 0;      // s
  double micro_batch = 0;  // b
  double hidden = 0;       // h
  double heads = 0;        // a
  double vocab = 0;        // v (0: no output layer counted)
  int layers = 0;          // L
  int element_bytes = 2;   // e: 2 in 16-bit, 4 in fp32
  int tensor_parallel = 1; // t
};

// One layer's activations per GPU.
double layer_activation_bytes(const ActivationShape& shape, train::Recompute recompute);

// The embedding, the final LayerNorm, the output projection and the logits, per GPU.
double outside_layers_activation_bytes(const ActivationShape& shape);

// All of one micro-batch's activations per GPU: every layer plus the outside terms.
double activation_bytes(const ActivationShape& shape, train::Recompute recompute);

// What the loss adds at its peak beyond the activations kept: when backward starts, PyTorch's
// cross entropy on fp32 logits holds the gradient of the log-probabilities and then the gradient of
// the logits, 4 bytes each per logit, beside the 4·s·b·v it kept: 8·s·b·v per GPU (split t ways).
// Measured on an H200 (bench/RESULTS.md): without this term the estimate of a GPT-2-sized model
// (v = 50,304) missed torch.cuda.max_memory_allocated by 1.1 to 3.1 GB, 7 to 11 bytes per logit.
double loss_peak_bytes(const ActivationShape& shape);

}  // namespace jobctl::cost
