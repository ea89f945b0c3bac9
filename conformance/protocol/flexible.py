"""Primitive readers and writers of Kafka's flexible (KIP-482) encoding.

Flexible versions of a Kafka message write lengths as unsigned varints of
``length + 1`` (0 = null): a compact string is that length then UTF-8 bytes,
a compact array that count then the elements. A UUID is 16 raw bytes. Every
struct ends with tagged fields: an unsigned varint count, then per field a tag
and a size (varints) and that many bytes.

Guarantees: :class:`FlexReader` never reads past its data and raises
:class:`~conformance.protocol.wire.DecodeError` (the suite's one decode error,
naming the byte offset and the field) for truncation, a varint longer than 5
bytes, a count that cannot fit in the bytes left, invalid UTF-8, or a null
where the field is not nullable. Unknown tagged fields are skipped, as Kafka
does. :class:`FlexWriter` refuses a value out of its type's range
(``ValueError`` naming the field), so it never writes bytes a reader would
read back differently.
"""

from __future__ import annotations

import builtins
import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

from conformance.protocol.wire import INT32_MAX, INT32_MIN, DecodeError

T = TypeVar("T")

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
UUID_SIZE = 16


class FlexReader:
    """Reads flexible-encoding primitives from ``data``, starting at ``pos``."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = bytes(data)
        self.pos = pos

    def _take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise DecodeError(self.pos, f"{what}: truncated, needs {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int8(self, what: str) -> int:
        return _INT8.unpack(self._take(1, what))[0]

    def int16(self, what: str) -> int:
        return _INT16.unpack(self._take(2, what))[0]

    def int32(self, what: str) -> int:
        return _INT32.unpack(self._take(4, what))[0]

    def uvarint(self, what: str) -> int:
        start = self.pos
        value = shift = 0
        for _ in range(5):
            b = self._take(1, what)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise DecodeError(start, f"{what}: unsigned varint longer than 5 bytes")

    def uuid(self, what: str) -> bytes:
        return self._take(UUID_SIZE, what)

    def compact_nullable_string(self, what: str) -> str | None:
        start = self.pos
        n = self.uvarint(f"{what} length") - 1
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise DecodeError(start, f"{what}: truncated, string length {n} runs past the end "
                                     f"({len(self.data) - self.pos} bytes left)")
        raw = self._take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(self.pos - n + exc.start, f"{what}: invalid UTF-8 ({exc.reason})") from None

    def compact_string(self, what: str) -> str:
        start = self.pos
        s = self.compact_nullable_string(what)
        if s is None:
            raise DecodeError(start, f"{what}: null string where the field is not nullable")
        return s

    def compact_nullable_array(self, what: str, item: Callable[[str], T], min_item_size: int = 1) -> list[T] | None:
        """A compact array read with ``item(name)`` per element; None for a null array."""
        start = self.pos
        n = self.uvarint(f"{what} count") - 1
        if n < 0:
            return None
        if n * min_item_size > len(self.data) - self.pos:
            raise DecodeError(start, f"{what}: truncated, {n} items cannot fit in the {len(self.data) - self.pos} bytes left")
        return [item(f"{what}[{i}]") for i in range(n)]

    def compact_array(self, what: str, item: Callable[[str], T], min_item_size: int = 1) -> list[T]:
        start = self.pos
        out = self.compact_nullable_array(what, item, min_item_size)
        if out is None:
            raise DecodeError(start, f"{what}: null array where the field is not nullable")
        return out

    def tagged_fields(self, what: str) -> None:
        """Skip a struct's tagged fields (none is known to the messages decoded here)."""
        for i in range(self.uvarint(f"{what} tagged field count")):
            self.uvarint(f"{what} tag {i}")
            self._take(self.uvarint(f"{what} tag {i} size"), f"{what} tag {i} data")

    def end(self, what: str) -> None:
        """DecodeError unless every byte was read."""
        if self.pos != len(self.data):
            raise DecodeError(self.pos, f"{what}: {len(self.data) - self.pos} bytes after the last field")


def _check_int(value: int, lo: int, hi: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{what}: {value!r} is not an integer in [{lo}, {hi}]")
    return value


class FlexWriter:
    """Appends flexible-encoding primitives; :meth:`bytes` is what was written."""

    def __init__(self) -> None:
        self._out: list[bytes] = []

    def bytes(self) -> bytes:
        return b"".join(self._out)

    def int8(self, value: int, what: str) -> None:
        self._out.append(_INT8.pack(_check_int(value, -128, 127, what)))

    def int16(self, value: int, what: str) -> None:
        self._out.append(_INT16.pack(_check_int(value, -(1 << 15), (1 << 15) - 1, what)))

    def int32(self, value: int, what: str) -> None:
        self._out.append(_INT32.pack(_check_int(value, INT32_MIN, INT32_MAX, what)))

    def uvarint(self, value: int, what: str) -> None:
        value = _check_int(value, 0, (1 << 32) - 1, what)
        out = bytearray()
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
        self._out.append(bytes(out))

    def uuid(self, value: builtins.bytes, what: str) -> None:  # builtins: the method bytes() above shadows it
        if not isinstance(value, (bytes, bytearray)) or len(value) != UUID_SIZE:
            raise ValueError(f"{what}: a UUID is {UUID_SIZE} bytes, got {value!r}")
        self._out.append(bytes(value))

    def compact_string(self, value: str | None, what: str, nullable: bool = False) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{what}: null where the field is not nullable")
            self.uvarint(0, what)
            return
        raw = value.encode("utf-8")
        self.uvarint(len(raw) + 1, what)
        self._out.append(raw)

    def compact_array(self, values: Sequence[T] | None, what: str, item: Callable[[T, str], None],
                      nullable: bool = False) -> None:
        if values is None:
            if not nullable:
                raise ValueError(f"{what}: null where the field is not nullable")
            self.uvarint(0, what)
            return
        self.uvarint(len(values) + 1, what)
        for i, v in enumerate(values):
            item(v, f"{what}[{i}]")

    def no_tagged_fields(self) -> None:
        self.uvarint(0, "tagged fields")
