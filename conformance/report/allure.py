"""Allure results written directly in Allure's documented result format.

One ``<uuid>-result.json`` per cell (status "passed" / "failed" / "broken"
for unknown checks / "skipped" for known issues only), one step per invariant,
the worst severity class of its failing or known-issue invariants as the ``severity`` label (safety:
blocker, liveness: critical, protocol: normal, efficiency: minor) and a ``tag``, step names and
messages with each invariant's class and each finding culprit first, a parameter per named exemption that allowed findings (with their count), labels for the broker version
(parentSuite), scenario (suite) and member mix (subSuite), and the cell's
verdict as a ``<uuid>-attachment.json``. ``historyId`` is stable for a
(broker, scenario, members) cell, so Allure shows its history across runs.

What a maintainer acts on (:mod:`conformance.report.evidence`): the parameter ``reproduce`` and
the description carry the command that runs the cell again; ``links`` point at the run
directory's files (relative to the report's directory, where ``index.html`` is); step messages
name the wire capture's lines as ``wire.jsonl line N``.
"""

from __future__ import annotations

import hashlib
import json
import uuid as _uuid
from pathlib import Path
from typing import Any

from conformance.pipeline.checks import CATALOG, SEVERITY, worst_severity
from conformance.report.evidence import CellLinks, attributed
from conformance.report.evidence import message as located_message

#: Allure's severity label for each class (its own scale: blocker .. trivial).
ALLURE_SEVERITY = {"safety": "blocker", "liveness": "critical", "protocol": "normal", "efficiency": "minor"}

_STEP_STATUS = {"pass": "passed", "fail": "failed", "unknown": "broken", "known-issue": "skipped",
                "malformed": "broken"}   # judged on damaged input: the suite's problem, not a client's


def write(verdicts: list[dict], out_dir: Path, links: dict[str, CellLinks] | None = None) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for v in verdicts:
        uid = str(_uuid.uuid5(_uuid.NAMESPACE_URL, f"conformance:{v['run']}"))
        members = ", ".join(v.get("members") or [])
        identity = f"{v['broker_version']}|{v['scenario']}|{members}"
        timing = v.get("timing") or {}
        start = int(timing.get("start_ts") or 0) or None
        stop = int(timing.get("end_ts") or 0) or None
        steps: list[dict[str, Any]] = []
        for inv, (_c, statement) in CATALOG.items():
            i = v["invariants"].get(inv, {"status": "unknown", "violations": [], "error": "not run"})
            details = {}
            if i["violations"]:
                details["message"] = "; ".join(attributed(x) for x in i["violations"][:5])
            if i.get("error"):
                details["message"] = i["error"]
                details["trace"] = i.get("traceback")
            if i["status"] == "malformed":
                details["message"] = "not judged: damaged input " + "; ".join(
                    f"{d['file']}:{d['line']}: {d['problem']}" for d in i.get("damaged", [])[:5])
            steps.append({"name": f"{inv} ({SEVERITY.get(inv, '?')}): {statement}", "status": _STEP_STATUS[i["status"]], "stage": "finished",
                          "statusDetails": details, "start": start, "stop": stop, "steps": [], "attachments": [],
                          "parameters": []})
        verdict = v.get("verdict")
        status = ("passed" if verdict == "pass" else "skipped" if verdict == "known-issue"
                  else "broken" if verdict in ("unknown", "incomplete", "malformed") else "failed")
        failing = [s["name"] for s in steps if s["status"] != "passed"]
        worst = worst_severity(inv for inv, i in v["invariants"].items() if i["status"] in ("fail", "known-issue"))
        rc = v.get("root_cause")
        link = (links or {}).get(v["run"])
        message = (f"read first: {rc['invariant']}: {located_message(rc['message'])}; failing: " + "; ".join(failing) if failing and rc else
                   "; ".join(failing) if failing else
                   f"cut short: {v['cut_short']}" if verdict == "incomplete" else
                   f"{len(v.get('malformed') or [])} malformed input line(s)" if verdict == "malformed" else None)
        attachment = f"{uid}-attachment.json"
        (out_dir / attachment).write_text(json.dumps(v, indent=1, sort_keys=True, default=str), encoding="utf-8")
        result = {
            "uuid": uid,
            "historyId": hashlib.md5(identity.encode()).hexdigest(),
            "testCaseId": hashlib.md5(f"{v['scenario']}|{members}".encode()).hexdigest(),
            "name": f"{v['scenario']}: {members}",
            "fullName": f"conformance.{v['broker_version']}.{v['scenario']}.{v['run']}",
            "status": status,
            "statusDetails": {"message": message} if message else {},
            "stage": "finished",
            "start": start,
            "stop": stop,
            "steps": steps,
            "attachments": [{"name": "verdict", "source": attachment, "type": "application/json"}],
            "parameters": [{"name": "broker", "value": v["broker_version"]}, {"name": "members", "value": members},
                           {"name": "seed", "value": str(v.get("seed"))}]
                          + [{"name": f"allowed {rule}", "value": str(n)} for rule, n in (v.get("allowed") or {}).items()]
                          + ([{"name": "reproduce", "value": link.command}] if link and link.command else []),
            "labels": [{"name": "parentSuite", "value": f"broker {v['broker_version']}"},
                       {"name": "suite", "value": v["scenario"]}, {"name": "subSuite", "value": members},
                       {"name": "framework", "value": "conformance"}, {"name": "language", "value": "python"}]
                      + ([{"name": "severity", "value": ALLURE_SEVERITY[worst]}, {"name": "tag", "value": worst}]
                         if worst else []),
            "links": [{"name": name, "url": href, "type": "link"} for name, href in (link.files if link else ())],
            **({"description": f"Reproduce:\n\n    {link.command}\n"} if link and link.command else {}),
        }
        path = out_dir / f"{uid}-result.json"
        path.write_text(json.dumps(result, indent=1), encoding="utf-8")
        written.append(path)
    return written
