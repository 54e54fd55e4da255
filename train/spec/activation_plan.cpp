#include "train/spec/activation_plan.h"

#include <algorithm>
#include <limits>

namespace jobctl::train {

namespace {

// Workspace of segment [i, j): internals of all its layers and the outputs of all but its last.
int64_t workspace_of(const std::vector<LayerActivationBytes>& l, int i, int j) {
  int64_t w = 0;
  for (int k = i; k < j; ++k) w += l[static_cast<size_t>(k)].internals + (k + 1 < j ? l[static_cast<size_t>(k)].output : 0);
  return w;
}

ActivationPlan plan_for(const std::vector<LayerActivationBytes>& l, const std::vector<int>& ends) {
  ActivationPlan p;
  p.segment_ends = ends;
  int begin = 0;
  for (int end : ends) {
    p.kept_bytes += l[static_cast<size_t>(end - 1)].output;
    p.workspace_bytes = std::max(p.workspace_bytes, workspace_of(l, begin, end));
    begin = end;
  }
  return p;
}

}  // namespace

ActivationPlan plan_activations(const std::vector<LayerActivationBytes>& l, bool recompute) {
  const int n = static_cast<int>(l.size());
  if (n == 0) return {};
  if (!recompute) return plan_for(l, {n});
  // For every workspace cap a segment could have, the cut with the fewest kept bytes under it
  // (dynamic programming over segment ends); keep the best total. n is at most a few dozen.
  std::vector<int64_t> caps;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j <= n; ++j) caps.push_back(workspace_of(l, i, j));
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  ActivationPlan best = plan_for(l, {n});
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  for (int64_t cap : caps) {
    // kept[j]: fewest kept bytes for layers [0, j) cut into segments within the cap; then fewest
    // segments.
    std::vector<int64_t> kept(static_cast<size_t>(n) + 1, kNone);
    std::vector<int> segments(kept.size(), 0), from(kept.size(), -1);
    kept.front() = 0;
    for (int j = 1; j <= n; ++j) {
      for (int i = 0; i < j; ++i) {
        if (kept[static_cast<size_t>(i)] == kNone || workspace_of(l, i, j) > cap) continue;
        const int64_t k = kept[static_cast<size_t>(i)] + l[static_cast<size_t>(j - 1)].output;
        const int s = segments[static_cast<size_t>(i)] + 1;
        if (k < kept[static_cast<size_t>(j)] || (k == kept[static_cast<size_t>(j)] && s < segments[static_cast<size_t>(j)])) {
          kept[static_cast<size_t>(j)] = k;
          segments[static_cast<size_t>(j)] = s;
          from[static_cast<size_t>(j)] = i;
        }
      }
    }
    if (kept[static_cast<size_t>(n)] == kNone) continue;
    std::vector<int> ends;
    for (int j = n; j > 0; j = from[static_cast<size_t>(j)]) ends.push_back(j);
    std::reverse(ends.begin(), ends.end());
    const ActivationPlan p = plan_for(l, ends);
    if (p.bytes() < best.bytes() || (p.bytes() == best.bytes() && p.segment_ends.size() < best.segment_ends.size()))
      best = p;
  }
  return best;
}

}  // namespace jobctl::train
