"""Decode throughput of the strict consumer-protocol codec, one core.

    .venv/bin/python bench/protocol_decode.py [--seconds S]

Prints decodes/s for a small subscription (v3: 1 topic, 3 owned partitions,
4-byte userdata), a 1,000-partition subscription (v3: 1 topic, 1,000 owned
partitions), and their assignment counterparts. Target: >= 50,000 small
subscription decodes/s.
"""

from __future__ import annotations

import argparse
import time

from conformance.protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from conformance.protocol.userdata import classify_userdata, encode_cooperative_generation


def rate(fn, arg, seconds: float) -> float:
    """Calls per second of ``fn(arg)``, measured over about ``seconds``."""
    n = 0
    batch = 1000
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(batch):
            fn(arg)
        n += batch
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="time per case")
    args = ap.parse_args()
    gen = encode_cooperative_generation(7)
    small = encode_subscription(
        Subscription(3, ("orders",), gen, (TopicPartitions("orders", (0, 1, 2)),), 7, "rack-a")
    )
    big = encode_subscription(
        Subscription(3, ("orders",), gen, (TopicPartitions("orders", tuple(range(1000))),), 7, None)
    )
    small_a = encode_assignment(Assignment(3, (TopicPartitions("orders", (0, 1, 2)),), gen))
    big_a = encode_assignment(Assignment(3, (TopicPartitions("orders", tuple(range(1000))),), gen))
    cases = [
        (f"subscription, 1 topic, 3 partitions, 4-byte userdata ({len(small)} B)", decode_subscription, small),
        (f"subscription, 1 topic, 1000 partitions ({len(big)} B)", decode_subscription, big),
        (f"assignment, 1 topic, 3 partitions ({len(small_a)} B)", decode_assignment, small_a),
        (f"assignment, 1 topic, 1000 partitions ({len(big_a)} B)", decode_assignment, big_a),
        ("classify_userdata, 4-byte cooperative generation", classify_userdata, gen),
    ]
    for name, fn, arg in cases:
        print(f"{rate(fn, arg, args.seconds):>12,.0f} /s  {name}")


if __name__ == "__main__":
    main()
