#!/usr/bin/python3
"""examples/pytorch/train_ddp.py, the data-parallel example, is deterministic and stops together.

  1. run_ddp_local.py runs it as a gang of 2 processes (gloo over loopback), uninterrupted;
  2. again with --step-ms, rank 1 SIGTERMed after step 20 (rank 0 must stop after the same step,
     checkpoint it and exit 75, rank 1 exit 0) and both resumed from rank 0's checkpoint: the
     final weights must hash the same as run 1's, on both ranks (run_ddp_local.py checks the exit
     statuses, the checkpoint and that the ranks agree);
  3. alone, without JOBCTL_NUM_NODES: a result of world size 1;
  4. a gang of 2 whose rank 1 is SIGKILLed: rank 0 exits 1, saying a collective failed, rather
     than hanging.

Usage: train_ddp_check.py [EXAMPLES_PYTORCH_DIR].  Exit status 0: every check held; 77: skipped (no
python3-torch; with CI=true that is a failure, 1).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

try:
    import torch  # noqa: F401  (the ranks import it; this only tells a missing one early)
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        raise ImportError("torch.distributed with gloo is not available")
except ImportError as e:
    print(f"skipped: Debian's python3-torch is not installed (scripts/setup.sh): {e}")
    sys.exit(1 if os.environ.get("CI") == "true" else 77)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "examples", "pytorch")
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, EXAMPLES)
import run_ddp_local  # noqa: E402

# Small enough for seconds: 512 samples, 100 steps of a 32-wide MLP.
TRAIN_ARGS = ["--steps", "100", "--train-samples", "512", "--test-samples", "200", "--hidden", "32",
              "--batch-size", "64", "--log-every", "1", "--checkpoint-every", "30"]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAILED: {what}", flush=True)


def timed(what, argv, **kwargs):
    began = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    print(f"{what}: exit {r.returncode} in {time.monotonic() - began:.1f} s", flush=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr, sep="\n", flush=True)
    return r


def result_of(r):
    for line in reversed(r.stdout.splitlines()):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if isinstance(j, dict) and "weights_sha256" in j:
            return j
    return {}


def main():
    runner = [sys.executable, os.path.join(EXAMPLES, "run_ddp_local.py"), "--nproc", "2", "--timeout-s", "300"]

    straight = result_of(timed("2 ranks, uninterrupted", runner + ["--", *TRAIN_ARGS]))
    check(straight.get("steps") == 100 and straight.get("world_size") == 2,
          f"the uninterrupted run of 2 ranks finishes 100 steps: {straight}")
    check(len(straight.get("weights_sha256", "")) == 64, f"the result carries a weights hash: {straight}")

    # --step-ms only paces the steps (a window for the stop to land in): the weights must not change.
    resumed = result_of(timed("2 ranks, rank 1 stopped after step 20 and resumed",
                              runner + ["--stop-after-step", "20", "--stop-ranks", "1", "--",
                                        *TRAIN_ARGS, "--step-ms", "20"]))
    check(20 <= resumed.get("interrupted_at_step", -1) < 100,
          f"the second run was stopped after step 20 and resumed: {resumed}")
    check(resumed.get("steps") == 100, f"the resumed run finishes 100 steps: {resumed}")
    check(straight.get("weights_sha256") is not None
          and resumed.get("weights_sha256") == straight.get("weights_sha256"),
          f"interrupted and resumed, the weights are bit-identical to the uninterrupted run's: "
          f"{resumed.get('weights_sha256')} != {straight.get('weights_sha256')}")

    with tempfile.TemporaryDirectory(prefix="train_ddp_check.") as folder:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBCTL_")}
        env["JOBCTL_CHECKPOINT_DIR"] = os.path.join(folder, "checkpoints")
        alone = result_of(timed("1 process, no gang", [sys.executable, os.path.join(EXAMPLES, "train_ddp.py"),
                                                       *TRAIN_ARGS], env=env, cwd=folder))
        check(alone.get("steps") == 100 and alone.get("world_size") == 1
              and len(alone.get("weights_sha256", "")) == 64, f"one process alone gives a result: {alone}")

        # A peer's death: the collective fails (the connection resets) and rank 0 says so. The
        # wait's limit only stops a hung test; --timeout-s 30 bounds even a peer that never answers.
        began = time.monotonic()
        ranks = run_ddp_local.start_gang(2, [*TRAIN_ARGS, "--steps", "100000", "--step-ms", "20",
                                             "--timeout-s", "30"], os.path.join(folder, "kill"), echo_stderr=False)
        try:
            while ranks[0].last_step() < 5 and ranks[0].process.poll() is None:
                time.sleep(0.01)
            check(ranks[0].last_step() >= 5, f"the gang trains before the kill:\n{ranks[0].stderr()}")
            ranks[1].signal(signal.SIGKILL)
            try:
                code = ranks[0].wait(timeout=120)
            except subprocess.TimeoutExpired:
                code = None
            print(f"rank 1 SIGKILLed: rank 0 exit {code} in {time.monotonic() - began:.1f} s", flush=True)
            check(code == 1, f"rank 0 exits 1 when its peer is killed (got {code}; None: it hung)")
            check("a collective failed" in ranks[0].stderr(),
                  f"rank 0 says why it stopped on stderr:\n{ranks[0].stderr()}")
            errors = ranks[0].events("error")
            check(bool(errors) and "a collective failed" in errors[-1].get("message", ""),
                  f"rank 0 prints an error line for its worker: {errors}")
        finally:
            for r in ranks:
                r.signal(signal.SIGKILL)
                r.wait()

    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        return 1
    print("all checks held", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
