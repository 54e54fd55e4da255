#!/usr/bin/env bash
# Builds train/ alone with CUDA on a GPU machine, runs the CUDA tests (and the CPU ones), the
# Fashion-MNIST accuracy tests on the GPU, and the GPU benchmark against PyTorch eager, then
# prints a table. Run from the repository root:
#
#   bash train/bench/run_on_gpu.sh [RESULTS_DIR]
#
# Needs: nvcc, cmake, ninja, python3 with torch (the GPU image has them). GoogleTest is built
# from source: copy /usr/src/googletest from a Debian machine into .gtest-src/ of the checkout
# (ignored by git; add `/.gtest-src/` to .git/info/exclude) or set JOBCTL_GTEST_SOURCE_DIR.
# Fashion-MNIST for the accuracy tests: copy /usr/share/datasets/fashion-mnist/*.gz into
# .fashion-mnist/ (likewise ignored) or set JOBCTL_FASHION_MNIST_DIR; without it they skip.
set -uo pipefail
cd "$(dirname "$0")/../.."
RESULTS=${1:-${OUT:-/tmp/jobctl-gpu-results}}
mkdir -p "$RESULTS"
GTEST=${JOBCTL_GTEST_SOURCE_DIR:-$PWD/.gtest-src}
export JOBCTL_FASHION_MNIST_DIR=${JOBCTL_FASHION_MNIST_DIR:-$PWD/.fashion-mnist}
BUILD=build-train-gpu

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$RESULTS/gpu.txt"
cmake -S train -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJOBCTL_CUDA=ON \
  -DJOBCTL_GTEST_SOURCE_DIR="$GTEST" 2>&1 | tail -5 | tee "$RESULTS/configure.txt"
ninja -C "$BUILD" -j"$(nproc)" 2>&1 | tail -3 | tee "$RESULTS/build.txt" || exit 1

ctest --test-dir "$BUILD" -L cuda --output-on-failure 2>&1 | tee "$RESULTS/ctest-cuda.txt"
ctest --test-dir "$BUILD" -L 'unit|integration' --output-on-failure -j4 2>&1 | tail -15 | tee "$RESULTS/ctest-cpu.txt"
ctest --test-dir "$BUILD" -L accuracy --output-on-failure -V 2>&1 | grep -E 'ACCURACY|Passed|Failed|Skipped|SKIPPED' \
  | tee "$RESULTS/ctest-accuracy.txt"

"$BUILD/bench/jobctl-train-bench-gpu" --seconds 3 2>&1 | tee "$RESULTS/bench-jobctl.txt"
python3 train/bench/torch_bench.py --seconds 3 2>&1 | tee "$RESULTS/bench-torch.txt"

python3 - "$RESULTS/bench-jobctl.txt" "$RESULTS/bench-torch.txt" <<'PY' | tee "$RESULTS/table.md"
import re, sys
rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"RESULT name=(\S+) impl=(\S+) batch=(\d+) steps_per_s=([\d.]+)", line)
        if m:
            rows.setdefault(m.group(1), {})[m.group(2)] = float(m.group(4))
            rows[m.group(1)]["batch"] = int(m.group(3))
goals = {"mlp_784_256_128_10_b128": 1.5, "mlp_784_4096_4096_10_b1024": 0.95}
print("| model | batch | jobctl steps/s | jobctl (no graphs) | PyTorch eager steps/s | jobctl / PyTorch | goal |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, r in rows.items():
    j, t = r.get("jobctl"), r.get("torch")
    ratio = f"{j / t:.2f}x" if j and t else "n/a"
    goal = f">= {goals[name]}x" if name in goals else "-"
    print(f"| {name} | {r['batch']} | {j or 0:.1f} | {r.get('jobctl-nographs', 0):.1f} | {t or 0:.1f} | {ratio} | {goal} |")
PY
