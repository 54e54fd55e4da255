#!/usr/bin/env bash
# Sets up, builds and runs every jobctl test from a clean tree (this is what .ci/run runs).
#
#  1. scripts/setup.sh installs the Debian packages (and the dashboard's npm packages).
#  2. A sanitizer build (ASan + UBSan, -O0, no CUDA, no Beast) builds only the unit tests and
#     runs `ctest -L unit`.
#  3. A release build builds everything but the unit tests (the CUDA path too where nvcc is
#     installed).
#  4. A ThreadSanitizer build (Clang, with -Wthread-safety as errors) builds only the daemon,
#     worker and store tests (target jobctl-tsan-tests) and runs them (`ctest -L tsan`).
#  5. The release build runs every other label: integration, e2e, accuracy, fuzz, browser, slurm
#     (a one-node Slurm cluster per test program: scripts/slurm-cluster.sh), cuda (CUDA tests
#     skip, saying so, on a machine without a GPU), torch (the memory estimate against Debian's
#     python3-torch; the data-parallel example's determinism over 2 processes).
#
# Environment: JOBCTL_JOBS (parallel build and unit-test jobs, default: cores), JOBCTL_TEST_JOBS
# (parallel tests in step 5, default: twice the cores), JOBCTL_BUILD_DIR (default: build).
# Step 5 runs twice as many tests as cores because most of them wait on processes, sockets and
# lease timers rather than compute; the compute-bound ones (training to an accuracy, fuzzing,
# Chromium, PyTorch) declare the cores they take (CTest's PROCESSORS), so they are counted whole.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${JOBCTL_JOBS:-$(nproc)}
test_jobs=${JOBCTL_TEST_JOBS:-$((2 * jobs))}
build=${JOBCTL_BUILD_DIR:-$root/build}

source scripts/build_flags.sh

start=$(date +%s)
stamp() { echo "== [$(($(date +%s) - start))s] $*"; }

stamp "setup"
scripts/setup.sh --browser

stamp "sanitizer build (unit tests)"
cmake -S . -B "$build/asan" "${jobctl_asan_args[@]}" >/dev/null
cmake --build "$build/asan" --target jobctl-unit-tests -j "$jobs"
stamp "unit tests (ASan + UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$build/asan" -L unit --output-on-failure -j "$jobs"

stamp "release build"
cmake -S . -B "$build/release" "${jobctl_release_args[@]}" >/dev/null
cmake --build "$build/release" -j "$jobs"

stamp "ThreadSanitizer build (daemon, worker and store tests)"
cmake -S . -B "$build/tsan" "${jobctl_tsan_args[@]}" -DJOBCTL_TRAIN_PATH="$build/release/train/jobctl-train" >/dev/null
cmake --build "$build/tsan" --target jobctl-tsan-tests -j "$jobs"
stamp "daemon, worker and store tests (TSan)"
# No suppressions: every report is ours to fix. halt_on_error: the first race fails the test.
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir "$build/tsan" -L tsan --output-on-failure -j "$jobs"
stamp "integration, e2e and the other labels (release build)"
ctest --test-dir "$build/release" -LE unit --output-on-failure -j "$test_jobs"

stamp "all tests passed"
