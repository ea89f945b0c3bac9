"""Member specs: KIND[@VERSION][/FAULT...], with a clear error for every kind of mistake."""

import pytest

from conformance.config import DEFAULT_CLIENT_VERSIONS
from conformance.errors import UsageError
from conformance.members.spec import MemberSpec, parse_specs


@pytest.mark.parametrize("text", ["reference", "java@3.9.1", "librdkafka@2.16.1", "sarama@1.60.1",
                                  "kafka-python@3.0.12", "reference/stale-owned-partitions",
                                  "reference@0.1.0/skip-revoke/slow-sync"])
def test_round_trip(text: str) -> None:
    spec = MemberSpec.parse(text)
    assert MemberSpec.parse(str(spec)) == spec


def test_default_version_is_pinned() -> None:
    assert MemberSpec.parse("java").version == DEFAULT_CLIENT_VERSIONS["java"]
    assert MemberSpec.parse("java").label == f"java@{DEFAULT_CLIENT_VERSIONS['java']}"


@pytest.mark.parametrize("text, message", [
    ("", "empty member spec"),
    ("jav@1.0", "unknown kind 'jav'"),
    ("java@", "must be followed by a version"),
    ("java/skip-revoke", "faults are only for 'reference'"),
    ("reference/explode", "unknown fault 'explode'; known faults: stale-owned-partitions"),
    ("java@3 9", "is not a version"),
])
def test_bad_specs_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        MemberSpec.parse(text)


def test_parse_specs_list() -> None:
    assert [s.kind for s in parse_specs("reference, java@2.8.1,sarama")] == ["reference", "java", "sarama"]
    with pytest.raises(UsageError):
        parse_specs(" , ")
