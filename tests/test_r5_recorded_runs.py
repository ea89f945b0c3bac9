"""R5 on recorded real runs: each kind's rule for which protocol a member rebalances by, and which
generation is the final one.

1. Java and Sarama rebalance eagerly whenever their assignor list has an eager assignor, so in the
documented upgrade a member on [cooperative-sticky, range] still revokes everything before it
rejoins. franz-go (from 1.13.0) runs the protocol of the balancer the group chose. In the
recorded upgrade-eager-to-cooperative cell (reference, Java, librdkafka, Sarama, franz-go 1.22.3),
the group chose cooperative-sticky from generation 10; m4-franz-go, still offering
[cooperative-sticky, range], kept orders-2, -7 and -8 across its cooperative rejoins, as its
history's protocol says. R5 read it as an eager member that rejoined still owning them, six times:
a false alarm. It must pass.

The bug class the kind's rule could hide is still caught: in the mutant copy m4-franz-go's first
eager revoke (generation 2, when the group ran range) is dropped, so it rejoins from an eager
generation still owning orders-9, -10 and -11. R5 must name it.

2. In the recorded leader-rotation cell of Sarama 1.41.1 (no cooperative assignor: it offers
[range]) and Java 3.9.2 ([cooperative-sticky, range]), the scenario ended with Sarama alone in
generation 3 (range). Teardown then stopped Sarama, and Java, rejoining alone 350 ms after the
scenario's end, formed generation 4 with cooperative-sticky, its own first choice. R5 judged that
teardown generation as the group's final one: "final generation 4 is cooperative; the member mix
makes it eager", a false alarm. The final generation is the last one formed by the scenario's end.

The bug class is still caught: in the mutant copy the scenario ends after generation 4 formed
(the manifest's ``end_ts`` moved past it), so a cooperative final generation in a mix without
cooperative support is one the scenario built. R5 must fail it.

The four copies are judged by the session's one real ``conformance report`` (tests/recorded.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorded import TEST_TIMEOUT, copy_run, read_jsonl, unpack, write_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
ARCHIVE = FIXTURES / "franz-go-1.22.3-upgrade-eager-to-cooperative.tar.xz"
MEMBER = "m4-franz-go"
TEARDOWN_ARCHIVE = FIXTURES / "sarama-1.41.1-java-3.9.2-leader-rotation-teardown.tar.xz"


def _drop_first_eager_revoke_before_a_rejoin(run_dir: Path) -> float:
    history = run_dir / "members" / f"{MEMBER}.jsonl"
    events = read_jsonl(history)
    joins = [f["ts"] for f in read_jsonl(run_dir / "wire.jsonl")
             if f["member"] == MEMBER and f["api"] == "JoinGroup" and f["direction"] == "request"]
    for k, e in enumerate(events):
        if e["event"] == "revoked" and e.get("protocol") == "eager" and e["partitions"]:
            stop = next((x["ts"] for x in events[k + 1:] if x["event"] in ("stopped", "started")), float("inf"))
            if any(e["ts"] <= j < stop for j in joins):
                del events[k]
                write_jsonl(history, events)
                return e["ts"]
    raise AssertionError("the recorded run has no eager revoke of m4-franz-go before a rejoin")


def _end_after_the_last_generation(run_dir: Path) -> float:
    """Move the manifest's ``end_ts`` 1 ms past the last successful JoinGroup response; returns it."""
    last = max(f["ts"] for f in read_jsonl(run_dir / "wire.jsonl")
               if f["api"] == "JoinGroup" and f["direction"] == "response" and not f.get("error_code"))
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["end_ts"] < last, "the recorded run has no generation formed after the scenario's end"
    manifest["end_ts"] = last + 1.0
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return manifest["end_ts"]


def recorded_copies(root: Path) -> dict[str, Path]:
    """The two recorded runs and their mutants (the module docstring tells each story)."""
    upgrade = unpack(ARCHIVE, root / "upgrade")
    teardown = unpack(TEARDOWN_ARCHIVE, root / "teardown")
    runs = root / "runs"
    dirs = {"recorded": copy_run(upgrade, runs / "recorded"),
            "eager-holding": copy_run(upgrade, runs / "eager-holding", "-eager-holding"),
            "teardown": copy_run(teardown, runs / "teardown"),
            "ends-cooperative": copy_run(teardown, runs / "ends-cooperative", "-ends-cooperative")}
    _drop_first_eager_revoke_before_a_rejoin(dirs["eager-holding"])
    _end_after_the_last_generation(dirs["ends-cooperative"])
    return dirs


def test_a_franz_go_member_on_a_mixed_list_rebalances_by_the_chosen_protocol(recorded_verdicts):
    r5 = recorded_verdicts["recorded"]["invariants"]["R5"]
    assert r5["status"] == "pass" and r5["violations"] == [], r5["violations"]


def test_franz_go_rejoining_an_eager_generation_still_owning_fails_r5(recorded_verdicts):
    r5 = recorded_verdicts["eager-holding"]["invariants"]["R5"]
    held = [v for v in r5["violations"] if v["culprit"] == MEMBER]
    assert r5["status"] == "fail" and held, r5
    assert "rejoined from eager generation" in held[0]["message"] and "(range)" in held[0]["message"], held


def test_a_generation_formed_in_teardown_is_not_the_final_one(recorded_verdicts):
    r5 = recorded_verdicts["teardown"]["invariants"]["R5"]
    assert r5["status"] == "pass" and r5["violations"] == [], r5["violations"]


def test_a_cooperative_final_generation_in_an_eager_mix_fails_r5(recorded_verdicts):
    r5 = recorded_verdicts["ends-cooperative"]["invariants"]["R5"]
    final = [v for v in r5["violations"] if v["message"].startswith("final generation 4 is cooperative")]
    assert r5["status"] == "fail" and final, r5
    assert final[0]["evidence"] == {"expected": "eager", "protocol_name": "cooperative-sticky"}, final
