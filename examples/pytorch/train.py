#!/usr/bin/env python3
"""A PyTorch program that speaks jobctl's job protocol (docs/job-protocol.md).

A small MLP on a subset of Fashion-MNIST, on the CPU, deterministic: the same arguments give the
same final weights whether the run is interrupted and resumed or not, so the hash of the final
weights in its result tells an interrupted run from a broken one.

  - progress: one {"event":"progress",...} line every --log-every steps;
  - checkpoints: every --checkpoint-every steps and on SIGTERM, written to JOBCTL_CHECKPOINT_DIR
    (a temporary file renamed into place), each announced with {"event":"checkpoint","path":...};
  - resume: from JOBCTL_RESUME_FROM when the worker sets it;
  - result: {"event":"result", "steps", "final_loss", "test_accuracy", "weights_sha256"}.

Run it alone:  python3 examples/pytorch/train.py --steps 300
As a job:      jobctl submit --workdir examples/pytorch -- python3 train.py --steps 300
"""
import argparse
import os
import signal
import sys
import time

# The folder is packed as a code bundle, and tests run the program from the source tree: no
# __pycache__ written beside it.
sys.dont_write_bytecode = True

import torch

import fashion_mnist
from job_protocol import RESUME_REFUSED_EXIT, CheckpointWriter, emit, resume, weights_sha256


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fashion_mnist.add_training_arguments(p)
    p.add_argument("--step-delay", type=float, default=0.0,
                   help="seconds to sleep after each step (tests: a run long enough to interrupt)")
    args = p.parse_args()

    # One thread and deterministic kernels: the bits do not depend on the machine's cores.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)

    stop = {"requested": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(requested=True))
    # Which interpreter and torch ran it (the machine's, or a container image's): a log line.
    print(f"train.py: python {sys.executable} {sys.version.split()[0]}, torch {torch.__version__}", file=sys.stderr)

    ckpt_dir = os.environ.get("JOBCTL_CHECKPOINT_DIR", "checkpoints")

    x_train, y_train = fashion_mnist.load(args.data_dir, "train", args.train_samples)
    x_test, y_test = fashion_mnist.load(args.data_dir, "t10k", args.test_samples)

    model = fashion_mnist.mlp(args.hidden)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = 0

    resume_from = os.environ.get("JOBCTL_RESUME_FROM")
    if resume_from:
        state = resume(resume_from, model, opt)
        if state is None:
            return RESUME_REFUSED_EXIT
        step = int(state["step"])
        print(f"resumed from {resume_from} at step {step}", file=sys.stderr, flush=True)

    checkpoints = CheckpointWriter(ckpt_dir)

    def checkpoint(reason):
        checkpoints.write(step, {"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}, reason)

    loss = None
    while step < args.steps:
        if stop["requested"]:
            checkpoint("signal")
            print(f"SIGTERM: checkpointed at step {step}, exiting", file=sys.stderr, flush=True)
            return 0
        epoch, batch = fashion_mnist.batch_of_step(step, len(x_train), args.batch_size, args.seed)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
        loss.backward()
        opt.step()
        step += 1
        if step % args.log_every == 0 or step == args.steps:
            emit("progress", step=step, total_steps=args.steps, loss=round(loss.item(), 6), epoch=epoch)
        if args.checkpoint_every > 0 and step % args.checkpoint_every == 0 and step < args.steps:
            checkpoint("periodic")
        if args.step_delay > 0:
            time.sleep(args.step_delay)

    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    emit("result", steps=step, final_loss=None if loss is None else loss.item(), test_accuracy=accuracy,
         weights_sha256=weights_sha256(model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
