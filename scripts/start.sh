#!/usr/bin/env bash
# Sets up, builds and starts jobctl on this machine, then submits a first Fashion-MNIST job.
#
#   scripts/start.sh            jobctld on 127.0.0.1:8080, one local worker, the simulated cloud
#                               (once built), state under .jobctl/ (SQLite database, logs, work dirs)
#   scripts/stop.sh             stops what this script started (SIGTERM: graceful shutdown)
#
# Environment: JOBCTL_PORT (default 8080), JOBCTL_HOME (default .jobctl), JOBCTL_JOBS (build jobs),
# JOBCTL_DEVICE (worker device: cpu, cuda or auto; default auto), JOBCTL_NO_FIRST_JOB=1 to skip
# the first job.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
home=${JOBCTL_HOME:-$root/.jobctl}
port=${JOBCTL_PORT:-8080}
jobs=${JOBCTL_JOBS:-$(nproc)}
build=$root/build/release
server=http://127.0.0.1:$port

source scripts/build_flags.sh

scripts/setup.sh
echo "== building (release) in $build"
cmake -S . -B "$build" "${jobctl_release_args[@]}" >/dev/null
cmake --build "$build" -j "$jobs" --target jobctld jobctl-worker jobctl-train jobctl jobctl-cloudsim

mkdir -p "$home/logs" "$home/data" "$home/worker"
if [[ -f $home/jobctld.pid ]] && kill -0 "$(cat "$home/jobctld.pid")" 2>/dev/null; then
  echo "jobctld is already running (pid $(cat "$home/jobctld.pid")); scripts/stop.sh stops it" >&2
  exit 1
fi

# The simulated cloud first: jobctld's provisioner launches its instances (jobctl-worker processes
# that connect back to jobctld) when placement chooses a cloud offer (docs/clouds.md).
config=$home/jobctld.json
echo "== starting jobctl-cloudsim"
"$build/cloud/jobctl-cloudsim" --listen 127.0.0.1:0 --state-dir "$home/cloudsim" \
  >"$home/logs/cloudsim.out" 2>"$home/logs/cloudsim.log" &
echo $! >"$home/cloudsim.pid"
for _ in $(seq 1 100); do [[ -s $home/logs/cloudsim.out ]] && break; sleep 0.1; done
head -1 "$home/logs/cloudsim.out"
cloudsim_url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$home/logs/cloudsim.out" | head -1)
[[ -n $cloudsim_url ]] || { cat "$home/logs/cloudsim.log" >&2; exit 1; }
printf '{"cloud": {"provider": "sim", "sim": {"url": "%s"}}}\n' "$cloudsim_url" >"$config"

echo "== starting jobctld on $server (database $home/data/jobctl.db)"
"$build/daemon/jobctld" --listen "127.0.0.1:$port" --data-dir "$home/data" --config "$config" \
  >"$home/logs/jobctld.out" 2>"$home/logs/jobctld.log" &
echo $! >"$home/jobctld.pid"
for _ in $(seq 1 100); do
  [[ -s $home/logs/jobctld.out ]] && break
  kill -0 "$(cat "$home/jobctld.pid")" 2>/dev/null || { cat "$home/logs/jobctld.log" >&2; exit 1; }
  sleep 0.1
done
head -1 "$home/logs/jobctld.out"

echo "== starting one local worker"
"$build/worker/jobctl-worker" --server "$server" --name "local-$(hostname)" \
  --trainer "$build/train/jobctl-train" --device "${JOBCTL_DEVICE:-auto}" --work-dir "$home/worker" \
  >"$home/logs/worker.log" 2>&1 &
echo $! >"$home/worker.pid"

cli="$build/cli/jobctl --server $server"
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
