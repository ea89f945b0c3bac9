"""Assignor UserData classification on hand-built blobs (layouts from Java's
StickyAssignor / CooperativeStickyAssignor and Sarama's sticky user data)."""

from __future__ import annotations

import struct

import pytest

from conformance.protocol import TopicPartitions
from conformance.protocol.userdata import (
    UserDataInfo,
    classify_userdata,
    encode_cooperative_generation,
    encode_sticky_userdata,
)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


# previous assignment [{"orders", [0, 2]}]: count 1, "orders", [0, 2]
PREVIOUS = i32(1) + i16(6) + b"orders" + i32(2) + i32(0) + i32(2)
PREVIOUS_JSON = [{"topic": "orders", "partitions": [0, 2]}]


def test_null_and_empty():
    assert classify_userdata(None) == UserDataInfo("null", {})
    assert classify_userdata(b"") == UserDataInfo("empty", {})
    assert classify_userdata(None, "cooperative-sticky").format == "null"


def test_java_cooperative_first_join_is_minus_one():
    info = classify_userdata(b"\xff\xff\xff\xff")
    assert info == UserDataInfo("cooperative-generation", {"generation": -1})


def test_cooperative_generation_written_by_encoder():
    assert encode_cooperative_generation(-1) == b"\xff\xff\xff\xff"
    assert encode_cooperative_generation(12) == b"\x00\x00\x00\x0c"
    assert classify_userdata(b"\x00\x00\x00\x0c", "cooperative-sticky").fields == {"generation": 12}
    with pytest.raises(ValueError):
        encode_cooperative_generation(1 << 31)


def test_sticky_v1_and_v0():
    v1 = PREVIOUS + i32(5)
    assert classify_userdata(v1) == UserDataInfo("sticky-v1", {"previous_assignment": PREVIOUS_JSON, "generation": 5})
    assert classify_userdata(PREVIOUS) == UserDataInfo("sticky-v0", {"previous_assignment": PREVIOUS_JSON})
    prev = [TopicPartitions("orders", (0, 2))]
    assert encode_sticky_userdata(prev, 5) == v1
    assert encode_sticky_userdata(prev, None) == PREVIOUS


def test_librdkafka_cooperative_sticky_writes_sticky_v1_layout():
    # librdkafka / franz-go cooperative-sticky: previous assignment then generation.
    info = classify_userdata(PREVIOUS + i32(3), "cooperative-sticky")
    assert info.format == "sticky-v1" and not info.ambiguous and info.note is None


def test_zero_word_is_ambiguous_without_assignor():
    info = classify_userdata(b"\x00\x00\x00\x00")
    assert info.ambiguous is True
    assert "cooperative-generation" in info.note and "sticky-v0" in info.note
    # A name that writes no userdata does not decide either.
    assert classify_userdata(b"\x00\x00\x00\x00", "range").ambiguous is True


def test_zero_word_decided_by_assignor():
    coop = classify_userdata(b"\x00\x00\x00\x00", "cooperative-sticky")
    assert (coop.format, coop.fields, coop.ambiguous) == ("cooperative-generation", {"generation": 0}, False)
    sticky = classify_userdata(b"\x00\x00\x00\x00", "sticky")
    assert (sticky.format, sticky.fields, sticky.ambiguous) == ("sticky-v0", {"previous_assignment": []}, False)
    assert "also parses as cooperative-generation" in sticky.note


def test_format_the_assignor_does_not_write_is_still_named_with_a_note():
    info = classify_userdata(b"\x00\x00\x00\x07", "sticky")
    assert info.format == "cooperative-generation" and "does not normally write" in info.note


@pytest.mark.parametrize(
    "blob,why",
    [
        (b"\x01", "truncated"),                                   # too short for anything
        (b"\x00\x00\x00", "truncated"),
        (PREVIOUS + b"\x00", "1 bytes after"),                    # neither 0 nor 4 bytes left
        (PREVIOUS + i32(5) + b"\x00", "5 bytes after"),
        (i32(1) + i16(1) + b"\xff" + i32(0), "invalid UTF-8"),    # bad topic name
        (i32(-1) + i32(0), "null array"),                         # null previous assignment
        (i32(1) + i16(-1) + i32(0), "null string"),
        (i32(1) + i16(1) + b"a" + i32(-1), "null array"),
        (i32(2) + i16(1) + b"a" + i32(0), "truncated"),
        (b"hello world", ""),
    ],
)
def test_unknown_with_hex_and_reason(blob, why):
    info = classify_userdata(blob)
    assert info.format == "unknown"
    assert info.fields == {"hex": blob.hex()}
    assert why in (info.note or "")


@pytest.mark.parametrize("weird", ["text", 5, object(), [1, 2], bytearray(b"\xff\xff\xff\xff")])
def test_never_raises_on_odd_inputs(weird):
    info = classify_userdata(weird, assignor=weird)  # type: ignore[arg-type]
    assert isinstance(info, UserDataInfo)


def test_bytearray_and_memoryview_accepted():
    assert classify_userdata(bytearray(PREVIOUS)).format == "sticky-v0"
    assert classify_userdata(memoryview(PREVIOUS + i32(1))).format == "sticky-v1"
