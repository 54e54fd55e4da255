// How many GPUs of one model a workload needs to fit (`resources.gpus: "auto"`): the smallest
// count, a multiple of its tensor-parallel degree and at most what the machine has, whose memory
// per GPU (cost::vram_bytes_for: ZeRO shards the model state over the data-parallel GPUs) fits the
// GPU's memory.
//
// Thread safety: pure function.
#pragma once

#include "cost/workload.h"

namespace jobctl::cost {

// 0 when no count up to `available` fits.
int smallest_fitting_gpus(const Workload& w, int available, double memory_bytes_per_gpu);

}  // namespace jobctl::cost
