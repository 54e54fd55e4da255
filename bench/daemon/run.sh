#!/usr/bin/env bash
# jobctld's capacity figures (bench/RESULTS.md): durable submits/s with p50/p99 (closed
# loop, then open loop at half that rate), start-up (ready, and submit and /healthz latency while
# placement works), GET /v1/jobs?state=queued&limit=100, RSS and idle CPU with 1,000,000 jobs
# stored, lease latency (a job submitted while a worker waits in its long-poll), and 10,000
# simulated workers heartbeating every 5 s (jobctld CPU %).
#
#   bench/daemon/run.sh [BUILD_DIR]        (default build-e; needs jobctld and jobctl-bench-daemon)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-e}
jobctld=$build/daemon/jobctld
bench=$build/bench/daemon/jobctl-bench-daemon
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
start() {  # start DATA_DIR PORT [flags]: runs jobctld, waits for its start-up line
  local dir=$1 port=$2; shift 2
  "$jobctld" --listen "127.0.0.1:$port" --data-dir "$dir" "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 100); do [[ -s $tmp/out ]] && return 0; sleep 0.1; done
  echo "jobctld did not start" >&2; cat "$tmp/err" >&2; exit 1
}
stop() { kill "$pid"; wait "$pid" || true; pid=; }
rss() { awk '/VmRSS/ {printf "%.1f MB\n", $2/1024}' "/proc/$pid/status"; }

echo "== machine: $(nproc) cores, $(uptime | sed 's/.*load/load/')"
echo "== durable submits (synchronous=FULL, group commit)"
start "$tmp/submit" 18941
"$bench" submit --url http://127.0.0.1:18941 --clients 32 --seconds 10 | tee "$tmp/closed"
rate=$(sed -E 's/.* = ([0-9]+) submits.*/\1/' "$tmp/closed")
"$bench" submit --url http://127.0.0.1:18941 --clients 32 --seconds 10 --rate $((rate / 2))
stop

echo "== lease latency: a worker waits in its long-poll, a job fitting it is submitted"
start "$tmp/lease" 18944
"$bench" lease --url http://127.0.0.1:18944 --jobs 100
stop

echo "== 1,000,000 jobs stored (every 10th queued, the rest succeeded)"
start "$tmp/big" 18942
curl -s -X POST localhost:18942/v1/jobs -H 'Content-Type: application/json' \
  -d '{"model":{"kind":"mlp","hidden":[32]},"data":{"dataset":"synthetic","samples":256}}' >/dev/null
stop
"$bench" fill --db "$tmp/big/jobctl.db" --jobs 1000000 --queued-every 10
# Start-up: ready, and the API while placement works: first over a queue never decided (every
# job decided and its document written), then a restart (one decision per kind of job).
"$bench" start --jobctld "$jobctld" --data-dir "$tmp/big" --port 18942 --seconds 40 --rate 200
"$bench" start --jobctld "$jobctld" --data-dir "$tmp/big" --port 18942 --seconds 20 --rate 200
start "$tmp/big" 18942
echo "jobctld RSS after start: $(rss)"
# Idle with that queue and no worker.
"$bench" idle --pid "$pid" --seconds 30 --skip-s 5
"$bench" list --url http://127.0.0.1:18942 --requests 2000
echo "jobctld RSS after the listing: $(rss)"
stop
# A restart with that queue, nothing changing: CPU per 15 s once started, then SIGTERM to exit.
"$bench" quiet --jobctld "$jobctld" --data-dir "$tmp/big" --port 18942 --skip-s 20 --windows 4

echo "== 10,000 workers heartbeating every 5 s"
start "$tmp/hb" 18943 --lease-timeout-s 600
"$bench" heartbeat --url http://127.0.0.1:18943 --workers 10000 --interval-s 5 --seconds 30 --threads 16 --pid "$pid"
echo "jobctld RSS: $(rss)"
stop
