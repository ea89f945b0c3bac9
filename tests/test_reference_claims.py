"""Reading members' subscriptions into claims (every version, every userData format) and the fault table."""

from __future__ import annotations

import pytest

from conformance.errors import UsageError
from conformance.protocol import Subscription, TopicPartitions, decode_subscription, encode_subscription
from conformance.protocol.userdata import encode_cooperative_generation, encode_sticky_userdata
from conformance.reference.claims import BadSubscription, claim_from_metadata, plan_bytes
from conformance.reference.faults import GARBAGE_USERDATA, Faults

OWNED = (TopicPartitions("t", (0, 2)),)


def meta(**kw) -> bytes:
    base = dict(version=3, topics=("t",), user_data=None, owned_partitions=OWNED, generation_id=-1, rack_id=None)
    base.update(kw)
    return encode_subscription(Subscription(**base))


@pytest.mark.parametrize("kw, owned, generation", [
    (dict(generation_id=7, user_data=encode_cooperative_generation(3)), [("t", 0), ("t", 2)], 7),  # v2+ wins
    (dict(version=1, user_data=encode_cooperative_generation(5)), [("t", 0), ("t", 2)], 5),         # Java int32
    (dict(version=1, user_data=encode_sticky_userdata(OWNED, 4)), [("t", 0), ("t", 2)], 4),         # librdkafka
    (dict(version=0, user_data=encode_sticky_userdata(OWNED, 4)), [("t", 0), ("t", 2)], 4),         # v0: from userData
    (dict(version=0, user_data=encode_sticky_userdata(OWNED, None)), [("t", 0), ("t", 2)], -1),     # sticky-v0
    (dict(version=1, user_data=b""), [("t", 0), ("t", 2)], -1),
    (dict(version=1, user_data=None), [("t", 0), ("t", 2)], -1),
    (dict(version=1, user_data=GARBAGE_USERDATA), [("t", 0), ("t", 2)], -1),
    (dict(version=2, generation_id=-1, user_data=encode_cooperative_generation(9)), [("t", 0), ("t", 2)], 9),
    (dict(version=4, generation_id=6, trailing=b"\x01\x02"), [("t", 0), ("t", 2)], 6),
])
def test_claims_from_every_version_and_userdata(kw, owned, generation) -> None:
    _, claim = claim_from_metadata("m", meta(**kw), "cooperative-sticky")
    assert list(claim.owned) == owned and claim.generation == generation and claim.topics == {"t"}


def test_undecodable_subscription_is_a_typed_error_naming_the_member() -> None:
    with pytest.raises(BadSubscription, match="member m9: subscription does not decode: error at byte"):
        claim_from_metadata("m9", b"\x00\x03\x00", "cooperative-sticky")


def test_assignments_are_written_at_version_3() -> None:
    data = plan_bytes({"a": [("t", 1), ("t", 0)]})["a"]
    assert data[:2] == b"\x00\x03"


def test_faults_change_the_subscription_fields() -> None:
    assert Faults.parse(["subscription-v0"]).subscription_version(3) == 0
    assert Faults.parse(["subscription-v4-trailing"]).subscription_version(3) == 4
    assert Faults.parse(["subscription-v4-trailing"]).trailing()
    assert Faults.parse([]).user_data(5) == encode_cooperative_generation(5)
    assert Faults.parse(["userdata-minus-one"]).user_data(5) == b"\xff\xff\xff\xff"
    assert Faults.parse(["userdata-null"]).user_data(5) is None
    assert Faults.parse(["stale-owned-partitions"]).declared_owned({("t", 0)}, {("t", 1)}) == {("t", 0), ("t", 1)}
    assert Faults.parse([]).declared_owned({("t", 0)}, {("t", 1)}) == {("t", 0)}
    # A v4 subscription with trailing bytes still decodes (E1 allows it).
    sub = decode_subscription(meta(version=4, trailing=Faults.parse(["subscription-v4-trailing"]).trailing()))
    assert sub.version == 4 and sub.trailing


def test_fault_misuse_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown reference fault"):
        Faults.parse(["explode"])
    with pytest.raises(UsageError, match="at most one subscription"):
        Faults.parse(["subscription-v0", "subscription-v1"])
