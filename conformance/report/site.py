"""Writes every report artefact for a set of verdicts into one directory.

``write_site(verdicts, out_dir, timelines, publish=False)`` writes ``index.html`` (the
static site), the client-bugs pages of the known issues met (``client-bugs/``, which the
report links), ``matrix.json``, ``summary.md``, ``junit.xml`` and ``allure-results/``; each
file is written to a temporary name and renamed, so a reader never sees half a report. Returns
the matrix.

Every cell in every format carries the command that reproduces it and links to its run
directory's files (:mod:`conformance.report.evidence`), relative to ``out_dir``. With
``publish``, those files are first copied into ``out_dir/runs/<cell>/`` and linked there: the
directory is then the whole site (what ``conformance report --publish DIR`` writes and the
nightly workflow uploads to GitHub Pages), with no link outside it, so it works from a
``file://`` path as from a web server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conformance.pipeline.matrix import build_matrix
from conformance.report import allure, html, junit, markdown
from conformance.report.evidence import cell_links, publish_files
from conformance.report.issues import copy_pages


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_site(verdicts: list[dict], out_dir: Path, timelines: dict[str, dict] | None = None,
               publish: bool = False, history: bool = False) -> dict:
    """Write the report (see the module); ``history``: index.html links to history.html, which
    the caller writes (conformance.report.history)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if publish:
        publish_files(verdicts, out_dir)
    links = {v["run"]: cell_links(v, out_dir, published=publish) for v in verdicts}
    matrix = build_matrix(verdicts)
    issue_hrefs = copy_pages([k["reference"] for k in matrix["known_issues"]], out_dir)
    _atomic(out_dir / "matrix.json", json.dumps(matrix, indent=1, sort_keys=True, default=str) + "\n")
    _atomic(out_dir / "summary.md", markdown.render(verdicts, matrix, links, issue_hrefs))
    _atomic(out_dir / "junit.xml", junit.render(verdicts, links))
    allure.write(verdicts, out_dir / "allure-results", links)
    _atomic(out_dir / "index.html", html.render(verdicts, matrix, timelines or {}, links, history, issue_hrefs))
    return matrix
