"""Cells other than a broken cooperative run: the eager story, a run cut short, damaged inputs.

Each function writes one run directory with :class:`stories.builder.CellBuilder` and returns
its path; its docstring tells the story and what the judge must find (the tests in
``tests/test_pipeline_invariants.py`` assert it).
"""

from __future__ import annotations

import json
from pathlib import Path

from stories import write_cell
from stories.builder import CellBuilder


def eager_story(root: Path, run_id: str, *, break_r5: bool = False, **kw) -> Path:
    """A clean eager (range) story, or with ``break_r5``: m1 rejoins still owning (R5 fails:
    "rejoined from eager generation 1 (range) still owning t-0, t-1, t-2, t-3").

    Story: java m1 (range) leads generation 1 with t-0..3. librdkafka m2
    (range) starts; m1 revokes everything, then both join generation 2, which
    gives each two partitions. Eager: R1 and R3 do not apply; R5 requires the
    full revoke before the rejoin.
    """
    kw.setdefault("members", (("m1", "java@4.4.0"), ("m2", "librdkafka@2.16.1")))
    b = CellBuilder(root, run_id, expected_protocol="eager", strategies=("range",), **kw)
    T = "t"
    all4 = [(T, p) for p in range(4)]
    b.started("m1", 1000)
    for p in range(4):
        b.produced(1500 + p, T, p, 0, 9)
    b.join(1, 2000, "m1", {"m1": b.subscription("m1", version=1, user_data=b"")}, protocol="range")
    b.sync(1, 2100, "m1", {"m1": all4}, protocol="range")
    b.assigned("m1", 2200, all4)
    for p in range(4):
        b.consumed("m1", 3000 + p, T, p, 0, 9)
    b.started("m2", 10000)
    if not break_r5:
        b.revoked("m1", 10900, all4)
    b.join(2, 11000, "m1", {"m1": b.subscription("m1", version=1, user_data=b""),
                             "m2": b.subscription("m2", version=1, user_data=b"")}, protocol="range")
    if break_r5:
        b.revoked("m1", 11050, all4)
    b.sync(2, 11100, "m1", {"m1": all4[:2], "m2": all4[2:]}, protocol="range")
    b.assigned("m1", 11200, all4[:2])
    b.assigned("m2", 11200, all4[2:])
    b.stopped("m1", 60100)    # teardown, after the scenario's end
    b.stopped("m2", 60150)
    return b.write(60000.0)


def cut_short_story(root: Path, run_id: str, *, ended: bool = False, overlap: bool = False) -> Path:
    """A leader-rotation cell that a suite error cut short 50 ms after its generation 2 formed.

    Story: every member offers range before cooperative-sticky (an upgrade under
    way: the group is eager, and the manifest expects the cooperative group the
    final lists vote for). java m1 leads generation 1 with t-0..3 and reads
    offsets 0-49. The reference member m2 starts at 10 s; offsets 50-59 of each
    partition are produced at 10.5 s; m1 revokes everything (eager) and rejoins;
    generation 2 forms at 11 s, led by m1 again, and the run stops at 11.05 s,
    before the leader's SyncGroup and before anyone read 50-59. What the run
    observed violates nothing.

    ``ended``: the same history marked complete (the control): then D1 (50-59
    never read), L1 (no SyncGroup), L5 (the reference never led), R5 (the
    final generation eager) and V1 (nobody stopped; t-0..3 unowned) fail. ``overlap``: m2 also records t-0 assigned at
    10.8 s, while m1 still owns it: R2 fails, cut short or not.
    """
    b = CellBuilder(root, run_id, scenario="leader-rotation", leader_rotation=True)
    T = "t"
    all4 = [(T, p) for p in range(4)]
    lists = {"m1": ["range", "cooperative-sticky"], "m2": ["range", "cooperative-sticky"]}
    b.started("m1", 1000)
    for p in range(4):
        b.produced(1500 + p, T, p, 0, 49)
    b.join(1, 2000, "m1", {"m1": b.subscription("m1", version=1, user_data=b"")}, protocol="range", offered=lists)
    b.sync(1, 2100, "m1", {"m1": all4}, protocol="range")
    b.assigned("m1", 2200, all4)
    for p in range(4):
        b.consumed("m1", 3000 + p, T, p, 0, 49)
    b.started("m2", 10000)
    for p in range(4):
        b.produced(10500 + p, T, p, 50, 59)
    if overlap:
        b.assigned("m2", 10800, [(T, 0)])
    b.revoked("m1", 10900, all4)
    b.join(2, 11000, "m1", {"m1": b.subscription("m1", version=1, user_data=b""),
                             "m2": b.subscription("m2", version=1, user_data=b"")}, protocol="range", offered=lists)
    if ended:
        return b.write(11050.0)
    return b.write(11050.0, complete=False, cut_short="SuiteError: java@3.9.2 is not set up")


def malformed_story(root: Path, run_id: str) -> Path:
    """The healthy cooperative run plus unusable lines in every input file (each must be reported)."""
    path = write_cell(root, run_id)
    with (path / "members" / "m1.jsonl").open("a") as fh:
        fh.write("this is not json\n")
        fh.write('{"ts": 1.0, "member": "m1", "client": "java", "client_version": "4.4.0", "event": "assigned"}\n')
    with (path / "wire.jsonl").open("a") as fh:
        fh.write('{"ts": 5, "member": "m1"\n')
        fh.write('{"ts": 6.0, "member": "m1", "api": "JoinGroup", "direction": "request", "undecodable": "short frame", "raw": "00"}\n')
    with (path / "nemesis.jsonl").open("a") as fh:
        fh.write('{"ts": 7.0, "fault": "meteor", "target": "m1", "phase": "invoke"}\n')
    return path


def bad_manifest_story(root: Path, run_id: str) -> Path:
    """The healthy cooperative run with a manifest whose fields are partly wrong-typed (each must be
    reported, the rest of the cell judged)."""
    path = write_cell(root, run_id)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["seed"] = "seven"
    manifest["timing"]["session_timeout_ms"] = "10s"
    manifest["topics"]["u"] = "four"
    manifest["members"].append("m3")
    (path / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return path
