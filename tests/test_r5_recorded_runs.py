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

The four copies are judged by one real ``conformance report`` (one Spark start).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
ARCHIVE = FIXTURES / "franz-go-1.22.3-upgrade-eager-to-cooperative.tar.xz"
MEMBER = "m4-franz-go"
TEARDOWN_ARCHIVE = FIXTURES / "sarama-1.41.1-java-3.9.2-leader-rotation-teardown.tar.xz"


def _drop_first_eager_revoke_before_a_rejoin(run_dir: Path) -> float:
    history = run_dir / "members" / f"{MEMBER}.jsonl"
    events = [json.loads(x) for x in history.read_text(encoding="utf-8").splitlines()]
    joins = [f["ts"] for f in map(json.loads, (run_dir / "wire.jsonl").read_text(encoding="utf-8").splitlines())
             if f["member"] == MEMBER and f["api"] == "JoinGroup" and f["direction"] == "request"]
    for k, e in enumerate(events):
        if e["event"] == "revoked" and e.get("protocol") == "eager" and e["partitions"]:
            stop = next((x["ts"] for x in events[k + 1:] if x["event"] in ("stopped", "started")), float("inf"))
            if any(e["ts"] <= j < stop for j in joins):
                del events[k]
                history.write_text("".join(json.dumps(x) + "\n" for x in events), encoding="utf-8")
                return e["ts"]
    raise AssertionError("the recorded run has no eager revoke of m4-franz-go before a rejoin")


def _end_after_the_last_generation(run_dir: Path) -> float:
    """Move the manifest's ``end_ts`` 1 ms past the last successful JoinGroup response; returns it."""
    last = max(f["ts"] for f in map(json.loads, (run_dir / "wire.jsonl").read_text(encoding="utf-8").splitlines())
               if f["api"] == "JoinGroup" and f["direction"] == "response" and not f.get("error_code"))
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["end_ts"] < last, "the recorded run has no generation formed after the scenario's end"
    manifest["end_ts"] = last + 1.0
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return manifest["end_ts"]


def _copy(src: Path, dst: Path, suffix: str | None = None) -> Path:
    """A copy of run directory ``src`` at ``dst``; ``suffix`` appended to its run id (a mutant is its own run)."""
    shutil.copytree(src, dst)
    if suffix:
        manifest = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
        manifest["run_id"] += suffix
        (dst / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dst


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("r5-recorded")
    for archive, into in ((ARCHIVE, "upgrade"), (TEARDOWN_ARCHIVE, "teardown")):
        with tarfile.open(archive) as tar:
            tar.extractall(root / into, filter="data")
    (upgrade,) = (root / "upgrade").iterdir()
    (teardown,) = (root / "teardown").iterdir()
    runs = root / "runs"
    dirs = [_copy(upgrade, runs / "recorded"), _copy(upgrade, runs / "eager-holding", "-eager-holding"),
            _copy(teardown, runs / "teardown"), _copy(teardown, runs / "ends-cooperative", "-ends-cooperative")]
    _drop_first_eager_revoke_before_a_rejoin(runs / "eager-holding")
    _end_after_the_last_generation(runs / "ends-cooperative")
    out = root / "out"
    done = subprocess.run([sys.executable, "-m", "conformance", "report", "--out", str(out), *map(str, dirs)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return {Path(v["run_dir"]).name: v for v in json.loads((out / "pipeline" / "verdicts.json").read_text())}


def test_a_franz_go_member_on_a_mixed_list_rebalances_by_the_chosen_protocol(verdicts):
    r5 = verdicts["recorded"]["invariants"]["R5"]
    assert r5["status"] == "pass" and r5["violations"] == [], r5["violations"]


def test_franz_go_rejoining_an_eager_generation_still_owning_fails_r5(verdicts):
    r5 = verdicts["eager-holding"]["invariants"]["R5"]
    held = [v for v in r5["violations"] if v["culprit"] == MEMBER]
    assert r5["status"] == "fail" and held, r5
    assert "rejoined from eager generation" in held[0]["message"] and "(range)" in held[0]["message"], held


def test_a_generation_formed_in_teardown_is_not_the_final_one(verdicts):
    r5 = verdicts["teardown"]["invariants"]["R5"]
    assert r5["status"] == "pass" and r5["violations"] == [], r5["violations"]


def test_a_cooperative_final_generation_in_an_eager_mix_fails_r5(verdicts):
    r5 = verdicts["ends-cooperative"]["invariants"]["R5"]
    final = [v for v in r5["violations"] if v["message"].startswith("final generation 4 is cooperative")]
    assert r5["status"] == "fail" and final, r5
    assert final[0]["evidence"] == {"expected": "eager", "protocol_name": "cooperative-sticky"}, final
