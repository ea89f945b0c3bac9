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

import tempfile
from pathlib import Path

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
