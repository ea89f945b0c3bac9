"""The run directory: ``<runs>/<run-id>/``, the one place a run leaves its output.

Layout (every writer and reader goes through :class:`RunDir`)::

    manifest.json         seed, broker version, member specs, scenario, versions,
                          the exact command to reproduce
    members/<name>.jsonl  one history per member (conformance.history)
    members/<name>.json   the harness config each member was started with
    wire.jsonl            the wire tap's capture of every member's group APIs
    nemesis.jsonl         every fault with its time
    control/<name>.jsonl  commands the runner gave a member's application
                          (conformance.members.control), where it gave any
    logs/                 broker, controller, toxiproxy and harness logs
    tables/               Parquet tables written by the pipeline
    summary.json          per scenario: verdicts, violations, metrics
    report/               the HTML report

A run that is interrupted still leaves the directory with whatever was
written so far, and ``summary.json`` with partial verdicts where checks ran.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance import config
from conformance.errors import UsageError


def ready_dir(path: Path, what: str) -> Path:
    """``path`` as a directory this user can write, created (with its parents) if missing.

    ``what`` names it in messages (``runs directory``, ``--out``). UsageError, one line, when it
    cannot be: a part of the path is a file, or the directory is not writable. Called before
    anything starts, so that a run never ends for want of a place to write."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        blocker = next((p for p in reversed([path, *path.parents]) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise UsageError(f"{what} {path}: {blocker} is a file, not a directory; "
                             "give a directory (it is created if missing)") from None
        raise UsageError(f"{what} {path}: cannot create it: {getattr(exc, 'strerror', None) or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: this user cannot write there; give another directory")
    return path


def new_run_id(label: str = "run") -> str:
    """A sortable, unique id: ``20261121T031500Z-<label>-<pid>``."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{label}-{os.getpid()}"


@dataclass(frozen=True)
class RunDir:
    path: Path

    @classmethod
    def create(cls, runs_dir: Path | None = None, label: str = "run") -> "RunDir":
        root = Path(runs_dir or config.RUNS_DIR)
        run = cls(root / new_run_id(label))
        for sub in ("members", "logs"):
            (run.path / sub).mkdir(parents=True, exist_ok=True)
        return run

    @property
    def manifest(self) -> Path:
        return self.path / "manifest.json"

    @property
    def members_dir(self) -> Path:
        return self.path / "members"

    def history(self, member: str) -> Path:
        return self.members_dir / f"{member}.jsonl"

    def harness_config(self, member: str) -> Path:
        return self.members_dir / f"{member}.json"

    def control(self, member: str) -> Path:
        """The member's control file (:mod:`conformance.members.control`)."""
        return self.path / "control" / f"{member}.jsonl"

    @property
    def wire(self) -> Path:
        return self.path / "wire.jsonl"

    @property
    def nemesis(self) -> Path:
        return self.path / "nemesis.jsonl"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def tables(self) -> Path:
        return self.path / "tables"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    @property
    def report(self) -> Path:
        return self.path / "report"

    def write_json(self, path: Path, data: Any) -> None:
        """Write JSON atomically (a reader never sees half a file)."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
