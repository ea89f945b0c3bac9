"""Hunting: failure signatures (conformance/signatures.py) and the hunt's batching and table
(conformance/run/hunt.py). The hunt itself on real cells: tests/test_hunt_e2e.py (nightly)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.run.hunt import next_batch_size, render_text, write_table
from conformance.signatures import Signature, headline, signature, tally

SPECS = {"m0-reference": "reference@0.1.0", "m1-java": "java@4.4.0", "m2-sarama": "sarama@1.61.1",
         "m3-sarama": "sarama@1.61.1"}


def _verdict(run_dir: str, seed: int, *findings: dict) -> dict:
    invariants: dict[str, dict] = {}
    for f in findings:
        inv = invariants.setdefault(f["invariant"], {"status": "fail", "violations": [], "allowed": []})
        inv["violations"].append({k: v for k, v in f.items() if k != "invariant"})
    return {"run_dir": run_dir, "seed": seed, "scenario": "chaos", "member_specs": SPECS, "verdict": "fail",
            "members": sorted(SPECS.values()), "invariants": invariants}


def _l1(culprit: str, generation: int) -> dict:
    return {"invariant": "L1", "culprit": culprit, "members": [culprit], "evidence": {},
            "message": f"{culprit} led generation {generation} and sent no SyncGroup: members waited 31.2 s"}


def test_two_leaders_of_one_release_that_fail_alike_are_one_signature() -> None:
    # Two Sarama members, two cells, different generations and times: one bug. A Java leader
    # failing the same way is another signature (another culprit).
    first = _verdict("runs/a", 11, _l1("m2-sarama", 7))
    second = _verdict("runs/b", 12, _l1("m3-sarama", 12), _l1("m1-java", 4))
    found = tally([first, second])
    assert [(str(s.signature), len(s.cells), s.count, s.first["seed"]) for s in found] == [
        ("L1 sarama@1.61.1: culprit led generation N and sent no SyncGroup", 2, 2, 11),
        ("L1 java@4.4.0: culprit led generation N and sent no SyncGroup", 1, 1, 12)]


def test_a_known_issue_comes_after_new_failures_and_a_warning_makes_no_signature() -> None:
    known = dict(_l1("m2-sarama", 3), known_issue={"reference": "IBM/sarama issue 1808"})
    warning = {"invariant": "E3", "culprit": "m0-reference", "evidence": {"severity": "warning"},
               "message": "m0-reference wrote userData of no known format"}
    unattributed = {"invariant": "V1", "members": [], "evidence": {},
                    "message": "the group did not converge within 70 s: no generation after the last fault"}
    found = tally([_verdict("runs/a", 1, known, warning, unattributed)])
    assert [s.signature for s in found] == [
        Signature("V1", "group", "the group did not converge within N s"),
        Signature("L1", "sarama@1.61.1", "culprit led generation N and sent no SyncGroup", "IBM/sarama issue 1808")]


def test_headline_keeps_the_anomaly_and_drops_the_particulars() -> None:
    # Which members a leader harmed, and how many partitions, is not the bug's kind.
    first = headline("leader m0-reference of cooperative generation 3 gave orders-1, orders-4 to m3-sarama although "
                     "m2-librdkafka validly declared them owned (declared generation 2)", "m0-reference")
    second = headline("leader m0-reference of cooperative generation 9 gave orders-5 to m1-java although "
                      "m0-reference validly declared them owned (declared generation 8)", "m0-reference")
    assert first == "leader culprit of cooperative generation N gave orders-N to member although member validly " \
                    "declared them owned (declared generation N)"
    assert second == first.replace("although member", "although culprit")
    assert headline("m1-java and m2-librdkafka both owned orders-0; first overlap orders-0 for 300 ms") == \
        "member and member both owned orders-N"
    assert headline("generation 14 -> 16 moved 1 partitions away from members that stayed, 0 would do: "
                    "orders-11 (taken by m5-franz-go)") == \
        "generation N -> N moved N partitions away from members that stayed, N would do"
    assert len(headline("x" * 500)) == 140 and headline("x" * 500).endswith("...")
    assert signature({"member_specs": {}}, {"invariant": "R2", "message": ""}).culprit == "group"


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"batch": 4, "cells": None, "budget": None, **kw})


def test_a_batch_never_runs_past_the_cells_asked_for_nor_starts_after_the_budget() -> None:
    assert next_batch_size(_args(cells=10), 8, 0, None) == 2
    assert next_batch_size(_args(cells=10), 10, 0, None) == 0
    assert next_batch_size(_args(budget=600_000), 0, 0, None) == 4        # nothing measured yet
    assert next_batch_size(_args(budget=600_000), 4, 400, 100) == 2       # 200 s left, 100 s a cell
    assert next_batch_size(_args(budget=600_000), 4, 590, 100) == 1       # always at least one
    assert next_batch_size(_args(budget=600_000), 4, 600, 100) == 0


def test_the_table_is_written_whole_and_says_how_to_replay(tmp_path: Path) -> None:
    verdicts = [_verdict(str(tmp_path / "runs/a"), 11, _l1("m2-sarama", 7))]
    found = tally(verdicts)
    header = {"scenario": "chaos", "clients": ["sarama", "java"], "broker": "4.4.0", "backend": "processes",
              "hunt_seed": 5, "path": str(tmp_path), "replay_hunt": "conformance hunt --seed 5"}
    write_table(tmp_path, header, found, verdicts, [], interrupted=True)
    data = json.loads((tmp_path / "hunt.json").read_text())
    assert data["interrupted"] and data["cells"] == 1 and data["verdicts"] == {"fail": 1}
    assert data["signatures"][0]["replay"] == f"conformance reproduce {tmp_path / 'runs/a'}"
    assert "| 1 | 1 | L1 | sarama@1.61.1 | new |" in (tmp_path / "hunt.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hunt.json", "hunt.md"]
    text = render_text(found, verdicts)
    assert text.splitlines()[-1] == "1 signature(s) in 1 cell(s), 1 new"


@pytest.mark.parametrize("argv,says", [
    (["--cells", "0"], "--cells 0: give at least 1"),
    (["--batch", "0"], "--batch 0: give at least 1"),
    (["--budget", "5x"], "'5x' is not a duration"),
    (["--cells", "3", "--budget", "10m"], "not allowed with argument"),
    (["--scenario", "no-such"], "unknown scenario 'no-such'"),
    (["--clients", "java@0.0.1"], "java"),
])
def test_bad_input_is_one_line_and_exit_2_before_anything_starts(tmp_path: Path, capsys, argv, says) -> None:
    with pytest.raises(SystemExit) as stop:
        raise SystemExit(main(["hunt", "--runs-dir", str(tmp_path / "r"), *argv]))
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and says in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
