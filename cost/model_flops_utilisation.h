// The share of a GPU's peak a large transformer's training reaches (model FLOPs utilisation), the
// starting point of its runtime estimate before calibration replaces it. Published figures:
//   PaLM 540B on TPU v4: 46.2% (Chowdhery et al. 2022, Table 3)
//   Megatron-LM on A100s: 41.5% to 56.3% with selective recomputation (Korthikanti et al., Table 5)
//   GPT-3 175B on V100s: 21.3% (quoted by Chowdhery et al., Table 3)
//   Llama 2 7B: 184,320 A100-80GB GPU-hours for 2T tokens (Touvron et al. 2023, Table 2):
//   6 x 7e9 x 2e12 / (184,320 x 3600 s x 312e12) = 41% of the BF16 peak
// The default per GPU family: 41% (Llama 2's, the lower end of Megatron's) for GPUs with BF16
// tensor cores (Ampere and later), 21.3% (GPT-3's) for those without (Volta, Turing and older).
//
// Thread safety: pure function.
#pragma once

#include <string_view>

namespace jobctl::cost {

inline constexpr double kTensorCoreBf16Utilisation = 0.41;
inline constexpr double kPreAmpereUtilisation = 0.213;

// For a GPU model's name; the pre-Ampere figure for a name this table does not know.
double default_transformer_utilisation(std::string_view gpu_model);

}  // namespace jobctl::cost
