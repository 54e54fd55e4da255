#!/usr/bin/env python3
"""PyTorch eager reference for jobctl's training benchmarks: the same models, batches and optimizer.

  torch_bench.py [--device cuda|cpu] [--threads N] [--models NAME,...] [--seconds S]

Each configuration trains on synthetic 28x28 data held on the device, batches gathered by a
shuffled index (as jobctl does), cross-entropy loss, torch.optim.AdamW(lr=1e-3, weight_decay=1e-4)
with its default implementation, fp32 without TF32, no gradient clipping. Timed over at least
--seconds after 30 warm-up steps, synchronising every 50 steps only (jobctl's benches do the same).
--device cuda is jobctl-train-bench-gpu's reference (run_on_gpu.sh), --device cpu with --threads
that of jobctl-train-bench-cpu (cpu_vs_torch.sh). Prints "RESULT name=... impl=torch batch=...
steps_per_s=..." lines.
"""
import argparse
import time

import torch
import torch.nn as nn


def mlp(hidden):
    layers, width = [], 784
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def cnn(channels, hidden):
    layers, cin, side = [], 1, 28
    for c in channels:
        layers += [nn.Conv2d(cin, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        cin, side = c, side // 2
    layers.append(nn.Flatten())
    width = cin * side * side
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def steps_per_second(model, batch, image, seconds, dev, samples=16384):
    torch.manual_seed(0)
    model = model.to(dev)
    shape = (samples, 1, 28, 28) if image else (samples, 784)
    x_all = torch.randn(shape, device=dev)
    y_all = torch.randint(0, 10, (samples,), device=dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(samples, device=dev)
    pos = 0

    def step():
        nonlocal perm, pos
        if pos + batch > samples:
            perm, pos = torch.randperm(samples, device=dev), 0
        idx = perm[pos:pos + batch]
        pos += batch
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x_all[idx]), y_all[idx])
        loss.backward()
        opt.step()
        return loss

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(30):
        step()
    sync()
    steps, t0 = 0, time.perf_counter()
    while True:
        for _ in range(50 if dev.type == "cuda" else 5):
            step()
        steps += 50 if dev.type == "cuda" else 5
        sync()
        if time.perf_counter() - t0 >= seconds:
            break
    return steps / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--models", default="", help="comma-separated configuration names (default: all)")
    args = ap.parse_args()
    dev = torch.device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name(0) if dev.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print("device:", name, "torch", torch.__version__)
    configs = [
        ("mlp_784_256_128_10_b128", mlp([256, 128]), 128, False),
        ("mlp_784_4096_4096_10_b1024", mlp([4096, 4096]), 1024, False),
        ("cnn_32_64_128_b128", cnn([32, 64], [128]), 128, True),
    ]
    wanted = [m for m in args.models.split(",") if m]
    for name, model, batch, image in configs:
        if wanted and name not in wanted:
            continue
        sps = steps_per_second(model, batch, image, args.seconds, dev)
        print(f"RESULT name={name} impl=torch batch={batch} steps_per_s={sps:.3f}", flush=True)


if __name__ == "__main__":
    main()
