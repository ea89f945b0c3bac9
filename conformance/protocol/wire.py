"""Primitive readers and writers of Kafka's classic (non-flexible) encoding.

Everything is big-endian: int16/int32 as two's complement; a string is an
int16 length then UTF-8 bytes (-1 = null); bytes are an int32 length then the
bytes (-1 = null); an array is an int32 count then the elements (-1 = null).

Readers take ``(data, pos)`` and return ``(value, new_pos)``; they never read
past ``len(data)`` and raise :class:`DecodeError` naming the byte offset of the
problem and the field involved. The offset rules, relied on by tests:

- truncation: the offset where the item that does not fit starts
  (for an int32 array, the first element that does not fit);
- a bad length or count (negative, null where not nullable, past the end):
  the offset of the length/count prefix;
- invalid UTF-8: the offset of the first offending byte.
"""

from __future__ import annotations

import struct

from conformance.protocol.model import TopicPartitions

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_unpack16 = _INT16.unpack_from
_unpack32 = _INT32.unpack_from
_pack16 = _INT16.pack
_pack32 = _INT32.pack

INT16_MAX = 0x7FFF
INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


class DecodeError(ValueError):
    """Bytes that are not a valid encoding; ``str(e) == f"error at byte {offset}: {reason}"``."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"error at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason

    def __reduce__(self):  # keep pickling (multiprocessing, Spark) working
        return (DecodeError, (self.offset, self.reason))


def nested(err: DecodeError, prefix: str) -> DecodeError:
    """The same error with ``prefix`` put before its field path."""
    return DecodeError(err.offset, f"{prefix}{err.reason}")


def _truncated(data: bytes, pos: int, need: int, what: str) -> DecodeError:
    return DecodeError(pos, f"{what}: truncated, needs {need} bytes, {len(data) - pos} left")


def read_int16(data: bytes, pos: int, what: str) -> tuple[int, int]:
    if pos + 2 > len(data):
        raise _truncated(data, pos, 2, what)
    return _unpack16(data, pos)[0], pos + 2


def read_int32(data: bytes, pos: int, what: str) -> tuple[int, int]:
    if pos + 4 > len(data):
        raise _truncated(data, pos, 4, what)
    return _unpack32(data, pos)[0], pos + 4


def read_string(data: bytes, pos: int, what: str) -> tuple[str, int]:
    """A non-nullable string."""
    if pos + 2 > len(data):
        raise _truncated(data, pos, 2, f"{what} length")
    n = _unpack16(data, pos)[0]
    start = pos + 2
    end = start + n
    if n < 0:
        if n == -1:
            raise DecodeError(pos, f"{what}: null string where the field is not nullable")
        raise DecodeError(pos, f"{what}: negative string length {n}")
    if end > len(data):
        raise DecodeError(pos, f"{what}: string length {n} runs past the end ({len(data) - start} bytes left)")
    try:
        return data[start:end].decode("utf-8"), end
    except UnicodeDecodeError as exc:
        raise DecodeError(start + exc.start, f"{what}: invalid UTF-8 ({exc.reason})") from None


def read_nullable_string(data: bytes, pos: int, what: str) -> tuple[str | None, int]:
    if pos + 2 > len(data):
        raise _truncated(data, pos, 2, f"{what} length")
    n = _unpack16(data, pos)[0]
    if n == -1:
        return None, pos + 2
    return read_string(data, pos, what)


def read_nullable_bytes(data: bytes, pos: int, what: str) -> tuple[bytes | None, int]:
    if pos + 4 > len(data):
        raise _truncated(data, pos, 4, f"{what} length")
    n = _unpack32(data, pos)[0]
    start = pos + 4
    end = start + n
    if n < 0:
        if n == -1:
            return None, start
        raise DecodeError(pos, f"{what}: negative bytes length {n}")
    if end > len(data):
        raise DecodeError(pos, f"{what}: bytes length {n} runs past the end ({len(data) - start} bytes left)")
    return data[start:end], end


def read_count(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """The count of a non-nullable array."""
    if pos + 4 > len(data):
        raise _truncated(data, pos, 4, f"{what} count")
    n = _unpack32(data, pos)[0]
    if n < 0:
        if n == -1:
            raise DecodeError(pos, f"{what}: null array where the field is not nullable")
        raise DecodeError(pos, f"{what}: negative array count {n}")
    return n, pos + 4


def read_int32_array(data: bytes, pos: int, what: str) -> tuple[tuple[int, ...], int]:
    n, start = read_count(data, pos, what)
    end = start + 4 * n
    if end > len(data):
        have = (len(data) - start) // 4
        raise _truncated(data, start + 4 * have, 4, f"{what}[{have}] (of {n})")
    if n == 0:
        return (), start
    return struct.unpack_from(">%di" % n, data, start), end


def read_string_array(data: bytes, pos: int, what: str) -> tuple[tuple[str, ...], int]:
    n, pos = read_count(data, pos, what)
    if n == 0:
        return (), pos
    out: list[str] = []
    append = out.append
    size = len(data)
    for i in range(n):
        # Inlined read_string: this is the hot loop of a subscription decode.
        if pos + 2 > size:
            raise _truncated(data, pos, 2, f"{what}[{i}] length")
        k = _unpack16(data, pos)[0]
        end = pos + 2 + k
        if k < 0 or end > size:
            read_string(data, pos, f"{what}[{i}]")  # raises the precise error
        try:
            append(data[pos + 2:end].decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DecodeError(pos + 2 + exc.start, f"{what}[{i}]: invalid UTF-8 ({exc.reason})") from None
        pos = end
    return tuple(out), pos


def _read_topic_partitions_element(data: bytes, pos: int, what: str, i: int) -> tuple[TopicPartitions, int]:
    """One element, field by field, with precise errors (the slow path)."""
    try:
        topic, pos = read_string(data, pos, "Topic")
        parts, pos = read_int32_array(data, pos, "Partitions")
    except DecodeError as exc:
        raise nested(exc, f"{what}[{i}].") from None
    return TopicPartitions(topic, parts), pos


def read_topic_partitions(data: bytes, pos: int, what: str) -> tuple[tuple[TopicPartitions, ...], int]:
    """A non-nullable array of ``{Topic string, Partitions [int32]}``."""
    n, pos = read_count(data, pos, what)
    if n == 0:
        return (), pos
    out: list[TopicPartitions] = []
    append = out.append
    size = len(data)
    unpack = struct.unpack_from
    for i in range(n):
        # Fast path for a well-formed element; anything unusual is re-read by
        # the slow path, which raises the precise error.
        if pos + 2 <= size:
            k = _unpack16(data, pos)[0]
            start = pos + 2
            end = start + k
            if k >= 0 and end + 4 <= size:
                m = _unpack32(data, end)[0]
                pstart = end + 4
                pend = pstart + 4 * m
                if m >= 0 and pend <= size:
                    try:
                        topic = data[start:end].decode("utf-8")
                    except UnicodeDecodeError:
                        pass
                    else:
                        append(TopicPartitions(topic, unpack(">%di" % m, data, pstart) if m else ()))
                        pos = pend
                        continue
        tp, pos = _read_topic_partitions_element(data, pos, what, i)
        append(tp)  # not reached for any input the fast path rejects; kept so the result stays correct
    return tuple(out), pos


# ---------------------------------------------------------------------------
# Writers. They raise ValueError (naming the field) for values the encoding
# cannot hold, so that an encoded value always decodes back to itself.
# ---------------------------------------------------------------------------


def _check_int(value: object, lo: int, hi: int, what: str) -> int:
    if type(value) is bool or not isinstance(value, int):
        raise ValueError(f"{what}: expected an int, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{what}: {value} is outside [{lo}, {hi}]")
    return value


def write_int16(out: list[bytes], value: int, what: str) -> None:
    out.append(_pack16(_check_int(value, -(1 << 15), INT16_MAX, what)))


def write_int32(out: list[bytes], value: int, what: str) -> None:
    out.append(_pack32(_check_int(value, INT32_MIN, INT32_MAX, what)))


def write_string(out: list[bytes], value: str | None, what: str, nullable: bool = False) -> None:
    if value is None:
        if not nullable:
            raise ValueError(f"{what}: null is not allowed")
        out.append(_pack16(-1))
        return
    if not isinstance(value, str):
        raise ValueError(f"{what}: expected a str, got {value!r}")
    raw = value.encode("utf-8")
    if len(raw) > INT16_MAX:
        raise ValueError(f"{what}: {len(raw)} UTF-8 bytes is longer than {INT16_MAX}")
    out.append(_pack16(len(raw)))
    out.append(raw)


def write_nullable_bytes(out: list[bytes], value: bytes | None, what: str) -> None:
    if value is None:
        out.append(_pack32(-1))
        return
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise ValueError(f"{what}: expected bytes, got {value!r}")
    value = bytes(value)
    out.append(_pack32(len(value)))
    out.append(value)


def write_count(out: list[bytes], n: int) -> None:
    out.append(_pack32(n))


def write_int32_array(out: list[bytes], values, what: str) -> None:
    values = tuple(values)
    for i, v in enumerate(values):
        _check_int(v, INT32_MIN, INT32_MAX, f"{what}[{i}]")
    out.append(struct.pack(">i%di" % len(values), len(values), *values))


def write_string_array(out: list[bytes], values, what: str) -> None:
    if values is None or isinstance(values, (str, bytes)):
        raise ValueError(f"{what}: expected a sequence of str, got {values!r}")
    values = tuple(values)
    write_count(out, len(values))
    for i, v in enumerate(values):
        write_string(out, v, f"{what}[{i}]")


def write_topic_partitions(out: list[bytes], values, what: str) -> None:
    if values is None:
        raise ValueError(f"{what}: null is not allowed")
    values = tuple(values)
    write_count(out, len(values))
    for i, tp in enumerate(values):
        if not isinstance(tp, TopicPartitions):
            raise ValueError(f"{what}[{i}]: expected TopicPartitions, got {tp!r}")
        write_string(out, tp.topic, f"{what}[{i}].Topic")
        write_int32_array(out, tp.partitions, f"{what}[{i}].Partitions")
