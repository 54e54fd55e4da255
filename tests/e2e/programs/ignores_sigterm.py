#!/usr/bin/env python3
"""A job-protocol program that ignores SIGTERM (the command-job e2e tests).

It counts to argv[1] (0.1 s a step), announcing a checkpoint (a file holding the step) every 5
steps; a resumed run starts after the step in JOBCTL_RESUME_FROM. The worker must kill it after
checkpoint.grace_s, and the job must resume from its last periodic checkpoint. Standard library
only.
"""
import json
import os
import signal
import sys
import time


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


signal.signal(signal.SIGTERM, signal.SIG_IGN)
total = int(sys.argv[1])
ckpt_dir = os.environ["JOBCTL_CHECKPOINT_DIR"]
start = 0
resume = os.environ.get("JOBCTL_RESUME_FROM")
if resume:
    with open(resume) as f:
        start = int(f.read())
    print(f"resuming after step {start}", flush=True)
for step in range(start + 1, total + 1):
    time.sleep(0.1)
    emit("progress", step=step, total_steps=total)
    if step % 5 == 0:
        path = os.path.join(ckpt_dir, f"ckpt-{step}")
        with open(path + ".tmp", "w") as f:
            f.write(str(step))
        os.replace(path + ".tmp", path)
        emit("checkpoint", path=path, step=step)
emit("result", resumed_from=start, steps=total)
