"""The real registries answer the exact-release question (conformance.registries, members.versions).

These ask Maven Central, PyPI and the Go module proxy over the network: a handful of small GETs,
a few seconds in all. The cases are releases whose answer cannot change (published releases are
immutable; 99.x does not exist).
"""

from __future__ import annotations

import pytest

from conformance import registries
from conformance.errors import UsageError
from conformance.members import versions
from conformance.members.kinds import sarama
from conformance.members.spec import parse_specs


def test_the_go_proxy_serves_versions_its_list_omits() -> None:
    # The proxy's list of github.com/IBM/sarama lacks v1.41.0/1 here; .info serves them.
    assert registries.go_has(sarama.IBM_MODULE, "1.41.1")
    assert sarama.module_for("1.41.1") == sarama.IBM_MODULE
    assert sarama.module_for("1.31.0") == sarama.SHOPIFY_MODULE
    assert sarama.module_for("1.41.9") is None


@pytest.mark.parametrize("spec", ["sarama@1.41.1", "sarama@1.41.0", "java@3.9.2", "librdkafka@2.16.1",
                                  "kafka-python@2.3.3"])
def test_released_versions_resolve(spec: str) -> None:
    kind, version = spec.split("@")
    assert versions.check(kind, version) is None


@pytest.mark.parametrize("spec, message", [
    ("sarama@1.41.9", r"^sarama@1\.41\.9: the Go module proxy \(github.com/IBM/sarama, github.com/Shopify/sarama\) "
                      r"has no release 1\.41\.9; closest: (1\.4[0-3]\.\d+, ){3}1\.4[0-3]\.\d+$"),
    ("java@2.4.9", r"^java@2\.4\.9: Maven Central \(org\.apache\.kafka:kafka-clients\) has no release 2\.4\.9; "
                   r"closest: 2\.5\.1, 2\.5\.0, 2\.4\.1, 2\.4\.0$"),
    ("librdkafka@2.99.0", r"^librdkafka@2\.99\.0: PyPI \(confluent-kafka\) has no release 2\.99\.0; closest: 2\.16\.1, "),
    ("librdkafka@1.9", r"^librdkafka@1\.9: PyPI \(confluent-kafka\) lists this release as 1\.9\.0; "
                       r"write librdkafka@1\.9\.0$"),
])
def test_no_such_release_names_the_nearest_that_exist(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        versions.check_specs(parse_specs(spec))
    assert "older" not in str(caught.value)  # no counts of a listing ("and -5 older")
