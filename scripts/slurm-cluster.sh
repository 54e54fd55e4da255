#!/usr/bin/env bash
# A throw-away one-node Slurm cluster on this machine, from Debian's slurm-wlm (scripts/setup.sh
# installs it): munged on a private key and socket, slurmctld and slurmd on free loopback ports,
# every file under one folder. What the Slurm tests and a developer trying docs/slurm.md use.
#
#   scripts/slurm-cluster.sh start DIR [--gpus N] [--gpu-type T] [--cpus N] [--owner-pid PID]
#   scripts/slurm-cluster.sh stop DIR
#   scripts/slurm-cluster.sh env DIR        # prints `export SLURM_CONF=...` for a shell
#
# start writes DIR/slurm.conf (use it with SLURM_CONF=DIR/slurm.conf) and returns once the node
# is IDLE. Partitions: `gpu` (the default) and `urgent` (same node, higher PriorityTier: a job
# there preempts `gpu` jobs, which Slurm requeues). GPUs are faked through GRES: Slurm needs a
# device file per GPU, so each is a character device with /dev/null's numbers under DIR/dev.
# --owner-pid: a watchdog stops the cluster when that process is gone (a test killed on a
# timeout leaves no daemons behind).
#
# stop cancels every job first and waits for their slurmstepd processes to end (they outlive
# slurmd), then stops slurmd, slurmctld and munged by their pid files, and finally kills any
# process still carrying this cluster's SLURM_CONF in its environment. Idempotent.
#
# Runs as root (slurmd starts jobs as their submitting user); no systemd needed.
set -euo pipefail

die() { echo "slurm-cluster: $*" >&2; exit 1; }

usage() { sed -n '6,8p' "$0" >&2; exit 2; }

(($# >= 2)) || usage
cmd=$1
dir=$2
shift 2

# The daemons run with JOBCTL_SLURM_CLUSTER=DIR in their environment, and so do the slurmstepd
# processes they fork; a job's own processes carry the submitter's SLURM_CONF and a SLURM_JOB_ID.
# Those two marks find every process of this cluster and nothing else (the caller's shell has
# SLURM_CONF too, but no SLURM_JOB_ID).
conf_path() { echo "$(cd "$1" && pwd)/slurm.conf"; }

read_pid() { [[ -s $1 ]] && cat "$1" || true; }

alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; }

# Waits up to $2 tenths of a second for process $1 to end.
wait_gone() {
  local pid=$1 n=$2
  while alive "$pid" && ((n-- > 0)); do sleep 0.1; done
  ! alive "$pid"
}

stop_pid_file() {
  local pid
  pid=$(read_pid "$1")
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  wait_gone "$pid" 100 || { kill -KILL "$pid" 2>/dev/null || true; wait_gone "$pid" 20 || true; }
}

# Processes of the cluster in $1 (absolute folder): its daemons, their slurmstepd, its jobs.
cluster_pids() {
  local mark="JOBCTL_SLURM_CLUSTER=$1" conf="SLURM_CONF=$1/slurm.conf" p env
  for p in /proc/[0-9]*; do
    [[ ${p#/proc/} == "$$" ]] && continue
    env=$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null) || continue
    if grep -qxF "$mark" <<<"$env" || { grep -qxF "$conf" <<<"$env" && grep -q '^SLURM_JOB_ID=' <<<"$env"; }; then
      echo "${p#/proc/}"
    fi
  done
}

do_stop() {
  [[ -d $dir ]] || return 0
  local conf
  conf=$(conf_path "$dir")
  export SLURM_CONF=$conf
  # The watchdog first, so it does not run stop a second time under us.
  local wd
  wd=$(read_pid "$dir/watchdog.pid")
  if alive "$wd" && [[ $wd != "$$" && $wd != "$PPID" ]]; then kill -TERM "$wd" 2>/dev/null || true; fi
  rm -f "$dir/watchdog.pid"
  if alive "$(read_pid "$dir/slurmctld.pid")"; then
    # Cancel every job and wait for slurmstepd to finish each one (its socket in the spool
    # folder goes away), so nothing of a job outlives slurmd.
    timeout 10 scancel --full --quiet --state=PENDING >/dev/null 2>&1 || true
    local ids
    ids=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [[ -n $ids ]]; then timeout 10 scancel --quiet $ids >/dev/null 2>&1 || true; fi
    local n=150
    while ((n-- > 0)); do
      compgen -G "$dir/spool/*_[0-9]*" >/dev/null || break
      sleep 0.1
    done
  fi
  stop_pid_file "$dir/slurmd.pid"
  stop_pid_file "$dir/slurmctld.pid"
  # Whatever is left of this cluster (a job's process that ignored SIGTERM, a stray stepd).
  local left
  left=$(cluster_pids "$(dirname "$conf")")
  if [[ -n $left ]]; then
    kill -KILL $left 2>/dev/null || true
  fi
  stop_pid_file "$dir/munge/munged.pid"
  rm -f "$dir/munge/munge.socket.2" "$dir/slurmctld.pid" "$dir/slurmd.pid"
}

# A free TCP port on 127.0.0.1, from a range unlikely to be taken by ephemeral ports.
free_port() {
  local p tries=200
  while ((tries-- > 0)); do
    p=$((20000 + RANDOM % 10000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  die "no free port found"
}

do_start() {
  local gpus=2 gpu_type=fake cpus owner_pid=""
  cpus=$(nproc)
  while (($#)); do
    case $1 in
      --gpus) gpus=$2; shift 2 ;;
      --gpu-type) gpu_type=$2; shift 2 ;;
      --cpus) cpus=$2; shift 2 ;;
      --owner-pid) owner_pid=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  [[ $gpus =~ ^[1-8]$ ]] || die "--gpus must be 1 to 8"
  [[ $gpu_type =~ ^[a-z0-9_-]+$ ]] || die "--gpu-type must be lower-case letters, digits, - or _"
  [[ $(id -u) == 0 ]] || die "must run as root (slurmd starts jobs as their users)"
  command -v slurmctld >/dev/null && command -v munged >/dev/null ||
    die "slurm-wlm is not installed (scripts/setup.sh installs it)"
  mkdir -p "$dir"
  local conf
  conf=$(conf_path "$dir")
  dir=$(dirname "$conf")
  if alive "$(read_pid "$dir/slurmctld.pid")"; then die "a cluster already runs in $dir"; fi
  mkdir -p "$dir"/{state,spool,dev,munge,log}
  # munged checks that its socket's folder is not writable by others and is traversable.
  chmod 755 "$dir" "$dir/munge"
  local i
  for ((i = 0; i < gpus; i++)); do
    [[ -e $dir/dev/gpu$i ]] || mknod "$dir/dev/gpu$i" c 1 3
  done

  export SLURM_CONF=$conf JOBCTL_SLURM_CLUSTER=$dir
  [[ -s $dir/munge/munge.key ]] || {
    mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null
    chmod 400 "$dir/munge/munge.key"
  }
  munged --socket="$dir/munge/munge.socket.2" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" --force

  local attempt
  for attempt in 1 2 3; do
    local ctld_port slurmd_port
    ctld_port=$(free_port)
    slurmd_port=$(free_port)
    [[ $slurmd_port != "$ctld_port" ]] || continue
    cat >"$conf" <<EOF
# Written by scripts/slurm-cluster.sh: a one-node test cluster under $dir.
ClusterName=jobctl
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# pgid, not linuxproc: linuxproc leaked a cancelled job's children. No cgroups in a container.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
# No slurmdbd: finished jobs stay visible to squeue/scontrol for MinJobAge seconds, and every
# finished job is appended to a text file.
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MinJobAge=600
# Signalled jobs get this long between SIGTERM and SIGKILL: enough for a checkpoint upload.
KillWait=30
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=node1 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=1024 Gres=gpu:$gpu_type:$gpus State=UNKNOWN
PartitionName=gpu Nodes=node1 Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=node1 MaxTime=INFINITE State=UP PriorityTier=2
EOF
    cat >"$dir/gres.conf" <<EOF
NodeName=node1 Name=gpu Type=$gpu_type File=$dir/dev/gpu[0-$((gpus - 1))]
EOF
    slurmctld -i -f "$conf" || true
    slurmd -N node1 -f "$conf" || true
    local n=100
    while ((n-- > 0)); do
      local state
      state=$(sinfo -h -n node1 -o %T 2>/dev/null | head -1 || true)
      if [[ $state == idle ]]; then break; fi
      sleep 0.1
    done
    if [[ ${state:-} == idle ]]; then
      if [[ -n $owner_pid ]]; then
        # The watchdog: stops the cluster once the owner is gone (setsid: not in the caller's
        # process group, so a kill of that group does not take it too early).
        setsid bash -c 'while kill -0 "$1" 2>/dev/null && [[ -d $2 ]]; do sleep 1; done; exec "$3" stop "$2"' \
          watchdog "$owner_pid" "$dir" "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" \
          </dev/null >>"$dir/log/watchdog.log" 2>&1 &
        echo $! >"$dir/watchdog.pid"
      fi
      echo "slurm-cluster: node1 idle with $gpus GPU(s) (gres gpu:$gpu_type); export SLURM_CONF=$conf"
      return 0
    fi
    echo "slurm-cluster: attempt $attempt: node1 not idle (state '${state:-}'); see $dir/log" >&2
    stop_pid_file "$dir/slurmd.pid"
    stop_pid_file "$dir/slurmctld.pid"
  done
  do_stop
  die "the cluster did not start; logs under $dir/log"
}

case $cmd in
  start) do_start "$@" ;;
  stop) do_stop ;;
  env) echo "export SLURM_CONF=$(conf_path "$dir")" ;;
  *) usage ;;
esac
