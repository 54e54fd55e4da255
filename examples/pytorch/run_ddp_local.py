#!/usr/bin/env python3
"""Runs train_ddp.py as a gang of N processes on this machine, outside jobctl; prints rank 0's result.

Each rank gets the environment jobctl-worker gives a gang member (docs/job-protocol.md, "Jobs
across machines"): JOBCTL_NODE_RANK, JOBCTL_NUM_NODES, JOBCTL_NODE_ADDRS and JOBCTL_MASTER_ADDR
(127.0.0.1), JOBCTL_MASTER_PORT (a port free here), JOBCTL_GPUS_PER_NODE (0), and a checkpoint
and an output folder of its own; it runs in a process group of its own, in a folder of its own.
Their stderr is copied to this program's, each line prefixed "[rank N] ".

With --stop-after-step K, once rank 0 reports step K or later, the ranks of --stop-ranks (all by
default) get SIGTERM, as their workers would send it; the gang must stop after one step with rank
0's checkpoint (exit 0 for a rank that was signalled, 75 for the others), and every rank then
resumes from that checkpoint (JOBCTL_RESUME_FROM, a copy for each rank, as each node's worker
downloads its own). The result then carries "interrupted_at_step", the step of that checkpoint.

Every rank's result must carry the same weights hash; the exit status is 0 when the run finished
so, 1 otherwise (the reason on stderr).

  run_ddp_local.py --nproc 2 -- --steps 300
  run_ddp_local.py --nproc 2 --stop-after-step 100 -- --steps 300 --step-ms 20
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TRAIN_DDP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_ddp.py")
PEER_STOPPED_EXIT = 75  # train_ddp.py's exit status for a rank stopped by a peer's stop


class RunFailed(Exception):
    pass


def free_port():
    """A TCP port free on 127.0.0.1 now (what a worker sends with its lease request)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_environment(rank, nproc, port, folder, resume_from=None):
    """The environment of rank `rank`, as jobctl-worker sets it, its folders under `folder`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBCTL_")}
    checkpoints = os.path.join(folder, "checkpoints")
    outputs = os.path.join(folder, "outputs")
    os.makedirs(checkpoints, exist_ok=True)
    os.makedirs(outputs, exist_ok=True)
    env.update({
        "JOBCTL_JOB_ID": "local",
        "JOBCTL_CHECKPOINT_DIR": checkpoints,
        "JOBCTL_OUTPUT_DIR": outputs,
        "JOBCTL_NODE_RANK": str(rank),
        "JOBCTL_NUM_NODES": str(nproc),
        "JOBCTL_NODE_ADDRS": ",".join(["127.0.0.1"] * nproc),
        "JOBCTL_MASTER_ADDR": "127.0.0.1",
        "JOBCTL_MASTER_PORT": str(port),
        "JOBCTL_GPUS_PER_NODE": "0",
    })
    if resume_from:
        env["JOBCTL_RESUME_FROM"] = resume_from
    return env


class Rank:
    """One running train_ddp.py: its events (stdout's JSON lines) and stderr lines as they come,
    read by threads of its own. Its methods are safe to call from any thread."""

    def __init__(self, rank, argv, env, cwd, echo_stderr=True):
        self.rank = rank
        self._lock = threading.Lock()
        self._events = []
        self._stderr = []
        self._echo = echo_stderr
        self.process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_stdout(self):
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            with self._lock:
                if isinstance(event, dict) and "event" in event:
                    self._events.append(event)
                else:
                    self._stderr.append(line.rstrip("\n"))

    def _read_stderr(self):
        for line in self.process.stderr:
            with self._lock:
                self._stderr.append(line.rstrip("\n"))
            if self._echo:
                print(f"[rank {self.rank}] {line}", end="", file=sys.stderr, flush=True)

    def events(self, kind):
        with self._lock:
            return [e for e in self._events if e["event"] == kind]

    def stderr(self):
        with self._lock:
            return "\n".join(self._stderr)

    def last_step(self):
        progress = self.events("progress")
        return progress[-1]["step"] if progress else -1

    def signal(self, signum):
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def wait(self, timeout=None):
        """The exit status (negative: the signal that ended it), once its output is read."""
        code = self.process.wait(timeout)
        for t in self._readers:
            t.join()
        return code


def start_gang(nproc, train_args, folder, resume_from=None, echo_stderr=True):
    """Starts ranks 0..nproc-1 of train_ddp.py with `train_args`, each in folder/rank-N, on a
    fresh port; `resume_from` is copied into each rank's folder first."""
    port = free_port()
    ranks = []
    for rank in range(nproc):
        rank_folder = os.path.join(folder, f"rank-{rank}")
        os.makedirs(rank_folder, exist_ok=True)
        resume_copy = None
        if resume_from:
            resume_copy = os.path.join(rank_folder, "resume.pt")
            shutil.copyfile(resume_from, resume_copy)
        env = rank_environment(rank, nproc, port, rank_folder, resume_copy)
        ranks.append(Rank(rank, [sys.executable, TRAIN_DDP, *train_args], env, rank_folder, echo_stderr))
    return ranks


def wait_all(ranks, deadline, stop_after_step=None, stop_ranks=()):
    """Waits for every rank, SIGTERMing `stop_ranks` once rank 0 reports a step >= stop_after_step.
    Returns the exit statuses; past `deadline` (time.monotonic()) kills them all and raises."""
    stopped = False
    while any(r.process.poll() is None for r in ranks):
        if stop_after_step is not None and not stopped and ranks[0].last_step() >= stop_after_step:
            for r in ranks:
                if r.rank in stop_ranks:
                    r.signal(signal.SIGTERM)
            stopped = True
        if time.monotonic() > deadline:
            for r in ranks:
                r.signal(signal.SIGKILL)
            for r in ranks:
                r.wait()
            raise RunFailed("the ranks did not finish within --timeout-s; killed them")
        time.sleep(0.01)
    return [r.wait() for r in ranks]


def finished_result(ranks, codes):
    """Rank 0's result, once every rank exited 0 with a result carrying the same weights."""
    results = []
    for r, code in zip(ranks, codes):
        mine = r.events("result")
        if code != 0 or not mine:
            raise RunFailed(f"rank {r.rank} exited {code} without finishing:\n{r.stderr()[-2000:]}")
        results.append(mine[-1])
    hashes = {res["weights_sha256"] for res in results}
    if len(hashes) != 1:
        raise RunFailed(f"the ranks finished with different weights: {sorted(hashes)}")
    return results[0]


def run(nproc, train_args, folder, timeout_s, stop_after_step=None, stop_ranks=None):
    """One run of the gang, stopped and resumed once when `stop_after_step` is given; rank 0's
    result."""
    deadline = time.monotonic() + timeout_s
    if stop_after_step is None:
        ranks = start_gang(nproc, train_args, os.path.join(folder, "run"))
        return finished_result(ranks, wait_all(ranks, deadline))

    stop_ranks = set(range(nproc)) if stop_ranks is None else set(stop_ranks)
    ranks = start_gang(nproc, train_args, os.path.join(folder, "run-1"))
    codes = wait_all(ranks, deadline, stop_after_step, stop_ranks)
    if any(r.events("result") for r in ranks):
        raise RunFailed(f"the run finished before the stop after step {stop_after_step} reached it: "
                        "give an earlier step, more steps or --step-ms")
    expected = [0 if r.rank in stop_ranks else PEER_STOPPED_EXIT for r in ranks]
    if codes != expected:
        detail = "\n".join(f"rank {r.rank}:\n{r.stderr()[-2000:]}" for r in ranks)
        raise RunFailed(f"after the stop the ranks exited {codes}, expected {expected}:\n{detail}")
    announced = ranks[0].events("checkpoint")
    if not announced:
        raise RunFailed("rank 0 announced no checkpoint before it stopped")
    newest = announced[-1]
    if newest.get("reason") != "signal":
        raise RunFailed(f"rank 0's last checkpoint (step {newest['step']}) is not the one of the step it stopped at")
    print(f"stopped at step {newest['step']}; resuming every rank from {newest['path']}", file=sys.stderr, flush=True)
    ranks = start_gang(nproc, train_args, os.path.join(folder, "run-2"), resume_from=newest["path"])
    result = finished_result(ranks, wait_all(ranks, deadline))
    return {**result, "interrupted_at_step": newest["step"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                usage="%(prog)s [options] [-- train_ddp.py's arguments]")
    p.add_argument("--nproc", type=int, default=2, help="how many ranks (processes)")
    p.add_argument("--stop-after-step", type=int, metavar="K",
                   help="SIGTERM the ranks once rank 0 reports step K, then resume them all")
    p.add_argument("--stop-ranks", metavar="R,R,...", help="the ranks that get the SIGTERM (default: all)")
    p.add_argument("--workdir", help="where the ranks' folders go (kept); default: a temporary folder")
    p.add_argument("--timeout-s", type=float, default=600, help="the whole run's limit")
    p.add_argument("train_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = p.parse_args()
    train_args = args.train_args[1:] if args.train_args[:1] == ["--"] else args.train_args
    if args.nproc < 1:
        p.error("--nproc must be at least 1")
    stop_ranks = None
    if args.stop_ranks is not None:
        try:
            stop_ranks = [int(r) for r in args.stop_ranks.split(",")]
        except ValueError:
            p.error(f"--stop-ranks {args.stop_ranks!r}: expected rank numbers separated by commas")
        if not stop_ranks or any(not 0 <= r < args.nproc for r in stop_ranks):
            p.error(f"--stop-ranks {args.stop_ranks!r}: ranks are 0..{args.nproc - 1}")
    if args.stop_ranks is not None and args.stop_after_step is None:
        p.error("--stop-ranks needs --stop-after-step")

    try:
        if args.workdir:
            os.makedirs(args.workdir, exist_ok=True)
            result = run(args.nproc, train_args, args.workdir, args.timeout_s, args.stop_after_step, stop_ranks)
        else:
            with tempfile.TemporaryDirectory(prefix="run_ddp_local.") as folder:
                result = run(args.nproc, train_args, folder, args.timeout_s, args.stop_after_step, stop_ranks)
    except RunFailed as e:
        print(f"run_ddp_local.py: {e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
