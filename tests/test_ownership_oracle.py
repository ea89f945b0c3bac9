"""The judge's Spark ``ownership`` table equals the plain-Python derivation (conformance.ownership)
on every recorded real run of fixtures/real-runs/ (real timing, restarts, kills, faults) and on
the hand-made stories (kills, crashes, members with no name, runs cut short).

The real runs are judged by the session's shared judge of recorded runs (tests/recorded.py), the
stories by the story catalog's shared judge. Every row is compared: member,
incarnation, partition, start, end and why it ended.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import config, ownership
from conformance.history import read_history
from conformance.jsonl import read_records
from recorded import TEST_TIMEOUT, copy_run, unpack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

REAL_RUNS = sorted((config.FIXTURES_DIR / "real-runs").glob("*.tar.xz"))


def _python_ownership(run_dir: Path) -> set[tuple]:
    """Every ownership interval of ``run_dir`` by conformance.ownership, as the Spark table's rows."""
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    nemesis = read_records(run_dir / "nemesis.jsonl") if (run_dir / "nemesis.jsonl").exists() else []
    wire = read_records(run_dir / "wire.jsonl") if (run_dir / "wire.jsonl").exists() else []
    histories = {p.stem: [e for _, e, _ in read_history(p.read_text(encoding="utf-8").splitlines()) if e]
                 for p in sorted((run_dir / "members").glob("*.jsonl"))}
    seen = [e["ts"] for evs in histories.values() for e in evs] + [r["ts"] for r in wire if "ts" in r]
    run_end = manifest.get("end_ts")
    run_end = float(run_end) if run_end is not None else (max(seen) if seen else 0.0)
    rows = set()
    for member, events in histories.items():
        ends = ownership.incarnation_ends(
            member, events, run_end_ts=run_end,
            kills=[n["ts"] for n in nemesis if n.get("fault") == "kill" and n.get("phase") == "invoke"
                   and n.get("target") == member],
            exits=[n["ts"] for n in manifest.get("notes") or [] if isinstance(n, dict) and n.get("exited") == member],
            frame_ts=[r["ts"] for r in wire if r.get("member") == member])
        rows |= {(run_dir.name, i.member, i.incarnation, i.topic, i.partition, i.start_ts, i.end_ts, i.end_reason)
                 for i in ownership.intervals(member, events, ends)}
    return rows


def _spark_ownership(out: Path) -> set[tuple]:
    from conformance.pipeline.session import get_session

    table = get_session().read.parquet(str(out / "tables" / "ownership"))
    return {(r["run"], r["member"], r["incarnation"], r["topic"], r["partition"], r["start_ts"], r["end_ts"],
             r["end_reason"]) for r in table.collect()}


def _assert_equal(spark: set[tuple], python: set[tuple]) -> None:
    assert python, "no ownership at all: the comparison would be empty"
    assert sorted(spark - python) == [] and sorted(python - spark) == [], (
        f"only Spark: {sorted(spark - python)[:10]}; only Python: {sorted(python - spark)[:10]}")


def recorded_copies(root: Path) -> dict[str, Path]:
    """Every recorded real run of fixtures/real-runs/, as recorded (the shared judge judges each once)."""
    return {archive.name: copy_run(unpack(archive, root / "original" / archive.name), root / "runs" / archive.name,
                                   "-oracle") for archive in REAL_RUNS}


def test_spark_ownership_equals_the_python_derivation_on_real_runs(recorded_verdicts, recorded_judge):
    # The judge's rows of each copy are under the run id it was judged as (another module's copy
    # of the same run, maybe): the Python rows are labelled with that id.
    assert len(recorded_verdicts) == len(REAL_RUNS) >= 4 and recorded_judge.tables is not None
    python: set[tuple] = set()
    for v in recorded_verdicts.values():
        run_dir = Path(v["run_dir"])
        judged_as = recorded_judge.judged_as[run_dir.resolve()]
        python |= {(judged_as, *row[1:]) for row in _python_ownership(run_dir)}
    runs = {row[0] for row in python}
    assert len(runs) == len(REAL_RUNS)
    _assert_equal({row for row in _spark_ownership(recorded_judge.tables.parent) if row[0] in runs}, python)


def test_spark_ownership_equals_the_python_derivation_on_the_stories(tmp_path_factory):
    from stories import judged_catalog

    out, verdicts = judged_catalog(tmp_path_factory.mktemp("pipeline-catalog"))
    dirs = [out.parent / "runs +1" / v["run"] for v in verdicts]
    assert all((d / "manifest.json").exists() for d in dirs)
    _assert_equal(_spark_ownership(out), set().union(*(_python_ownership(d) for d in dirs)))
