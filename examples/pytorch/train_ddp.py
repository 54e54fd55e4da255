#!/usr/bin/env python3
"""Data-parallel PyTorch training across the nodes of a jobctl gang (docs/job-protocol.md, "Jobs
across machines"): one process per node, torch.distributed over gloo on the CPU.

The model and data are train.py's (a small MLP on a subset of Fashion-MNIST). Every step's global
batch of --batch-size samples is fixed by (seed, step) alone; rank r trains on its r-th slice of
it, and the gradients are summed over the ranks with one all_reduce. With one thread per process
and gloo's fixed reduction order, the same arguments and the same number of nodes give
bit-identical final weights whether the run was interrupted and resumed or not.

  - rendezvous: JOBCTL_NODE_RANK, JOBCTL_NUM_NODES, JOBCTL_MASTER_ADDR, JOBCTL_MASTER_PORT
    (init_method tcp://ADDR:PORT). Without JOBCTL_NUM_NODES it runs alone, as one process;
  - progress and checkpoints from rank 0 only: every --checkpoint-every steps, into
    JOBCTL_CHECKPOINT_DIR, each announced with {"event":"checkpoint","path":...,"step":...};
  - resume: every rank from JOBCTL_RESUME_FROM (each node's worker downloads the same file);
  - stopping together: a SIGTERM sets a flag on the rank that gets it; after every step the ranks
    take the maximum of their flags, so all of them stop after the same step, and rank 0
    checkpoints it. A rank asked to stop exits 0; a rank that stops because a peer was asked exits
    75, so that its worker reports a failure (and jobctld restarts the gang) rather than a success;
  - a peer that dies: the collective raises (at once, or after --timeout-s), and the rank exits 1
    saying so on stderr;
  - result: {"event":"result","steps","final_loss","test_accuracy","weights_sha256","world_size",
    "resumed_from"}
    from every rank (the same on each).

Alone:       python3 examples/pytorch/train_ddp.py --steps 300
Two ranks:   python3 examples/pytorch/run_ddp_local.py --nproc 2 -- --steps 300
As a job:    examples/tasks/pytorch-2node.yaml
"""
import argparse
import datetime
import fcntl
import os
import signal
import socket
import struct
import sys
import time

# The folder is packed as a code bundle, and tests run the program from the source tree: no
# __pycache__ written beside it.
sys.dont_write_bytecode = True

import torch
import torch.distributed as dist

import fashion_mnist
from job_protocol import RESUME_REFUSED_EXIT, CheckpointWriter, emit, resume, weights_sha256

# EX_TEMPFAIL: this rank stopped only because a peer was asked to. Its worker must not report
# the job done; a failure makes jobctld restart the whole gang.
PEER_STOPPED_EXIT = 75
GANG_LOST_EXIT = 1
BAD_ENVIRONMENT_EXIT = 2


class Gang:
    """This process's place in the gang, from the worker's JOBCTL_* variables."""

    def __init__(self, environ):
        def integer(name, low, high):
            text = environ.get(name, "")
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"{name} is {text!r}: expected an integer") from None
            if not low <= value <= high:
                raise ValueError(f"{name} is {value}: expected {low}..{high}")
            return value

        if "JOBCTL_NUM_NODES" not in environ:
            self.rank, self.size, self.master_addr, self.master_port, self.address = 0, 1, None, None, None
            return
        self.size = integer("JOBCTL_NUM_NODES", 1, 1 << 16)
        self.rank = integer("JOBCTL_NODE_RANK", 0, self.size - 1)
        if self.size == 1:
            self.master_addr, self.master_port, self.address = None, None, None
            return
        self.master_addr = environ.get("JOBCTL_MASTER_ADDR", "")
        if not self.master_addr:
            raise ValueError("JOBCTL_MASTER_ADDR is not set")
        self.master_port = integer("JOBCTL_MASTER_PORT", 1, 65535)
        addrs = [a for a in environ.get("JOBCTL_NODE_ADDRS", "").split(",") if a]
        self.address = addrs[self.rank] if len(addrs) == self.size else None


class GangLost(Exception):
    """A collective failed: a peer died, or did not answer within the timeout."""


def interface_holding(address):
    """The name of this machine's network interface whose IPv4 address is `address` (a host name
    is resolved), or None."""
    try:
        wanted = socket.inet_aton(socket.gethostbyname(address))
    except OSError:
        return None
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                ifreq = fcntl.ioctl(s.fileno(), siocgifaddr, struct.pack("256s", name.encode()[:15]))
            except OSError:  # no IPv4 address
                continue
            if ifreq[20:24] == wanted:
                return name
    return None


class Collectives:
    """The gang's collectives over gloo; with one rank, no process group and no communication.
    Raises GangLost when a collective fails."""

    def __init__(self, gang, timeout_s):
        self.gang = gang
        if gang.size == 1:
            return
        # gloo connects its peers on the address this host's name resolves to, which is often a
        # loopback address (Debian's 127.0.1.1) the other machines cannot reach. The address the
        # worker gave the gang for this node is the one they can.
        if gang.address and "GLOO_SOCKET_IFNAME" not in os.environ:
            interface = interface_holding(gang.address)
            if interface:
                os.environ["GLOO_SOCKET_IFNAME"] = interface
        url = f"tcp://{gang.master_addr}:{gang.master_port}"
        try:
            dist.init_process_group("gloo", init_method=url, rank=gang.rank, world_size=gang.size,
                                    timeout=datetime.timedelta(seconds=timeout_s))
        except (RuntimeError, OSError) as e:  # torch.distributed raises both (TimeoutError)
            raise GangLost(f"could not join the gang at {url}: {e}") from None

    def sum_(self, tensor):
        """Sums `tensor` over the ranks, in place."""
        if self.gang.size > 1:
            self._call(dist.all_reduce, tensor, op=dist.ReduceOp.SUM)

    def any(self, flag):
        """Whether `flag` is true on any rank."""
        if self.gang.size == 1:
            return flag
        t = torch.tensor([1 if flag else 0], dtype=torch.int32)
        self._call(dist.all_reduce, t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def close(self):
        if self.gang.size > 1:
            dist.destroy_process_group()

    def _call(self, collective, *args, **kwargs):
        try:
            collective(*args, **kwargs)
        except (RuntimeError, OSError) as e:  # torch.distributed raises both (TimeoutError)
            raise GangLost(f"a collective failed (a peer died, or did not answer within --timeout-s): {e}") from None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fashion_mnist.add_training_arguments(p, batch_size_help="the global batch, split over the ranks")
    p.add_argument("--step-ms", type=int, default=0,
                   help="each step takes at least this long (tests: a run long enough to interrupt)")
    p.add_argument("--timeout-s", type=int, default=60,
                   help="how long to wait for the other ranks, at the rendezvous and in each collective")
    args = p.parse_args()
    try:
        gang = Gang(os.environ)
    except ValueError as e:
        print(f"train_ddp.py: {e}", file=sys.stderr, flush=True)
        return BAD_ENVIRONMENT_EXIT
    if args.batch_size < gang.size:
        p.error(f"--batch-size {args.batch_size} is smaller than the {gang.size} ranks it is split over")
    if args.timeout_s <= 0:
        p.error("--timeout-s must be positive")
    if args.train_samples < args.batch_size:
        p.error("--train-samples must hold at least one batch")

    # One thread and deterministic kernels: the bits do not depend on the machine's cores.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)  # the same initial weights on every rank

    stop = {"requested": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(requested=True))

    x_train, y_train = fashion_mnist.load(args.data_dir, "train", args.train_samples)
    x_test, y_test = fashion_mnist.load(args.data_dir, "t10k", args.test_samples)
    model = fashion_mnist.mlp(args.hidden)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    params = list(model.parameters())
    step = 0
    resumed_from = 0  # the step of the checkpoint resumed from (0: a fresh start)

    resume_from = os.environ.get("JOBCTL_RESUME_FROM")
    if resume_from:  # before the rendezvous: a refused file fails this rank at once
        state = resume(resume_from, model, opt)
        if state is None:
            return RESUME_REFUSED_EXIT
        step = int(state["step"])
        resumed_from = step
        saved_size = state.get("world_size", gang.size)
        note = f" (saved by {saved_size} ranks: the batches split differently)" if saved_size != gang.size else ""
        print(f"rank {gang.rank}: resumed from {resume_from} at step {step}{note}", file=sys.stderr, flush=True)

    checkpoints = CheckpointWriter(os.environ.get("JOBCTL_CHECKPOINT_DIR", "checkpoints"))

    def checkpoint(reason):
        if gang.rank == 0:
            checkpoints.write(step, {"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
                                     "world_size": gang.size}, reason)

    def gang_lost(message):
        message = f"rank {gang.rank} of {gang.size}: {message}"
        print(f"train_ddp.py: {message}", file=sys.stderr, flush=True)
        emit("error", message=message)
        return GANG_LOST_EXIT

    try:
        collectives = Collectives(gang, args.timeout_s)
    except GangLost as e:
        return gang_lost(str(e))
    try:
        loss = None
        while step < args.steps:
            began = time.monotonic()
            epoch, batch = fashion_mnist.batch_of_step(step, len(x_train), args.batch_size, args.seed)
            shard = batch.tensor_split(gang.size)[gang.rank]
            opt.zero_grad()
            # A sum over the shard divided by the global batch: summed over the ranks, the mean
            # over the whole batch, whatever the shards' sizes.
            local = torch.nn.functional.cross_entropy(model(x_train[shard]), y_train[shard], reduction="sum")
            local = local / len(batch)
            local.backward()
            # Gradients and loss in one buffer, one all_reduce.
            flat = torch.cat([q.grad.reshape(-1) for q in params] + [local.detach().reshape(1)])
            collectives.sum_(flat)
            offset = 0
            for q in params:
                q.grad.copy_(flat[offset:offset + q.numel()].view_as(q))
                offset += q.numel()
            loss = flat[-1].item()
            opt.step()
            step += 1
            if gang.rank == 0 and (step % args.log_every == 0 or step == args.steps):
                emit("progress", step=step, total_steps=args.steps, loss=round(loss, 6), epoch=epoch)
            rest = args.step_ms / 1000.0 - (time.monotonic() - began)
            if rest > 0:
                time.sleep(rest)
            if step == args.steps:
                break
            if collectives.any(stop["requested"]):
                checkpoint("signal")
                if stop["requested"]:
                    print(f"rank {gang.rank}: SIGTERM: stopped at step {step}, exiting", file=sys.stderr, flush=True)
                    return 0
                print(f"rank {gang.rank}: a peer was asked to stop: stopped at step {step}, exiting "
                      f"{PEER_STOPPED_EXIT}", file=sys.stderr, flush=True)
                return PEER_STOPPED_EXIT
            if args.checkpoint_every > 0 and step % args.checkpoint_every == 0:
                checkpoint("periodic")
        collectives.close()
    except GangLost as e:
        return gang_lost(f"after step {step}: {e}")

    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    emit("result", steps=step, final_loss=loss, test_accuracy=accuracy, weights_sha256=weights_sha256(model),
         world_size=gang.size, resumed_from=resumed_from)
    return 0


if __name__ == "__main__":
    sys.exit(main())
