#!/usr/bin/env bash
# Every GPU check of the training core, on a GPU machine (H100/H200), with train/ built alone: no
# Debian packages and no Boost there, only nvcc, cmake, ninja, a C++ compiler and python3 with
# torch. Run from the repository root:
#
#   bash train/bench/run_on_gpu.sh [RESULTS_DIR]        (default: $OUT, else /tmp/jobctl-gpu-results)
#
# It writes into RESULTS_DIR:
#   nvidia-smi.csv        `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader`, verbatim:
#                         what the worker's fixture tests/fixtures/nvidia-smi/<gpu> must print
#   ctest-cuda.txt        the `cuda` tests: every CUDA kernel against its CPU reference (fp32 and
#                         bf16, every launch path), fp32/bf16/accumulation/recompute training:
#                         determinism, graphs = eager, two trainers on one backend, bit-exact
#                         resume in process (also between micro-batches) and across processes
#                         after SIGTERM (per-step losses and final.ckpt bytes)
#   ctest-cpu.txt         the CPU unit and integration tests of train/
#   ctest-accuracy.txt    Fashion-MNIST on the GPU: MLP >= 0.89 (and bf16 within 0.5 points), CNN >= 0.92
#   bench-jobctl.txt      jobctl-train-bench-gpu: steps/s, bf16 wide MLP vs fp32, accumulation and
#                         recompute step times, VRAM estimate vs measured, calibrated runtime estimate
#   bench-torch.txt       torch_bench.py: PyTorch eager on the same models
#   table.md              the joined figures with their goals, for bench/RESULTS.md
#
# GoogleTest is built from source: copy /usr/src/googletest from a Debian machine into
# .gtest-src/ of the checkout (ignored by git) or set JOBCTL_GTEST_SOURCE_DIR. Fashion-MNIST for
# the accuracy tests: copy /usr/share/datasets/fashion-mnist/*.gz into .fashion-mnist/ or set
# JOBCTL_FASHION_MNIST_DIR; without it they skip (and say so).
set -uo pipefail
cd "$(dirname "$0")/../.."
RESULTS=${1:-${OUT:-/tmp/jobctl-gpu-results}}
mkdir -p "$RESULTS"
GTEST=${JOBCTL_GTEST_SOURCE_DIR:-$PWD/.gtest-src}
export JOBCTL_FASHION_MNIST_DIR=${JOBCTL_FASHION_MNIST_DIR:-$PWD/.fashion-mnist}
BUILD=build-train-gpu

# The GPU's own description, exactly as the worker reads it.
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$RESULTS/nvidia-smi.csv"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$RESULTS/gpu.txt"

cmake -S train -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJOBCTL_CUDA=ON \
  -DJOBCTL_GTEST_SOURCE_DIR="$GTEST" 2>&1 | tail -5 | tee "$RESULTS/configure.txt"
ninja -C "$BUILD" -j"$(nproc)" 2>&1 | tail -3 | tee "$RESULTS/build.txt" || exit 1

ctest --test-dir "$BUILD" -L cuda --output-on-failure -V 2>&1 | grep -vE '^[0-9]+: \[ +(RUN|OK) ' \
  | tee "$RESULTS/ctest-cuda.txt"
ctest --test-dir "$BUILD" -L 'unit|integration' --output-on-failure -j"$(nproc)" 2>&1 | tail -15 | tee "$RESULTS/ctest-cpu.txt"
ctest --test-dir "$BUILD" -L accuracy --output-on-failure -V 2>&1 | grep -E 'ACCURACY|Passed|Failed|Skipped|SKIPPED' \
  | tee "$RESULTS/ctest-accuracy.txt"

"$BUILD/bench/jobctl-train-bench-gpu" --seconds 3 2>&1 | tee "$RESULTS/bench-jobctl.txt"
python3 train/bench/torch_bench.py --device cuda --seconds 3 2>&1 | tee "$RESULTS/bench-torch.txt"

python3 - "$RESULTS/bench-jobctl.txt" "$RESULTS/bench-torch.txt" <<'PY' | tee "$RESULTS/table.md"
import re, sys
rows, vram, runtime = {}, {}, {}
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"RESULT name=(\S+) impl=(\S+) batch=(\d+) steps_per_s=([\d.]+)", line)
        if m:
            rows.setdefault(m.group(1), {})[m.group(2)] = float(m.group(4))
            rows[m.group(1)]["batch"] = int(m.group(3))
        m = re.match(r"VRAM name=(\S+) estimate_bytes=(\d+) measured_bytes=(-?\d+)", line)
        if m:
            vram[m.group(1)] = (int(m.group(2)), int(m.group(3)))
        m = re.match(r"RUNTIME name=(\S+) predicted_s=([\d.]+) measured_s=([\d.]+)", line)
        if m:
            runtime[m.group(1)] = (float(m.group(2)), float(m.group(3)))

def verdict(ok):
    return "met" if ok else "NOT met"

goals = {"mlp_784_256_128_10_b128": 1.5, "mlp_784_4096_4096_10_b1024": 0.95, "cnn_32_64_128_b128": 0.95}
print("| model | batch | jobctl steps/s | jobctl (no graphs) | PyTorch eager steps/s | jobctl / PyTorch | goal |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, r in rows.items():
    j, t = r.get("jobctl"), r.get("torch")
    ratio = j / t if j and t else None
    goal = f">= {goals[name]}x ({verdict(ratio is not None and ratio >= goals[name])})" if name in goals else "-"
    print(f"| {name} | {r['batch']} | {j or 0:.1f} | {r.get('jobctl-nographs', 0):.1f} | {t or 0:.1f} | "
          f"{f'{ratio:.2f}x' if ratio else 'n/a'} | {goal} |")

print()
fp32 = rows.get("mlp_784_4096_4096_10_b1024", {}).get("jobctl")
bf16 = rows.get("mlp_784_4096_4096_10_b1024_bf16", {}).get("jobctl")
if fp32 and bf16:
    print(f"bf16 / fp32, MLP 784-4096-4096-10 at batch 1024: {bf16 / fp32:.2f}x (goal >= 3x: {verdict(bf16 / fp32 >= 3)})")
cnn = rows.get("cnn_32_64_128_b128", {}).get("jobctl")
for variant in ("accumulate4", "recompute", "bf16"):
    v = rows.get(f"cnn_32_64_128_b128_{variant}", {}).get("jobctl")
    if cnn and v:
        print(f"CNN step time with {variant}: {cnn / v:.2f}x the fp32 step")

def estimate_table(title, unit, scale, rows):
    print()
    print(f"| configuration | {title} {unit} | measured {unit} | estimate / measured | goal |")
    print("| --- | --- | --- | --- | --- |")
    for name, (est, meas) in rows.items():
        ratio = est / meas if meas > 0 else None
        ok = ratio is not None and abs(ratio - 1) <= 0.15
        print(f"| {name} | {est / scale:.3f} | {meas / scale:.3f} | {f'{ratio:.2f}' if ratio else 'n/a'} | within 15% ({verdict(ok)}) |")

estimate_table("VRAM estimate", "MB", 1e6, vram)
estimate_table("runtime predicted (calibrated)", "s", 1.0, runtime)
PY
