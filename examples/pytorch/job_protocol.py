"""jobctl's job protocol (docs/job-protocol.md) as examples/pytorch/'s programs speak it: event lines
on stdout, checkpoints written and announced, the resume from JOBCTL_RESUME_FROM, and the hash of
the final weights their result line carries."""
import hashlib
import json
import os

import torch

# The exit status after an `error` line with resume_refused: the worker falls back to an older
# checkpoint, or to a start from scratch.
RESUME_REFUSED_EXIT = 4


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


class CheckpointWriter:
    """Writes checkpoints (torch.save of a dict) into `folder`, announcing each. Keeps the newest
    two files: the worker takes its own link to each announced file at once. Not thread-safe."""

    def __init__(self, folder):
        self.folder = folder
        self.written = []

    def write(self, step, state, reason):
        os.makedirs(self.folder, exist_ok=True)
        path = os.path.join(self.folder, f"ckpt-{step:08d}.pt")
        tmp = path + ".tmp"
        torch.save(state, tmp)
        os.replace(tmp, path)  # announced files never change (the protocol's rule)
        emit("checkpoint", path=path, step=step, reason=reason)
        self.written.append(path)
        while len(self.written) > 2:
            os.remove(self.written.pop(0))


def resume(path, model, optimizer):
    """Loads the model's and the optimizer's state from the checkpoint at `path` (the dict a
    CheckpointWriter saved) and returns that dict. A file that cannot be used is refused the
    protocol's way: an `error` line with resume_refused, then None (exit RESUME_REFUSED_EXIT)."""
    try:
        state = torch.load(path, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        int(state["step"])
        return state
    except Exception as e:
        emit("error", message=f"cannot resume from {path}: {e}", resume_refused=True)
        return None


def weights_sha256(model):
    """The SHA-256 of the model's parameters and buffers, by name in sorted order."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()
