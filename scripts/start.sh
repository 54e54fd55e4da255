#!/usr/bin/env bash
# Sets up, builds and starts jobctl on this machine, then submits a first Fashion-MNIST job.
#
#   scripts/start.sh            jobctld on 127.0.0.1:8080, one local worker, the simulated cloud,
#                               state under .jobctl/ (SQLite database, logs, work dirs)
#   scripts/start.sh --no-build the same with the programs already built (no setup, no build): the
#                               browser test starts the service this way
#   scripts/stop.sh             stops what this script started (SIGTERM: graceful shutdown)
#
# Environment: JOBCTL_PORT (default 8080; 0: a free port, printed), JOBCTL_HOME (default .jobctl),
# JOBCTL_JOBS (build jobs), JOBCTL_BUILD_DIR (default build/; the release build is its release/),
# JOBCTL_DEVICE (worker device: cpu, cuda or auto; default auto), JOBCTL_NO_FIRST_JOB=1 to skip
# the first job. JOBCTLD, JOBCTL_WORKER, JOBCTL_TRAIN, JOBCTL_CLI, JOBCTL_CLOUDSIM name the
# programs to run (default: the release build's).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
home=${JOBCTL_HOME:-$root/.jobctl}
port=${JOBCTL_PORT:-8080}
jobs=${JOBCTL_JOBS:-$(nproc)}
build=${JOBCTL_BUILD_DIR:-$root/build}/release
build_it=1
for arg in "$@"; do
  case "$arg" in
    --no-build) build_it=0 ;;
    *) echo "start.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
jobctld=${JOBCTLD:-$build/daemon/jobctld}
worker=${JOBCTL_WORKER:-$build/worker/jobctl-worker}
trainer=${JOBCTL_TRAIN:-$build/train/jobctl-train}
cli_bin=${JOBCTL_CLI:-$build/cli/jobctl}
cloudsim=${JOBCTL_CLOUDSIM:-$build/cloud/jobctl-cloudsim}

source scripts/build_flags.sh

if [[ $build_it == 1 ]]; then
  scripts/setup.sh
  echo "== building (release) in $build"
  cmake -S . -B "$build" "${jobctl_release_args[@]}" >/dev/null
  cmake --build "$build" -j "$jobs" --target jobctld jobctl-worker jobctl-train jobctl jobctl-cloudsim
fi

mkdir -p "$home/logs" "$home/data" "$home/worker"
if [[ -f $home/jobctld.pid ]] && kill -0 "$(cat "$home/jobctld.pid")" 2>/dev/null; then
  echo "jobctld is already running (pid $(cat "$home/jobctld.pid")); scripts/stop.sh stops it" >&2
  exit 1
fi

# The workers' `python3` (the local one's and the cloudsim instances'): a command job's `python3`
# is the first on PATH. Where that one lacks torch (an interpreter the machine's image installed
# ahead of Debian's) and Debian's has it, the workers get Debian's first, so that the README's
# own program runs; a job that needs its own interpreter names an image (docs/job-protocol.md).
worker_path=$PATH
if ! python3 -c 'import torch' >/dev/null 2>&1 && /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  worker_path=/usr/bin:$PATH
  echo "== the workers run command jobs with /usr/bin first on PATH ($(command -v python3) has no torch)"
fi

# The simulated cloud first: jobctld's provisioner launches its instances (jobctl-worker processes
# that connect back to jobctld) when placement chooses a cloud offer (docs/clouds.md).
config=$home/jobctld.json
echo "== starting jobctl-cloudsim"
PATH=$worker_path "$cloudsim" --listen 127.0.0.1:0 --state-dir "$home/cloudsim" \
  >"$home/logs/cloudsim.out" 2>"$home/logs/cloudsim.log" &
echo $! >"$home/cloudsim.pid"
for _ in $(seq 1 100); do [[ -s $home/logs/cloudsim.out ]] && break; sleep 0.1; done
head -1 "$home/logs/cloudsim.out"
cloudsim_url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$home/logs/cloudsim.out" | head -1)
[[ -n $cloudsim_url ]] || { cat "$home/logs/cloudsim.log" >&2; exit 1; }
printf '{"cloud": {"provider": "sim", "sim": {"url": "%s"}}}\n' "$cloudsim_url" >"$config"

echo "== starting jobctld on 127.0.0.1:$port (database $home/data/jobctl.db)"
"$jobctld" --listen "127.0.0.1:$port" --data-dir "$home/data" --config "$config" \
  >"$home/logs/jobctld.out" 2>"$home/logs/jobctld.log" &
echo $! >"$home/jobctld.pid"
for _ in $(seq 1 100); do
  [[ -s $home/logs/jobctld.out ]] && break
  kill -0 "$(cat "$home/jobctld.pid")" 2>/dev/null || { cat "$home/logs/jobctld.log" >&2; exit 1; }
  sleep 0.1
done
head -1 "$home/logs/jobctld.out"
# The URL from jobctld's start-up line (the port it got, when JOBCTL_PORT is 0).
server=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$home/logs/jobctld.out" | head -1)
[[ -n $server ]] || { cat "$home/logs/jobctld.log" >&2; exit 1; }

echo "== starting one local worker"
# --allow-commands: this machine's own worker runs command jobs (your own programs,
# docs/job-protocol.md) as you, for a jobctld that listens on this machine only; a worker shared
# with others leaves it off (docs/security.md, "Command jobs"). With auth off, web pages cannot
# submit jobs through your browser: jobctld refuses foreign Host and Origin headers and "simple"
# cross-site requests (docs/security.md, "Browsers"; tests/security/browser_attack_test.cpp).
PATH=$worker_path "$worker" --server "$server" --name "local-$(hostname)" --allow-commands \
  --trainer "$trainer" --device "${JOBCTL_DEVICE:-auto}" --work-dir "$home/worker" \
  >"$home/logs/worker.log" 2>&1 &
echo $! >"$home/worker.pid"

cli="$cli_bin --server $server"
if [[ ${JOBCTL_NO_FIRST_JOB:-0} != 1 ]]; then
  echo "== submitting a first job (examples/fmnist-mlp.json: an MLP on Fashion-MNIST, 2 epochs)"
  out=$($cli submit examples/fmnist-mlp.json)
  echo "$out"
  id=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' <<<"$out")
  echo
  echo "Where to look:"
  echo "  $cli show $id          state, progress, result"
  echo "  $cli logs -f $id       events and progress as they happen"
  echo "  $cli ls                every job"
  echo "  $server/             the dashboard"
fi
echo "  logs: $home/logs/   database: $home/data/jobctl.db   stop: scripts/stop.sh"
