"""A reference figure for this host's core speed, printed beside benchmark results.

Machines of one kind differ: the same code judged one small run in ~9 s on one
host and ~21 s on another two days later, and a pure-Python loop differed
alike. A bench figure is comparable only with figures measured under the same
reference: compare those, or scale by the ratio of references.
"""

from __future__ import annotations

import timeit


def core_ms() -> float:
    """Milliseconds for ``sum(range(10**6))`` in this interpreter, best of 5 (one core, pure Python)."""
    return min(timeit.repeat("sum(range(10**6))", number=10, repeat=5)) / 10 * 1000


def line() -> str:
    return f"host reference: sum(range(10**6)) in {core_ms():.1f} ms (best of 5; compare figures under equal references)"
