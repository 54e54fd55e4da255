#!/usr/bin/env python3
"""A job-protocol program that leaves files in JOBCTL_OUTPUT_DIR (the outputs e2e test).

It counts to argv[1] (0.1 s a step), announcing a checkpoint (a file holding the step) every 5
steps and on SIGTERM (then it exits). The first lease writes model/first.bin (256 KiB whose byte i
is (i * 7919 + (i >> 8)) & 0xff); a resumed lease checks that it came back and writes
second-lease.txt; the end writes final.txt. Its result says whether model/first.bin was there
when it resumed. Standard library only.
"""
import json
import os
import signal
import sys
import time


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


total = int(sys.argv[1])
ckpt_dir = os.environ["JOBCTL_CHECKPOINT_DIR"]
out_dir = os.environ["JOBCTL_OUTPUT_DIR"]
step = 0


def checkpoint(at, reason=None):
    path = os.path.join(ckpt_dir, f"ckpt-{at}")
    with open(path + ".tmp", "w") as f:
        f.write(str(at))
    os.replace(path + ".tmp", path)
    fields = {"path": path, "step": at}
    if reason:
        fields["reason"] = reason
    emit("checkpoint", **fields)


def on_sigterm(signum, frame):
    checkpoint(step, "signal")
    sys.exit(0)


signal.signal(signal.SIGTERM, on_sigterm)
first = os.path.join(out_dir, "model", "first.bin")
restored = None
resume = os.environ.get("JOBCTL_RESUME_FROM")
if resume:
    with open(resume) as f:
        step = int(f.read())
    restored = os.path.isfile(first) and os.path.getsize(first) == 262144
    print(f"resuming after step {step}; model/first.bin restored: {restored}", flush=True)
    with open(os.path.join(out_dir, "second-lease.txt"), "w") as f:
        f.write(f"resumed after step {step}\n")
else:
    print("starting at step 0", flush=True)
    os.makedirs(os.path.dirname(first), exist_ok=True)
    with open(first, "wb") as f:
        f.write(bytes((i * 7919 + (i >> 8)) & 0xFF for i in range(262144)))
while step < total:
    time.sleep(0.1)
    step += 1
    emit("progress", step=step, total_steps=total, loss=1.0 / step)
    if step % 5 == 0:
        checkpoint(step)
with open(os.path.join(out_dir, "final.txt"), "w") as f:
    f.write(f"steps={total}\n")
print(f"done after {total} steps", flush=True)
emit("result", steps=total, restored=restored)
