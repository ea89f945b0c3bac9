"""The embedded cluster: a real Kafka broker (KRaft, Maven Central jars), toxiproxy and the wire tap.

Public API: :class:`Cluster`, :class:`Proxy`, :class:`Toxic`;
installers in :mod:`conformance.cluster.install`; process supervision in
:mod:`conformance.cluster.supervisor`; ports in :mod:`conformance.cluster.ports`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Cluster", "Proxy", "Toxic", "ToxiproxyError"]


def __getattr__(name: str) -> Any:
    # Imported lazily so that `conformance.cluster.supervisor` stays cheap to import.
    if name == "Cluster":
        from conformance.cluster.cluster import Cluster
        return Cluster
    if name in ("Proxy", "Toxic", "ToxiproxyError"):
        from conformance.cluster import toxiproxy
        return getattr(toxiproxy, name)
    raise AttributeError(f"module 'conformance.cluster' has no attribute {name!r}")
