"""Writes every report artefact for a set of verdicts into one directory.

``write_site(verdicts, out_dir, timelines)`` writes ``index.html`` (the
static site), ``matrix.json``, ``summary.md``, ``junit.xml`` and
``allure-results/``; each file is written to a temporary name and renamed,
so a reader never sees half a report. Returns the matrix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conformance.pipeline.matrix import build_matrix
from conformance.report import allure, html, junit, markdown


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_site(verdicts: list[dict], out_dir: Path, timelines: dict[str, dict] | None = None) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    matrix = build_matrix(verdicts)
    _atomic(out_dir / "matrix.json", json.dumps(matrix, indent=1, sort_keys=True, default=str) + "\n")
    _atomic(out_dir / "summary.md", markdown.render(verdicts, matrix))
    _atomic(out_dir / "junit.xml", junit.render(verdicts))
    allure.write(verdicts, out_dir / "allure-results")
    _atomic(out_dir / "index.html", html.render(verdicts, matrix, timelines or {}))
    return matrix
