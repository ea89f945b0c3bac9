"""One JSON-lines appender for every log the suite writes (histories, nemesis, wire), and its reader.

Standard library only, so harnesses in their own virtual environments can use
it through :mod:`conformance.history`. Guarantees: each :meth:`write` is one
compact JSON line, written and flushed under a lock (threads never interleave
a line, and a crash loses at most the line being written); writes after
:meth:`close` are ignored, so a late callback cannot crash its thread;
``close(fsync=True)`` also makes the file durable.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable


class JsonLinesAppender:
    def __init__(self, path: str | os.PathLike[str], default: Callable[[Any], Any] | None = None) -> None:
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self._default = default

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), default=self._default) + "\n"
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line)
            self._file.flush()

    def close(self, fsync: bool = False) -> None:
        with self._lock:
            if self._file.closed:
                return
            self._file.flush()
            if fsync:
                os.fsync(self._file.fileno())
            self._file.close()


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every JSON object line of ``path``, in file order ([] when it does not exist yet). A line that
    is not a JSON object (e.g. the one being written at the end) is skipped: for watchers and tests;
    the pipeline's ingestion reports such lines instead."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out
