#!/usr/bin/env python3
"""Prints a small made-up spot trace in the format `jobctl simulate --trace` reads
(docs/spot-traces.md), so that the simulator runs in a clone alone; no trace is kept in the repository.

It is not a measurement: a two-state chain (spot available or not) ticking every 10 minutes for
7 days, with stretches of about 8 hours up and 1.5 hours down, and a spot price that drifts around
$0.92/h. The seed is fixed, so the file is the same on every run:

    python3 examples/spot-traces/make_sample_trace.py > sample-trace.json
"""
import json
import random

GAP_SECONDS = 600
DAYS = 7
MEAN_UP_HOURS = 8.0
MEAN_DOWN_HOURS = 1.5
BASE_PRICE = 0.92


def main():
    rng = random.Random(20261126)
    ticks = DAYS * 24 * 3600 // GAP_SECONDS
    gap_hours = GAP_SECONDS / 3600.0
    p_reclaim = gap_hours / MEAN_UP_HOURS     # chance an available tick is followed by none
    p_return = gap_hours / MEAN_DOWN_HOURS    # chance an unavailable tick is followed by one
    available, prices = [], []
    up, price = 1, BASE_PRICE
    for _ in range(ticks):
        available.append(up)
        # The price wanders within +-15% of the base, in cents.
        price = min(BASE_PRICE * 1.15, max(BASE_PRICE * 0.85, price + rng.uniform(-0.01, 0.01)))
        prices.append(round(price, 4))
        if up and rng.random() < p_reclaim:
            up = 0
        elif not up and rng.random() < p_return:
            up = 1
    trace = {"metadata": {"gap_seconds": GAP_SECONDS, "source": "examples/spot-traces/make_sample_trace.py",
                          "note": "synthetic sample, not a measurement"},
             "data": available, "prices": prices}
    print(json.dumps(trace, separators=(",", ":")))


if __name__ == "__main__":
    main()
