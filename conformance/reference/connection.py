"""A small blocking Kafka connection: kafka-python's request classes for the bytes, nothing else of it.

One :class:`Connection` is one TCP socket to one broker address. ``request``
sends one request and waits for its response (one at a time: a lock
serialises callers), at the highest version both this module's cap (see
:data:`VERSION_CAPS`, overridable per connection) and the broker support,
learned once with ApiVersions. ``request_body`` does the same for an API
kafka-python has no class for (ConsumerGroupHeartbeat): the caller's codec
encodes and decodes the body, this module the flexible headers around it.

Guarantees: a socket error, a timeout or a malformed frame closes the socket
and raises :class:`ConnectionLost` naming the address and the API; the next
``request`` reconnects. Nothing is retried here: callers decide.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Any, Callable, TypeVar

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from conformance.protocol import DecodeError
from conformance.protocol.flexible import FlexReader

T = TypeVar("T")

#: Highest version used per API key: the last versions that still name topics
#: (later ones use topic ids) and keep single-group requests.
VERSION_CAPS: dict[int, int] = {
    1: 12,   # Fetch
    2: 7,    # ListOffsets
    3: 9,    # Metadata
    8: 8,    # OffsetCommit
    9: 7,    # OffsetFetch
    10: 3,   # FindCoordinator
    11: 9,   # JoinGroup
    12: 4,   # Heartbeat
    13: 5,   # LeaveGroup
    14: 5,   # SyncGroup
}


class ConnectionLost(Exception):
    """The connection failed; the message says which address, which API and why."""


class Connection:
    """One broker socket; thread-safe, one request in flight."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 30.0,
                 caps: dict[int, int] | None = None) -> None:
        self.host, self.port, self.client_id = host, int(port), client_id
        self.caps = {**VERSION_CAPS, **(caps or {})}
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._correlation = 0
        self._versions: dict[int, tuple[int, int]] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        """Whether a socket is open (a request would not have to connect first)."""
        return self._sock is not None

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv on it (close alone may not)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass

    def _connect(self) -> None:
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            self._sock = None
            raise ConnectionLost(f"connect to {self.address} failed: {exc}") from None
        if self._versions is None:
            resp = self._roundtrip(ApiVersionsRequest, 0, ApiVersionsRequest(), self.timeout_s)
            if resp.error_code != 0:
                self.close()
                raise ConnectionLost(f"ApiVersions to {self.address} failed with error {resp.error_code}")
            self._versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def version_for(self, request_class: Any) -> int:
        """The version ``request`` will use for this API (connects if needed)."""
        with self._lock:
            if self._sock is None:
                self._connect()
            return self._pick(request_class)

    def _pick(self, request_class: Any) -> int:
        key = request_class.API_KEY
        assert self._versions is not None
        if key not in self._versions:
            raise ConnectionLost(f"broker {self.address} does not support API key {key} ({request_class.__name__})")
        lo, hi = self._versions[key]
        version = min(hi, request_class.max_version, self.caps.get(key, hi))
        if version < lo:
            raise ConnectionLost(f"no common version of {request_class.__name__}: broker {lo}-{hi}, client <= {version}")
        return version

    def _recv_exact(self, n: int) -> bytes:
        assert self._sock is not None
        chunks = []
        while n:
            chunk = self._sock.recv(min(n, 1 << 20))
            if not chunk:
                raise OSError("connection closed by peer")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _roundtrip(self, request_class: Any, version: int, req: Any, timeout_s: float,
                   on_sent: Callable[[], None] | None = None) -> Any:
        assert self._sock is not None
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        corr = self._correlation
        req.with_header(correlation_id=corr, client_id=self.client_id)
        data = req.encode(version=version, header=True, framed=True)
        payload = self._exchange(data, timeout_s, on_sent, f"{request_class.__name__} v{version}")
        response_class = req.header.get_response_class() if request_class is not ApiVersionsRequest else ApiVersionsResponse[0]
        try:
            resp = response_class.decode(payload, version=version, header=True)
        except Exception as exc:  # a malformed frame is a lost connection, said precisely
            self.close()
            raise ConnectionLost(f"undecodable {response_class.__name__} v{version} from {self.address}: {exc}") from None
        got = resp.header.correlation_id
        if got != corr:
            self.close()
            raise ConnectionLost(f"{request_class.__name__} to {self.address}: correlation id {got} != {corr}")
        return resp

    def _exchange(self, data: bytes, timeout_s: float, on_sent: Callable[[], None] | None, what: str) -> bytes:
        """Send one framed request, return the response frame's payload (ConnectionLost on failure)."""
        assert self._sock is not None
        try:
            self._sock.settimeout(timeout_s)
            self._sock.sendall(data)
            if on_sent is not None:
                on_sent()
            (size,) = struct.unpack(">i", self._recv_exact(4))
            return self._recv_exact(size)
        except (OSError, socket.timeout) as exc:
            self.close()
            raise ConnectionLost(f"{what} to {self.address}: {exc or type(exc).__name__}") from None

    def request_body(self, api_key: int, name: str, versions: tuple[int, int], encode: Callable[[int], bytes],
                     decode: Callable[[bytes, int], T], timeout_s: float | None = None,
                     on_sent: Callable[[], None] | None = None) -> tuple[T, int]:
        """One request of a flexible API this module has no class for: ``(decoded response, version)``.

        ``encode(version)`` gives the request body, ``decode(body, version)`` reads the response
        body (a :class:`~conformance.protocol.DecodeError` there is a lost connection, said
        precisely); the version is the highest in ``versions`` the broker supports.
        """
        with self._lock:
            if self._sock is None:
                self._connect()
            assert self._versions is not None
            if api_key not in self._versions:
                raise ConnectionLost(f"broker {self.address} does not support API key {api_key} ({name})")
            lo, hi = self._versions[api_key]
            version = min(hi, versions[1], self.caps.get(api_key, hi))
            if version < max(lo, versions[0]):
                raise ConnectionLost(f"no common version of {name}: broker {lo}-{hi}, client {versions[0]}-{versions[1]}")
            self._correlation = (self._correlation + 1) & 0x7FFFFFFF
            corr = self._correlation
            client_id = self.client_id.encode("utf-8")
            frame = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id + b"\x00" + encode(version)
            payload = self._exchange(struct.pack(">i", len(frame)) + frame, timeout_s or self.timeout_s, on_sent,
                                     f"{name} v{version}")
            try:
                header = FlexReader(payload)
                got = header.int32("correlation_id")
                header.tagged_fields("response header")
                resp = decode(payload[header.pos:], version)
            except DecodeError as exc:
                self.close()
                raise ConnectionLost(f"undecodable {name} response v{version} from {self.address}: {exc}") from None
            if got != corr:
                self.close()
                raise ConnectionLost(f"{name} to {self.address}: correlation id {got} != {corr}")
            return resp, version

    def request(self, req: Any, timeout_s: float | None = None, on_sent: Callable[[], None] | None = None) -> Any:
        """Send ``req`` (an unversioned kafka-python request object) and return the decoded response.

        ``on_sent`` is called once the whole request has been handed to the socket (not if
        sending fails): the heartbeat thread uses it to hold its state lock exactly until its
        request is out.
        """
        with self._lock:
            if self._sock is None:
                self._connect()
            request_class = type(req)
            version = self._pick(request_class)
            return self._roundtrip(request_class, version, req, timeout_s or self.timeout_s, on_sent)


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` -> ``(host, port)``; ValueError naming the input otherwise."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"not a host:port address: {address!r}")
    return host, int(port)
