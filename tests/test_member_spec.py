"""Member specs: KIND[@VERSION][+PROTOCOL][/FAULT...], with a clear error for every kind of mistake."""

from typing import Iterator

import pytest

from conformance import config, registries
from conformance.errors import SuiteError, UsageError
from conformance.members import versions
from conformance.members.kinds import default_version, java
from conformance.members.spec import MemberSpec, parse_specs


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
