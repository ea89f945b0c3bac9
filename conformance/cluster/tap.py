"""The wire tap: a byte-exact TCP relay per member slot that records the group APIs.

Path of a member: member -> tap listener (the slot's advertised address) ->
toxiproxy proxy -> broker listener of that slot.

Why in-process: the tap is an asyncio event loop in one background thread of
the suite process. It needs no extra process to supervise, it dies with the
suite (so no listening port outlives a run), it writes ``wire.jsonl`` directly,
and on loopback it adds well under a millisecond per request (see
``bench/cluster_setup.py``). Members, broker and toxiproxy are separate
processes, so the suite's own threads are the only GIL competition.

Guarantees:

- Bytes are forwarded unchanged and in order in both directions; a frame is
  never dropped, delayed for decoding or altered. Each chunk is written to
  the other side BEFORE it is parsed, and parsing is fully guarded: a decoding
  bug is recorded as ``undecodable`` and parsing stops for that connection,
  forwarding never stops.
- When either side closes, both are closed (a disabled proxy cuts the member).
- Frames of the group APIs (see :mod:`wire_decode`) are recorded as JSON lines
  in ``wire.jsonl`` (fields: :mod:`wire_decode`), one line per request or response,
  flushed per line by a thread-safe writer. Other APIs are skipped without
  being buffered (a large Fetch response costs nothing but the relay).
- A response record also carries ``group_id``/``member_id``/``generation``
  from its request when the response itself lacks them, and every record has
  ``connection`` (a per-tap connection number), since correlation ids are
  only unique per connection.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any, Callable

from conformance import config
from conformance.cluster.wire_decode import GROUP_APIS, WireDecodeError, decode_request, decode_response, peek_request
from conformance.jsonl import JsonLinesAppender

#: A frame larger than this is not a Kafka frame we will buffer: parsing stops for that connection.
MAX_FRAME = 256 * 1024 * 1024
_RAW_LIMIT = 256
_CHUNK = 256 * 1024


class _Framer:
    """Splits one direction's byte stream into Kafka frames, buffering only the wanted ones."""

    def __init__(self, want: Callable[[bytes], bool], on_frame: Callable[[bytes], None],
                 on_broken: Callable[[str, bytes], None]) -> None:
        self.want = want            # (first 8 bytes of the frame) -> keep it?
        self.on_frame = on_frame
        self.on_broken = on_broken
        self.buf = bytearray()
        self.skip = 0               # bytes of an unwanted frame still to pass
        self.need: int | None = None  # total length (with size prefix) of the wanted frame in buf
        self.broken = False

    def feed(self, data: bytes) -> None:
        if self.broken:
            return
        if self.skip:
            if len(data) <= self.skip:
                self.skip -= len(data)
                return
            data = data[self.skip:]
            self.skip = 0
        self.buf += data
        while True:
            if self.need is None:
                if len(self.buf) < 4:
                    return
                size = struct.unpack_from(">i", self.buf)[0]
                if size < 4 or size > MAX_FRAME:
                    self.broken = True
                    self.on_broken(f"frame size {size} is not a Kafka frame size; parsing stopped for this "
                                   "connection (bytes still forwarded)", bytes(self.buf[:_RAW_LIMIT]))
                    self.buf.clear()
                    return
                if len(self.buf) < 4 + min(size, 8):
                    return
                if not self.want(bytes(self.buf[4:4 + min(size, 8)])):
                    total = 4 + size
                    if len(self.buf) >= total:
                        del self.buf[:total]
                        continue
                    self.skip = total - len(self.buf)
                    self.buf.clear()
                    return
                self.need = 4 + size
            if len(self.buf) < self.need:
                return
            frame = bytes(self.buf[4:self.need])
            del self.buf[:self.need]
            self.need = None
            self.on_frame(frame)


class _Connection:
    """Decoding state of one member connection: both framers and the pending requests."""

    def __init__(self, tap: "WireTap", slot: int, number: int) -> None:
        self.tap = tap
        self.slot = slot
        self.number = number
        self.pending: dict[int, dict[str, Any]] = {}   # correlation id -> request record (or header)
        self.requests = _Framer(self._want_request, self._on_request, self._broken("request"))
        self.responses = _Framer(self._want_response, self._on_response, self._broken("response"))

    # -- requests ---------------------------------------------------------
    def _want_request(self, head: bytes) -> bool:
        if len(head) < 8:
            return False
        api_key, version, correlation_id = peek_request(head)
        if api_key in GROUP_APIS:
            self.pending[correlation_id] = {"api_key": api_key, "version": version}
            return True
        return False

    def _on_request(self, frame: bytes) -> None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
        try:
            rec = decode_request(frame)
        except Exception as exc:  # WireDecodeError or a bug: recorded, never raised
            rec = self._undecodable(api_key, version, correlation_id, "request", exc, frame)
        self.pending[correlation_id] = rec
        self.tap._record(self.slot, self.number, rec)

    # -- responses --------------------------------------------------------
    def _want_response(self, head: bytes) -> bool:
        return len(head) >= 4 and struct.unpack_from(">i", head)[0] in self.pending

    def _on_response(self, frame: bytes) -> None:
        correlation_id = struct.unpack_from(">i", frame)[0]
        req = self.pending.pop(correlation_id, None)
        if req is None:
            return
        api_key, version = req["api_key"], req["version"]
        try:
            rec = decode_response(frame, api_key, version)
            for key in ("group_id", "member_id", "generation", "group_instance_id"):
                if rec.get(key) is None and req.get(key) is not None:
                    rec[key] = req[key]
        except Exception as exc:
            rec = self._undecodable(api_key, version, correlation_id, "response", exc, frame)
        self.tap._record(self.slot, self.number, rec)

    # -- failures ---------------------------------------------------------
    def _undecodable(self, api_key: int, version: int, correlation_id: int, direction: str,
                     exc: Exception, frame: bytes) -> dict[str, Any]:
        reason = str(exc) if isinstance(exc, WireDecodeError) else f"decoder error {type(exc).__name__}: {exc}"
        return {"api": GROUP_APIS.get(api_key, f"api{api_key}"), "api_key": api_key, "version": version,
                "correlation_id": correlation_id, "direction": direction, "group_id": None, "member_id": None,
                "group_instance_id": None, "generation": None, "protocol_type": None, "error_code": None,
                "undecodable": reason, "raw": frame[:_RAW_LIMIT].hex()}

    def _broken(self, direction: str) -> Callable[[str, bytes], None]:
        def report(reason: str, raw: bytes) -> None:
            self.tap._record(self.slot, self.number, {
                "api": None, "api_key": None, "version": None, "correlation_id": None, "direction": direction,
                "group_id": None, "member_id": None, "group_instance_id": None, "generation": None,
                "protocol_type": None, "error_code": None, "undecodable": reason, "raw": raw.hex()})
        return report

    def feed(self, framer: _Framer, data: bytes) -> None:
        """Parse a chunk that has already been forwarded; never raises."""
        try:
            framer.feed(data)
        except Exception as exc:
            framer.broken = True
            try:
                framer.on_broken(f"tap parser error {type(exc).__name__}: {exc}; parsing stopped for this "
                                 "connection (bytes still forwarded)", data[:_RAW_LIMIT])
            except Exception:
                pass


class WireTap:
    """Relays each slot's listener to its upstream and records the group APIs; see the module docstring."""

    def __init__(self, wire_path: Path, member_of: Callable[[int], str | None]) -> None:
        self.writer = JsonLinesAppender(wire_path, default=str)  # wire.jsonl, from the tap's threads
        self.member_of = member_of
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="wire-tap", daemon=True)
        self._servers: dict[int, asyncio.base_events.Server] = {}
        self._tasks: set[asyncio.Task] = set()
        self._connections = 0
        self._started = False

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> None:
        if not self._started:
            self._thread.start()
            self._started = True

    def _call(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def listen(self, slot: int, port: int, upstream_port: int, *, host: str = config.HOST,
               upstream_host: str = config.HOST) -> None:
        """Listen on ``host``:``port`` for slot ``slot``, relaying to ``upstream_host``:``upstream_port``
        (both 127.0.0.1 unless given: the container backend listens on its run network's gateway).

        Raises OSError if the port cannot be bound (the caller picks another).
        """
        self.start()
        self._call(self._listen(slot, port, upstream_port, host, upstream_host))

    async def _listen(self, slot: int, port: int, upstream_port: int, host: str, upstream_host: str) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:
                self._tasks.add(task)
            try:
                await self._relay(slot, upstream_host, upstream_port, reader, writer)
            except asyncio.CancelledError:
                pass  # tap stopping: the relay's pipes have closed both sockets
            finally:
                if task is not None:
                    self._tasks.discard(task)

        server = await asyncio.start_server(handle, host, port, reuse_address=True, limit=_CHUNK)
        self._servers[slot] = server

    async def _relay(self, slot: int, upstream_host: str, upstream_port: int, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        self._connections += 1
        conn = _Connection(self, slot, self._connections)
        try:
            up_r, up_w = await asyncio.open_connection(upstream_host, upstream_port, limit=_CHUNK)
        except OSError:
            client_w.close()
            return
        for w in (client_w, up_w):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, framer: _Framer) -> None:
            try:
                while True:
                    data = await src.read(_CHUNK)
                    if not data:
                        break
                    dst.write(data)          # forward first ...
                    conn.feed(framer, data)  # ... then parse (guarded, synchronous)
                    await dst.drain()
            except (ConnectionError, OSError, asyncio.IncompleteReadError):
                pass
            finally:
                for w in (client_w, up_w):
                    w.close()

        await asyncio.gather(pipe(client_r, up_w, conn.requests), pipe(up_r, client_w, conn.responses),
                             return_exceptions=True)

    def _record(self, slot: int, connection: int, rec: dict[str, Any]) -> None:
        member = self.member_of(slot) or f"slot{slot}"
        self.writer.write({"ts": time.time() * 1000.0, "member": member, **rec, "slot": slot,
                           "connection": connection})

    def stop(self) -> None:
        """Close every listener and connection, stop the loop thread and close ``wire.jsonl``."""
        if self._started:
            async def shutdown() -> None:
                for server in self._servers.values():
                    server.close()
                for task in list(self._tasks):
                    task.cancel()
                for server in self._servers.values():
                    try:
                        await asyncio.wait_for(server.wait_closed(), 2)
                    except (asyncio.TimeoutError, Exception):
                        pass
            try:
                self._call(shutdown(), timeout=5)
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
            self._started = False
        self.writer.close()
