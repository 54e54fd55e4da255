#!/usr/bin/python3
"""The transformer memory estimate (cost/transformer_estimate.h) against PyTorch, on the CPU.

For each of several small GPT-style models (layers, hidden, heads, vocabulary, sequence, micro-batch,
fp32 or bf16 mixed precision, recomputation none/selective/full, AdamW or SGD) this script builds
the model, runs one training step and measures exactly:
  - weights: the bytes of the model's parameters;
  - gradients: the bytes of their .grad after backward;
  - optimizer: the bytes of the optimizer's state (moments, step counters) and, in mixed precision,
    the fp32 master copy of the weights it updates;
  - activations: the bytes of every tensor autograd saves for backward during the forward pass
    (torch.autograd.graph.saved_tensors_hooks), counted once per storage, parameters excluded.
It writes the same workload as a command job's estimate.model, asks `jobctl estimate SPEC -o json`
for the estimate on one GPU and requires each part within 10% of the measurement.

The model follows the accounting of Korthikanti et al. (the estimate's source), so the figures are
comparable:
  - a block is pre-LayerNorm attention (separate Q, K, V and output projections with biases) and an
    MLP of 4h with GeLU, each followed by dropout and a residual add; learned positions; a final
    LayerNorm; an output projection not tied to the embedding; the loss a cross entropy on fp32
    logits;
  - dropout keeps a one-byte mask (a custom autograd function, as CUDA's fused dropout does; the
    CPU's built-in dropout would keep a mask of the activations' type);
  - mixed precision ("bf16"): the model's weights, gradients and activations are bf16, the AdamW
    state and master weights fp32 (the 16 bytes per parameter of Transformer Math 101);
  - "selective" recomputation: the attention core (scores, softmax, its dropout and the product
    with V) runs under torch.utils.checkpoint, so only Q, K and V are kept for it — the a·s² terms
    are recomputed, as in the paper; "full": each block runs under checkpoint (its input kept).
What the estimate does not count and the measurement holds is small: LayerNorm's mean and
reciprocal deviation (8 bytes per token each), the token and position indices and the loss's
targets (8 bytes per token), the optimizer's step counters (a scalar per parameter tensor).

Usage: torch_memory_check.py JOBCTL WORKDIR.  Exit status 0: every shape within 10%; 77: skipped
(no python3-torch; with CI=true that is a failure, 1).
"""
import json
import math
import os
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
    import torch.utils.checkpoint as checkpoint
except ImportError as e:
    print(f"skipped: Debian's python3-torch is not installed (scripts/setup.sh): {e}")
    sys.exit(1 if os.environ.get("CI") == "true" else 77)

TOLERANCE = 0.10


class MaskDropout(torch.autograd.Function):
    """Dropout that keeps a one-byte mask for backward."""

    @staticmethod
    def forward(ctx, x, p):
        mask = torch.rand(x.shape) >= p
        ctx.scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(mask)
        return x * mask.to(x.dtype) * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask.to(grad.dtype) * ctx.scale, None


def dropout(x, p=0.1):
    return MaskDropout.apply(x, p)


class Block(torch.nn.Module):
    def __init__(self, hidden, heads, selective):
        super().__init__()
        self.heads = heads
        self.selective = selective
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.q = torch.nn.Linear(hidden, hidden)
        self.k = torch.nn.Linear(hidden, hidden)
        self.v = torch.nn.Linear(hidden, hidden)
        self.o = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden)
        self.fc2 = torch.nn.Linear(4 * hidden, hidden)

    def split(self, t, b, s):
        d = t.shape[-1] // self.heads
        return t.view(b, s, self.heads, d).transpose(1, 2).contiguous().view(b * self.heads, s, d)

    def core(self, q, k, v, causal):
        scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(q.shape[-1])) + causal
        return torch.bmm(dropout(torch.softmax(scores, dim=-1)), v)

    def forward(self, x, causal):
        b, s, h = x.shape
        y = self.ln1(x)
        q, k, v = self.split(self.q(y), b, s), self.split(self.k(y), b, s), self.split(self.v(y), b, s)
        if self.selective:
            a = checkpoint.checkpoint(self.core, q, k, v, causal)
        else:
            a = self.core(q, k, v, causal)
        a = a.view(b, self.heads, s, h // self.heads).transpose(1, 2).contiguous().view(b, s, h)
        x = x + dropout(self.o(a))
        return x + dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class Gpt(torch.nn.Module):
    def __init__(self, layers, hidden, heads, vocab, seq, recompute):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, hidden)
        self.pos = torch.nn.Embedding(seq, hidden)
        self.blocks = torch.nn.ModuleList(Block(hidden, heads, recompute == "selective") for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)
        self.full = recompute == "full"
        self.register_buffer("causal", torch.full((seq, seq), float("-inf")).triu(1), persistent=False)

    def forward(self, idx, targets):
        b, s = idx.shape
        x = dropout(self.tok(idx) + self.pos(torch.arange(s)))
        causal = self.causal[:s, :s].to(x.dtype)
        for block in self.blocks:
            x = checkpoint.checkpoint(block, x, causal) if self.full else block(x, causal)
        logits = self.head(self.ln_f(x)).float()
        return F.cross_entropy(logits.view(b * s, -1), targets.view(-1))


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def measure(shape):
    torch.manual_seed(0)
    layers, hidden, heads, vocab, seq, batch = (shape[k] for k in ("layers", "hidden", "heads", "vocab", "seq", "batch"))
    model = Gpt(layers, hidden, heads, vocab, seq, shape["recompute"])
    mixed = shape["precision"] == "bf16"
    if mixed:
        model = model.to(torch.bfloat16)
    params = list(model.parameters())
    # Mixed precision: the optimizer updates fp32 master weights; the model's bf16 weights are
    # copied from them after each step.
    master = [p.detach().float().clone().requires_grad_(True) for p in params] if mixed else params
    if shape["optimizer"] == "sgd":
        opt = torch.optim.SGD(master, lr=1e-3, momentum=0.9)
    else:
        opt = torch.optim.AdamW(master, lr=1e-3)

    idx = torch.randint(0, vocab, (batch, seq))
    targets = torch.randint(0, vocab, (batch, seq))
    excluded = {p.storage().data_ptr() for p in params + master}
    saved = {}

    def pack(t):
        ptr = t.storage().data_ptr()
        if ptr not in excluded:
            saved[ptr] = t.storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(idx, targets)
    activations = sum(saved.values())
    loss.backward()
    gradients = tensor_bytes(p.grad for p in params)
    if mixed:
        for p, m in zip(params, master):
            m.grad = p.grad.float()
    opt.step()
    if mixed:
        for p, m in zip(params, master):
            m.grad = None
            p.data.copy_(m.data)
    state = [t for s in opt.state.values() for t in s.values() if torch.is_tensor(t)]
    optimizer = tensor_bytes(state) + (tensor_bytes(master) if mixed else 0)
    return {"weights": tensor_bytes(params), "gradients": gradients, "optimizer": optimizer, "activations": activations}


def estimate(jobctl, workdir, shape, name):
    spec = {
        "command": ["python3", "train.py"],
        "estimate": {"model": {
            "layers": shape["layers"], "hidden": shape["hidden"], "heads": shape["heads"], "vocab": shape["vocab"],
            "seq_len": shape["seq"], "micro_batch": shape["batch"], "steps": 1, "precision": shape["precision"],
            "optimizer": shape["optimizer"], "recompute": shape["recompute"]}},
    }
    path = os.path.join(workdir, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    out = subprocess.run([jobctl, "estimate", path, "--gpus", "1", "-o", "json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["bytes_per_gpu"]


SHAPES = [
    dict(layers=2, hidden=64, heads=4, vocab=128, seq=32, batch=4, precision="fp32", recompute="none", optimizer="adamw"),
    dict(layers=2, hidden=64, heads=4, vocab=128, seq=32, batch=4, precision="bf16", recompute="none", optimizer="adamw"),
    dict(layers=4, hidden=128, heads=8, vocab=256, seq=64, batch=2, precision="bf16", recompute="selective", optimizer="adamw"),
    dict(layers=3, hidden=96, heads=6, vocab=200, seq=48, batch=3, precision="fp32", recompute="full", optimizer="adamw"),
    dict(layers=2, hidden=128, heads=4, vocab=512, seq=128, batch=2, precision="bf16", recompute="full", optimizer="adamw"),
    dict(layers=3, hidden=64, heads=2, vocab=100, seq=64, batch=2, precision="fp32", recompute="selective", optimizer="sgd"),
    dict(layers=2, hidden=256, heads=8, vocab=1000, seq=16, batch=8, precision="bf16", recompute="none", optimizer="sgd"),
    dict(layers=6, hidden=64, heads=8, vocab=64, seq=256, batch=1, precision="fp32", recompute="none", optimizer="adamw"),
]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: torch_memory_check.py JOBCTL WORKDIR")
    jobctl, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    torch.set_num_threads(1)
    failures = 0
    parts = ("weights", "gradients", "optimizer", "activations")
    print("shape | " + " | ".join(f"{p} measured / estimated" for p in parts))
    for i, shape in enumerate(SHAPES):
        got = measure(shape)
        want = estimate(jobctl, workdir, shape, f"shape{i}")
        label = "L{layers} h{hidden} a{heads} V{vocab} s{seq} b{batch} {precision} {recompute} {optimizer}".format(**shape)
        cells = []
        for p in parts:
            error = (want[p] - got[p]) / got[p]
            bad = abs(error) > TOLERANCE
            failures += bad
            cells.append(f"{got[p]:,} / {want[p]:,.0f} ({error:+.1%}){' FAIL' if bad else ''}")
        print(label + " | " + " | ".join(cells))
    if failures:
        print(f"{failures} figures beyond {TOLERANCE:.0%} of the measurement")
        return 1
    print(f"every figure within {TOLERANCE:.0%} of the measurement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
