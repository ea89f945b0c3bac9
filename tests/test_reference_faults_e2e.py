"""The reference consumer's faults in real cells, run with the ``conformance run`` command.

``stall-retained`` (after a rebalance in which it keeps a partition, the reference member never
fetches that partition again, while it keeps owning it, heartbeating and consuming the rest)
breaks P1 in ``rolling-restart``: every bounce of a peer is a rebalance in which the reference
keeps partitions, and the producer keeps writing to them. The same cell without the fault passes
P1 (the control: P1 raises no false alarm on a real rolling restart).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.config import REFERENCE_SLOW_SYNC_DELAY_MS as SLOW_SYNC_DELAY_MS
from conformance.protocol import decode_subscription

# One real cell per case and its judging: measured 97-98 s clean, 134-198 s with the fault (its `await
# drained` times out after 60 s on the stalled partitions), on two shared cores.
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(1200)]

SEED = 20261126


def _run_cell(runs_dir: Path, clients: str, scenario: str = "rolling-restart") -> tuple[int, dict, str]:
    """``conformance run --scenario SCENARIO --clients CLIENTS``: (exit code, the cell's verdict, the
    first reference member's name)."""
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--scenario", scenario,
                           "--clients", clients, "--seed", str(SEED), "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, timeout=1100)
    [summary] = list(runs_dir.glob("*/summary.json"))
    cells = json.loads(summary.read_text())["cells"]
    assert len(cells) == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    verdict = cells[0]
    manifest = json.loads((Path(verdict["run_dir"]) / "manifest.json").read_text())
    reference = next(m["name"] for m in manifest["members"] if m["kind"] == "reference")
    return proc.returncode, verdict, reference


# Both cells are nightly. In CI, P1's silence on clean real cells is shown by the e2e slice's clean
# cell and the recorded real runs, all of which must pass every invariant, and P1 failing on this
# very cell by its recording (tests/test_consumption_recorded.py, stall-retained).
@pytest.mark.parametrize("fault", [pytest.param(None, marks=pytest.mark.nightly),
                                   pytest.param("stall-retained", marks=pytest.mark.nightly)])
def test_stall_retained_fails_p1_with_the_reference_as_culprit(tmp_path, fault) -> None:
    clients = "reference" + (f"/{fault}" if fault else "") + ",java,librdkafka"
    code, verdict, reference = _run_cell(tmp_path / "runs", clients)
    p1 = verdict["invariants"]["P1"]
    messages = [v["message"] for v in p1["violations"]]
    if fault:
        assert code == 1 and p1["status"] == "fail", (code, p1)
        assert {v["culprit"] for v in p1["violations"]} == {reference}, messages
        for v in p1["violations"]:
            assert v["partitions"] and v["members"] == [reference], v
            assert f"{reference} owned " in v["message"] and "but consumed nothing from it for" in v["message"], v
            assert v["evidence"]["stall_ms"] > v["evidence"]["bound_ms"], v
    else:
        assert p1["status"] == "pass" and messages == [], messages
        assert p1["allowed"] == [], p1["allowed"]


# Nightly tier: each a real rolling-restart cell whose awaits time out (4-6 min on two shared cores).
# stale-owned-partitions declares what it owned a generation earlier: E5's wire check names the
# reference first, the group never settles (V1 names the timed-out awaits), and the withheld
# partitions reach nobody (R4). skip-revoke keeps fetching what it was told to give up: two owners
# at once (R2, naming the reference), its JoinGroup leaves out what its history still holds (E5),
# and the group never settles (V1).
@pytest.mark.nightly
@pytest.mark.parametrize("fault, must_fail", [("stale-owned-partitions", ["E5", "R4", "V1"]),
                                              ("skip-revoke", ["E5", "R2", "V1"])])
def test_reference_fault_is_caught_with_the_reference_to_blame(tmp_path, fault, must_fail) -> None:
    code, verdict, reference = _run_cell(tmp_path / "runs", f"reference/{fault},java,librdkafka")
    failing = sorted(inv for inv, i in verdict["invariants"].items() if i["status"] == "fail")
    assert code == 1 and set(must_fail) <= set(failing), failing
    assert verdict["root_cause"]["culprit"] == reference, verdict["root_cause"]
    assert all(v["culprit"] == reference for v in verdict["invariants"]["E5"]["violations"])
    awaits = [v for v in verdict["invariants"]["V1"]["violations"] if v["evidence"].get("await")]
    assert awaits, verdict["invariants"]["V1"]
    if fault == "skip-revoke":   # the runner saw the reference owning partitions twice over
        assert all(reference in v["members"] for v in awaits), awaits
        assert all(reference in v["members"] for v in verdict["invariants"]["R2"]["violations"])


# Nightly tier: three more faults, each a real rolling-restart cell (2-4 min), each the root cause
# of its cell's failure with the reference to blame:
# - no-follow-up-rejoin: the reference revokes what the leader took from it and then stays out, so
#   no follow-up round hands those partitions on: R4, the revoker that sent no JoinGroup.
# - leader-reassigns-owned: the reference leads (it joins first) and gives partitions a member still
#   declares owned straight to another member: R1, the leader (R2's overlaps follow from it).
# - subscription-v0: the reference offers cooperative-sticky in a v0 subscription, which cannot
#   declare owned partitions: E5's v0 flag on its first JoinGroup.
@pytest.mark.nightly
@pytest.mark.parametrize("fault, root, says", [
    ("no-follow-up-rejoin", "R4", "sent no JoinGroup after revoking them"),
    ("leader-reassigns-owned", "R1", "validly declared them owned"),
    ("subscription-v0", "E5", "with a v0 subscription, which cannot declare owned partitions"),
])
def test_reference_fault_is_the_root_cause(tmp_path, fault, root, says) -> None:
    code, verdict, reference = _run_cell(tmp_path / "runs", f"reference/{fault},java,librdkafka")
    failing = sorted(inv for inv, i in verdict["invariants"].items() if i["status"] == "fail")
    assert code == 1 and root in failing, failing
    cause = verdict["root_cause"]
    assert cause["invariant"] == root and cause["culprit"] == reference and says in cause["message"], cause
    assert all(v["culprit"] == reference for v in verdict["invariants"][root]["violations"]), \
        verdict["invariants"][root]["violations"]


def _wire(verdict: dict) -> list[dict]:
    with open(Path(verdict["run_dir"]) / "wire.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _subscriptions(wire: list[dict], member: str) -> list:
    """Every cooperative-sticky subscription ``member`` sent, decoded."""
    return [decode_subscription(bytes.fromhex(p["metadata"])) for r in wire
            if r["member"] == member and r["api"] == "JoinGroup" and r["direction"] == "request"
            for p in r.get("protocols") or [] if p["name"] == "cooperative-sticky"]


# The first member joins alone and settles, so it leads; the others join after it. (With the
# stagger of a built-in scenario, whoever's JoinGroup arrives first leads: a slow Sarama start
# left the reference leading, and the probe never reached a Sarama leader.)
FIRST_LEADS = """name first-leads
describe m0 joins alone and leads; m1 and m2 join a settled group, so m0's leader reads their subscriptions.
topic orders partitions=12
producer rate=200

phase lead
  start m0
  await stable timeout=60s
phase join
  start m1
  start m2
  await stable timeout=60s
  await drained timeout=60s
"""


# Nightly tier: subscription-v4-trailing, Sarama leading. The reference's subscriptions are version
# 4: the v3 fields, then bytes a newer version would append. A reader must read what it knows and
# ignore the rest (Java reads a newer version as its highest one). Sarama 1.61.1 refuses the whole
# subscription ("invalid length"), so as leader it never sends its SyncGroup: L1 names the Sarama
# leader and quotes Sarama's own errors from its history.
@pytest.mark.nightly
def test_subscription_from_a_newer_version_stops_a_sarama_leader(tmp_path) -> None:
    scenario = tmp_path / "first-leads.scenario"
    scenario.write_text(FIRST_LEADS, encoding="utf-8")
    code, verdict, reference = _run_cell(tmp_path / "runs", "sarama,reference/subscription-v4-trailing,java",
                                         str(scenario))
    subs = _subscriptions(_wire(verdict), reference)
    assert subs and all(s.version == 4 and s.trailing for s in subs), subs
    cause = verdict["root_cause"]
    assert code == 1 and cause["invariant"] == "L1" and cause["culprit"] == "m0-sarama", cause
    assert "sent no SyncGroup assignments" in cause["message"], cause
    l1 = verdict["invariants"]["L1"]["violations"]
    assert all(v["culprit"] == "m0-sarama" for v in l1), l1
    # Sarama's own error, quoted from its history: it could not read the reference's subscription.
    assert any("invalid length" in e for v in l1 for e in v["evidence"].get("leader_errors", [])), l1
    assert verdict["invariants"]["E1"]["status"] == "pass", verdict["invariants"]["E1"]


# Nightly tier: subscription-v0, librdkafka leading. The reference offers cooperative-sticky in a
# version-0 subscription, which has no owned partitions (its own bug: E5, the root cause). A
# leader must read that as "owns nothing"; librdkafka's leader dereferences the missing list and
# dies with SIGSEGV before its SyncGroup (docs/client-bugs/librdkafka-v0-subscription-crash.md).
# V1 must name the crash, by its signal, on the librdkafka member.
@pytest.mark.nightly
def test_a_v0_subscription_crashes_a_librdkafka_leader(tmp_path) -> None:
    scenario = tmp_path / "first-leads.scenario"
    scenario.write_text(FIRST_LEADS, encoding="utf-8")
    code, verdict, reference = _run_cell(tmp_path / "runs", "librdkafka,reference/subscription-v0,java",
                                         str(scenario))
    subs = _subscriptions(_wire(verdict), reference)
    assert subs and all(s.version == 0 for s in subs), subs
    cause = verdict["root_cause"]
    assert code == 1 and cause["invariant"] == "E5" and cause["culprit"] == reference, cause
    crashed = [v for v in verdict["invariants"]["V1"]["violations"]
               if v["members"] == ["m0-librdkafka"] and "killed by signal SIGSEGV" in v["message"]]
    assert crashed, verdict["invariants"]["V1"]["violations"]


# Nightly tier: the probes. These faults stay inside the protocol, so the cell must PASS (a finding
# would be a false alarm), and the wire must show that the probe really happened:
# - userdata-empty, -null, -minus-one, three references beside Java: formats real clients write
#   (librdkafka's empty userData; none; a generation of -1 behind the GenerationId, which real Java
#   members send too), so E3 has nothing to say.
# - userdata-garbage: ``de ad be`` is no known format: E3's warning (not a failure) names the
#   reference as its writer.
# - slow-sync: every SyncGroup of the reference leaves at least SLOW_SYNC_DELAY_MS after its
#   JoinGroup answer; the group still converges within its bounds.
@pytest.mark.nightly
@pytest.mark.parametrize("clients", [
    "reference/userdata-empty,reference/userdata-null,reference/userdata-minus-one,java",
    "reference/userdata-garbage,java,librdkafka",
    "reference/slow-sync,java,librdkafka",
])
def test_reference_probe_passes_and_shows_on_the_wire(tmp_path, clients) -> None:
    code, verdict, reference = _run_cell(tmp_path / "runs", clients)
    failing = {inv: i["violations"] for inv, i in verdict["invariants"].items() if i["status"] != "pass"}
    assert code == 0 and verdict["verdict"] == "pass", failing
    wire, e3 = _wire(verdict), verdict["invariants"]["E3"]["violations"]
    if "userdata-empty" in clients:
        refs = ("m0-reference", "m1-reference", "m2-reference")
        written = {m: {s.user_data for s in _subscriptions(wire, m)} for m in refs}
        assert written == dict(zip(refs, [{b""}, {None}, {b"\xff\xff\xff\xff"}])), written
        assert e3 == [], e3
    elif "userdata-garbage" in clients:
        warned = [v for v in e3 if v["culprit"] == reference and v["evidence"]["userdata_hex"] == "deadbe"]
        assert warned and all(v["evidence"]["severity"] == "warning" for v in e3), e3
        assert f"written by {reference}" in warned[0]["message"], warned
    else:
        syncs = [r for r in wire if r["member"] == reference and r["api"] in ("JoinGroup", "SyncGroup")]
        late = [(j, s) for j, s in zip(syncs, syncs[1:])
                if j["api"] == "JoinGroup" and j["direction"] == "response" and j.get("error_code") == 0
                and s["api"] == "SyncGroup" and s["direction"] == "request"]
        assert late and all(s["ts"] - j["ts"] >= SLOW_SYNC_DELAY_MS for j, s in late), \
            [(round(s["ts"] - j["ts"])) for j, s in late]
