"""``conformance plan`` and ``conformance run --plan --shard``: coverage, determinism, shards,
and bad input (one line on stderr, exit 2, nothing written or started).

No test here runs a cell: the matrix runner is replaced by one that records what reached it,
and registry look-ups by a fixed answer (every member version these matrix files name is in
the cache once `conformance setup --all` ran, and none is asked for when it is).
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import cli, config
from conformance.members import versions
from conformance.planning.matrix_file import load_matrix
from conformance.planning.pairwise import Group, cover, covered_pairs, required_pairs
from conformance.planning.plan import assign_shards, build_plan, load_plan, plan_id, to_json, uncovered
from conformance.run import command
from conformance.run.matrix import MatrixResult

MATRICES = config.FIXTURES_DIR / "matrices"


@pytest.fixture
def started(monkeypatch, tmp_path):
    """What reached the matrix runner (it runs nothing), with the label it was given."""
    calls: list[tuple[list, str]] = []

    def fake_run_matrix(cells, runs_dir=None, spark_master=None, label="matrix"):
        calls.append((list(cells), label))
        return MatrixResult(Path(runs_dir or tmp_path))

    monkeypatch.setattr(command, "run_matrix", fake_run_matrix)
    monkeypatch.setattr(command, "summary_table", lambda result: "")
    monkeypatch.setattr(versions, "registry_says", lambda kind, version: None)  # every release exists
    monkeypatch.setattr(config, "RUNS_DIR", tmp_path / "reports")
    return calls


def run_cli(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


# --- the covering -------------------------------------------------------------------------------

def test_cover_worked_example():
    # The pairwise module's docstring: 4 labels, 2 brokers, groups of 3, seed 1.
    groups = cover(["a", "b", "c", "d"], ["X", "Y"], 3, random.Random(1))
    assert groups == [Group(("a", "b", "c"), "X"), Group(("b", "c", "d"), "X"), Group(("a", "b", "d"), "Y"),
                      Group(("a", "b", "c"), "Y")]
    assert required_pairs("abcd", "XY") <= covered_pairs(groups)


@pytest.mark.parametrize("seed", range(20))
def test_cover_meets_every_pair_for_random_inputs(seed):
    rng = random.Random(seed)
    labels = [f"k{i}@{j}" for i in range(rng.randint(1, 5)) for j in range(rng.randint(1, 4))]
    brokers = [f"b{i}" for i in range(rng.randint(1, 4))]
    size = rng.randint(2, 8)
    groups = cover(labels, brokers, size, random.Random(seed))
    assert not required_pairs(labels, brokers) - covered_pairs(groups)
    assert all(len(set(g.labels)) == len(g.labels) == min(size, len(labels)) for g in groups)
    # Far fewer groups than one per required pair once groups hold more than two members.
    pairs = len(labels) * (len(labels) - 1) // 2 + len(labels) * len(brokers)
    assert len(groups) <= pairs


def test_covered_pairs_of_a_group_are_its_pairs_and_its_broker():
    assert covered_pairs([Group(("a", "b", "c"), "X")]) == {
        ("a", "b"), ("a", "c"), ("b", "c"), ("a", "broker:X"), ("b", "broker:X"), ("c", "broker:X")}


# --- plans of the project's matrix files ----------------------------------------------------------

# File names, not bare names: a test id "nightly" would put it in the nightly tier (conftest.py).
@pytest.mark.parametrize("file", ["smoke.toml", "nightly.toml", "weekly.toml"])
def test_plan_covers_every_required_pair_in_every_class(file):
    matrix = load_matrix(MATRICES / file)
    plan = build_plan(matrix, matrix.seed, 4 if file != "smoke.toml" else 2)
    missing = uncovered(plan)
    assert set(missing) == set(matrix.classes)
    assert all(not pairs for pairs in missing.values()), missing
    # ... computed independently of uncovered(): every spec pair and spec-broker pair, per class.
    specs = [str(s) for s in matrix.members]
    for cls, scenarios in matrix.classes.items():
        cells = [c for c in plan.cells if c.scenario_class == cls]
        assert {c.scenario for c in cells} <= set(scenarios)
        for a in specs:
            assert {c.broker for c in cells if a in c.clients} == set(matrix.brokers), (cls, a)
            for b in specs:
                assert a == b or any(a in c.clients and b in c.clients for c in cells), (cls, a, b)
    for m in matrix.must_have:
        [cell] = [c for c in plan.cells if c.must_have == m.name]
        assert (cell.scenario, cell.clients, cell.broker) == (m.scenario, tuple(str(s) for s in m.specs), m.broker)
    # Pairwise, not exhaustive: nightly is 9 member versions x 2 brokers.
    if file == "nightly.toml":
        assert len(plan.cells) < 40


def test_nightly_plan_runs_scenarios_of_each_class_in_turn():
    matrix = load_matrix(MATRICES / "nightly.toml")
    plan = build_plan(matrix, matrix.seed, 4)
    for cls, scenarios in matrix.classes.items():
        assert {c.scenario for c in plan.cells if c.scenario_class == cls} == set(scenarios)


def test_plan_is_deterministic_for_a_seed_and_varies_with_it():
    matrix = load_matrix(MATRICES / "weekly.toml")
    one, two = to_json(build_plan(matrix, 5, 4)), to_json(build_plan(matrix, 5, 4))
    assert one == two
    assert to_json(build_plan(matrix, 6, 4)) != one


def test_plan_file_is_the_same_bytes_across_processes(tmp_path):
    # String hashing differs per process (PYTHONHASHSEED); the plan must not depend on it.
    outputs = []
    for hashseed in ("1", "2"):
        out = tmp_path / f"plan-{hashseed}.json"
        subprocess.run([sys.executable, "-m", "conformance", "plan", str(MATRICES / "nightly.toml"), "--shards", "3",
                        "-o", str(out)], check=True, capture_output=True, env={**__import__("os").environ,
                                                                                "PYTHONHASHSEED": hashseed})
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_shards_hold_every_cell_once_and_are_balanced():
    walls = [300.0, 120.0, 90.0, 300.0, 60.0, 60.0, 45.0]
    shards = assign_shards(walls, 3)
    assert sorted(set(shards)) == [1, 2, 3]
    totals = [sum(w for w, s in zip(walls, shards) if s == i) for i in (1, 2, 3)]
    assert max(totals) - min(totals) <= max(walls)
    assert totals == [345.0, 300.0, 330.0]  # 300 | 300 | 120+90+60+60, then 45 to the first


def test_plan_command_prints_cell_count_and_wall_per_shard_and_run_takes_one_shard(started, capsys, tmp_path):
    out = tmp_path / "plan.json"
    code, lines, err = run_cli(capsys, "plan", str(MATRICES / "nightly.toml"), "--shards", "4", "-o", str(out))
    assert code == 0, err
    plan = load_plan(out)
    assert lines[0].startswith(f"plan: {len(plan.cells)} cells")
    assert "every one of the 54 required pairs meets in each of the 3 scenario class(es)" in lines[0]  # 36 + 9 x 2
    assert [ln.split(":")[0] for ln in lines[1:5]] == ["shard 1/4", "shard 2/4", "shard 3/4", "shard 4/4"]
    assert all("estimated wall" in ln for ln in lines[1:5])
    ran = []
    for i in range(1, 5):
        code, _, err = run_cli(capsys, "run", "--plan", str(out), "--shard", f"{i}/4")
        assert code == 0, err
        cells, label = started[-1]
        assert label == f"{plan_id(plan)}-shard-{i}-of-4"
        assert [c.cell_id for c in cells] == [p.cell().cell_id for p in plan.shard(i)]
        ran += [c.cell_id for c in cells]
    assert sorted(ran) == sorted(p.cell().cell_id for p in plan.cells)
    code, _, err = run_cli(capsys, "run", "--plan", str(out))
    assert code == 0 and len(started[-1][0]) == len(plan.cells) and started[-1][1] == plan_id(plan)


def test_a_plans_run_and_its_shards_are_one_matrix_run():
    from conformance.pipeline.matrix import matrix_run_of
    from conformance.rundir import new_run_id

    names = [new_run_id("plan-0123456789ab"), new_run_id("plan-0123456789ab-shard-2-of-4")]
    runs = {matrix_run_of({"run": "c", "run_dir": f"/x/{n}/runs/c"}) for n in names}
    assert runs == {"plan-0123456789ab"}
    assert matrix_run_of({"run": "c", "run_dir": "/x/20261126T010203Z-matrix-77/runs/c"}) == "20261126T010203Z-matrix-77"


# --- bad input ------------------------------------------------------------------------------------

GOOD = """\
description = "t"
seed = 1
group-size = 2
brokers = ["4.4.0"]
members = ["reference", "java@4.4.0"]
[classes]
faults = ["crash-restart"]
"""


@pytest.mark.parametrize("text, words", [
    ("colour = 1\n" + GOOD, ["unknown key 'colour'"]),
    (GOOD + "colour = 1\n", ["classes.colour must be a non-empty list of strings"]),
    (GOOD.replace('seed = 1\n', ''), ["no 'seed'"]),
    (GOOD.replace('"4.4.0"]', '"9.9.9"]'), ["broker '9.9.9' is not supported"]),
    (GOOD.replace('"java@4.4.0"', '"jav@4.4.0"'), ["unknown kind 'jav'"]),
    (GOOD.replace('"java@4.4.0"', '"java@1.0.0"'), ["java@1.0.0", "2.4.0"]),
    (GOOD.replace('"java@4.4.0"', '"reference@0.1.0"'), ["reference@0.1.0 twice"]),
    (GOOD.replace('"crash-restart"', '"crash-restrat"'), ["classes.faults", "unknown scenario 'crash-restrat'"]),
    (GOOD.replace('group-size = 2', 'group-size = 1'), ["group-size must be an integer from 2"]),
    (GOOD.replace('group-size = 2', 'group-size = "2"'), ["group-size must be an integer"]),
    (GOOD + '[[must-have]]\nname = "x"\nscenario = "pause"\nclients = ["java"]\n', ["must-have #1", "no 'broker'"]),
    (GOOD.replace('members = ["reference", "java@4.4.0"]', 'members = ["java@4.4.0"]\n')
     .replace('"crash-restart"', '"subscription-change"').replace("group-size = 2", "group-size = 2")
     .replace('[classes]', '[[must-have]]\nname = "n"\nscenario = "leader-rotation"\nclients = ["reference/skip-revok"]\n'
              'broker = "4.4.0"\n[classes]'), ["unknown fault 'skip-revok'"]),
    ("seed = [", ["is not TOML"]),
    ("\xff", ["not TOML"]),
])
def test_bad_matrix_file_is_one_line_and_exit_2_and_writes_nothing(started, capsys, tmp_path, text, words):
    matrix = tmp_path / "m.toml"
    matrix.write_text(text, encoding="utf-8")
    out = tmp_path / "plan.json"
    code, lines, err = run_cli(capsys, "plan", str(matrix), "-o", str(out))
    assert code == 2 and len(err) == 1 and err[0].startswith("conformance: "), err
    assert "Traceback" not in err[0]
    for word in words:
        assert word in err[0], err
    assert not out.exists() and not lines


@pytest.mark.parametrize("argv, words", [
    (["--shards", "0"], ["'0' is not a shard count"]),
    (["--shards", "3"], ["--shards 3", "only 2 cell(s)"]),
    (["--seed", "-1"], ["is not a seed"]),
])
def test_bad_plan_options(started, capsys, tmp_path, argv, words):
    out = tmp_path / "plan.json"
    try:
        code = cli.main(["plan", str(MATRICES / "smoke.toml"), *argv, "-o", str(out)])
    except SystemExit as exc:  # argparse's own refusals (a type error) exit
        code = exc.code
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1, err
    for word in words:
        assert word in err[0], err
    assert not out.exists()


def test_missing_matrix_file_and_output_a_directory(started, capsys, tmp_path):
    code, _, err = run_cli(capsys, "plan", str(tmp_path / "none.toml"), "-o", str(tmp_path / "p.json"))
    assert code == 2 and err == [f"conformance: cannot read matrix file {tmp_path / 'none.toml'}: No such file or directory"]
    code, _, err = run_cli(capsys, "plan", str(MATRICES / "smoke.toml"), "-o", str(tmp_path))
    assert code == 2 and len(err) == 1 and "a directory" in err[0]


@pytest.mark.parametrize("argv, words", [
    (["--shard", "3/2"], ["give I/N with 1 <= I <= N"]),
    (["--shard", "1/3"], ["planned in 2 shard(s)", "give I/2"]),
    (["--shard", "1/2", "--scenario", "pause"], ["drop --scenario"]),
    (["--shard", "1/2", "--seed", "3"], ["drop --seed"]),
])
def test_bad_run_plan_is_one_line_and_starts_nothing(started, capsys, tmp_path, argv, words):
    plan = tmp_path / "plan.json"
    assert run_cli(capsys, "plan", str(MATRICES / "smoke.toml"), "--shards", "2", "-o", str(plan))[0] == 0
    code, _, err = run_cli(capsys, "run", "--plan", str(plan), *argv)
    assert code == 2 and len(err) == 1, err
    for word in words:
        assert word in err[0], err
    assert not started


@pytest.mark.parametrize("content, words", [
    ("{", ["not a plan file"]),
    ('{"plan": 99}', ["not a plan file of this suite"]),
    ('{"plan": 1, "cells": []}', ["not a usable plan file", "no 'matrix'"]),
])
def test_damaged_plan_file_is_one_line(started, capsys, tmp_path, content, words):
    plan = tmp_path / "plan.json"
    plan.write_text(content)
    code, _, err = run_cli(capsys, "run", "--plan", str(plan))
    assert code == 2 and len(err) == 1, err
    for word in words:
        assert word in err[0], err
    assert not started


def test_shard_without_plan(started, capsys):
    code, _, err = run_cli(capsys, "run", "--shard", "1/2")
    assert code == 2 and err == ["conformance: --shard needs --plan: a shard is part of a plan file (conformance plan)"]
