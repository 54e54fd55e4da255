// Where a network keeps its activations, and what it recomputes (train.recompute).
//
// Each layer has an output (the next layer's input) and internals (what only its own backward
// needs: pre-activations, the im2col matrix, pooling arg-max). Without recomputation every layer
// keeps both from the forward pass to the backward pass. With it the layers are cut into
// contiguous segments: only the last output of each segment is kept (a checkpoint); everything
// else of a segment lives in one workspace that all segments share, and the backward pass re-runs
// each segment's forward from the checkpoint before it (the last segment's is still there). The
// cut minimises kept + workspace bytes (ties: fewer segments), which for a stack of N similar
// layers is about sqrt(N) segments: O(sqrt(N)) memory for about one more forward pass.
//
// Network allocates from this plan and model_stats (the VRAM estimate) counts from it, so the
// estimate is the allocation; a test holds them equal.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

namespace jobctl::train {

struct LayerActivationBytes {
  int64_t output = 0;     // per sample
  int64_t internals = 0;  // per sample
};

struct ActivationPlan {
  std::vector<int> segment_ends;  // one past the last layer of each segment, ascending
  int64_t kept_bytes = 0;         // per sample: the last output of every segment
  int64_t workspace_bytes = 0;    // per sample: the largest segment's internals and inner outputs
  int64_t bytes() const { return kept_bytes + workspace_bytes; }
};

// recompute false: one segment holding everything (kept_bytes is then the last layer's output).
ActivationPlan plan_activations(const std::vector<LayerActivationBytes>& layers, bool recompute);

}  // namespace jobctl::train
