#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (a separate configuration: fuzz/CMakeLists.txt) and runs
# each for a while, seeded from the committed corpus fuzz/corpus/<target>/ (new inputs go to a
# temporary folder; the committed corpus is not changed). Prints each target's final libFuzzer
# line (runs, coverage, exec/s). Exits non-zero when a target crashes or the build fails.
#
#   fuzz/run.sh [--seconds N] [--seed N] [--build-dir DIR] [--jobs N] [--opt FLAGS] [--target NAME]...
#
# Default: 15 s per target, a random seed, build dir build-fuzz (under the repository), -j2, built
# -O1 -g1 (--opt "-O0 -g0" builds in less than half the time and fuzzes slower: the test command's
# short run). A crash
# leaves its input in the build dir's crashes/ folder and prints the reproducer command. The test
# command's short run passes a fixed --seed so that it explores the same inputs on every CI run (a
# red CI names a regression, not a lucky draw); the long runs for bench/RESULTS.md use random seeds
# to find new bugs, and each one found gets a unit test and a corpus entry.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=15
seed=0  # 0: libFuzzer picks one
build=$root/build-fuzz
jobs=2
opt="-O1 -g1"
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --opt) opt=$2; shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    *) echo "fuzz/run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=(fuzz_job_spec fuzz_http_request fuzz_checkpoint fuzz_catalog_csv)

cxx=$(command -v clang++-14 || command -v clang++ || true)
cc=$(command -v clang-14 || command -v clang || true)
if [[ -z $cxx || -z $cc ]]; then
  echo "fuzz/run.sh: clang is not installed (Debian: clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi
if [[ ! -f $build/build.ninja ]]; then
  cmake -S fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DJOBCTL_FUZZ_OPT="$opt" >/dev/null
elif [[ $(sed -n 's/^JOBCTL_FUZZ_OPT:STRING=//p' "$build/CMakeCache.txt") != "$opt" ]]; then
  cmake -S fuzz -B "$build" -DJOBCTL_FUZZ_OPT="$opt" >/dev/null
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

mkdir -p "$build/crashes"
status=0
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  work=$(mktemp -d)
  log=$build/$t.log
  # -rss_limit_mb: a decoder that allocates from a length field must not be able to ask for GBs.
  if ! "$build/$t" "$work" "fuzz/corpus/$name" -max_total_time="$seconds" -seed="$seed" -timeout=10 \
        -rss_limit_mb=2048 -artifact_prefix="$build/crashes/$t-" -print_final_stats=1 >"$log" 2>&1; then
    echo "FAIL $t (log: $log)"
    tail -n 40 "$log"
    status=1
  else
    runs=$(awk '/^stat::number_of_executed_units/ {print $2}' "$log")
    eps=$(awk '/^stat::average_exec_per_sec/ {print $2}' "$log")
    cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | sed -E 's/.*cov: ([0-9]+).*ft: ([0-9]+).*corp: ([0-9]+).*/cov \1 ft \2 corpus \3/' || true)
    echo "ok   $t: ${runs:-?} runs in ${seconds} s, ${eps:-?} exec/s, ${cov:-?}"
  fi
  rm -rf "$work"
done
exit $status
