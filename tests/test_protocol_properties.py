"""Property tests of the codec and the userdata classifier (hypothesis).

- encode then decode is the identity for every version 0-3, and above 3 with
  trailing bytes;
- decoding random bytes, and single-byte mutations / truncations / extensions
  of valid encodings, returns a value or raises DecodeError, nothing else;
  whatever decodes re-encodes to the same bytes (strictness: one encoding
  per value);
- classify_userdata never raises and round-trips its own encoders.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
from conformance.protocol.userdata import (
    classify_userdata,
    encode_cooperative_generation,
    encode_sticky_userdata,
)

int32 = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)
names = st.text(max_size=12)  # hypothesis text() never yields lone surrogates
topic_partitions = st.builds(
    TopicPartitions, names, st.lists(int32, max_size=8).map(tuple)
)
tp_lists = st.lists(topic_partitions, max_size=4).map(tuple)
user_data = st.none() | st.binary(max_size=24)


@st.composite
def subscriptions(draw, versions=st.integers(0, 3)):
    version = draw(versions)
    return Subscription(
        version=version,
        topics=tuple(draw(st.lists(names, max_size=5))),
        user_data=draw(user_data),
        owned_partitions=draw(tp_lists) if version >= 1 else (),
        generation_id=draw(int32) if version >= 2 else -1,
        rack_id=draw(st.none() | names) if version >= 3 else None,
        trailing=draw(st.binary(max_size=10)) if version > 3 else b"",
    )


@st.composite
def assignments(draw, versions=st.integers(0, 3)):
    version = draw(versions)
    return Assignment(
        version=version,
        assigned_partitions=draw(tp_lists),
        user_data=draw(user_data),
        trailing=draw(st.binary(max_size=10)) if version > 3 else b"",
    )


newer = st.integers(4, 0x7FFF)


def examples(n: int = 100) -> settings:
    """Deterministic (derandomized, no example database) and without a deadline: a loaded
    machine must not turn a slow example into a failure."""
    return settings(max_examples=n, deadline=None, derandomize=True, database=None)


@examples()
@given(subscriptions())
def test_subscription_roundtrip_v0_to_v3(s):
    assert decode_subscription(encode_subscription(s)) == s


@examples()
@given(subscriptions(newer))
def test_subscription_roundtrip_newer_versions_with_trailing(s):
    assert decode_subscription(encode_subscription(s)) == s


@examples()
@given(assignments())
def test_assignment_roundtrip_v0_to_v3(a):
    assert decode_assignment(encode_assignment(a)) == a


@examples()
@given(assignments(newer))
def test_assignment_roundtrip_newer_versions_with_trailing(a):
    assert decode_assignment(encode_assignment(a)) == a


def _decode_only_decodeerror(decode, encode, data: bytes) -> None:
    try:
        value = decode(data)
    except DecodeError as exc:
        assert 0 <= exc.offset <= len(data), str(exc)
        assert str(exc).startswith(f"error at byte {exc.offset}: ")
        return
    # Strict: a value decodes from exactly one byte string.
    assert encode(value) == data


@examples(300)
@given(st.binary(max_size=64))
def test_random_bytes_give_a_value_or_decodeerror(data):
    _decode_only_decodeerror(decode_subscription, encode_subscription, data)
    _decode_only_decodeerror(decode_assignment, encode_assignment, data)


@st.composite
def mutated(draw, valid):
    data = bytearray(draw(valid))
    op = draw(st.sampled_from(["flip", "set", "truncate", "extend", "insert", "delete"]))
    if op in ("flip", "set", "delete") and not data:
        op = "extend"
    if op == "flip":
        i = draw(st.integers(0, len(data) - 1))
        data[i] ^= 1 << draw(st.integers(0, 7))
    elif op == "set":
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
    elif op == "truncate":
        del data[draw(st.integers(0, len(data))):]
    elif op == "extend":
        data += draw(st.binary(min_size=1, max_size=6))
    elif op == "insert":
        i = draw(st.integers(0, len(data)))
        data[i:i] = draw(st.binary(min_size=1, max_size=4))
    else:
        i = draw(st.integers(0, len(data) - 1))
        del data[i : i + draw(st.integers(1, 4))]
    return bytes(data)


@examples(400)
@given(mutated(subscriptions(st.integers(0, 6)).map(encode_subscription)))
def test_mutated_subscriptions_give_a_value_or_decodeerror(data):
    _decode_only_decodeerror(decode_subscription, encode_subscription, data)


@examples(400)
@given(mutated(assignments(st.integers(0, 6)).map(encode_assignment)))
def test_mutated_assignments_give_a_value_or_decodeerror(data):
    _decode_only_decodeerror(decode_assignment, encode_assignment, data)


@examples()
@given(subscriptions(st.integers(0, 3)), st.binary(min_size=1, max_size=5))
def test_extra_bytes_at_v0_to_v3_are_always_an_error(s, extra):
    data = encode_subscription(s)
    try:
        decode_subscription(data + extra)
    except DecodeError as exc:
        assert exc.offset == len(data)
    else:
        raise AssertionError("trailing bytes accepted")


# ---------------------------------------------------------------------------
# userdata
# ---------------------------------------------------------------------------


@examples(300)
@given(st.none() | st.binary(max_size=48), st.none() | st.sampled_from(["sticky", "cooperative-sticky", "range", ""]))
def test_classify_never_raises(data, assignor):
    info = classify_userdata(data, assignor)
    assert info.format in {"null", "empty", "cooperative-generation", "sticky-v0", "sticky-v1", "unknown"}
    if info.format == "unknown":
        assert info.fields["hex"] == data.hex()
    if info.ambiguous:
        assert assignor not in ("sticky", "cooperative-sticky") and info.note


@examples(300)
@given(mutated(st.tuples(tp_lists, st.none() | int32).map(lambda t: encode_sticky_userdata(*t))),
       st.none() | st.sampled_from(["sticky", "cooperative-sticky"]))
def test_classify_never_raises_on_mutated_sticky(data, assignor):
    classify_userdata(data, assignor)


@examples()
@given(int32)
def test_cooperative_generation_roundtrip(generation):
    info = classify_userdata(encode_cooperative_generation(generation), "cooperative-sticky")
    assert (info.format, info.fields, info.ambiguous) == ("cooperative-generation", {"generation": generation}, False)
    bare = classify_userdata(encode_cooperative_generation(generation))
    assert bare.format == "cooperative-generation"
    assert bare.ambiguous == (generation == 0)


def _as_json(tps):
    return [{"topic": tp.topic, "partitions": list(tp.partitions)} for tp in tps]


@examples()
@given(tp_lists, st.none() | int32)
def test_sticky_roundtrip(previous, generation):
    data = encode_sticky_userdata(previous, generation)
    for assignor in ("sticky", None):
        info = classify_userdata(data, assignor)
        if data == b"\x00\x00\x00\x00" and assignor is None:
            # An empty v0 assignment is also generation 0: reported, not guessed.
            assert info.ambiguous and "sticky-v0" in info.note and "cooperative-generation" in info.note
            continue
        if generation is None:
            assert info.format == "sticky-v0"
            assert info.fields == {"previous_assignment": _as_json(previous)}
        else:
            assert info.format == "sticky-v1"
            assert info.fields == {"previous_assignment": _as_json(previous), "generation": generation}
        assert not info.ambiguous
