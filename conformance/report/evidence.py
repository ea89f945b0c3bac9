"""What a maintainer needs to act on a cell: the command that reproduces it, links to its run
directory's files, evidence that names its file and line, and times relative to the run's start.

Every report format (HTML, Markdown, JUnit, allure) takes these from here, so they say the same:

- :func:`cell_links` reads the cell's ``manifest.json`` (its ``command``: ``conformance run`` with
  the scenario, mix, broker and seed; what ``conformance reproduce RUN_DIR`` runs) and lists the
  run directory's files (:data:`RUN_FILES` and everything under ``members/`` and ``logs/``; the
  broker's data directory is left out), each with a link relative to the report's directory.
  When the report is published (:func:`publish_files`), the files are copied into
  ``runs/<cell>/`` beside it and the links point there, so the site works from any folder, a
  ``file://`` path or GitHub Pages.
- :func:`located` rewrites a finding for display: an evidence value under a key ending in
  ``wire_line`` or ``wire_lines`` names the file (``wire.jsonl:5028``); a time (``ts`` or a key
  ending in ``_ts``, epoch milliseconds) becomes ``+12.345 s`` from the run's start (left as it
  is when the run's start is unknown).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Files of a run directory (conformance.rundir) linked by name, in this order; then members/ and logs/.
RUN_FILES: tuple[str, ...] = ("manifest.json", "wire.jsonl", "nemesis.jsonl")
#: Folders of a run directory whose every file is linked.
RUN_FOLDERS: tuple[str, ...] = ("members", "logs")
#: The wire capture, named by evidence under keys ending in ``wire_line(s)``.
WIRE_FILE: str = "wire.jsonl"


@dataclass(frozen=True)
class CellLinks:
    """One cell's reproduce command and files; hrefs are relative to the report's directory."""

    command: str | None                  # None when the run directory has no readable manifest
    run_dir: str | None                  # where the cell ran (as the verdict records it)
    dir_href: str | None
    files: tuple[tuple[str, str], ...]   # (path inside the run directory, href)
    start_ts: float | None               # epoch ms of the run's start: times are shown from it

    def href(self, name: str) -> str | None:
        return next((h for n, h in self.files if n == name), None)


def _safe(run: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", run).strip("._") or "run"


def run_files(run_dir: Path) -> list[str]:
    """The files of ``run_dir`` a report links to, as paths inside it (see the module)."""
    names = [n for n in RUN_FILES if (run_dir / n).is_file()]
    for folder in RUN_FOLDERS:
        base = run_dir / folder
        if base.is_dir():
            names += sorted(str(p.relative_to(run_dir)) for p in base.rglob("*") if p.is_file())
    return names


def _command(run_dir: Path) -> str | None:
    try:
        command = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("command")
    except (OSError, ValueError, AttributeError):
        return None
    return command if isinstance(command, str) else None


def cell_links(verdict: dict, out_dir: Path, published: bool = False) -> CellLinks:
    """The links of one judged cell for a report written into ``out_dir``; ``published``: the
    files were copied by :func:`publish_files` (links into ``runs/<cell>/``)."""
    start = (verdict.get("timing") or {}).get("start_ts")
    raw = verdict.get("run_dir")
    if not raw:
        return CellLinks(None, None, None, (), start)
    run_dir = Path(raw)
    names = run_files(run_dir)
    if published:
        base = f"runs/{_safe(verdict['run'])}"
    else:
        base = Path(os.path.relpath(run_dir.resolve(), Path(out_dir).resolve())).as_posix()
    return CellLinks(_command(run_dir), str(run_dir), base + "/", tuple((n, f"{base}/{n}") for n in names), start)


def publish_files(verdicts: list[dict], out_dir: Path) -> None:
    """Copy every cell's linked files into ``out_dir/runs/<cell>/`` (replacing an older copy)."""
    for v in verdicts:
        if not v.get("run_dir"):
            continue
        src = Path(v["run_dir"])
        dest = Path(out_dir) / "runs" / _safe(v["run"])
        if dest.exists():
            shutil.rmtree(dest)
        for name in run_files(src):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / name, dest / name)


def relative_time(ts: Any, start_ts: float | None) -> str:
    """Epoch milliseconds as ``+12.345 s`` from the run's start (``-`` before it); the value as it
    is when it is not a number or the start is unknown."""
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not start_ts:
        return str(ts)
    delta = (ts - start_ts) / 1000
    return f"{'+' if delta >= 0 else '-'}{abs(delta):.3f} s"


def names_wire_lines(key: str) -> bool:
    """Whether an evidence key names lines of ``wire.jsonl`` (``..._wire_line``: one; ``..._wire_lines``: a list)."""
    return key.endswith(("wire_line", "wire_lines"))


def _is_time(key: str) -> bool:
    return key == "ts" or key.endswith("_ts")


def located(finding: Any, start_ts: float | None) -> Any:
    """``finding`` (any JSON value) for display: wire lines as ``wire.jsonl:N``, times relative to
    ``start_ts`` (see the module)."""
    if isinstance(finding, dict):
        out: dict[str, Any] = {}
        for key, value in finding.items():
            if names_wire_lines(key) and isinstance(value, int):
                out[key] = f"{WIRE_FILE}:{value}"
            elif names_wire_lines(key) and isinstance(value, list):
                out[key] = [f"{WIRE_FILE}:{x}" if isinstance(x, int) else x for x in value]
            elif _is_time(key) and start_ts and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = relative_time(value, start_ts)
            else:
                out[key] = located(value, start_ts)
        return out
    if isinstance(finding, list):
        return [located(x, start_ts) for x in finding]
    return finding


def message(text: str) -> str:
    """A finding's message for display: "wire line N" names its file (``wire.jsonl line N``)."""
    return re.sub(r"\bwire line(s?) (?=\d)", rf"{WIRE_FILE} line\1 ", text)


def wire_lines(finding: dict) -> list[int]:
    """The wire capture's lines a finding's evidence names (for links beside it)."""
    lines: list[int] = []
    for key, value in (finding.get("evidence") or {}).items():
        if key.endswith("wire_line") and isinstance(value, int):
            lines.append(value)
        elif key.endswith("wire_lines") and isinstance(value, list):
            lines += [x for x in value if isinstance(x, int)]
    return sorted(set(lines))


def attributed(finding: dict) -> str:
    """A finding's message, culprit first: ``culprit m5-franz-go, harmed m4-kafka-python: ...``, or
    ``culprit unknown: ...`` where the evidence cannot name it (every report format says it so)."""
    who = (f"culprit {finding['culprit']}" + (f", harmed {', '.join(finding['harmed'])}" if finding.get("harmed") else "")
           if finding.get("culprit") else "culprit unknown")
    return f"{who}: {message(finding['message'])}"
