#!/usr/bin/env bash
# What running a job in an image costs on this machine (docs/job-protocol.md, "Jobs in an image"):
#  1. a container's start overhead: `podman run` of a program that exits at once, with the
#     flags the worker gives every job's container, against the same program started plainly;
#     p50 and p99 over N runs each (default 20), interleaved so that drift hits both alike;
#  2. the pull of the tests' torch image (tests/support/make_torch_image.sh: Debian's python3 and
#     python3-torch) from a docker-registry on 127.0.0.1: pushed once, then removed and pulled
#     again, 3 times.
#
#   bench/container/container_start.sh [N]
#
# Needs rootful podman and docker-registry (scripts/setup.sh). Prints figures, asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-20}
work=$(mktemp -d)
tag="jobctl-bench-$$"
cleanup() {
  [[ -n ${registry_pid:-} ]] && kill "$registry_pid" 2>/dev/null || true
  podman rmi -f "localhost/$tag-true:1" "localhost/$tag-torch:1" ${pulled:+"$pulled"} >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# An image of /usr/bin/true and its libraries.
true_bin=$(readlink -f /usr/bin/true)
mapfile -t libs < <(ldd "$true_bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
tar -chf "$work/true.tar" "$true_bin" "${libs[@]}" 2>/dev/null
podman import "$work/true.tar" "localhost/$tag-true:1" >/dev/null

ms() { echo $(( $(date +%s%N) / 1000000 )); }
percentile() {  # P FILE: the P-th percentile (nearest rank) of the numbers in FILE
  sort -n "$2" | awk -v p="$1" '{v[NR] = $1} END {i = int((p / 100) * NR + 0.999999); if (i < 1) i = 1; print v[i]}'
}
: >"$work/plain"; : >"$work/container"
for ((i = 0; i < runs; i++)); do
  t0=$(ms); "$true_bin"; t1=$(ms); echo $((t1 - t0)) >>"$work/plain"
  t0=$(ms)
  podman run --rm --init --pull never --log-driver none --cap-drop all --security-opt no-new-privileges \
    --name "$tag-$i" --label io.jobctl.job=0 --pids-limit 32768 "localhost/$tag-true:1" "$true_bin"
  t1=$(ms); echo $((t1 - t0)) >>"$work/container"
done
p50c=$(percentile 50 "$work/container"); p99c=$(percentile 99 "$work/container")
p50p=$(percentile 50 "$work/plain"); p99p=$(percentile 99 "$work/plain")
echo "container start: p50 ${p50c} ms, p99 ${p99c} ms over $runs runs; plain process: p50 ${p50p} ms, p99 ${p99p} ms" \
     "(overhead at p50: $((p50c - p50p)) ms)"

# The torch image through a local registry (plain HTTP on loopback: what is timed is the pull).
t0=$(ms)
tests/support/make_torch_image.sh "localhost/$tag-torch:1" >/dev/null 2>&1
echo "torch image: built from this machine's files in $(( ($(ms) - t0) / 1000 )) s," \
     "$(( $(podman image inspect --format '{{.Size}}' "localhost/$tag-torch:1") / 1000000 )) MB"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s/data\nhttp:\n  addr: 127.0.0.1:%s\n' \
  "$work" "$port" >"$work/registry.yml"
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/v2/" && break; sleep 0.1; done
pulled="127.0.0.1:$port/bench/torch:1"
t0=$(ms)
podman push -q --tls-verify=false "localhost/$tag-torch:1" "docker://$pulled" >/dev/null
echo "torch image: pushed in $(( ($(ms) - t0) / 1000 )) s"
podman rmi -f "localhost/$tag-torch:1" >/dev/null
for k in 1 2 3; do
  podman rmi -f "$pulled" >/dev/null 2>&1 || true
  t0=$(ms)
  podman pull -q --tls-verify=false "$pulled" >/dev/null
  echo "torch image: pull $k in $(( $(ms) - t0 )) ms"
done
