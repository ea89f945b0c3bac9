"""The end-to-end slice: reference, java, librdkafka, sarama and franz-go in one group, for real.

Clean: ``leader-rotation``, ``crash-restart`` and ``upgrade-eager-to-cooperative``
pass every invariant, and the upgrade really starts eager and ends cooperative
for every member (librdkafka, which cannot mix assignors, included). The same
slice with a misbehaving reference consumer must fail, naming the invariant it
breaks: ``leader-reassigns-owned`` (an eager-style leader inside a cooperative
group) breaks R1; ``skip-revoke`` (keeps fetching what it was told to give
up) breaks R2. The faulty members run through ``leader-rotation`` (the
reference leads the first generations there, and every join moves partitions
away from it). The container path runs the clean ``crash-restart`` cell again
(``--backend docker``: broker, toxiproxy and members as containers), and its
verdict must be the processes cell's, invariant by invariant. The cells run
once, judged together in one Spark session.

CI runs the clean ``crash-restart`` cell on each backend (one real cell per
backend; the checks the other cells exercise are shown failing on recorded real
runs and their mutants in CI); the nightly tier (``pytest --nightly``) adds the
other two clean scenarios and the two faulty-reference cells.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.containers.engine import engine_for_tests
from conformance.members.spec import parse_specs
from conformance.pipeline.matrix import cell_passed
from conformance.run.matrix import build_cells, run_matrix

# Six real cells (about 1-3 minutes each on two cores) and one judging pass.
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(2400)]

SLICE = "reference,java,librdkafka,sarama,franz-go"
SCENARIOS = ["leader-rotation", "crash-restart", "upgrade-eager-to-cooperative"]
SEED = 20261121


#: The clean scenario CI runs (on both backends); the others are the nightly tier's.
CI_SCENARIO = "crash-restart"


def _nightly(config: pytest.Config) -> bool:
    return bool(config.getoption("--nightly")) or os.environ.get("CONFORMANCE_NIGHTLY") == "1"


@pytest.fixture(scope="module")
def slice_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    nightly = _nightly(request.config)
    cells = build_cells(SCENARIOS if nightly else [CI_SCENARIO], parse_specs(SLICE), "4.4.0", SEED)
    for faults in ("/leader-reassigns-owned", "/skip-revoke") if nightly else ():
        specs = parse_specs(SLICE.replace("reference", "reference" + faults, 1))
        cells += build_cells(["leader-rotation"], specs, "4.4.0", SEED)
    engine, _ = engine_for_tests()
    if engine is not None:   # without an engine, the container test says why it skips
        cells += [replace(c, backend="docker") for c in build_cells(["crash-restart"], parse_specs(SLICE), "4.4.0", SEED)]
    result = run_matrix(cells, runs_dir=tmp_path_factory.mktemp("e2e"), label="e2e-slice")
    assert not result.errors, f"suite errors: {result.errors}"
    by_key = {}
    for v in result.verdicts:
        fault = next((m.split("/", 1)[1] for m in v["members"] if m.startswith("reference") and "/" in m), "")
        backend = json.loads((Path(v["run_dir"]) / "manifest.json").read_text())["backend"]
        by_key[(v["scenario"], fault) if backend == "processes" else (v["scenario"], fault, backend)] = v
    return result, by_key


def _failing(verdict: dict) -> dict[str, str]:
    return {k: "; ".join(x["message"] for x in inv.get("violations", [])[:2]) or str(inv.get("error"))
            for k, inv in verdict["invariants"].items() if inv["status"] != "pass"}


@pytest.mark.parametrize("scenario", [pytest.param(s, marks=() if s == CI_SCENARIO else pytest.mark.nightly)
                                      for s in SCENARIOS])
def test_clean_slice_passes_every_invariant(slice_run, scenario: str) -> None:
    _, by_key = slice_run
    verdict = by_key[(scenario, "")]
    assert cell_passed(verdict), f"{scenario}: {_failing(verdict)} (run {verdict['run']})"
    assert verdict["metrics"]["protocol"] == "cooperative"


@pytest.mark.nightly
def test_every_kind_led_in_leader_rotation(slice_run) -> None:
    _, by_key = slice_run
    leaders = by_key[("leader-rotation", "")]["metrics"]["leaders"]
    assert set(leaders) >= {"reference", "java", "librdkafka", "sarama", "franz-go"}, leaders


@pytest.mark.nightly
def test_upgrade_moves_every_member_from_eager_to_cooperative(slice_run) -> None:
    _, by_key = slice_run
    run_dir = Path(by_key[("upgrade-eager-to-cooperative", "")]["run_dir"])
    for history in sorted((run_dir / "members").glob("m*.jsonl")):
        events = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]
        protocols = [e["protocol"] for e in events if e.get("event") == "assigned"]
        assert protocols[:1] == ["eager"] and protocols[-1:] == ["cooperative"], f"{history.name}: {protocols}"


@pytest.mark.nightly
def test_leader_reassigning_owned_partitions_fails_r1(slice_run) -> None:
    _, by_key = slice_run
    verdict = by_key[("leader-rotation", "leader-reassigns-owned")]
    assert verdict["invariants"]["R1"]["status"] == "fail", _failing(verdict)
    assert verdict["invariants"]["R1"]["violations"][0]["invariant"] == "R1"


@pytest.mark.nightly
def test_skipping_revoke_fails_r2(slice_run) -> None:
    _, by_key = slice_run
    verdict = by_key[("leader-rotation", "skip-revoke")]
    assert verdict["invariants"]["R2"]["status"] == "fail", _failing(verdict)


def test_the_container_cell_gets_the_processes_cells_verdict(slice_run) -> None:
    _, by_key = slice_run
    if ("crash-restart", "", "docker") not in by_key:
        pytest.skip(f"no Docker engine can be had: {engine_for_tests()[1]}")
    processes, docker = by_key[("crash-restart", "")], by_key[("crash-restart", "", "docker")]
    statuses = {name: {k: inv["status"] for k, inv in v["invariants"].items()}
                for name, v in (("processes", processes), ("docker", docker))}
    assert docker["verdict"] == processes["verdict"], (_failing(docker), _failing(processes))
    assert statuses["docker"] == statuses["processes"], statuses
    manifest = json.loads((Path(docker["run_dir"]) / "manifest.json").read_text())
    assert manifest["complete"] is True and "kill" in (Path(docker["run_dir"]) / "nemesis.jsonl").read_text()


def test_run_directory_is_complete(slice_run) -> None:
    result, _ = slice_run
    assert (result.path / "summary.json").exists()
    for run in (result.path / "runs").iterdir():
        for name in ("manifest.json", "wire.jsonl", "nemesis.jsonl"):
            assert (run / name).exists(), f"{run.name} lacks {name}"
        assert list((run / "members").glob("*.jsonl")), f"{run.name} has no histories"
        members = json.loads((run / "manifest.json").read_text())["members"]
        # The library each member really ran: librdkafka@2.16.1 is confluent-kafka 2.16.1, bundling librdkafka 2.16.0.
        assert {m["spec"].split("/")[0]: m["library_version"] for m in members} == {
            "reference@0.1.0": "0.1.0", "java@4.4.0": "4.4.0", "librdkafka@2.16.1": "2.16.0", "sarama@1.61.1": "1.61.1",
            "franz-go@1.22.3": "1.22.3"}
