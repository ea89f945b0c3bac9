"""Bad input to the ``conformance`` command: one plain line on stderr and exit 2, before anything starts.

Every test runs the command in-process (``conformance.cli.main``) with the matrix runner
replaced by one that fails the test: a mistake must be found before a broker, a member or an
install starts. Registry look-ups are replaced too, so no test needs the network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import cli, config
from conformance.members import versions
from conformance.members.spec import MemberSpec
from conformance.run import command
from conformance.run.matrix import MatrixResult, build_cells, run_dir_names
from conformance.scenarios.catalog import SCENARIOS_DIR, get_scenario
from conformance.scenarios.parse import load_scenario
from conformance.scenarios.runner import Cell, reproduce_command

GOOD = """\
name mine
topic orders partitions=3
phase one
  start each
  await stable timeout=5s
"""


@pytest.fixture
def started(monkeypatch, tmp_path):
    """What reached the matrix runner (it runs nothing); registries answer from a fixed list."""
    calls: list[list[Cell]] = []

    def fake_run_matrix(cells, runs_dir=None, spark_master=None, label="matrix"):
        calls.append(list(cells))
        return MatrixResult(Path(runs_dir or tmp_path))

    monkeypatch.setattr(command, "run_matrix", fake_run_matrix)
    monkeypatch.setattr(command, "summary_table", lambda result: "")
    java = ("2.3.1", "2.4.0", "2.4.1", "3.9.1", "4.3.1", "4.4.0")
    monkeypatch.setattr(versions, "registry_says",
                        lambda kind, version: java if kind == "java" and version not in java else None)
    monkeypatch.setattr(config, "RUNS_DIR", tmp_path / "reports")
    return calls


def run_cli(capsys, *argv: str) -> tuple[int, list[str]]:
    """Exit status and the lines on stderr."""
    code = cli.main(list(argv))
    return code, capsys.readouterr().err.splitlines()


def assert_refused(code: int, err: list[str], *words: str) -> None:
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith("conformance: ") and "Traceback" not in err[0]
    for word in words:
        assert word in err[0], err


# ---------------------------------------------------------------- 1. a scenario file that is not UTF-8


def test_scenario_file_not_utf8(capsys, started, tmp_path) -> None:
    bad = tmp_path / "utf16.scenario"
    bad.write_bytes(b"\xff\xfe" + GOOD.encode("utf-16-le"))
    code, err = run_cli(capsys, "run", "--scenario", str(bad), "--clients", "reference")
    assert_refused(code, err, str(bad), "not UTF-8", "0xff")
    assert not started


# ---------------------------------------------------------------- 2. --runs-dir under a file


def test_runs_dir_under_a_file(capsys, started, tmp_path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code, err = run_cli(capsys, "run", "--scenario", "crash-restart", "--clients", "reference",
                        "--runs-dir", str(blocker / "sub" / "runs"))
    assert_refused(code, err, f"{blocker} is a file, not a directory")
    assert not started


# ---------------------------------------------------------------- 3. --clients ""


@pytest.mark.parametrize("clients", ["", ",", " , "])
def test_empty_clients_are_refused(capsys, started, clients: str) -> None:
    code, err = run_cli(capsys, "run", "--scenario", "crash-restart", "--clients", clients)
    assert_refused(code, err, "no member specs given")
    assert not started


# ---------------------------------------------------------------- 4. versions that do not exist or cannot run


@pytest.mark.parametrize("spec, words", [
    ("java@99.99.99", ("java@99.99.99", "closest: 4.4.0, 4.3.1")),
    ("reference@9.9", ("reference@9.9", "one version, 0.1.0")),
    ("java@2.3.0", ("java@2.3.0", "2.4.0 or later")),
    ("librdkafka@0.1", ("librdkafka@0.1", "1.6.1 or later")),
    # KIP-848: a +consumer spec of a kind or version that has no consumer-protocol member.
    ("sarama+consumer", ("sarama@1.61.1+consumer", "does not speak the consumer group protocol", "no KIP-848 member")),
    ("java@3.6.2+consumer", ("java@3.6.2+consumer", "java does from 3.7.0")),
    ("librdkafka@2.11.1+consumer", ("librdkafka@2.11.1+consumer", "librdkafka does from 2.12.0")),
    ("franz-go@1.20.2+consumer", ("franz-go@1.20.2+consumer", "franz-go does from 1.22.0")),
])
def test_bad_versions_are_refused_once_before_anything_starts(capsys, started, spec: str, words) -> None:
    code, err = run_cli(capsys, "run", "--scenario", "crash-restart", "--scenario", "partition",
                        "--clients", f"reference,{spec},{spec}")
    assert_refused(code, err, *words)
    assert not started


def test_installed_version_needs_no_registry(capsys, started, monkeypatch) -> None:
    monkeypatch.setattr(versions, "registry_says", lambda kind, version: pytest.fail("asked a registry"))
    monkeypatch.setattr(versions, "is_installed", lambda spec: True)
    code, err = run_cli(capsys, "run", "--scenario", "crash-restart", "--clients", "reference,java@3.9.1", "--seed", "1")
    assert code == 0, err
    assert len(started) == 1


# ---------------------------------------------------------------- 5. a scenario checked against the mix


@pytest.mark.parametrize("action, words", [
    ("kill m99", ("kill m99", "the mix has 2 member(s), m0 to m1")),
    ("pause reference for=1s", ("pause reference", "no reference member")),
])
def test_scenario_targets_are_checked_against_the_mix(capsys, started, tmp_path, action: str, words) -> None:
    path = tmp_path / "mine.scenario"
    path.write_text(GOOD + f"  {action}\n")
    code, err = run_cli(capsys, "run", "--scenario", str(path), "--clients", "java@4.4.0,java@4.4.0")
    assert_refused(code, err, f"{path}:6", *words)
    assert not started


def test_start_strategies_are_checked_against_the_mix(capsys, started, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(versions, "is_installed", lambda spec: True)
    path = tmp_path / "mine.scenario"
    path.write_text("members strategies=sticky\n" + GOOD)
    code, err = run_cli(capsys, "run", "--scenario", str(path), "--clients", "reference,librdkafka")
    assert_refused(code, err, "scenario mine", "librdkafka")
    assert not started


# ---------------------------------------------------------------- 6. one scenario given twice


def test_a_cell_given_twice_runs_once(capsys, started) -> None:
    code, err = run_cli(capsys, "run", "--scenario", "crash-restart", "--scenario", "crash-restart",
                        "--scenario", str(SCENARIOS_DIR / "crash-restart.scenario"), "--clients", "reference", "--seed", "3")
    assert code == 0, err
    assert [len(cells) for cells in started] == [1]
    assert err == ["conformance: scenario crash-restart is given more than once with the same mix, broker and seed; "
                   "its cell runs once",
                   f"conformance: scenario {SCENARIOS_DIR / 'crash-restart.scenario'} is given more than once with "
                   "the same mix, broker and seed; its cell runs once"]


def test_different_cells_with_one_id_get_their_own_run_directories(tmp_path) -> None:
    mine = tmp_path / "crash-restart.scenario"
    mine.write_text(GOOD.replace("name mine", "name crash-restart"))
    cells = build_cells(["crash-restart", str(mine)], [MemberSpec.parse("reference")], "4.4.0", 5)
    assert len(cells) == 2 and cells[0].cell_id == cells[1].cell_id
    names = run_dir_names(cells)
    assert names == [cells[0].cell_id, cells[0].cell_id + "--2"]


# ---------------------------------------------------------------- 7. reproduce replays exactly the scenario that ran


def test_reproduce_command_names_a_user_file_by_its_path(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "my dir" / "scenarios"
    folder.mkdir(parents=True)
    mine = folder / "crash-restart.scenario"
    mine.write_text(GOOD.replace("name mine", "name crash-restart"))
    monkeypatch.chdir(tmp_path)
    user = Cell(load_scenario(Path("my dir/scenarios/crash-restart.scenario")), (MemberSpec.parse("reference"),), "4.4.0", 9)
    assert f"--scenario '{mine}'" in reproduce_command(user)
    builtin = Cell(get_scenario("crash-restart"), (MemberSpec.parse("reference"),), "4.4.0", 9)
    assert reproduce_command(builtin) == ("conformance run --scenario crash-restart --clients reference@0.1.0 "
                                          "--broker 4.4.0 --seed 9")


def _manifest(run_dir: Path, scenario, **extra) -> Path:
    run_dir.mkdir(parents=True)
    data = {"scenario": scenario.name, "scenario_file": str(scenario.source), "seed": 9, "broker_version": "4.4.0",
            "members": [{"spec": "reference@0.1.0"}], **extra}
    (run_dir / "manifest.json").write_text(json.dumps(data))
    return run_dir


def test_reproduce_replays_the_user_file_not_the_builtin_of_its_name(tmp_path) -> None:
    mine = tmp_path / "scenarios" / "crash-restart.scenario"
    mine.parent.mkdir()
    mine.write_text(GOOD.replace("name mine", "name crash-restart"))
    run_dir = _manifest(tmp_path / "run", load_scenario(mine))
    [cell] = command.cells_from_manifests(run_dir)
    assert cell.scenario.source == mine and cell.scenario.topics == {"orders": 3}
    [builtin] = command.cells_from_manifests(_manifest(tmp_path / "run2", get_scenario("crash-restart")))
    assert builtin.scenario == get_scenario("crash-restart")


def test_reproduce_a_builtin_recorded_by_another_checkout_is_the_builtin(tmp_path) -> None:
    other = Path("/elsewhere/checkout/fixtures/scenarios/crash-restart.scenario")
    run_dir = _manifest(tmp_path / "run", get_scenario("crash-restart"), scenario_file=str(other))
    [cell] = command.cells_from_manifests(run_dir)
    assert cell.scenario == get_scenario("crash-restart")


def test_reproduce_a_missing_user_file_is_one_plain_line(capsys, started, tmp_path) -> None:
    mine = tmp_path / "gone.scenario"
    mine.write_text(GOOD)
    run_dir = _manifest(tmp_path / "run", load_scenario(mine))
    mine.unlink()
    code, err = run_cli(capsys, "reproduce", str(run_dir))
    assert_refused(code, err, "no longer exists", str(mine))
    assert not started


@pytest.mark.parametrize("manifest, words", [
    ({"scenario": "crash-restart"}, ("it has no 'members' field",)),
    ([1, 2], ("not a JSON object",)),
    ({"scenario": "crash-restart", "members": [{"spec": "reference"}], "broker_version": "4.4.0", "seed": "x"},
     ("'seed' an integer",)),
])
def test_reproduce_bad_manifest_is_a_plain_message(capsys, started, tmp_path, manifest, words) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    code, err = run_cli(capsys, "reproduce", str(tmp_path))
    assert_refused(code, err, "not a usable manifest", *words)
    assert "Error(" not in err[0]


def test_reproduce_manifest_not_json(capsys, started, tmp_path) -> None:
    (tmp_path / "manifest.json").write_bytes(b"{\xff")
    code, err = run_cli(capsys, "reproduce", str(tmp_path))
    assert_refused(code, err, "not a usable manifest")


# ---------------------------------------------------------------- 8. report names what it skips


def test_report_names_every_directory_it_skips(capsys, tmp_path, monkeypatch) -> None:
    import conformance.pipeline as pipeline
    import conformance.pipeline.timelines as timelines
    import conformance.report.site as site

    judged: list[list[Path]] = []
    monkeypatch.setattr(pipeline, "judge", lambda run_dirs, out, master=None: judged.append(list(run_dirs)) or [])
    monkeypatch.setattr(timelines, "timelines", lambda out, master=None: {})
    monkeypatch.setattr(site, "write_site", lambda verdicts, out, tl, **kw: {
        "summary": {"cells": 2, "passed": 2, "failed": 0, "incomplete": 0}})
    parent = tmp_path / "reports"
    for cell in ("a", "b", "c"):
        for sub in ("members", "logs"):
            (parent / "m1" / "runs" / cell / sub).mkdir(parents=True)
    for cell in ("a", "c"):
        (parent / "m1" / "runs" / cell / "manifest.json").write_text("{}")
    (parent / "loose").mkdir()
    (parent / "loose" / "wire.jsonl").write_text("")
    (parent / "m1" / "pipeline" / "tables" / "members").mkdir(parents=True)
    (parent / "m1" / "pipeline" / "staging").mkdir(parents=True)          # the judge's staged lines: no run
    (parent / "m1" / "pipeline" / "staging" / "nemesis.jsonl").write_text("")
    empty = tmp_path / "empty"
    empty.mkdir()

    code, err = run_cli(capsys, "report", str(parent), str(empty), "--out", str(tmp_path / "site"))
    assert code == 0
    assert [[p.name for p in dirs] for dirs in judged] == [["a", "c"]]
    assert sorted(err) == sorted([
        f"conformance: skipped {empty}: no manifest.json in it or below: no run directory to report",
        f"conformance: skipped {parent / 'loose'}: no manifest.json: a run that stopped before its cluster started, "
        "or not a run directory",
        f"conformance: skipped {parent / 'm1' / 'runs' / 'b'}: no manifest.json: a run that stopped before its "
        "cluster started, or not a run directory",
    ])


def test_report_out_under_a_file(capsys, tmp_path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text("{}")
    (tmp_path / "afile").write_text("")
    code, err = run_cli(capsys, "report", str(tmp_path / "run"), "--out", str(tmp_path / "afile" / "site"))
    assert_refused(code, err, "is a file, not a directory")


# ---------------------------------------------------------------- --spark-master and help texts


@pytest.mark.parametrize("url", ["notaurl", "local[0]", "spark://host", "spark://host:99999", "local[two]", ""])
def test_bad_spark_master_is_refused_before_the_run(capsys, started, url: str) -> None:
    code, err = run_cli(capsys, "run", "--scenario", "crash-restart", "--clients", "reference", "--spark-master", url)
    assert_refused(code, err, "--spark-master")
    assert not started


@pytest.mark.parametrize("url", ["local", "local[2]", "local[*]", "local[4,2]", "local-cluster[2,1,1024]",
                                 "spark://127.0.0.1:7077", "spark://a:7077,b:7077", "yarn", "k8s://https://k:6443"])
def test_spark_master_forms_spark_accepts(url: str) -> None:
    from conformance.spark_master import check_spark_master
    assert check_spark_master(url) == url


def help_text(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    return capsys.readouterr().out


def test_help_texts_are_plain_and_complete(capsys) -> None:
    report = help_text(capsys, "report")
    assert "``" not in report and ":mod:" not in report
    reproduce = help_text(capsys, "reproduce")
    assert "where the new run directory goes" in reproduce and "Spark master URL" in reproduce
    run = " ".join(help_text(capsys, "run").split())
    assert f"supported: {', '.join(config.BROKER_VERSIONS)}" in run


@pytest.mark.parametrize("clients, words", [("", ("no member specs given",)),
                                             ("reference,java@99.99.99", ("java@99.99.99", "closest: 4.4.0"))])
def test_setup_refuses_bad_clients_before_installing(capsys, started, monkeypatch, clients: str, words) -> None:
    import conformance.members.install as install
    monkeypatch.setattr(install, "ensure_client", lambda spec: pytest.fail(f"installed {spec}"))
    code, err = run_cli(capsys, "setup", "--clients", clients)
    assert_refused(code, err, *words)


@pytest.mark.parametrize("argv, line", [
    (["run", "--seed", "abc"], "conformance run: argument --seed: 'abc' is not a seed: give an integer from 0 to "
                               "9223372036854775807 (see conformance run --help)"),
    (["run", "--seed", "9223372036854775808"], "conformance run: argument --seed: '9223372036854775808' is not a seed: "
                                               "give an integer from 0 to 9223372036854775807 (see conformance run --help)"),
    (["run", "--seed=-1"], "conformance run: argument --seed: '-1' is not a seed: give an integer from 0 to "
                           "9223372036854775807 (see conformance run --help)"),
    ([], "conformance: the following arguments are required: COMMAND (see conformance --help)"),
    (["report", "somewhere"], "conformance report: one of the arguments --out --publish is required "
                              "(see conformance report --help)"),
])
def test_a_wrong_option_is_one_line(capsys, argv, line: str) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err == line + "\n"
