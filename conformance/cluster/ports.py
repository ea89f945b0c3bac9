"""Free loopback ports.

Guarantee: a port returned by :func:`free_port` was bindable on 127.0.0.1 at
the moment of the call and is never handed out twice by this process. Two
processes may still race for one port between this call and their bind; the
callers that start servers retry on ``EADDRINUSE``.
"""

from __future__ import annotations

import socket
import threading

from conformance.config import HOST

_given: set[int] = set()
_lock = threading.Lock()


def free_port() -> int:
    """A currently free TCP port on the loopback address."""
    with _lock:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((HOST, 0))
                port = s.getsockname()[1]
            if port not in _given:
                _given.add(port)
                return port
    raise RuntimeError("no free loopback port after 100 tries")
