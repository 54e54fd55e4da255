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

On a GPU (the device machine has PyTorch but no jobctl build), in two steps:
  torch_memory_check.py --gpu-estimates JOBCTL FILE    here: `jobctl estimate --gpu` for GPU_SHAPES on
                                                       each GPU model in GPU_MODELS, as JSON
  torch_memory_check.py --gpu FILE                     there: each GPU shape trained on cuda; prints
                                                       torch.cuda.max_memory_allocated against the
                                                       estimate's model state + activations (goal:
                                                       within 15%), the process's peak device memory
                                                       against the estimate's total (allowance
                                                       included), and steps/s against the runtime
                                                       estimate before calibration
"""
import json
import math
import os
import subprocess
import sys
import time

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
        mask = torch.rand(x.shape, device=x.device) >= p
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
    def __init__(self, hidden, heads, selective, sdpa=False):
        super().__init__()
        self.heads = heads
        self.selective = selective
        self.sdpa = sdpa
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
        if self.sdpa:  # a fused kernel (flash attention, 4-D inputs): keeps no a·s² tensors, as selective recomputation
            heads = lambda t: t.view(b, s, self.heads, h // self.heads).transpose(1, 2)
            a = F.scaled_dot_product_attention(heads(self.q(y)), heads(self.k(y)), heads(self.v(y)), dropout_p=0.1, is_causal=True)
            a = a.transpose(1, 2).reshape(b, s, h)
            x = x + dropout(self.o(a))
            return x + dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))))
        q, k, v = self.split(self.q(y), b, s), self.split(self.k(y), b, s), self.split(self.v(y), b, s)
        if self.selective:
            a = checkpoint.checkpoint(self.core, q, k, v, causal, use_reentrant=True)
        else:
            a = self.core(q, k, v, causal)
        a = a.view(b, self.heads, s, h // self.heads).transpose(1, 2).contiguous().view(b, s, h)
        x = x + dropout(self.o(a))
        return x + dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class Gpt(torch.nn.Module):
    def __init__(self, layers, hidden, heads, vocab, seq, recompute, sdpa=False):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, hidden)
        self.pos = torch.nn.Embedding(seq, hidden)
        self.blocks = torch.nn.ModuleList(Block(hidden, heads, recompute == "selective", sdpa) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)
        self.full = recompute == "full"
        self.register_buffer("causal", torch.full((seq, seq), float("-inf")).triu(1), persistent=False)

    def forward(self, idx, targets):
        b, s = idx.shape
        x = dropout(self.tok(idx) + self.pos(torch.arange(s, device=idx.device)))
        causal = self.causal[:s, :s].to(x.dtype)
        for block in self.blocks:
            x = checkpoint.checkpoint(block, x, causal, use_reentrant=True) if self.full else block(x, causal)
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


def shape_spec(shape):
    return {
        "command": ["python3", "train.py"],
        "estimate": {"model": {
            "layers": shape["layers"], "hidden": shape["hidden"], "heads": shape["heads"], "vocab": shape["vocab"],
            "seq_len": shape["seq"], "micro_batch": shape["batch"], "steps": 1, "precision": shape["precision"],
            "optimizer": shape["optimizer"], "recompute": shape["recompute"]}},
    }


def jobctl_estimate(jobctl, workdir, shape, name, *flags):
    path = os.path.join(workdir, name + ".json")
    with open(path, "w") as f:
        json.dump(shape_spec(shape), f)
    out = subprocess.run([jobctl, "estimate", path, "--gpus", "1", "-o", "json", *flags],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def estimate(jobctl, workdir, shape, name):
    return jobctl_estimate(jobctl, workdir, shape, name)["bytes_per_gpu"]


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


# GPT-2 small to 1.3B sizes: large enough that a GPU's fixed costs (context, workspaces) are small
# against them, small enough for an 80 GB card and a few seconds each.
GPU_SHAPES = [
    dict(layers=12, hidden=768, heads=12, vocab=50304, seq=1024, batch=8, precision="bf16", recompute="none", optimizer="adamw"),
    dict(layers=12, hidden=768, heads=12, vocab=50304, seq=1024, batch=8, precision="bf16", recompute="selective", optimizer="adamw"),
    dict(layers=12, hidden=768, heads=12, vocab=50304, seq=1024, batch=8, precision="bf16", recompute="full", optimizer="adamw"),
    dict(layers=12, hidden=768, heads=12, vocab=50304, seq=512, batch=8, precision="fp32", recompute="none", optimizer="adamw"),
    dict(layers=24, hidden=1024, heads=16, vocab=50304, seq=1024, batch=8, precision="bf16", recompute="none", optimizer="adamw"),
    dict(layers=8, hidden=1024, heads=16, vocab=32000, seq=2048, batch=4, precision="bf16", recompute="none", optimizer="sgd"),
    dict(layers=24, hidden=2048, heads=16, vocab=50304, seq=1024, batch=4, precision="bf16", recompute="selective", optimizer="adamw"),
]
GPU_MODELS = {"H100": "H100-SXM", "H200": "H200"}


def allocator_bytes(estimate):
    """What the estimate puts in the caching allocator: model state, activations and the loss's peak
    (the CUDA context and the allowance are outside torch.cuda.max_memory_allocated)."""
    return sum(estimate[k] for k in ("weights", "gradients", "optimizer", "activations", "loss_peak"))


def shape_label(shape):
    return "L{layers} h{hidden} a{heads} V{vocab} s{seq} b{batch} {precision} {recompute} {optimizer}".format(**shape)


def write_gpu_estimates(jobctl, path):
    workdir = os.path.dirname(os.path.abspath(path))
    out = []
    for i, shape in enumerate(GPU_SHAPES):
        runtimes = {family: jobctl_estimate(jobctl, workdir, shape, f"gpu_shape{i}", "--gpu", model)
                    for family, model in GPU_MODELS.items()}
        first = next(iter(runtimes.values()))
        selective = jobctl_estimate(jobctl, workdir, dict(shape, recompute="selective"), f"gpu_shape{i}s")
        out.append({"shape": shape, "bytes_per_gpu": first["bytes_per_gpu"], "parameters": first["parameters"],
                    "selective_bytes_per_gpu": selective["bytes_per_gpu"],
                    "training_flops_per_step": first["training_flops"],
                    "runtime": {family: r["runtime"] for family, r in runtimes.items()}})
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def train_step_gpu(model, params, masters, optimizers, idx, targets):
    """One step as mixed-precision training does it: bf16 gradients copied into the fp32 master of
    each tensor, which its optimizer updates and copies back (one tensor's fp32 gradient at a time)."""
    loss = model(idx, targets)
    loss.backward()
    for p, m, opt in zip(params, masters, optimizers):
        if m is not p:
            m.grad = p.grad.float()
            p.grad = None
        opt.step()
        m.grad = None
        if m is not p:
            p.data.copy_(m.data)
        p.grad = None
    return loss


def tuned_step_gpu(model, params, masters, optimizer, idx, targets):
    """The step as a tuned program takes it: every fp32 master updated by one fused optimizer."""
    loss = model(idx, targets)
    loss.backward()
    for p, m in zip(params, masters):
        if m is not p:
            m.grad = p.grad.float()
            p.grad = None
    optimizer.step()
    for p, m in zip(params, masters):
        m.grad = None
        p.grad = None
        if m is not p:
            p.data.copy_(m.data)
    return loss


def measure_gpu(shape, runtime, steps=10, tuned=False):
    torch.manual_seed(0)
    layers, hidden, heads, vocab, seq, batch = (shape[k] for k in ("layers", "hidden", "heads", "vocab", "seq", "batch"))
    dev = torch.device("cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    free0, total = torch.cuda.mem_get_info()
    reserved0 = torch.cuda.memory_reserved()
    model = Gpt(layers, hidden, heads, vocab, seq, "none" if tuned else shape["recompute"], sdpa=tuned).to(dev)
    mixed = shape["precision"] == "bf16"
    if mixed:
        model = model.to(torch.bfloat16)
    params = list(model.parameters())
    masters = [p.detach().float().clone() for p in params] if mixed else params
    make = (lambda t: torch.optim.SGD([t], lr=1e-4, momentum=0.9)) if shape["optimizer"] == "sgd" \
        else (lambda t: torch.optim.AdamW([t], lr=1e-4))
    if tuned:
        fused = torch.optim.SGD(masters, lr=1e-4, momentum=0.9) if shape["optimizer"] == "sgd" \
            else torch.optim.AdamW(masters, lr=1e-4, fused=True)
        step = lambda: tuned_step_gpu(model, params, masters, fused, idx, targets)
    else:
        optimizers = [make(m) for m in masters]
        step = lambda: train_step_gpu(model, params, masters, optimizers, idx, targets)
    idx = torch.randint(0, vocab, (batch, seq), device=dev)
    targets = torch.randint(0, vocab, (batch, seq), device=dev)
    for _ in range(2):  # the optimizer state exists from the first step on
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / steps
    peak_allocated = torch.cuda.max_memory_allocated()
    # What the process holds on the device at its peak: the allocator's reserve and what the driver
    # holds for the context outside it (measured before this model: total - free - reserved).
    context = total - free0 - reserved0
    peak_device = torch.cuda.max_memory_reserved() + context
    del model, params, masters, step
    return {"peak_allocated": peak_allocated, "peak_device": peak_device, "context": context, "step_s": seconds}


def run_gpu(path):
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    name = torch.cuda.get_device_name()
    family = next((f for f in GPU_MODELS if f in name), None)
    print(f"device: {name}; torch {torch.__version__}; family for the runtime estimate: {family}")
    entries = json.load(open(path))
    print("| shape | parameters | estimate: state + activations GB | max_memory_allocated GB | estimate / measured"
          " | estimate total GB | peak device GB (context incl.) | estimate / measured | predicted step s"
          " | measured step s | predicted / measured | measured MFU |")
    print("| --- " * 12 + "|")
    misses = 0
    for e in entries:
        shape, b = e["shape"], e["bytes_per_gpu"]
        try:
            got = measure_gpu(shape, e["runtime"])
        except torch.cuda.OutOfMemoryError as err:
            print(f"| {shape_label(shape)} | out of memory: {err} |")
            misses += 1
            torch.cuda.empty_cache()
            continue
        core = allocator_bytes(b)
        ratio = core / got["peak_allocated"]
        ok = abs(ratio - 1) <= 0.15
        misses += not ok
        cells = [shape_label(shape), f"{e['parameters'] / 1e6:.1f} M", f"{core / 1e9:.3f}", f"{got['peak_allocated'] / 1e9:.3f}",
                 f"{ratio:.3f}{'' if ok else ' (beyond 15%)'}", f"{b['total'] / 1e9:.3f}", f"{got['peak_device'] / 1e9:.3f}",
                 f"{b['total'] / got['peak_device']:.3f}"]
        r = e["runtime"].get(family) if family else None
        if r:
            predicted = r["hours"] * 3600
            peak = r["peak_tflops"] * 1e12
            cells += [f"{predicted:.4f}", f"{got['step_s']:.4f}", f"{predicted / got['step_s']:.3f}",
                      f"{e['training_flops_per_step'] / got['step_s'] / peak:.1%} of {r['peak_tflops']:.0f} TFLOP/s"]
        else:
            cells += ["-", f"{got['step_s']:.4f}", "-", "-"]
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"memory: {len(entries) - misses} of {len(entries)} shapes within 15% of max_memory_allocated")
    print()
    print("Tuned: fused attention (scaled_dot_product_attention, estimated as selective recomputation) and one"
          " fused optimizer step, bf16 shapes")
    print("| shape | estimate (selective) GB | max_memory_allocated GB | estimate / measured | predicted step s"
          " | measured step s | predicted / measured | measured MFU |")
    print("| --- " * 8 + "|")
    for e in entries:
        shape = e["shape"]
        if shape["precision"] != "bf16" or shape["recompute"] == "full":
            continue
        b = e["selective_bytes_per_gpu"]
        try:
            got = measure_gpu(shape, e["runtime"], tuned=True)
        except torch.cuda.OutOfMemoryError as err:
            print(f"| {shape_label(shape)} | out of memory: {err} |")
            torch.cuda.empty_cache()
            continue
        core = allocator_bytes(b)
        r = e["runtime"].get(family) if family else None
        predicted = r["hours"] * 3600 if r else float("nan")
        mfu = e["training_flops_per_step"] / got["step_s"] / (r["peak_tflops"] * 1e12) if r else float("nan")
        print(f"| {shape_label(shape)} | {core / 1e9:.3f} | {got['peak_allocated'] / 1e9:.3f} | "
              f"{core / got['peak_allocated']:.3f} | {predicted:.4f} | {got['step_s']:.4f} | "
              f"{predicted / got['step_s']:.3f} | {mfu:.1%} |", flush=True)
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--gpu-estimates":
        write_gpu_estimates(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--gpu":
        return run_gpu(sys.argv[2])
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
        label = shape_label(shape)
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
