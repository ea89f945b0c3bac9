"""The control file: commands the runner gives a running member's application, one JSON object a line.

This module is the single written-down definition of the format, and its Python reader and
writer. Standard library only, so that the Python harnesses (their own virtual environments) use
it with the repository root on ``PYTHONPATH``; the Java and Go harnesses read the same lines.

File: ``<run>/control/<member>.jsonl`` (the harness config's ``control_path``), written
by the runner only, appended one flushed line per command. A member's incarnations share it; a
harness skips the lines that were there when it started (it applies only commands given to it).
Each command has ``seq`` (1, 2, ... over the file), ``ts`` (epoch ms) and ``op``:

================  =====================================================================
``stall``         ``ms``: the application stops calling the client for ``ms``
                  milliseconds (no poll, no consume, no commit), as an application
                  blocked in its own work does; the client's own threads go on
                  (heartbeats, and the client's ``max.poll.interval.ms`` clock)
``subscribe``     ``topics``: the application changes its subscription to
                  ``topics`` in place, with the client's own subscribe call (no
                  restart, no new consumer)
================  =====================================================================

What a harness guarantees (every kind; ``tests/test_control.py`` and the stall and subscribe
cells check it on real clients):

1. It looks for new lines at least once per turn of its poll loop (a turn is at most about half a
   second when no records come), and applies each command once, in ``seq`` order.
2. Before acting it records a ``control`` history event with the command's ``seq``, ``op`` and
   arguments (``ms``; ``topics``): the member's own evidence of when it acted. A ``stall`` lasts
   ``ms`` from that event (cut short only by a stop request: a SIGTERM ends it at once).
3. A command it cannot carry out is an ``error`` event (``fatal`` false) naming the command.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

from conformance.jsonl import JsonLinesAppender

#: Every op and the arguments it requires.
OPS: dict[str, tuple[str, ...]] = {"stall": ("ms",), "subscribe": ("topics",)}


class ControlWriter:
    """The runner's side: appends a command with the next ``seq`` of the file (one writer per file)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path

    def send(self, op: str, ts: float, **args: Any) -> int:
        """Append one command (flushed, the file closed again); returns its ``seq``. ``ValueError`` for an
        unknown op or a missing argument."""
        if op not in OPS or any(a not in args for a in OPS[op]):
            raise ValueError(f"control: op {op!r} with {sorted(args)}; ops: "
                             + ", ".join(f"{o}({', '.join(a)})" for o, a in OPS.items()))
        seq = len(ControlReader(self.path, from_start=True).poll()) + 1
        out = JsonLinesAppender(self.path)
        try:
            out.write({"seq": seq, "ts": ts, "op": op, **args})
        finally:
            out.close()
        return seq


class ControlReader:
    """A harness's side: :meth:`poll` returns the commands appended since the last call.

    ``from_start`` False (a harness): the lines present when the reader was made are skipped. A
    line still being written (no newline yet) is left for the next call; a complete line that is
    not a command is returned as ``{"op": None, "line": ...}`` so the harness reports it."""

    def __init__(self, path: str | os.PathLike[str] | None, from_start: bool = False) -> None:
        self.path = os.fspath(path) if path else None
        self._offset = 0
        if self.path and not from_start:
            try:
                self._offset = os.path.getsize(self.path)
            except OSError:
                self._offset = 0

    def poll(self) -> list[dict[str, Any]]:
        if not self.path:
            return []
        try:
            if os.path.getsize(self.path) <= self._offset:
                return []
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return []
        complete = data[:data.rfind(b"\n") + 1]
        self._offset += len(complete)
        out: list[dict[str, Any]] = []
        for raw in complete.splitlines():
            try:
                cmd = json.loads(raw)
            except ValueError:
                cmd = None
            if not isinstance(cmd, dict) or cmd.get("op") not in OPS or any(a not in cmd for a in OPS[cmd["op"]]):
                out.append({"op": None, "line": raw.decode("utf-8", "replace")})
            else:
                out.append(cmd)
        return out


def serve(reader: ControlReader, history: Any, stopping: Callable[[], bool],
          subscribe: Callable[[list[str]], None], stall: Callable[[float], None] | None = None) -> None:
    """A Python harness's turn of the guarantees above: apply every new command of ``reader``, in order.

    ``history`` is the member's :class:`conformance.history.HistoryWriter`; ``stopping`` says whether a
    stop was asked (it ends a stall at once); ``subscribe`` changes the client's subscription in place;
    ``stall(seconds)``, where given, keeps the application from its client that long (default: this
    thread sleeps, for a harness whose poll loop is the application and whose client has threads of
    its own). A line that is no command, or a subscribe the client refuses, is a non-fatal ``error``."""
    for cmd in reader.poll():
        if cmd["op"] is None:
            history.record("error", error=f"control: not a command: {cmd['line']!r}", fatal=False)
            continue
        args = {a: cmd[a] for a in OPS[cmd["op"]]}
        history.record("control", seq=cmd["seq"], op=cmd["op"], **args)
        if cmd["op"] == "stall":
            (stall or (lambda s: _sleep_unless(stopping, s)))(float(cmd["ms"]) / 1000)
        else:
            try:
                subscribe(list(cmd["topics"]))
            except Exception as exc:  # the client refused: the member's evidence, not a harness crash
                history.record("error", error=f"control {cmd['seq']}: subscribe {cmd['topics']} failed: {exc!r}",
                               fatal=False)


def _sleep_unless(stopping: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not stopping() and time.monotonic() < deadline:
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
