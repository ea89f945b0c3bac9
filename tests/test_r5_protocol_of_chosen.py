"""R5 follows each kind's rule for which protocol a member rebalances by (a recorded real run).

Java and Sarama rebalance eagerly whenever their assignor list has an eager assignor, so in the
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
Both copies are judged by one real ``conformance report`` (one Spark start).
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

ARCHIVE = (Path(__file__).resolve().parent.parent / "fixtures" / "client-behaviour"
           / "franz-go-1.22.3-upgrade-eager-to-cooperative.tar.xz")
MEMBER = "m4-franz-go"


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


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("r5-choice")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(root / "original", filter="data")
    (src,) = (root / "original").iterdir()
    dirs = {name: root / "runs" / name for name in ("recorded", "eager-holding")}
    for d in dirs.values():
        shutil.copytree(src, d)
    mutant = dirs["eager-holding"]
    manifest = json.loads((mutant / "manifest.json").read_text(encoding="utf-8"))
    manifest["run_id"] += "-eager-holding"
    (mutant / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    _drop_first_eager_revoke_before_a_rejoin(mutant)
    out = root / "out"
    done = subprocess.run([sys.executable, "-m", "conformance", "report", "--out", str(out), *map(str, dirs.values())],
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
