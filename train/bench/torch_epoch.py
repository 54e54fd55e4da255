#!/usr/bin/env python3
"""PyTorch's side of the whole-process comparison (cpu_process_vs_torch.sh): one process that does
what `jobctl-train --spec S` does for the MLP or CNN spec of docs/job-spec.md on Fashion-MNIST:
read the IDX files, scale the pixels by 1/255, train the epochs with batch 128 in a fresh shuffle
each epoch, cross-entropy, torch.optim.AdamW(lr=1e-3, weight_decay=1e-4) under a per-step cosine
schedule, evaluate the test set after each epoch, and exit.

  torch_epoch.py --model mlp|cnn [--threads N] [--epochs E] [--data-dir DIR]

Prints "RESULT name=<model> impl=torch epochs=E seconds=<in-process> test_accuracy=<a>".
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, stem):
    for suffix in (".gz", ""):
        path = os.path.join(data_dir, stem + suffix)
        if os.path.exists(path):
            return read_idx(path)
    raise FileNotFoundError(os.path.join(data_dir, stem))


def model_of(kind):
    if kind == "mlp":  # hidden [256, 128]
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    # channels [32, 64], hidden [128]
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "cnn"], required=True)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    x = torch.from_numpy(load(args.data_dir, "train-images-idx3-ubyte").astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(load(args.data_dir, "train-labels-idx1-ubyte").astype(np.int64))
    tx = torch.from_numpy(load(args.data_dir, "t10k-images-idx3-ubyte").astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    ty = torch.from_numpy(load(args.data_dir, "t10k-labels-idx1-ubyte").astype(np.int64))
    model = model_of(args.model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    batch = 128
    steps_per_epoch = x.shape[0] // batch
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps_per_epoch * args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    accuracy = 0.0
    for _ in range(args.epochs):
        model.train()
        order = torch.randperm(x.shape[0])
        for s in range(steps_per_epoch):
            idx = order[s * batch:(s + 1) * batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for s in range(0, tx.shape[0], 1000):
                correct += (model(tx[s:s + 1000]).argmax(1) == ty[s:s + 1000]).sum().item()
        accuracy = correct / tx.shape[0]
    print(f"RESULT name={args.model} impl=torch epochs={args.epochs} seconds={time.perf_counter() - t0:.2f} "
          f"test_accuracy={accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
