#!/usr/bin/env bash
# jobctl-train's CPU training step against PyTorch's on the same machine, measured side by side in
# one run: the same models (MLP 784-256-128-10 and CNN [32,64] + dense 128), batch 128, AdamW,
# synthetic 28x28 data, the same number of threads. Prints both steps/s and their ratio with the
# goals (MLP >= 3x, CNN >= 2x). The two run in turn, --rounds times (default 3), PyTorch twice a
# round (its default OpenMP waiting, and OMP_WAIT_POLICY=PASSIVE), and each side's best run counts:
# on a shared machine the best of a few runs is the least disturbed one.
#
#   bash train/bench/cpu_vs_torch.sh [--threads N] [--seconds S] [--rounds R]   (from the repository root)
#
# Installs Debian's python3-torch (apt-get; sudo when not root) if /usr/bin/python3 cannot import
# torch, and builds jobctl-train-bench-cpu with train/ alone in build-train/.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=$(nproc)
seconds=5
rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--threads N] [--seconds S] [--rounds R]" >&2; exit 2 ;;
  esac
done

python=/usr/bin/python3
if ! "$python" -c 'import torch' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch >/dev/null
fi

build=${JOBCTL_TRAIN_BUILD:-build-train}
[ -f "$build/build.ninja" ] || cmake -S train -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" jobctl-train-bench-cpu >/dev/null
# build-train/bench/ alone, build/release/train/bench/ in the root build.
bench_bin=$(find "$build" -name jobctl-train-bench-cpu -type f -perm -u+x | head -1)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $threads threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
  echo "== round $round"
  "$bench_bin" --quick --threads "$threads" --seconds "$seconds" | tee -a "$out/results.txt"
  "$python" train/bench/torch_bench.py --device cpu --threads "$threads" --seconds "$seconds" \
    --models mlp_784_256_128_10_b128,cnn_32_64_128_b128 | tee -a "$out/results.txt"
  # PyTorch again with OpenMP threads that sleep rather than spin at barriers: on a shared machine
  # the default spinning collapses it (bench/RESULTS.md); each side's best round counts.
  OMP_WAIT_POLICY=PASSIVE "$python" train/bench/torch_bench.py --device cpu --threads "$threads" --seconds "$seconds" \
    --models mlp_784_256_128_10_b128,cnn_32_64_128_b128 | tee -a "$out/results.txt"
done

"$python" - "$out/results.txt" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"RESULT name=(\S+) impl=(\S+) batch=(\d+) steps_per_s=([\d.]+)", line)
    if m:
        best = rows.setdefault(m.group(1), {})
        best[m.group(2)] = max(best.get(m.group(2), 0.0), float(m.group(4)))
goals = {"mlp_784_256_128_10_b128": 3.0, "cnn_32_64_128_b128": 2.0}
print()
print("best of each side's rounds:")
print("| model | jobctl steps/s | PyTorch steps/s | jobctl / PyTorch | goal |")
print("| --- | --- | --- | --- | --- |")
for name, goal in goals.items():
    j, t = rows.get(name, {}).get("jobctl"), rows.get(name, {}).get("torch")
    ratio = f"{j / t:.2f}x" if j and t else "n/a"
    met = "met" if j and t and j / t >= goal else "NOT met"
    print(f"| {name} | {j or 0:.1f} | {t or 0:.1f} | {ratio} | >= {goal}x ({met}) |")
PY
