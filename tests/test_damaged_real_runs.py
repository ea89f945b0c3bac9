"""Damaged run data is reported as damaged, never as a client's violation (issue #26, item 9).

Three copies of a real recorded run (fixtures/real-runs/, reference + Java + librdkafka) are
damaged the way a disk, a copy or a killed writer damages files, and judged in one judge call
beside an intact copy:

- ``manifest``: manifest.json cut off mid-file (was: an L4 failure on m0-reference);
- ``truncated``: the last line of m1-java's history cut off, its ``stopped`` event with it
  (was: "V1: m1-java never stopped (crashed or hung)");
- ``nonhex``: a JoinGroup's subscription metadata in wire.jsonl that is not hex (was: an E1
  violation by the member that sent it);
- ``no-producer``: the producer's history deleted (was: D1 and P1 passing on no records);
- ``no-nemesis``: the nemesis log deleted (was: a run without faults or kills);
- ``producer-stalled``: the producer's acknowledgements gone from 20 s on, as when it stops
  acknowledging while the run goes on (issue #38 item 4; was: a pass on the records before).

Every copy's manifest says the producer's rate, as the runner writes it now
(``producer_rate_per_s``; the recording predates the field).

Each must make the invariants that read the damaged input "malformed" for that cell, naming the
file and line, with no violation; the intact copy keeps its "pass".

They are judged by a real ``conformance report``, the session's shared judge of recorded runs
(tests/recorded.py), whose stderr must carry no Spark ``WARN`` line either (issue #26: Spark's
warnings reached the terminal).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.pipeline.checks import CATALOG
from recorded import TEST_TIMEOUT, copy_run, read_jsonl, unpack, write_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

ARCHIVE = (Path(__file__).resolve().parent.parent / "fixtures" / "real-runs"
           / "reference-java-librdkafka--seed-26.tar.xz")
NAMES = ("intact", "manifest", "truncated", "nonhex", "no-producer", "no-nemesis", "producer-stalled")
#: What the non-hex copy's metadata starts with.
BAD_HEX = "zz"


def recorded_copies(root: Path) -> dict[str, Path]:
    """The intact copy and the damaged copies, by name (each with a run id of its own)."""
    src = unpack(ARCHIVE, root / "original")
    dirs = {}
    for name in NAMES:
        dirs[name] = copy_run(src, root / "runs" / name, f"-{name}")
        manifest = dirs[name] / "manifest.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "producer_rate_per_s": 200}))
    (dirs["no-producer"] / "members" / "producer.jsonl").unlink()
    (dirs["no-nemesis"] / "nemesis.jsonl").unlink()
    produced = dirs["producer-stalled"] / "members" / "producer.jsonl"
    events = read_jsonl(produced)
    first = next(e["ts"] for e in events if e["event"] == "produced")
    write_jsonl(produced, [e for e in events if e["event"] != "produced" or e["ts"] < first + 20_000])
    manifest = dirs["manifest"] / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:300])
    history = dirs["truncated"] / "members" / "m1-java.jsonl"
    lines = history.read_bytes().splitlines(keepends=True)
    assert b'"event":"stopped"' in lines[-1]
    history.write_bytes(b"".join(lines[:-1]) + lines[-1][:len(lines[-1]) // 2])
    wire = dirs["nonhex"] / "wire.jsonl"
    frames = wire.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, f in enumerate(frames)
              if '"member":"m1-java"' in f and '"api":"JoinGroup"' in f and '"direction":"request"' in f)
    frames[at] = frames[at].replace('"metadata":"', '"metadata":"' + BAD_HEX, 1)
    wire.write_text("".join(frames), encoding="utf-8")
    return dirs


def _where(dirs: dict[str, Path]) -> dict[str, int]:
    """Where each damage is, read back from the damaged copies: the truncated history's last line,
    the non-hex wire line, the stalled producer's last acknowledgement (1-based lines)."""
    history = (dirs["truncated"] / "members" / "m1-java.jsonl").read_bytes().splitlines()
    wire = (dirs["nonhex"] / "wire.jsonl").read_text(encoding="utf-8").splitlines()
    produced = read_jsonl(dirs["producer-stalled"] / "members" / "producer.jsonl")
    return {"_history_lines": len(history),
            "_wire_line": next(i for i, f in enumerate(wire, start=1) if f'"metadata":"{BAD_HEX}' in f),
            "_last_ack": max(i for i, e in enumerate(produced, start=1) if e["event"] == "produced")}


@pytest.fixture(scope="module")
def judged(recorded_verdicts):
    """(verdicts by copy name, the copies' directories, where the damage is)."""
    dirs = {name: Path(v["run_dir"]) for name, v in recorded_verdicts.items()}
    assert set(dirs) == set(NAMES)
    return recorded_verdicts, dirs, _where(dirs)


def test_spark_says_nothing_on_the_terminal_but_errors(judged, recorded_judge):
    # The judge's stderr is the session's shared report's (this module's copies among its cells).
    stderr = recorded_judge.stderr
    noise = [line for line in stderr.splitlines()
             if " WARN " in line or "log4j" in line or "Setting default log level" in line]
    assert noise == [], stderr[-3000:]


def _no_blame(cell: dict) -> None:
    """No invariant fails and none holds a violation: nothing is blamed on a client."""
    assert {inv: [x["message"] for x in i["violations"]] for inv, i in cell["invariants"].items()
            if i["violations"] or i["status"] == "fail"} == {}
    assert cell["root_cause"] is None


def test_the_intact_copy_keeps_its_verdict(judged):
    cells, _dirs, _where = judged
    assert cells["intact"]["verdict"] == "pass"
    assert {i["status"] for i in cells["intact"]["invariants"].values()} == {"pass"}


def test_an_unreadable_manifest_makes_the_invariants_that_read_it_malformed(judged):
    cells, dirs, _where = judged
    cell = cells["manifest"]
    assert cell["verdict"] == "malformed"
    _no_blame(cell)
    # Every check that reads the members, topics or timing is malformed; E1-E3 judge the wire's
    # bytes alone and K1 the heartbeats' epochs alone, and keep their pass.
    wire_only = {"E1", "E2", "E3", "K1"}
    assert {inv: i["status"] for inv, i in cell["invariants"].items()} == {
        inv: "pass" if inv in wire_only else "malformed" for inv in CATALOG}
    for inv, i in cell["invariants"].items():
        if inv not in wire_only:
            assert [(d["file"], d["line"]) for d in i["damaged"]] == [(str(dirs["manifest"] / "manifest.json"), 0)]
            assert i["damaged"][0]["problem"].startswith("unreadable manifest")
    # What L4 found on the manifest-less cell is kept, set aside, for whoever repairs the data.
    assert cell["invariants"]["L4"]["set_aside"]


def test_a_truncated_last_history_line_is_not_a_member_that_never_stopped(judged):
    cells, dirs, where = judged
    cell = cells["truncated"]
    assert cell["verdict"] == "malformed"
    _no_blame(cell)
    damaged = (str(dirs["truncated"] / "members" / "m1-java.jsonl"), where["_history_lines"])
    assert [(m["file"], m["line"]) for m in cell["malformed"]] == [damaged]
    v1 = cell["invariants"]["V1"]
    assert v1["status"] == "malformed" and [(d["file"], d["line"]) for d in v1["damaged"]] == [damaged]
    assert any("m1-java never stopped" in x["message"] for x in v1["set_aside"])
    # Invariants judged from the wire capture alone read no history: they keep their verdict.
    assert all(cell["invariants"][inv]["status"] == "pass" for inv in ("E1", "E2", "E3", "E4"))


def test_non_hex_metadata_in_the_wire_capture_is_damage_not_an_e1_violation(judged):
    cells, dirs, where = judged
    cell = cells["nonhex"]
    assert cell["verdict"] == "malformed"
    _no_blame(cell)
    damaged = (str(dirs["nonhex"] / "wire.jsonl"), where["_wire_line"])
    assert [(m["file"], m["line"]) for m in cell["malformed"]] == [damaged]
    assert "not hex" in cell["malformed"][0]["problem"]
    e1 = cell["invariants"]["E1"]
    assert e1["status"] == "malformed" and [(d["file"], d["line"]) for d in e1["damaged"]] == [damaged]
    assert e1["set_aside"] == []   # the damaged frame yields no rows at all


def _malformed_by(cell: dict, path: Path, line: int, problem: str) -> None:
    """The cell is malformed by exactly one damaged line, ``path``:``line``, whose problem starts
    with ``problem``; no client is blamed; the wire-only invariants keep their pass."""
    assert cell["verdict"] == "malformed"
    _no_blame(cell)
    assert [(m["file"], m["line"]) for m in cell["malformed"]] == [(str(path), line)], cell["malformed"]
    assert cell["malformed"][0]["problem"].startswith(problem), cell["malformed"][0]["problem"]
    assert all(cell["invariants"][inv]["status"] == "pass" for inv in ("E1", "E2", "E3"))


def test_a_missing_producer_history_is_damage_not_no_records(judged):
    cells, dirs, _where = judged
    _malformed_by(cells["no-producer"], dirs["no-producer"] / "members" / "producer.jsonl", 0,
                  "the producer's history is missing")
    assert cells["no-producer"]["invariants"]["D1"]["status"] == "malformed"


def test_a_missing_nemesis_log_is_damage_not_a_run_without_faults(judged):
    cells, dirs, _where = judged
    _malformed_by(cells["no-nemesis"], dirs["no-nemesis"] / "nemesis.jsonl", 0, "the nemesis log is missing")


def test_a_producer_that_stopped_acknowledging_makes_the_cell_malformed(judged):
    # The producer's last acknowledgement is 20 s into the run; the run went on for about 40 s more
    # and the runner stopped it: records were not waiting, so nothing D1 or P1 said would mean anything.
    cells, dirs, where = judged
    _malformed_by(cells["producer-stalled"], dirs["producer-stalled"] / "members" / "producer.jsonl",
                  where["_last_ack"], "the producer stopped acknowledging")
    assert {cells["producer-stalled"]["invariants"][inv]["status"] for inv in ("D1", "P1")} == {"malformed"}
