"""Fuzzing the parsers of user input (hypothesis): any text or bytes parses or is a UsageError.

- a scenario file, as arbitrary text, as arbitrary bytes read from a file, and as lines built
  from the format's own words with awkward values (negative, huge, NaN, non-ASCII digits),
  which reach far deeper than random text: parse, or raise UsageError, nothing else; what
  parses also passes or fails :func:`check_targets` with a UsageError;
- a member spec and a ``--clients`` list: the same, and what parses round-trips;
- a version decision (:func:`conformance.members.versions.problem`) and a ``--spark-master`` URL:
  never anything but an answer or a UsageError.

Bounded (200 examples each, no deadline) so the file runs in seconds.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.errors import UsageError
from conformance.members import versions
from conformance.members.spec import KINDS, REFERENCE_FAULTS, MemberSpec, parse_specs
from conformance.scenarios.parse import ACTIONS, HEADERS, check_targets, load_scenario, parse_scenario
from conformance.spark_master import check_spark_master

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALUES = st.sampled_from(["0", "1", "-5", "12", "1000", "1001", "99999999999999999999", "nan", "inf", "-inf", "1e400",
                          "0.5", "1.5", "٣", "1_0", "1s", "0ms", "2.3s", "1440m", "1441m", "99999999999999m", "true",
                          "orders", "audit", "orders,audit", ",", "", "latency", "range", "cooperative-sticky",
                          "graceful", "kill", "upstream", "\x00", "é"])
KEYS = st.sampled_from(sorted({k for _, schema, _ in ACTIONS.values() for k in schema if k != "*"}
                              | {k for schema in HEADERS.values() for k in schema}
                              | {"latency", "jitter", "rate", "bytes", "nope"}))
TARGETS = st.sampled_from(["all", "each", "leader", "follower", "random", "reference", "m0", "m1", "m7", "m99",
                           "m٣", "stable", "drained", "orders", "audit", "1s", "-1s", "x"])
WORDS = st.one_of(TARGETS, st.builds("{}={}".format, KEYS, VALUES), VALUES)
STATEMENT = st.builds(lambda verb, words: " ".join([verb, *words]),
                      st.sampled_from([*ACTIONS, *HEADERS, "name", "describe", "expect", "phase", "bogus"]),
                      st.lists(WORDS, max_size=5))
SCENARIO_TEXT = st.builds(lambda head, body: "\n".join(["name fuzz", *head, "phase p", "  start all", *body]),
                          st.lists(STATEMENT, max_size=4), st.lists(STATEMENT, max_size=8))


def _parse_or_usage_error(text: str) -> None:
    try:
        scenario = parse_scenario(text, Path("fuzz.scenario"))
    except UsageError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    for kinds in ([], ["reference"], list(KINDS), ["java"] * 8):
        try:
            check_targets(scenario, kinds)
        except UsageError as exc:
            assert "\n" not in str(exc)


@FUZZ
@given(st.text(max_size=300))
def test_scenario_parser_on_any_text(text: str) -> None:
    _parse_or_usage_error(text)


@FUZZ
@given(SCENARIO_TEXT)
def test_scenario_parser_on_statements_with_awkward_values(text: str) -> None:
    _parse_or_usage_error(text)


_DIR = Path(tempfile.mkdtemp(prefix="conformance-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_fuzz_dir():
    """The module's scratch directory goes when its tests are done (a test run leaves nothing in /tmp)."""
    yield
    shutil.rmtree(_DIR, ignore_errors=True)


@FUZZ
@given(st.binary(max_size=300))
def test_scenario_file_of_any_bytes(data: bytes) -> None:
    path = _DIR / "fuzz.scenario"
    path.write_bytes(data)
    try:
        load_scenario(path)
    except UsageError as exc:
        assert "\n" not in str(exc)


SPEC_TEXT = st.one_of(
    st.text(max_size=60),
    st.builds(lambda kind, sep, version, faults: kind + sep + version + "".join("/" + f for f in faults),
              st.sampled_from([*KINDS, "jav", ""]), st.sampled_from(["@", "", "@@"]),
              st.text(max_size=12) | st.sampled_from(["4.4.0", "0.1.0", "1.0\n", "v1.61.1"]),
              st.lists(st.sampled_from([*REFERENCE_FAULTS, "", "x"]), max_size=3)),
)


@FUZZ
@given(SPEC_TEXT)
def test_member_spec_parser_on_any_text(text: str) -> None:
    try:
        spec = MemberSpec.parse(text)
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    assert MemberSpec.parse(str(spec)) == spec


@FUZZ
@given(st.lists(SPEC_TEXT, max_size=4).map(",".join))
def test_clients_list_on_any_text(text: str) -> None:
    try:
        specs = parse_specs(text)
    except UsageError:
        return
    assert specs


@FUZZ
@given(st.sampled_from(list(KINDS)), st.text(max_size=20),
       st.none() | st.lists(st.text(max_size=10) | st.sampled_from(["2.4.0", "4.4.0", "1.9.2"]), max_size=12))
def test_version_decision_on_any_version(kind: str, version: str, listed) -> None:
    found = versions.problem(kind, version, listed)
    assert found is None or found.startswith(f"{kind}@{version}: ")


@FUZZ
@given(st.text(max_size=40) | st.from_regex(r"(local\[[0-9*, ]{0,6}\]|spark://[a-z0-9.:,]{0,20}|k8s://.{0,20})",
                                           fullmatch=True))
def test_spark_master_on_any_text(url: str) -> None:
    try:
        assert check_spark_master(url) == url
    except UsageError:
        pass


# The command line as a whole: run, reproduce, report and decode with arguments drawn from
# awkward values and prepared paths. Nothing starts (the matrix runner and the judge are
# replaced); what may come out is a status, or argparse's exit 2, never an exception.
_PATHS = _DIR / "paths"
(_PATHS / "dir").mkdir(parents=True, exist_ok=True)
(_PATHS / "file").write_text("x")
(_PATHS / "bad.scenario").write_bytes(b"\xff\xfe")
(_PATHS / "run").mkdir(exist_ok=True)
(_PATHS / "run" / "manifest.json").write_text('{"scenario": "crash-restart", "members": [{"spec": "x"}]}')
PATH_ARGS = st.sampled_from([str(_PATHS / p) for p in ("dir", "file", "file/sub", "bad.scenario", "run", "nope")])
ARG = st.one_of(VALUES, PATH_ARGS, st.sampled_from(["crash-restart", "reference", "java@99.99.99", "reference@9.9",
                                                    "librdkafka@0.1", "local[2]", "notaurl", "4.4.0", "9.9"]),
                st.text(max_size=8))
OPTIONS = {
    "run": ["--scenario", "--clients", "--broker", "--seed", "--runs-dir", "--spark-master"],
    "reproduce": ["--runs-dir", "--spark-master"],
    "report": ["--out", "--spark-master", "--check"],
    "decode": ["subscription", "assignment", "userdata", "--assignor"],
}
ARGV = st.sampled_from(sorted(OPTIONS)).flatmap(lambda command: st.builds(
    lambda words: [command, *words],
    st.lists(st.one_of(st.sampled_from(OPTIONS[command]), ARG), max_size=6)))


@FUZZ
@given(ARGV)
def test_command_line(argv: list[str]) -> None:
    import contextlib
    import io

    import conformance.pipeline as pipeline
    import conformance.pipeline.timelines as timelines
    import conformance.report.site as site
    from conformance import cli, config
    from conformance.run import command
    from conformance.run.matrix import MatrixResult

    patches = [(command, "run_matrix", lambda cells, runs_dir=None, spark_master=None, label="": MatrixResult(_DIR)),
               (command, "summary_table", lambda result: ""),
               (versions, "registry_says",
                lambda kind, version: ("2.4.0", "4.4.0") if kind == "java" and version not in ("2.4.0", "4.4.0")
                else None),
               (versions, "is_installed", lambda spec: False),
               (pipeline, "judge", lambda *a, **k: []),
               (timelines, "timelines", lambda *a, **k: {}),
               (site, "write_site", lambda *a, **k: {"summary": {"cells": 0, "passed": 0, "failed": 0, "incomplete": 0}}),
               (config, "RUNS_DIR", _DIR / "reports")]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    for obj, name, value in patches:
        setattr(obj, name, value)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = cli.main(argv)
            except SystemExit as stop:  # argparse: a wrong option (2) or --help (0)
                code = stop.code
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)
    assert code in (0, 1, 2), (argv, code, err.getvalue())
    lines = err.getvalue().splitlines()
    assert all(line.startswith(("conformance", "error at byte ")) for line in lines), (argv, lines)  # decode: its own format
    if code == 2:
        assert len(lines) == 1, (argv, lines)
