#!/usr/bin/env bash
# Stops what scripts/start.sh started: SIGTERM (graceful), then waits up to 15 s for each process.
set -uo pipefail
cd "$(dirname "$0")/.."
home=${JOBCTL_HOME:-$PWD/.jobctl}
for name in worker cloudsim jobctld; do
  pidfile=$home/$name.pid
  [[ -f $pidfile ]] || continue
  pid=$(cat "$pidfile")
  if kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "$name ($pid) did not stop; sending SIGKILL"; kill -KILL "$pid"; }
    echo "stopped $name ($pid)"
  fi
  rm -f "$pidfile"
done
