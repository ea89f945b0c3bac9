"""docs/contracts.md stays true, and the repository points to no document outside itself.

- Every invariant of :data:`conformance.pipeline.checks.CATALOG` is listed with its statement, and
  every exemption rule of :data:`conformance.pipeline.checks.rules.RULES` with its invariant, what
  it excuses and why (the page is written from the code: a change to either shows here).
- Every module the page names as an owner exists.
- No file of the tree (git's files, tracked or not ignored; else a walk without ``.venv``,
  ``.git`` and generated directories) cites a numbered section of a contract, or a design
  document that a clone does not contain.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conformance import config
from conformance.pipeline.checks import CATALOG
from conformance.pipeline.checks.rules import RULES

ROOT = Path(config.REPO_ROOT)
DOC = ROOT / "docs" / "contracts.md"

# Built from pieces so that this file does not match itself.
OUTSIDE = re.compile("|".join([r"contract[ -]sections?\b", "ARCHITECTURE" + r"\.md", "ARCHITECTURE" + "'s",
                               "PROTOCOL" + "-FACTS"]), re.IGNORECASE)
#: Directories that hold generated or installed files (never the project's own text).
SKIP_DIRS = {".venv", ".git", "__pycache__", ".pytest_cache", ".hypothesis", ".docker-context", "target",
             "build", "spark-warehouse", "allure-results", "node_modules"}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _tree_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True, timeout=60).stdout
        return [ROOT / name for name in listed.decode().split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        found = []
        for top, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not (top == str(ROOT) and d == "reports")]
            found += [Path(top) / f for f in files]
        return found


def test_catalog_lists_every_invariant_with_its_statement():
    doc = DOC.read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines() if re.match(r"\| [A-Z]\d \|", line)}
    assert set(rows) == set(CATALOG), "docs/contracts.md's catalog table differs from CATALOG"
    for inv, (_check, statement) in CATALOG.items():
        assert f"| {inv} | {statement} |" in rows[inv], (inv, statement)
        for rule in RULES.values():
            if rule.invariant == inv:
                assert f"`{rule.name}`" in rows[inv], (inv, rule.name)


def test_catalog_lists_every_rule_with_what_it_excuses_and_why():
    doc = _flat(DOC.read_text(encoding="utf-8"))
    headings = re.findall(r"### `([^`]+)` \(([A-Z]\d)\)", doc)
    assert dict(headings) == {r.name: r.invariant for r in RULES.values()}
    for rule in RULES.values():
        section = doc[doc.index(f"### `{rule.name}`"):]
        assert f"**Excuses:** {_flat(rule.excuses)}" in section, rule.name
        assert f"**Why:** {_flat(rule.reason)}" in section, rule.name


def test_every_owner_the_page_names_exists():
    doc = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:conformance|clients|tests)/[\w/.-]+\.py)`", doc))
    assert len(named) >= 15
    assert not [p for p in sorted(named) if not (ROOT / p).is_file()]


def test_nothing_points_outside_the_repository():
    offenders = []
    for path in _tree_files():
        if not path.is_file() or path.suffix in (".xz", ".gz", ".jar", ".png", ".parquet", ".pyc"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert offenders == [], "point to the in-tree owner (docs/contracts.md) instead:\n" + "\n".join(offenders)


def test_severity_classes_are_listed_as_declared():
    from conformance.pipeline.checks import SEVERITIES, SEVERITY

    doc = DOC.read_text(encoding="utf-8")
    for cls in SEVERITIES:
        listed = [line for line in doc.splitlines() if line.startswith(f"| {cls} |")]
        assert len(listed) == 1, cls
        got = {x.strip() for x in listed[0].split("|")[2].split(",") if x.strip()}
        assert got == {inv for inv, c in SEVERITY.items() if c == cls}, (cls, got)
