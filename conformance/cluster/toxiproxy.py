"""toxiproxy: one server per Cluster and a small typed client for its HTTP API.

The server (built by :func:`conformance.cluster.install.ensure_toxiproxy`) runs
as a Supervisor process, API on 127.0.0.1 at a free port, with a fixed
``-seed`` so that probabilistic toxics repeat. The client speaks the HTTP API
with ``urllib`` only.

Guarantees:

- Every API call either succeeds or raises :class:`ToxiproxyError` naming the
  method, the path, the HTTP status and toxiproxy's own message.
- :class:`Toxic` validates its type, stream, toxicity and required attributes
  on construction: a malformed toxic is a ``ValueError`` before anything is sent.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from conformance import config
from conformance.cluster.install import ensure_toxiproxy
from conformance.cluster.ports import free_port
from conformance.cluster.supervisor import ManagedProcess, Supervisor
from conformance.errors import SuiteError

#: Toxic type -> the attributes it requires (toxiproxy v2 names, all integers).
TOXIC_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "latency": ("latency",),                 # optional: jitter (ms)
    "bandwidth": ("rate",),                  # KB/s
    "timeout": ("timeout",),                 # ms; 0 = never close, just stop data
    "reset_peer": ("timeout",),              # ms before the TCP RST
    "slicer": ("average_size",),             # optional: size_variation, delay (us)
    "slow_close": ("delay",),                # ms
    "limit_data": ("bytes",),
}
_OPTIONAL: dict[str, tuple[str, ...]] = {"latency": ("jitter",), "slicer": ("size_variation", "delay")}


class ToxiproxyError(SuiteError):
    """A toxiproxy API call failed; the message names the call and toxiproxy's answer."""


@dataclass(frozen=True)
class Toxic:
    """A toxic to add to a proxy. ``stream`` is from the member's point of view:
    ``upstream`` = member -> broker (requests), ``downstream`` = broker -> member (responses)."""

    type: str
    stream: str = "downstream"
    attributes: dict[str, int] = field(default_factory=dict)
    toxicity: float = 1.0
    name: str | None = None

    def __post_init__(self) -> None:
        if self.type not in TOXIC_ATTRIBUTES:
            raise ValueError(f"unknown toxic type {self.type!r}; known: {', '.join(TOXIC_ATTRIBUTES)}")
        if self.stream not in ("upstream", "downstream"):
            raise ValueError(f"toxic stream must be 'upstream' or 'downstream', not {self.stream!r}")
        if not 0.0 <= self.toxicity <= 1.0:
            raise ValueError(f"toxicity must be within [0, 1], not {self.toxicity}")
        required = TOXIC_ATTRIBUTES[self.type]
        allowed = set(required) | set(_OPTIONAL.get(self.type, ()))
        missing = [a for a in required if a not in self.attributes]
        unknown = [a for a in self.attributes if a not in allowed]
        if missing or unknown:
            raise ValueError(f"toxic {self.type}: attributes {dict(self.attributes)} "
                             f"(missing {missing}, unknown {unknown}; allowed {sorted(allowed)})")
        for k, v in self.attributes.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"toxic {self.type}: attribute {k}={v!r} must be a non-negative int")

    def payload(self, default_name: str) -> dict[str, Any]:
        return {"name": self.name or default_name, "type": self.type, "stream": self.stream,
                "toxicity": self.toxicity, "attributes": dict(self.attributes)}


class ToxiproxyClient:
    """The toxiproxy HTTP API at ``http://<host>:<port>`` (127.0.0.1 unless given: the container
    backend's toxiproxy answers at its address on the run's network)."""

    def __init__(self, port: int, timeout: float = 10.0, host: str = config.HOST) -> None:
        self.base = f"http://{host}:{port}"
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace").strip()
            raise ToxiproxyError(f"toxiproxy {method} {path} -> HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ToxiproxyError(f"toxiproxy {method} {path}: {exc}") from exc
        return json.loads(raw) if raw.strip() else None

    def version(self) -> str:
        req = urllib.request.Request(self.base + "/version")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return resp.read().decode("utf-8", "replace").strip()

    def create_proxy(self, name: str, listen: str, upstream: str, enabled: bool = True) -> dict[str, Any]:
        return self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream,
                                               "enabled": enabled})

    def get_proxy(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/proxies/{name}")

    def update_proxy(self, name: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", f"/proxies/{name}", fields)

    def delete_proxy(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}")

    def list_proxies(self) -> dict[str, Any]:
        return self._call("GET", "/proxies")

    def add_toxic(self, proxy: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", f"/proxies/{proxy}/toxics", payload)

    def list_toxics(self, proxy: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/proxies/{proxy}/toxics") or []

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset")


class Proxy:
    """One member's proxy (its path: tap -> this proxy -> the member's broker listener)."""

    def __init__(self, client: ToxiproxyClient, name: str, listen: str, upstream: str) -> None:
        self.client = client
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.member: str | None = None
        self._counter = 0

    def disable(self) -> None:
        """Close every connection on this path and refuse new ones until :meth:`enable`."""
        self.client.update_proxy(self.name, enabled=False)

    def enable(self) -> None:
        self.client.update_proxy(self.name, enabled=True)

    @property
    def enabled(self) -> bool:
        return bool(self.client.get_proxy(self.name)["enabled"])

    def add_toxic(self, toxic: Toxic) -> str:
        """Add ``toxic``; returns its name (``<type>_<stream>_<n>`` unless it was named)."""
        self._counter += 1
        payload = toxic.payload(f"{toxic.type}_{toxic.stream}_{self._counter}")
        self.client.add_toxic(self.name, payload)
        return payload["name"]

    def remove_toxic(self, name: str) -> None:
        self.client.remove_toxic(self.name, name)

    def toxics(self) -> list[dict[str, Any]]:
        return self.client.list_toxics(self.name)

    def clear_toxics(self) -> None:
        for toxic in self.toxics():
            self.remove_toxic(toxic["name"])

    def __repr__(self) -> str:
        return f"<Proxy {self.name} member={self.member} {self.listen} -> {self.upstream}>"


class ToxiproxyServer:
    """A toxiproxy server process of one run, API on a free loopback port."""

    def __init__(self, supervisor: Supervisor, seed: int = 1) -> None:
        self.supervisor = supervisor
        self.seed = seed
        self.binary = ensure_toxiproxy()
        self.port = 0
        self.process: ManagedProcess | None = None
        self.client: ToxiproxyClient | None = None

    def start(self, timeout: float = 20.0) -> ToxiproxyClient:
        """Start the server and return a client once its API answers (retried on a taken port)."""
        last = ""
        for _ in range(3):
            self.port = free_port()
            self.process = self.supervisor.spawn(
                "toxiproxy", [str(self.binary), "-host", config.HOST, "-port", str(self.port),
                              "-seed", str(self.seed)], log_name="toxiproxy")
            client = ToxiproxyClient(self.port)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.process.alive():
                try:
                    client.version()
                    self.client = client
                    return client
                except (urllib.error.URLError, OSError) as exc:
                    last = str(exc)
                    time.sleep(0.05)
            last = f"exited {self.process.returncode}" if not self.process.alive() else last
            self.process.terminate(timeout=5)
        raise SuiteError(f"toxiproxy did not answer on {config.HOST}:{self.port} ({last}); "
                         f"see {self.supervisor.logs_dir / 'toxiproxy.log'}")

    def stop(self) -> None:
        if self.process is not None and self.process.alive():
            self.process.terminate(timeout=5)
