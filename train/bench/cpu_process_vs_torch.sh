#!/usr/bin/env bash
# Whole processes, jobctl-train against PyTorch on the CPU: the MLP and the CNN spec of
# docs/job-spec.md (MLP [256,128]; CNN [32,64] + 128) on Fashion-MNIST, batch 128, AdamW, cosine
# schedule, --epochs E (default 1), the same number of threads. Each side is timed from the start of
# its process to its exit (data loading, start-up, training, the test-set evaluation): what a user
# waits for, not only the steps. jobctl-train runs twice: as it selects its kernels, and pinned to
# the core OpenBLAS chose by itself (OPENBLAS_CORETYPE, which the selection never overrides) —
# the kernels before and after. Prints a table with the ratios and the goals (MLP >= 3x,
# CNN >= 2x PyTorch).
#
#   bash train/bench/cpu_process_vs_torch.sh [--threads N] [--epochs E] [--data-dir DIR]
#                                            [--torch-omp-wait active|passive]
#
# --torch-omp-wait sets OMP_WAIT_POLICY for PyTorch's process (default: PyTorch's own, spinning):
# on a machine shared with other work, OpenMP threads that spin at every barrier while the other
# thread is descheduled make PyTorch many times slower (bench/RESULTS.md); passive is its best
# there, and the fair opponent.
#
# Uses jobctl-train from $JOBCTL_TRAIN_BUILD (default build-train, configured with train/ alone when
# missing) and Debian's python3-torch (train/bench/torch_epoch.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=$(nproc)
epochs=1
data_dir=/usr/share/datasets/fashion-mnist
torch_env=()
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --data-dir) data_dir=$2; shift 2 ;;
    --torch-omp-wait) torch_env=("OMP_WAIT_POLICY=${2^^}"); shift 2 ;;
    *) echo "usage: $0 [--threads N] [--epochs E] [--data-dir DIR] [--torch-omp-wait active|passive]" >&2; exit 2 ;;
  esac
done

build=${JOBCTL_TRAIN_BUILD:-build-train}
[ -f "$build/build.ninja" ] || cmake -S train -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" jobctl-train >/dev/null
train_bin=$(find "$build" -name jobctl-train -type f -perm -u+x | head -1)
python=/usr/bin/python3

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
now() { date +%s.%N; }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $threads threads"
echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|avx512f|avx512bw|avx512dq|avx512vl|avx512_bf16|amx_tile|amx_bf16)$' | tr '\n' ' ')"
echo "load at the start: $(cut -d' ' -f1-3 /proc/loadavg); PyTorch's environment: ${torch_env[*]:-as is}"

# jobctl-train for one spec; prints its wall seconds and records its start event.
run_jobctl() {  # model tag [ENV=VALUE...]
  local model=$1 tag=$2
  shift 2
  local t0 t1
  t0=$(now)
  env "$@" "$train_bin" --spec "$out/$model.json" --out "$out/$model-$tag" --device cpu --threads "$threads" \
    --data-dir "$data_dir" --log-every 1000 >"$out/$model-$tag.log"
  t1=$(now)
  grep -m1 '"event":"start"' "$out/$model-$tag.log" >"$out/$model-$tag.start"
  echo "$t1 - $t0" | bc
}
field() { sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$1"; }

printf '{"model": {"kind": "mlp", "hidden": [256, 128]}, "data": {"dataset": "fashion-mnist"}, "train": {"epochs": %s, "batch_size": 128}}\n' "$epochs" >"$out/mlp.json"
printf '{"model": {"kind": "cnn", "channels": [32, 64], "hidden": [128]}, "data": {"dataset": "fashion-mnist"}, "train": {"epochs": %s, "batch_size": 128}}\n' "$epochs" >"$out/cnn.json"

declare -A goal=([mlp]=3 [cnn]=2)
rows=()
for model in mlp cnn; do
  selected=$(run_jobctl "$model" selected)
  kernels=$(field "$out/$model-selected.start" kernels)
  selection=$(field "$out/$model-selected.start" kernels_selection)
  # The core OpenBLAS chose by itself ("OpenBLAS chose X ..."), or the one it kept.
  own=$(echo "$selection" | sed -n 's/^OpenBLAS chose \([A-Za-z0-9]*\).*/\1/p')
  [ -n "$own" ] || own=$(echo "$kernels" | sed -n 's/.*(\(.*\)).*/\1/p')
  before=$(run_jobctl "$model" library OPENBLAS_CORETYPE="$own")
  t0=$(now)
  env "${torch_env[@]}" "$python" train/bench/torch_epoch.py --model "$model" --threads "$threads" --epochs "$epochs" --data-dir "$data_dir" \
    >"$out/$model-torch.log"
  torch=$(echo "$(now) - $t0" | bc)
  echo "$model: jobctl-train $selected s on $kernels ($selection); $before s on OpenBLAS's own $own; PyTorch $torch s ($(cat "$out/$model-torch.log"))"
  rows+=("| $model | $own: $(printf %.1f "$before") s | $kernels: $(printf %.1f "$selected") s | $(printf %.1f "$torch") s | $(echo "scale=2; $torch / $before" | bc)x | $(echo "scale=2; $torch / $selected" | bc)x | >= ${goal[$model]}x: $( [ "$(echo "$torch / $selected >= ${goal[$model]}" | bc -l)" = 1 ] && echo met || echo missed) |")
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model ($epochs epoch, whole process) | jobctl-train, OpenBLAS's own core | jobctl-train, selected kernels | PyTorch | own / PyTorch | selected / PyTorch | goal |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
