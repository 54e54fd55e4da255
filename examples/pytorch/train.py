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
import gzip
import hashlib
import json
import os
import signal
import struct
import sys
import time

import torch

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def read_idx(path):
    """An idx file (gzipped or plain) as a uint8 tensor of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte idx file")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def find(data_dir, name):
    for candidate in (name + ".gz", name):
        path = os.path.join(data_dir, candidate)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{name}(.gz) not found in {data_dir}")


def load(data_dir, split, limit):
    images = read_idx(find(data_dir, f"{split}-images-idx3-ubyte"))[:limit]
    labels = read_idx(find(data_dir, f"{split}-labels-idx1-ubyte"))[:limit]
    return images.reshape(len(images), -1).float().div_(255.0), labels.long()


def weights_sha256(model):
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--train-samples", type=int, default=8192)
    p.add_argument("--test-samples", type=int, default=2000)
    p.add_argument("--checkpoint-every", type=int, default=50)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--step-delay", type=float, default=0.0,
                   help="seconds to sleep after each step (tests: a run long enough to interrupt)")
    p.add_argument("--data-dir", default=os.environ.get("FASHION_MNIST_DIR", DEFAULT_DATA))
    args = p.parse_args()

    # One thread and deterministic kernels: the bits do not depend on the machine's cores.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)

    stop = {"requested": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(requested=True))

    ckpt_dir = os.environ.get("JOBCTL_CHECKPOINT_DIR", "checkpoints")

    x_train, y_train = load(args.data_dir, "train", args.train_samples)
    x_test, y_test = load(args.data_dir, "t10k", args.test_samples)

    model = torch.nn.Sequential(torch.nn.Linear(784, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = 0

    resume = os.environ.get("JOBCTL_RESUME_FROM")
    if resume:
        try:
            state = torch.load(resume, map_location="cpu")
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            step = int(state["step"])
        except Exception as e:  # the worker falls back to an older checkpoint
            emit("error", message=f"cannot resume from {resume}: {e}", resume_refused=True)
            return 4
        print(f"resumed from {resume} at step {step}", file=sys.stderr, flush=True)

    written = []

    def checkpoint(reason):
        os.makedirs(ckpt_dir, exist_ok=True)
        path = os.path.join(ckpt_dir, f"ckpt-{step:08d}.pt")
        tmp = path + ".tmp"
        torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}, tmp)
        os.replace(tmp, path)  # announced files never change (the protocol's rule)
        emit("checkpoint", path=path, step=step, reason=reason)
        written.append(path)
        while len(written) > 2:  # the worker keeps its own link to each announced file
            os.remove(written.pop(0))

    per_epoch = len(x_train) // args.batch_size
    loss = None
    while step < args.steps:
        if stop["requested"]:
            checkpoint("signal")
            print(f"SIGTERM: checkpointed at step {step}, exiting", file=sys.stderr, flush=True)
            return 0
        # The batch order depends only on (seed, epoch): a resumed run sees the same batches.
        epoch, index = divmod(step, per_epoch)
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(args.seed * 100003 + epoch))
        batch = order[index * args.batch_size:(index + 1) * args.batch_size]
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
