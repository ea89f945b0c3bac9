"""Strict codec of ConsumerProtocolSubscription / Assignment on hand-built bytes.

The byte strings here are written out field by field (not produced by the
encoder under test), following Kafka's ConsumerProtocolSubscription.json and
ConsumerProtocolAssignment.json: int16 version; int16-length strings,
int32-length bytes and int32-count arrays; no tagged fields.
"""

from __future__ import annotations

import struct

import pytest

from conformance.protocol import (
    Assignment,
    DecodeError,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def s(text: str) -> bytes:
    raw = text.encode()
    return i16(len(raw)) + raw


def tps(*entries: tuple[str, list[int]]) -> bytes:
    out = i32(len(entries))
    for topic, parts in entries:
        out += s(topic) + i32(len(parts)) + b"".join(i32(p) for p in parts)
    return out


TOPICS = i32(2) + s("a") + s("bb")          # Topics ["a", "bb"]
USERDATA = i32(4) + b"\xff\xff\xff\xff"     # UserData ff ff ff ff
OWNED = tps(("a", [0, 2]), ("bb", [1]))     # OwnedPartitions
OWNED_VALUE = (TopicPartitions("a", (0, 2)), TopicPartitions("bb", (1,)))

SUB_V0 = i16(0) + TOPICS + USERDATA
SUB_V1 = i16(1) + TOPICS + USERDATA + OWNED
SUB_V2 = i16(2) + TOPICS + USERDATA + OWNED + i32(17)
SUB_V3 = i16(3) + TOPICS + USERDATA + OWNED + i32(17) + s("rack-1")

EXPECTED = {
    0: Subscription(0, ("a", "bb"), b"\xff\xff\xff\xff"),
    1: Subscription(1, ("a", "bb"), b"\xff\xff\xff\xff", OWNED_VALUE),
    2: Subscription(2, ("a", "bb"), b"\xff\xff\xff\xff", OWNED_VALUE, 17),
    3: Subscription(3, ("a", "bb"), b"\xff\xff\xff\xff", OWNED_VALUE, 17, "rack-1"),
}
WIRE = {0: SUB_V0, 1: SUB_V1, 2: SUB_V2, 3: SUB_V3}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_each_version_decodes_and_encodes_byte_for_byte(version):
    assert decode_subscription(WIRE[version]) == EXPECTED[version]
    assert encode_subscription(EXPECTED[version]) == WIRE[version]


def test_subscription_defaults_for_fields_the_version_lacks():
    v0 = decode_subscription(SUB_V0)
    assert (v0.owned_partitions, v0.generation_id, v0.rack_id, v0.trailing) == ((), -1, None, b"")
    v2 = decode_subscription(SUB_V2)
    assert v2.rack_id is None


def test_subscription_null_and_empty_userdata_and_null_rack():
    null_ud = i16(3) + i32(0) + i32(-1) + i32(0) + i32(-1) + i16(-1)
    assert decode_subscription(null_ud) == Subscription(3, (), None, (), -1, None)
    empty_ud = i16(1) + i32(0) + i32(0) + i32(0)
    assert decode_subscription(empty_ud) == Subscription(1, (), b"", ())
    assert encode_subscription(Subscription(3, (), None, (), -1, None)) == null_ud


def test_encoder_omits_fields_the_version_lacks():
    # A v0 value with v1+ fields set encodes as plain v0 (the fields are dropped).
    s0 = Subscription(0, ("a", "bb"), b"\xff\xff\xff\xff", OWNED_VALUE, 17, "rack-1")
    assert encode_subscription(s0) == SUB_V0


def test_newer_subscription_version_keeps_trailing_bytes():
    data = i16(7) + SUB_V3[2:] + b"\x01\x02\x03"
    got = decode_subscription(data)
    assert got.version == 7
    assert got.trailing == b"\x01\x02\x03"
    assert got.rack_id == "rack-1" and got.generation_id == 17 and got.owned_partitions == OWNED_VALUE
    assert encode_subscription(got) == data
    # ... and with nothing after the v3 fields.
    assert decode_subscription(i16(4) + SUB_V3[2:]).trailing == b""


def test_newer_version_still_needs_the_v3_fields():
    with pytest.raises(DecodeError) as e:
        decode_subscription(i16(4) + SUB_V2[2:])  # RackId missing
    assert e.value.offset == len(SUB_V2)
    assert "RackId" in e.value.reason


ASG_V0 = i16(0) + tps(("t", [0, 1])) + i32(-1)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_each_version(version):
    data = i16(version) + tps(("t", [0, 1]), ("u", [])) + i32(2) + b"hi"
    want = Assignment(version, (TopicPartitions("t", (0, 1)), TopicPartitions("u", ())), b"hi")
    assert decode_assignment(data) == want
    assert encode_assignment(want) == data


def test_assignment_null_userdata_and_newer_version():
    assert decode_assignment(ASG_V0) == Assignment(0, (TopicPartitions("t", (0, 1)),), None)
    newer = i16(9) + ASG_V0[2:] + b"\xaa"
    got = decode_assignment(newer)
    assert (got.version, got.trailing) == (9, b"\xaa")
    assert encode_assignment(got) == newer


def test_decode_accepts_bytearray_and_memoryview():
    assert decode_subscription(bytearray(SUB_V1)) == EXPECTED[1]
    assert decode_subscription(memoryview(SUB_V1)) == EXPECTED[1]


# ---------------------------------------------------------------------------
# Every error class, with its offset. Offsets: truncation -> where the item
# that does not fit starts; bad length/count -> the prefix; UTF-8 -> the byte.
# ---------------------------------------------------------------------------

SUB_ERRORS = [
    # (bytes, offset, reason fragment)
    (b"", 0, "Version: truncated"),
    (b"\x00", 0, "Version: truncated, needs 2 bytes, 1 left"),
    (i16(-1) + SUB_V0[2:], 0, "negative version -1"),
    (i16(-32768), 0, "negative version -32768"),
    (i16(0), 2, "Topics count: truncated"),
    (i16(0) + i32(1), 6, "Topics[0] length: truncated"),
    (i16(0) + i32(1) + i16(5) + b"ab", 6, "Topics[0]: string length 5 runs past the end"),
    (i16(0) + i32(1) + i16(-1) + i32(-1), 6, "Topics[0]: null string"),
    (i16(0) + i32(1) + i16(-2) + i32(-1), 6, "Topics[0]: negative string length -2"),
    (i16(0) + i32(-1) + i32(-1), 2, "Topics: null array"),
    (i16(0) + i32(-7) + i32(-1), 2, "Topics: negative array count -7"),
    (i16(0) + i32(1) + i16(2) + b"a\xff" + i32(-1), 9, "Topics[0]: invalid UTF-8"),
    (i16(0) + i32(2) + s("ok") + i16(3) + b"\xe2\x82" + b"x" + i32(-1), 12, "Topics[1]: invalid UTF-8"),
    (i16(0) + TOPICS, 13, "UserData length: truncated"),
    (i16(0) + TOPICS + i32(9) + b"abc", 13, "UserData: bytes length 9 runs past the end (3 bytes left)"),
    (i16(0) + TOPICS + i32(-2), 13, "UserData: negative bytes length -2"),
    (SUB_V0 + b"\x00", len(SUB_V0), "1 trailing bytes after the v0 fields"),
    (i16(1) + TOPICS + USERDATA, 21, "OwnedPartitions count: truncated"),
    (i16(1) + TOPICS + USERDATA + i32(-1), 21, "OwnedPartitions: null array"),
    (i16(1) + TOPICS + USERDATA + i32(-3), 21, "OwnedPartitions: negative array count -3"),
    (i16(1) + TOPICS + USERDATA + i32(1) + s("a") + i32(-1), 28, "OwnedPartitions[0].Partitions: null array"),
    (i16(1) + TOPICS + USERDATA + i32(1) + i16(-1) + i32(0), 25, "OwnedPartitions[0].Topic: null string"),
    (i16(1) + TOPICS + USERDATA + i32(1) + s("a") + i32(3) + i32(0) + b"\x00\x00", 36,
     "OwnedPartitions[0].Partitions[1] (of 3): truncated, needs 4 bytes, 2 left"),
    (i16(1) + TOPICS + USERDATA + i32(2) + s("a") + i32(0), 32, "OwnedPartitions[1].Topic length: truncated"),
    (i16(1) + TOPICS + USERDATA + i32(1) + i16(1) + b"\x80" + i32(0), 27, "OwnedPartitions[0].Topic: invalid UTF-8"),
    (SUB_V1 + b"\x00\x00", len(SUB_V1), "2 trailing bytes after the v1 fields"),
    (SUB_V2[:-2], len(SUB_V1), "GenerationId: truncated, needs 4 bytes, 2 left"),
    (SUB_V2 + b"\x01", len(SUB_V2), "1 trailing bytes after the v2 fields"),
    (SUB_V2, len(SUB_V2), "RackId length: truncated"),  # declared v2 bytes read as ... see test below
    (i16(3) + SUB_V2[2:] + i16(-2), len(SUB_V2), "RackId: negative string length -2"),
    (i16(3) + SUB_V2[2:] + i16(10) + b"r", len(SUB_V2), "RackId: string length 10 runs past the end (1 bytes left)"),
    (i16(3) + SUB_V2[2:] + i16(1) + b"\xc0", len(SUB_V2) + 2, "RackId: invalid UTF-8"),
    (SUB_V3 + b"\x00", len(SUB_V3), "1 trailing bytes after the v3 fields"),
]


@pytest.mark.parametrize("data,offset,reason", SUB_ERRORS, ids=range(len(SUB_ERRORS)))
def test_subscription_errors(data, offset, reason):
    if data == SUB_V2:  # the one entry that needs its version bumped to v3
        data = i16(3) + SUB_V2[2:]
    with pytest.raises(DecodeError) as e:
        decode_subscription(data)
    assert e.value.offset == offset, str(e.value)
    assert reason in e.value.reason, str(e.value)
    assert str(e.value) == f"error at byte {offset}: {e.value.reason}"
    assert isinstance(e.value, ValueError)


def test_huge_counts_fail_fast_without_allocating():
    # A count of 2^31-1 partitions with 4 bytes present: reported at the first missing element.
    data = i16(1) + i32(0) + i32(-1) + i32(1) + s("a") + i32(0x7FFFFFFF) + i32(5)
    with pytest.raises(DecodeError) as e:
        decode_subscription(data)
    assert e.value.offset == len(data)
    assert "Partitions[1] (of 2147483647)" in e.value.reason
    # A huge topic count stops at the end of the data.
    with pytest.raises(DecodeError) as e:
        decode_subscription(i16(0) + i32(0x7FFFFFFF) + s("a"))
    assert e.value.offset == 9 and "Topics[1] length: truncated" in e.value.reason


ASG_ERRORS = [
    (b"\x00", 0, "Version: truncated"),
    (i16(-5) + ASG_V0[2:], 0, "negative version -5"),
    (i16(0), 2, "AssignedPartitions count: truncated"),
    (i16(0) + i32(-1) + i32(-1), 2, "AssignedPartitions: null array"),
    (i16(0) + i32(-9) + i32(-1), 2, "AssignedPartitions: negative array count -9"),
    (i16(0) + i32(1) + s("t") + i32(-1) + i32(-1), 9, "AssignedPartitions[0].Partitions: null array"),
    (i16(0) + i32(1) + s("t") + i32(-4) + i32(-1), 9, "AssignedPartitions[0].Partitions: negative array count -4"),
    (i16(0) + i32(1) + i16(7) + b"t", 6, "AssignedPartitions[0].Topic: string length 7 runs past the end"),
    (ASG_V0[:-1], len(ASG_V0) - 4, "UserData length: truncated, needs 4 bytes, 3 left"),
    (ASG_V0[:-4] + i32(-3), len(ASG_V0) - 4, "UserData: negative bytes length -3"),
    (ASG_V0[:-4] + i32(1), len(ASG_V0) - 4, "UserData: bytes length 1 runs past the end (0 bytes left)"),
    (ASG_V0 + b"\x00", len(ASG_V0), "1 trailing bytes after the v0 fields"),
    (i16(3) + ASG_V0[2:] + b"\x00\x00", len(ASG_V0), "2 trailing bytes after the v3 fields"),
]


@pytest.mark.parametrize("data,offset,reason", ASG_ERRORS, ids=range(len(ASG_ERRORS)))
def test_assignment_errors(data, offset, reason):
    with pytest.raises(DecodeError) as e:
        decode_assignment(data)
    assert e.value.offset == offset, str(e.value)
    assert reason in e.value.reason, str(e.value)


def test_every_strict_prefix_of_a_valid_encoding_is_a_truncation_error():
    for wire in (*WIRE.values(), ASG_V0):
        decode = decode_assignment if wire is ASG_V0 else decode_subscription
        decode(wire)  # the whole is valid
        for cut in range(len(wire)):
            with pytest.raises(DecodeError) as e:
                decode(wire[:cut])
            assert 0 <= e.value.offset <= cut, (cut, str(e.value))


def test_decode_error_pickles():
    import pickle

    err = DecodeError(5, "x: y")
    back = pickle.loads(pickle.dumps(err))
    assert (back.offset, back.reason, str(back)) == (5, "x: y", "error at byte 5: x: y")


@pytest.mark.parametrize(
    "value,fragment",
    [
        (Subscription(-1, ()), "Version"),
        (Subscription(0x8000, ()), "Version"),
        (Subscription(2, (), trailing=b"x"), "trailing"),
        (Subscription(0, (None,)), "Topics[0]: null"),
        (Subscription(0, ("x" * 40000,)), "Topics[0]: 40000 UTF-8 bytes"),
        (Subscription(1, (), owned_partitions=(TopicPartitions("a", (1 << 31,)),)), "OwnedPartitions[0].Partitions[0]"),
        (Subscription(2, (), generation_id=-(1 << 31) - 1), "GenerationId"),
        (Subscription(3, (), rack_id=5), "RackId"),
        (Subscription(0, "abc"), "Topics"),
        (Assignment(0, None), "AssignedPartitions: null"),
        (Assignment(0, (("t", (1,)),)), "expected TopicPartitions"),
        (Assignment(0, (), user_data="text"), "UserData"),
    ],
)
def test_encoder_rejects_values_the_encoding_cannot_hold(value, fragment):
    encode = encode_assignment if isinstance(value, Assignment) else encode_subscription
    with pytest.raises(ValueError) as e:
        encode(value)
    assert fragment in str(e.value)
    assert not isinstance(e.value, DecodeError)
