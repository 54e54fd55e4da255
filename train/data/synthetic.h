// A synthetic classification dataset, generated from data.seed alone: Gaussian clusters.
//
// `classes` centres c_k have coordinates drawn from N(0, (2 / sqrt(F))^2) (F = features), so two
// centres lie about 2.8 apart whatever F is. A sample picks its class uniformly and is c_k + e with
// e ~ N(0, 0.7^2) per coordinate: along the line between two centres the noise is 0.7, which
// makes a problem a small model learns well (the Bayes error is around 10-15% for 10 classes) but
// not perfectly, so losses keep moving and tests can see learning.
//
// Training and test samples come from separate random streams of the same seed.
// Thread safety: pure function.
#pragma once

#include "train/data/dataset.h"

namespace jobctl::train {

DataSplits make_synthetic(const DataSpec& data);

}  // namespace jobctl::train
