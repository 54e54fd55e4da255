#!/usr/bin/env bash
# How far the daemon's runtime estimate is from what identical jobs take, run after run: starts the
# service the way scripts/start.sh does (jobctld, the simulated cloud, one local worker; its own
# state folder and a free port), submits the same job N times one after the other and prints, per
# job, the estimate it was placed with, the time it took and the error (GET /v1/jobs/{id}'s
# `runtime`). The first job is estimated from the model alone; later ones from the calibration of
# the runs before (docs/cost-model.md, "Calibration").
#
#   bench/calibration/identical_jobs.sh [SPEC] [N]     (default examples/fmnist-mlp.json, 4)
#
# Needs the release build (scripts/start.sh builds it; JOBCTL_BUILD_DIR as there).
set -euo pipefail
cd "$(dirname "$0")/../.."
spec=${1:-examples/fmnist-mlp.json}
runs=${2:-4}
build=${JOBCTL_BUILD_DIR:-$PWD/build}/release
home=$(mktemp -d /tmp/jobctl-calibration.XXXXXX)
export JOBCTL_HOME=$home JOBCTL_PORT=0 JOBCTL_NO_FIRST_JOB=1
trap 'scripts/stop.sh >/dev/null; rm -rf "$home"' EXIT
scripts/start.sh --no-build >"$home/start.log"
server=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$home/logs/jobctld.out" | head -1)
cli="$build/cli/jobctl --server $server"
echo "spec $spec, $runs runs, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %-10s %12s %12s %9s\n' job state estimated_s actual_s error
for _ in $(seq 1 "$runs"); do
  id=$($cli submit "$spec" | sed -n 's/^submitted job \([0-9]*\).*/\1/p')
  for _ in $(seq 1 1200); do
    state=$($cli show "$id" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [[ $state == succeeded || $state == failed || $state == cancelled ]] && break
    sleep 0.5
  done
  $cli show "$id" -o json | python3 -c '
import json, sys
j = json.load(sys.stdin); r = j.get("runtime") or {}
est, act, err = r.get("estimated_hours"), r.get("actual_hours"), r.get("error_fraction")
f = lambda h: "%.2f" % (h * 3600) if h is not None else "-"
print("%-4s %-10s %12s %12s %9s" % (j["id"], j["state"], f(est), f(act), "%+.1f%%" % (100 * err) if err is not None else "-"))'
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
