"""Reading a run directory's ``manifest.json`` for the pipeline: tolerant parsing, strict checking.

Guarantee: :func:`read_manifest` never raises on bad content. It returns a
manifest whose every field the pipeline reads has its documented type (or is
None / empty), and one problem for each field it had to drop, naming the
field and what was wrong (ingestion records each as a malformed line 0 of
the manifest). A manifest that is not a JSON object at all is one such
problem and an empty manifest. So one bad manifest costs its cell a
"malformed" verdict (and the fields it lacks), never the judge of the whole
batch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.cluster.broker import MIGRATION_POLICIES

#: Top-level fields: name -> (accepted Python types, what the message calls them).
_SCALARS: dict[str, tuple[tuple[type, ...], str]] = {
    "run_id": ((str,), "a string"),
    "scenario": ((str,), "a string"),
    "broker_version": ((str,), "a string"),
    "group_id": ((str,), "a string"),
    "expected_protocol": ((str,), "a string"),
    "seed": ((int,), "an integer"),
    "last_fault_ts": ((int, float), "a number"),
    "end_ts": ((int, float), "a number"),
    "leader_rotation": ((bool,), "true or false"),
    "complete": ((bool,), "true or false"),
    "cut_short": ((str,), "a string"),
    "migration_policy": ((str,), "a string"),
    "producer_rate_per_s": ((int,), "an integer"),
}
#: Member fields: name -> (accepted types, description); lists are lists of strings.
_MEMBER_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "spec": ((str,), "a string"), "kind": ((str,), "a string"), "version": ((str,), "a string"),
    "group_instance_id": ((str,), "a string"), "strategies": ((list,), "a list of strings"),
    "faults": ((list,), "a list of strings"), "fetch_max_wait_ms": ((int, float), "a number"),
}
TIMING_FIELDS = ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms", "convergence_bound_ms",
                 "revoke_bound_ms")


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    """isinstance, except that a bool is not a number (JSON true is not 1)."""
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def read_manifest(run_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """The manifest of ``run_dir`` with only well-typed fields, and the problems found (see the
    module docstring)."""
    path = run_dir / "manifest.json"
    problems: list[str] = []
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raw, problems = {}, [f"unreadable manifest: {exc}"]
    if not isinstance(raw, dict):
        raw, problems = {}, [f"unreadable manifest: a {type(raw).__name__}, not an object"]
    m: dict[str, Any] = {}

    def bad(where: str, value: Any, expected: str) -> None:
        problems.append(f"manifest field {where} must be {expected}, got {_show(value)}: ignored")

    for key, (kinds, expected) in _SCALARS.items():
        value = raw.get(key)
        if value is None or _is(value, kinds):
            m[key] = value
        else:
            bad(key, value, expected)
            m[key] = None

    def entries(key: str, container: type[dict] | type[list], expected: str):
        """(name or index, value) of ``raw[key]``; a problem, and nothing, when it is not a ``container``."""
        value = raw.get(key)
        if isinstance(value, container):
            return value.items() if isinstance(value, dict) else enumerate(value)
        if value is not None:
            bad(key, value, expected)
        return ()

    if m["migration_policy"] is not None and m["migration_policy"] not in MIGRATION_POLICIES:
        bad("migration_policy", m["migration_policy"], f"one of {', '.join(MIGRATION_POLICIES)}")
        m["migration_policy"] = None
    m["timing"] = {}
    for key, value in entries("timing", dict, "an object"):
        if key in TIMING_FIELDS and _is(value, (int, float)):
            m["timing"][key] = value
        elif key in TIMING_FIELDS and value is not None:
            bad(f"timing.{key}", value, "a number")
    m["phases"] = []
    for i, phase in entries("phases", list, "a list"):
        if isinstance(phase, dict) and (phase.get("start_ts") is None or _is(phase["start_ts"], (int, float))):
            m["phases"].append(phase)
        else:
            bad(f"phases[{i}]", phase, "an object with a numeric start_ts")
    m["topics"] = {}
    for topic, count in entries("topics", dict, "an object of topic -> partition count"):
        if _is(count, (int,)) and count >= 0:
            m["topics"][topic] = count
        else:
            bad(f"topics.{topic}", count, "a partition count (an integer >= 0)")
    m["topic_ids"] = {}
    for topic, tid in entries("topic_ids", dict, "an object of topic -> topic id (hex)"):
        if tid is None:
            continue   # the broker reported no id (before 2.8)
        if isinstance(tid, str) and len(tid) == 32 and all(c in "0123456789abcdef" for c in tid.lower()):
            m["topic_ids"][topic] = tid.lower()
        else:
            bad(f"topic_ids.{topic}", tid, "a topic id (32 hex digits)")
    m["await_timeouts"] = []
    m["exits"] = []
    for i, note in entries("notes", list, "a list"):
        if isinstance(note, dict) and "exited" in note:   # a member process that ended on its own
            if isinstance(note["exited"], str) and _is(note.get("ts"), (int, float)) \
                    and (note.get("code") is None or _is(note["code"], (int,))):
                m["exits"].append({"member": note["exited"], "ts": float(note["ts"]), "code": note.get("code")})
            else:
                bad(f"notes[{i}]", note, "an exit note with a string exited, a numeric ts and an integer code")
            continue
        if not isinstance(note, dict) or "await" not in note:
            continue   # other notes (rotate-leader, ...) are for people, not judged
        if isinstance(note.get("await"), str) and _is(note.get("ts"), (int, float)) \
                and _is(note.get("timeout_ms"), (int, float)):
            m["await_timeouts"].append({"ts": float(note["ts"]), "await": note["await"],
                                        "timeout_ms": float(note["timeout_ms"]),
                                        "phase": note["phase"] if isinstance(note.get("phase"), str) else None,
                                        "state": str(note.get("state") or "")})
        else:
            bad(f"notes[{i}]", note, "an await note with a string await and numeric ts and timeout_ms")
    m["members"] = []
    for i, member in entries("members", list, "a list"):
        if not isinstance(member, dict) or not isinstance(member.get("name"), str) or not member["name"]:
            bad(f"members[{i}]", member, "an object with a name")
            continue
        clean: dict[str, Any] = {"name": member["name"]}
        for key, (kinds, expected) in _MEMBER_FIELDS.items():
            value = member.get(key)
            ok = value is None or (_is(value, kinds) and (not isinstance(value, list)
                                                          or all(isinstance(x, str) for x in value)))
            if not ok:
                bad(f"members[{i}].{key}", value, expected)
            clean[key] = value if ok else None
        m["members"].append(clean)
    return m, problems
