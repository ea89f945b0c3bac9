"""A member release that cannot work with the broker is refused before anything starts.

The facts are each kind module's ``BROKER_LIMITS`` (:class:`conformance.members.kinds.BrokerLimit`);
the one decision is :func:`conformance.members.versions.broker_problem`, asked by ``run`` and
``reproduce`` for every cell (:func:`conformance.preflight.check_cell`) and by ``plan`` for
every member and broker of the matrix. The refusal is one line on stderr and exit 2; no test here
starts a cell: the matrix runner is replaced by one that records what reached it, and no registry
may be asked (the refusal is offline).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import cli, config
from conformance.members import versions
from conformance.members.kinds import broker_limit
from conformance.members.versions import broker_problem, brokers_for
from conformance.run import command
from conformance.run.matrix import MatrixResult

#: The refusal of librdkafka 1.6.1 on the default broker, whole.
REFUSED_1_6_1 = ("librdkafka@1.6.1 cannot work with broker 4.4.0: librdkafka before 1.8.0 queries logical offsets "
                 "(BEGINNING, END: auto.offset.reset) with ListOffsets v0, which Kafka 4.0 removed (KIP-896), so it "
                 "consumes nothing; choose librdkafka@1.8.2 or later, or broker 3.9.2 or older")


@pytest.fixture
def started(monkeypatch, tmp_path):
    """What reached the matrix runner (it runs nothing); asking a registry fails the test."""
    calls: list[list] = []

    def fake_run_matrix(cells, runs_dir=None, spark_master=None, label="matrix"):
        calls.append(list(cells))
        return MatrixResult(Path(runs_dir or tmp_path))

    monkeypatch.setattr(command, "run_matrix", fake_run_matrix)
    monkeypatch.setattr(command, "summary_table", lambda result: "")
    monkeypatch.setattr(versions, "registry_says", lambda kind, version: pytest.fail(f"asked about {kind}@{version}"))
    monkeypatch.setattr(versions, "is_installed", lambda spec: True)
    monkeypatch.setattr(config, "RUNS_DIR", tmp_path / "reports")
    return calls


def refusal(capsys, *argv: str) -> str:
    """The one line ``conformance argv`` printed on its way to exit 2."""
    code = cli.main(list(argv))
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("conformance: "), (code, err)
    return err[0].removeprefix("conformance: ")


def test_librdkafka_before_1_8_cannot_work_with_kafka_4() -> None:
    # ListOffsets v0 is gone from 4.0.0 on (3.9.2 still has it); librdkafka negotiates it from 1.8.0.
    assert broker_problem("librdkafka", "1.6.1", "4.4.0") == REFUSED_1_6_1
    assert broker_problem("librdkafka", "1.7.0", "4.0.2").startswith("librdkafka@1.7.0 cannot work with broker 4.0.2")
    assert broker_problem("librdkafka", "1.7.0", "3.9.2") is None
    assert broker_problem("librdkafka", "1.8.2", "4.4.0") is None and broker_limit("librdkafka", "1.8.0", "4.0.0") is None
    assert brokers_for("librdkafka", "1.6.1") == ("3.9.2", "3.8.1", "3.7.2")
    assert brokers_for("librdkafka", "1.8.2") == config.BROKER_VERSIONS
    assert brokers_for("java", "2.4.1") == config.BROKER_VERSIONS  # a kind without BROKER_LIMITS


def test_run_refuses_the_pair_before_anything_starts_and_takes_an_older_broker(capsys, started) -> None:
    # The default broker is 4.4.0: librdkafka 1.6.1 is refused there, with what would work.
    assert refusal(capsys, "run", "--scenario", "crash-restart", "--clients", "reference,librdkafka@1.6.1") == REFUSED_1_6_1
    assert not started
    # On 3.9.2, which it can work with, the same mix reaches the runner.
    assert cli.main(["run", "--scenario", "crash-restart", "--clients", "reference,librdkafka@1.6.1",
                     "--broker", "3.9.2", "--seed", "1"]) == 0
    [[cell]] = started
    assert cell.broker == "3.9.2"


def test_reproduce_refuses_a_recorded_pair_the_suite_now_knows_cannot_work(capsys, started, tmp_path) -> None:
    # A run recorded before the fact was known: librdkafka 1.7.0 on broker 4.4.0.
    (tmp_path / "manifest.json").write_text(json.dumps({
        "scenario": "crash-restart", "scenario_file": None, "seed": 3, "broker_version": "4.4.0",
        "members": [{"spec": "reference@0.1.0"}, {"spec": "librdkafka@1.7.0"}]}), encoding="utf-8")
    assert refusal(capsys, "reproduce", str(tmp_path)).startswith("librdkafka@1.7.0 cannot work with broker 4.4.0: ")
    assert not started


MATRIX = """\
description = "an old librdkafka"
seed = 1
group-size = 2
brokers = [BROKERS]
members = ["reference", "librdkafka@1.7.0"]
[classes]
faults = ["crash-restart"]
"""


def test_plan_refuses_a_member_that_cannot_meet_one_of_its_brokers(capsys, started, tmp_path) -> None:
    # A plan puts every member on every broker of the matrix, so one pair that cannot work stops it.
    matrix, out = tmp_path / "m.toml", tmp_path / "plan.json"
    matrix.write_text(MATRIX.replace("BROKERS", '"4.4.0", "3.9.2"'), encoding="utf-8")
    line = refusal(capsys, "plan", str(matrix), "-o", str(out))
    assert line.startswith(f"{matrix}: members and brokers: librdkafka@1.7.0 cannot work with broker 4.4.0: ")
    assert line.endswith("(a plan puts every member on every broker: drop one of the two)") and not out.exists()
    # Without 4.4.0 the plan is written.
    matrix.write_text(MATRIX.replace("BROKERS", '"3.9.2"'), encoding="utf-8")
    assert cli.main(["plan", str(matrix), "-o", str(out)]) == 0 and out.exists()
