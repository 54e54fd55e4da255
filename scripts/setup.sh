#!/usr/bin/env bash
# Installs every Debian 12 package jobctl needs to build, test and run. Idempotent: when all are
# installed it only checks (about a second) and touches nothing.
#
#   scripts/setup.sh            build + test dependencies
#   scripts/setup.sh --browser  also Debian's chromium and the browser tests' npm packages
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libboost1.81-dev          # Boost.Beast / Asio (header-only parts)
  libsqlite3-dev sqlite3    # the store
  nlohmann-json3-dev        # JSON outside train/
  libcurl4-openssl-dev      # worker / CLI HTTP client
  libssl-dev                # libcrypto: API token hashing (SHA-256) and randomness; optional TLS
  openssl                   # the TLS test makes its certificate with the openssl command
  prometheus                # promtool: tests check /metrics with `promtool check metrics`
  clang-14 libclang-rt-14-dev  # libFuzzer targets (fuzz/)
  libgtest-dev libgmock-dev # tests
  libcli11-dev              # the jobctl CLI
  libyaml-cpp-dev           # task files (jobctl launch)
  libopenblas-dev           # CPU GEMM for train/
  zlib1g-dev                # gzipped Fashion-MNIST
  dataset-fashion-mnist     # /usr/share/datasets/fashion-mnist
  libjs-chart.js            # Chart.js for the dashboard's charts (copied next to jobctld at build time)
  procps psmisc             # pgrep/kill in the scripts and tests
  nftables                  # nft: a root worker with --run-as keeps a gang's rendezvous port to the
                            # gang (docs/security.md); the security tests check it
  python3-torch             # PyTorch on the CPU: the user program of examples/pytorch/ and of the
                            # command-job e2e tests (docs/job-protocol.md)
  python3-pytest python3-venv python3-setuptools python3-pip  # the Python client (python/): its
                            # suite, and `pip install ./python` offline in a venv (python/README.md)
  slurm-wlm                 # slurmctld, slurmd, the client commands and munge: the Slurm tests'
                            # one-node cluster (scripts/slurm-cluster.sh)
  podman runc uidmap        # jobs in an image (jobctl-worker --container-runtime podman): rootful
                            # podman with runc (settings below)
  catatonit                 # the init `podman run --init` starts in every job's container (only
                            # recommended by podman, so --no-install-recommends leaves it out)
  docker-registry           # a real registry on 127.0.0.1 for the image tests (no outside one here)
)
browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) browser=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
if [[ $browser == 1 ]]; then
  packages+=(chromium)
  # Node.js may come from Debian or from the machine's image; install Debian's only when absent.
  if ! command -v npm >/dev/null 2>&1; then packages+=(nodejs npm); fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) != 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all Debian packages present"
fi

# podman's settings for jobctl's containers, in a file of their own (podman reads every file in
# containers.conf.d after its own defaults); written once, left alone once there:
#  - runtime = "runc": crun, podman's default where installed, refuses the hybrid cgroup layout
#    of some kernels; runc runs on both layouts.
#  - default_ulimits: podman sets a container's open-file and process limits above the caller's
#    by default, which root without CAP_SYS_RESOURCE (a container of a machine, as here) may not
#    do, and every container then fails to start; these are the machine's own hard limits.
conf=/etc/containers/containers.conf.d/50-jobctl.conf
if command -v podman >/dev/null 2>&1 && [[ ! -e $conf ]]; then
  sudo_cmd=()
  if [[ $(id -u) != 0 ]]; then sudo_cmd=(sudo); fi
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  # (processes: at most 32768, as the image tests need; a higher one was refused here even at the
  # hard limit)
  [[ $nproc == unlimited || $nproc -gt 32768 ]] && nproc=32768
  [[ $nofile == unlimited ]] && nofile=1048576
  "${sudo_cmd[@]}" mkdir -p "$(dirname "$conf")"
  printf '%s\n' "# Written by jobctl's scripts/setup.sh (explained there)." '[containers]' \
    "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]" '[engine]' 'runtime = "runc"' |
    "${sudo_cmd[@]}" tee "$conf" >/dev/null
  echo "setup: wrote $conf"
fi

if [[ $browser == 1 && -f web/package.json ]]; then
  # The browser tests' playwright-core, exactly as locked; skipped when node_modules already
  # matches the lock file.
  (cd web && { [[ -d node_modules ]] && npm ls >/dev/null 2>&1; } || npm ci --no-audit --no-fund)
fi
