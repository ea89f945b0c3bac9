"""Allure results written directly in Allure's documented result format.

One ``<uuid>-result.json`` per cell (status "passed" / "failed" / "broken"
for unknown checks / "skipped" for known issues only), one step per invariant,
a parameter per named exemption that allowed findings (with their count), labels for the broker version
(parentSuite), scenario (suite) and member mix (subSuite), and the cell's
verdict as a ``<uuid>-attachment.json``. ``historyId`` is stable for a
(broker, scenario, members) cell, so Allure shows its history across runs.
"""

from __future__ import annotations

import hashlib
import json
import uuid as _uuid
from pathlib import Path

from conformance.pipeline.checks import CATALOG

_STEP_STATUS = {"pass": "passed", "fail": "failed", "unknown": "broken", "known-issue": "skipped"}


def write(verdicts: list[dict], out_dir: Path) -> list[Path]:
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
        steps = []
        for inv, (_c, statement) in CATALOG.items():
            i = v["invariants"].get(inv, {"status": "unknown", "violations": [], "error": "not run"})
            details = {}
            if i["violations"]:
                details["message"] = "; ".join(x["message"] for x in i["violations"][:5])
            if i.get("error"):
                details["message"] = i["error"]
                details["trace"] = i.get("traceback")
            steps.append({"name": f"{inv}: {statement}", "status": _STEP_STATUS[i["status"]], "stage": "finished",
                          "statusDetails": details, "start": start, "stop": stop, "steps": [], "attachments": [],
                          "parameters": []})
        verdict = v.get("verdict")
        status = ("passed" if verdict == "pass" else "skipped" if verdict == "known-issue"
                  else "broken" if verdict in ("unknown", "incomplete") else "failed")
        failing = [s["name"] for s in steps if s["status"] != "passed"]
        rc = v.get("root_cause")
        message = (f"read first: {rc['invariant']}: {rc['message']}; failing: " + "; ".join(failing) if failing and rc else
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
                          + [{"name": f"allowed {rule}", "value": str(n)} for rule, n in (v.get("allowed") or {}).items()],
            "labels": [{"name": "parentSuite", "value": f"broker {v['broker_version']}"},
                       {"name": "suite", "value": v["scenario"]}, {"name": "subSuite", "value": members},
                       {"name": "framework", "value": "conformance"}, {"name": "language", "value": "python"}],
            "links": [],
        }
        path = out_dir / f"{uid}-result.json"
        path.write_text(json.dumps(result, indent=1), encoding="utf-8")
        written.append(path)
    return written
