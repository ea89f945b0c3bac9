"""Member specs: KIND[@VERSION][+PROTOCOL][/FAULT...], with a clear error for every kind of mistake."""

import ast
import itertools
from pathlib import Path
from typing import Iterator

import pytest

from conformance import config, registries
from conformance.errors import SuiteError, UsageError
from conformance.members import known_issues, spec_grammar, versions
from conformance.members.kinds import default_version, java
from conformance.members.spec import CONSUMER_PROTOCOL_FAULTS, KINDS, REFERENCE_FAULTS, MemberSpec, parse_specs
from conformance.members.spec_grammar import split_spec
from conformance.pipeline import matrix


@pytest.mark.parametrize("text", ["reference", "java@3.9.1", "librdkafka@2.16.1", "sarama@1.60.1",
                                  "kafka-python@3.0.12", "reference/stale-owned-partitions",
                                  "reference@0.1.0/skip-revoke/slow-sync", "java@4.4.0+consumer",
                                  "reference+consumer/ack-unrevoked/stale-epoch", "librdkafka+consumer"])
def test_round_trip(text: str) -> None:
    spec = MemberSpec.parse(text)
    assert MemberSpec.parse(str(spec)) == spec


def test_default_version_is_pinned() -> None:
    assert MemberSpec.parse("java").version == default_version("java")
    assert MemberSpec.parse("java").label == f"java@{default_version('java')}"


@pytest.mark.parametrize("text, message", [
    ("", "empty member spec"),
    ("jav@1.0", "unknown kind 'jav'"),
    ("java@", "must be followed by a version"),
    ("java/skip-revoke", "faults are only for 'reference'"),
    ("reference/explode", "unknown fault 'explode' for a classic-protocol member; known faults: stale-owned-partitions"),
    ("reference/ack-unrevoked", "unknown fault 'ack-unrevoked' for a classic-protocol member"),
    ("reference+consumer/skip-revoke", "unknown fault 'skip-revoke' for a consumer-protocol member; known faults: "
                                       "ack-unrevoked"),
    ("java@4.4.0+kraft", "unknown group protocol 'kraft' after '\\+'; known: classic, consumer"),
    ("java+", "unknown group protocol '' after"),
    ("java@4.4.0+1", "unknown group protocol '1'"),
    ("java@3 9", "is not a version"),
])
def test_bad_specs_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        MemberSpec.parse(text)


def test_the_protocol_is_part_of_the_label_and_classic_is_never_written() -> None:
    assert MemberSpec.parse("java@4.4.0+consumer").label == "java@4.4.0+consumer"
    assert MemberSpec.parse("java@4.4.0+classic") == MemberSpec.parse("java@4.4.0")
    assert str(MemberSpec.parse("reference+classic/skip-revoke")) == f"reference@{default_version('reference')}/skip-revoke"
    assert MemberSpec.parse("reference+consumer/stale-epoch").protocol == "consumer"


def test_parse_specs_list() -> None:
    assert [s.kind for s in parse_specs("reference, java@2.8.1,sarama")] == ["reference", "java", "sarama"]
    with pytest.raises(UsageError):
        parse_specs(" , ")


def test_a_version_is_one_word_of_version_characters() -> None:
    with pytest.raises(UsageError, match="is not a version"):
        MemberSpec.parse("reference@0.1.0\n/skip-revoke")


# One grammar: every form of spec the grammar allows, read by MemberSpec.parse and by the readers of
# recorded specs (known issues, the matrix), which must agree with it word for word.
def _every_form() -> Iterator[str]:
    """Each kind with and without a version, with no, ``+classic`` and ``+consumer`` protocol, and
    the reference with no, one and two faults of its protocol."""
    for kind, version, protocol in itertools.product(KINDS, ("", "@1.2.3", f"@{default_version('java')}"),
                                                     ("", "+classic", "+consumer")):
        known = CONSUMER_PROTOCOL_FAULTS if protocol == "+consumer" else REFERENCE_FAULTS
        for faults in ((), known[:1], known[-2:]) if kind == "reference" else ((),):
            yield "/".join((kind + version + protocol, *faults))


FORMS = list(_every_form())


@pytest.mark.parametrize("text", FORMS)
def test_the_grammar_reads_every_form_as_member_spec_parses_it(text: str) -> None:
    spec = MemberSpec.parse(text)
    words = split_spec(text)
    assert (words.kind, words.version or default_version(words.kind), words.protocol or "classic",
            words.faults) == (spec.kind, spec.version, spec.protocol, spec.faults)
    # A recorded spec is str(MemberSpec): the readers see its words, and the matrix orders by them.
    assert split_spec(str(spec)) == (spec.kind, spec.version, None if spec.protocol == "classic" else spec.protocol,
                                     spec.faults)
    assert matrix._spec_sort_key(str(spec)) == (spec.kind, str(spec).removeprefix(f"{spec.kind}@"))


def test_known_issues_read_the_culprit_spec_as_member_spec_does() -> None:
    # For every row, the culprit spec at an affected version in every written form (a consumer-protocol
    # member, a faulted reference) matches as MemberSpec's kind and version say it should.
    seen = 0
    for row in known_issues.table():
        version = row.since or "0.0.1"
        assert row.affects(row.kind, version), row
        for text in (t for t in FORMS if split_spec(t).kind == row.kind):
            spec = MemberSpec.parse(text.replace("@1.2.3", f"@{version}"))
            written = str(spec)
            want = next((i for i in known_issues.issues_of(spec.kind, spec.version)
                         if i.invariant == row.invariant and i.explains(dict(row.evidence))), None)
            assert known_issues.match(row.invariant, written, dict(row.evidence)) == want, written
            seen += want is not None
    assert seen, "no form of any known issue's culprit matched: the agreement above proved nothing"


def test_no_second_spec_grammar_in_the_package() -> None:
    # A spec string is split by conformance/members/spec_grammar.py alone: no other module of the
    # package splits on '@' or tests for a '+PROTOCOL' or '@' by hand. known_issues.version_key cuts a
    # version's build suffix ('2.10.0+build'): a version, never a spec.
    root = Path(spec_grammar.__file__).parents[1]
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "spec_grammar.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            split = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                     and node.func.attr in ("split", "rsplit", "partition", "rpartition") and node.args
                     and isinstance(node.args[0], ast.Constant) and node.args[0].value in ("@", "+"))
            contains = (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
                        and isinstance(node.left.value, str) and any(c in node.left.value for c in "@+")
                        and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops))
            if split or contains:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert found == ["conformance/members/known_issues.py:40: version.split('+')"]


# Versions: the decision of conformance.members.versions, with the registry's list passed in.
MAVEN = ["0.8.2-beta", "2.3.1", "2.4.0", "2.4.1", "2.5.0", "3.9.0", "3.9.1", "4.0.0", "4.3.1", "4.4.0"]
PYPI = ["0.11.6", "1.0.0", "1.9.0", "1.9.2", "2.0.2", "2.15.0", "2.16.1"]


@pytest.mark.parametrize("kind, version, listed, message", [
    ("java", "99.99.99", MAVEN, "java@99.99.99: Maven Central (org.apache.kafka:kafka-clients) has no release 99.99.99; "
                                "closest: 4.4.0, 4.3.1, 4.0.0, 3.9.1"),
    ("java", "3.9.5", MAVEN, "closest: 4.3.1, 4.0.0, 3.9.1, 3.9.0"),
    ("java", "2.3.0", MAVEN, "java@2.3.0: the Java harness runs kafka-clients 2.4.0 or later (KIP-429 listener API); "
                             "the oldest that run: 2.4.0, 2.4.1, 2.5.0, 3.9.0"),
    ("java", "2.3.0", None, "java@2.3.0: the Java harness runs kafka-clients 2.4.0 or later (KIP-429 listener API); "
                            "choose 2.4.0 or later"),
    ("java", "2.3.1", MAVEN, "2.4.0 or later"),  # on Maven Central, yet too old for the harness
    ("reference", "9.9", None, "reference@9.9: the reference consumer is part of the suite and has one version, 0.1.0"),
    ("librdkafka", "0.1", None, "librdkafka@0.1: the harness rebalances cooperatively with Consumer.incremental_assign/unassign"),
    ("librdkafka", "0.11.6", PYPI, "the oldest that run: 1.9.0, 1.9.2, 2.0.2, 2.15.0"),
    ("librdkafka", "2.99.0", PYPI, "PyPI (confluent-kafka) has no release 2.99.0; closest: 2.16.1, 2.15.0, 2.0.2, 1.9.2"),
    ("sarama", "1.99.0", ["1.38.1", "1.61.1"], "the Go module proxy"),
    # pip takes 1.9 for 1.9.0; the suite names each release one way, and says which.
    ("librdkafka", "1.9", PYPI, "librdkafka@1.9: PyPI (confluent-kafka) lists this release as 1.9.0; "
                                "write librdkafka@1.9.0"),
    ("sarama", "1.18.0", ["1.18.0", "1.19.0", "1.30.0", "1.38.1", "1.61.1"],
     "sarama@1.18.0: the Sarama harness needs the ConsumerGroup API, which Sarama has from 1.19.0; "
     "the oldest that run: 1.19.0, 1.30.0, 1.38.1, 1.61.1"),
    ("sarama", "1.18.0", None, "choose 1.19.0 or later"),
    ("kafka-python", "1.4.7", ["1.4.7", "2.0.0", "2.3.3", "3.0.12"],
     "kafka-python@1.4.7: the kafka-python harness supports kafka-python 2.0.0 or later (1.x releases are not "
     "tried); the oldest that run: 2.0.0, 2.3.3, 3.0.12"),
])
def test_version_problems_name_the_closest_versions(kind: str, version: str, listed, message: str) -> None:
    found = versions.problem(kind, version, listed)
    assert found is not None and message in found
    assert found.count(",") < 6  # a few versions, not the registry's list


@pytest.mark.parametrize("kind, version, listed", [
    ("java", "4.4.0", MAVEN), ("java", "4.4.0", None), ("java", "99.0.0", None), ("reference", "0.1.0", None),
    ("librdkafka", "2.16.1", PYPI), ("sarama", "v0.0.0-20250101000000-abcdefabcdef", ["1.61.1"]),
])
def test_versions_that_may_run(kind: str, version: str, listed) -> None:
    assert versions.problem(kind, version, listed) is None


@pytest.fixture
def unreachable_registries(monkeypatch) -> Iterator[None]:
    """Every registry at a closed local port (a real refused connection); answers cached before or
    during the test are dropped on both sides of it."""
    monkeypatch.setattr(config, "MAVEN_CENTRAL", "http://127.0.0.1:9")
    monkeypatch.setattr(registries, "PYPI", "http://127.0.0.1:9")
    monkeypatch.setenv("GOPROXY", "http://127.0.0.1:9")
    monkeypatch.setattr(registries, "ATTEMPTS", 1)
    registries.clear_cache()
    yield
    registries.clear_cache()


def test_check_specs_asks_no_registry_for_an_installed_version_or_the_reference(unreachable_registries) -> None:
    assert java.is_installed("4.4.0"), "make test's set-up installs java@4.4.0 (kinds.setup_all_specs())"
    versions.check_specs(parse_specs("java@4.4.0,java@4.4.0,reference"))
    with pytest.raises(UsageError, match="java@2.3.0: the Java harness runs kafka-clients 2.4.0 or later"):
        versions.check_specs(parse_specs("java@4.4.0,java@2.3.0"))


def test_an_unreachable_registry_is_a_suite_error_not_no_such_release(unreachable_registries) -> None:
    for spec, url in [("java@99.99.99", "http://127.0.0.1:9/org/apache/kafka/kafka-clients/99.99.99/"),
                      ("librdkafka@2.99.0", "http://127.0.0.1:9/pypi/confluent-kafka/2.99.0/json"),
                      ("sarama@1.41.9", "http://127.0.0.1:9/github.com/!i!b!m/sarama/@v/v1.41.9.info")]:
        with pytest.raises(SuiteError) as caught:
            versions.check_specs(parse_specs(spec))
        assert not isinstance(caught.value, UsageError)
        assert f"no answer from {url}" in str(caught.value) and "\n" not in str(caught.value)
