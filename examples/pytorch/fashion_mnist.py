"""What examples/pytorch/'s programs train: a subset of Fashion-MNIST, the order of its batches, and
the MLP, shared by train.py (one process) and train_ddp.py (one process per node of a gang)."""
import gzip
import os
import struct

import torch

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, limit=None):
    """An idx file (gzipped or plain) as a uint8 tensor of its shape, its first `limit` items only
    when given (read no further: the training sets are a few thousand of 60,000 images)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        header = f.read(4)
        zero, dtype, ndim = struct.unpack(">HBB", header)
        if zero != 0 or dtype != 0x08:
            raise ValueError(f"{path}: not an unsigned-byte idx file")
        dims = list(struct.unpack(">" + "I" * ndim, f.read(4 * ndim)))
        if limit is not None:
            dims[0] = min(dims[0], limit)
        item_bytes = 1
        for d in dims[1:]:
            item_bytes *= d
        data = f.read(dims[0] * item_bytes)
    if len(data) != dims[0] * item_bytes:
        raise ValueError(f"{path}: truncated ({len(data)} bytes of {dims[0] * item_bytes})")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(dims)


def find(data_dir, name):
    for candidate in (name + ".gz", name):
        path = os.path.join(data_dir, candidate)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{name}(.gz) not found in {data_dir}")


def load(data_dir, split, limit):
    """The first `limit` images of `split` ("train", "t10k") as floats in [0, 1], and their labels."""
    images = read_idx(find(data_dir, f"{split}-images-idx3-ubyte"), limit)
    labels = read_idx(find(data_dir, f"{split}-labels-idx1-ubyte"), limit)
    return images.reshape(len(images), -1).float().div_(255.0), labels.long()


def batch_of_step(step, samples, batch_size, seed):
    """(epoch, the indices of step's batch). The order depends only on (seed, epoch), never on
    state carried from step to step, so a resumed run sees the same batches."""
    per_epoch = samples // batch_size
    epoch, index = divmod(step, per_epoch)
    order = torch.randperm(samples, generator=torch.Generator().manual_seed(seed * 100003 + epoch))
    return epoch, order[index * batch_size:(index + 1) * batch_size]


def mlp(hidden):
    return torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))


def add_training_arguments(parser, batch_size_help=None):
    """The arguments both example programs take: the run's length, the model, the data, the cadence."""
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64, help=batch_size_help)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--train-samples", type=int, default=8192)
    parser.add_argument("--test-samples", type=int, default=2000)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data-dir", default=os.environ.get("FASHION_MNIST_DIR", DEFAULT_DATA))
