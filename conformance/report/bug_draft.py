"""A bug report's draft from a shrunk failure, in the form of the pages under ``docs/client-bugs/``.

:func:`draft` writes what a maintainer needs and the suite knows, for the findings of one signature
(:mod:`conformance.signatures`) in one replay's run directory: the command that replays it and how
often it failed; the versions (each member's kind and release, the client library inside it, the
broker); what the suite says (each finding's check, message, culprit and harmed members); the
evidence, with every wire line it names (``wire.jsonl:N``) quoted as the tap decoded it; and the
error lines of the culprit's and the harmed members' histories and logs. It leaves to a person
what only reading the client's source can say (the mechanism, the fix), marked as such.

Guarantee: every quoted line is read from the run directory as it is (a wire line by its number,
a history error event, a log line); nothing is paraphrased, and a file that is missing says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conformance.members.spec_grammar import split_spec
from conformance.pipeline.matrix import failing_findings, known_findings
from conformance.report.evidence import located, names_wire_lines
from conformance.signatures import Signature, signature

#: At most this many lines quoted per member log, and characters per quoted line.
MAX_LOG_LINES = 15
MAX_LINE = 600
_ERRORISH = re.compile(r"error|exception|panic|fatal|refused|illegal|invalid", re.IGNORECASE)


def _wire_lines(evidence: dict[str, Any]) -> list[int]:
    out: list[int] = []
    for key, value in evidence.items():
        if names_wire_lines(key):
            out += [int(v) for v in (value if isinstance(value, list) else [value]) if isinstance(v, int)]
    return sorted(set(out))


def _quote_wire(run_dir: Path, numbers: list[int]) -> list[str]:
    path = run_dir / "wire.jsonl"
    if not numbers:
        return []
    if not path.is_file():
        return [f"(wire.jsonl is missing from {run_dir})"]
    wanted, out = set(numbers), []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, start=1):
            if n in wanted:
                out.append(f"wire.jsonl:{n}  {line.rstrip()[:MAX_LINE]}")
    return out


def _member_errors(run_dir: Path, member: str) -> list[str]:
    out = []
    history = run_dir / "members" / f"{member}.jsonl"
    if history.is_file():
        for n, line in enumerate(history.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if '"event":"error"' in line.replace(" ", ""):
                out.append(f"members/{member}.jsonl:{n}  {line[:MAX_LINE]}")
    log = run_dir / "logs" / f"{member}.log"
    if log.is_file():
        hits = [(n, line) for n, line in enumerate(log.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
                if _ERRORISH.search(line)]
        out += [f"logs/{member}.log:{n}  {line[:MAX_LINE]}" for n, line in hits[:MAX_LOG_LINES]]
        if len(hits) > MAX_LOG_LINES:
            out.append(f"logs/{member}.log: {len(hits) - MAX_LOG_LINES} more such lines")
    return out


def draft(verdict: dict[str, Any], run_dir: Path, target: Signature, replay: str, failed: str) -> str:
    """The draft page (Markdown) for ``target``'s findings in ``verdict`` (judged from ``run_dir``)."""
    manifest: dict[str, Any] = {}
    try:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    findings = [f for f in failing_findings(verdict) + known_findings(verdict) if signature(verdict, f) == target]
    kind = split_spec(target.culprit).kind
    lines = [f"# {kind}: {target.what} (draft)", "",
             "Filed: no. A draft `conformance shrink` wrote from a shrunk failure: the mechanism and the fix "
             "need a person who reads the client's source (marked TODO below).", "",
             "## Reproduce", "", "```sh", replay, "```", "",
             f"It failed {failed} replays of the shrunk schedule with this signature: `{target}`.", "",
             "## Versions", ""]
    for m in manifest.get("members") or []:
        library = m.get("library_version")
        lines.append(f"- {m.get('name')}: `{m.get('spec')}`" + (f" (library {library})" if library else "")
                     + (f", group protocol {m.get('group_protocol')}" if m.get("group_protocol") else ""))
    lines += [f"- broker: Apache Kafka {manifest.get('broker_version', verdict.get('broker_version', '?'))}", "",
              "## What the suite says", ""]
    start = manifest.get("start_ts")
    for f in findings:
        shown = located(f, start if isinstance(start, (int, float)) else None)
        lines.append(f"- **{f.get('invariant')}** (culprit {f.get('culprit') or 'unknown'}"
                     + (f", harmed {', '.join(f.get('harmed') or [])}" if f.get("harmed") else "")
                     + (f", known issue {f['known_issue'].get('reference')}" if f.get("known_issue") else "")
                     + f"): {shown.get('message')}")
    lines += ["", "## Evidence", ""]
    for f in findings:
        lines += ["```json", json.dumps(located(f, start if isinstance(start, (int, float)) else None).get("evidence"),
                                        indent=2)[:4000], "```", ""]
        quoted = _quote_wire(run_dir, _wire_lines(f.get("evidence") or {}))
        if quoted:
            lines += ["The wire lines it names, as the tap decoded them:", "", "```", *quoted, "```", ""]
    members = sorted({m for f in findings for m in [f.get("culprit"), *(f.get("harmed") or [])] if m})
    lines += ["## Error lines of the members involved", ""]
    for m in members:
        errors = _member_errors(run_dir, m)
        lines += [f"{m}:", "", "```", *(errors or ["(none)"]), "```", ""]
    lines += ["## What happens", "", "TODO: the mechanism, read from the client's source at this release.", "",
              "## Fix (for the report)", "", "TODO.", ""]
    return "\n".join(lines)
