"""The entry point every Python harness shares (librdkafka, kafka-python).

Standard library only (with the repository root on ``PYTHONPATH``), so it runs
inside the per-version virtual environments. Guarantees the harness
contract's process side: one argument (the config path, else exit 2);
SIGTERM/SIGINT ask the harness to stop gracefully (it sets ``stopping``, the
harness finishes its loop, commits, closes and records ``stopped``); any
exception becomes a fatal ``error`` event with its traceback and exit 1; the
history is closed (flushed and fsynced) on every path.
"""

from __future__ import annotations

import signal
import sys
import traceback
from typing import Callable, Protocol

from conformance.history import HistoryWriter
from conformance.members.harness_config import HarnessConfig


class PythonHarness(Protocol):
    history: HistoryWriter
    stopping: bool

    def run(self) -> int: ...


def main(argv: list[str], make: Callable[[HarnessConfig], PythonHarness]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0] if argv else 'harness.py'} CONFIG_JSON", file=sys.stderr)
        return 2
    harness = make(HarnessConfig.load(argv[1]))

    def on_term(signum: int, frame: object) -> None:
        harness.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    try:
        code = harness.run()
    except Exception as exc:  # every failure becomes a fatal history event
        harness.history.record("error", error=f"harness crashed: {exc!r}", fatal=True,
                               traceback=traceback.format_exc())
        code = 1
    harness.history.close()
    return code
