"""The ``--spark-master URL`` option, checked before anything starts.

The pipeline hands the URL to ``SparkSession.builder.master`` (:mod:`conformance.pipeline.session`),
and Spark decides what it means only when the session starts: after a whole run. So
:func:`check_spark_master` accepts exactly the forms Spark's own ``SparkContext`` parses, and
refuses anything else at once with one line naming them:

- ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``, ``local[*,F]`` (N threads, at least 1; F failures)
- ``local-cluster[N,C,M]`` (N workers of C cores and M MB; Spark's own tests use it)
- ``spark://HOST:PORT[,HOST:PORT...]`` (a standalone master, several with ZooKeeper)
- ``yarn``
- ``k8s://[https://]HOST[:PORT]`` (Spark on Kubernetes; PORT defaults to 443)
"""

from __future__ import annotations

import re

from conformance.errors import UsageError

FORMS = "local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT, yarn or k8s://HOST:PORT"

_LOCAL = re.compile(r"local(?:\[\s*(?:([0-9]{1,6})|\*)\s*(?:,\s*[0-9]{1,6}\s*)?\])?", re.ASCII)
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*([0-9]{1,6})\s*,\s*([0-9]{1,6})\s*,\s*([0-9]{1,9})\s*\]", re.ASCII)
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])"
_HOST_PORT = re.compile(rf"{_HOST}:([0-9]{{1,5}})", re.ASCII)
_K8S = re.compile(rf"k8s://(?:https?://)?{_HOST}(?::([0-9]{{1,5}}))?/?", re.ASCII)


def _port_ok(port: str | None) -> bool:
    return port is None or 1 <= int(port) <= 65535


def check_spark_master(url: str) -> str:
    """``url`` unchanged when Spark would accept it as a master; UsageError (one line) otherwise."""
    local = _LOCAL.fullmatch(url)
    if local:
        if local.group(1) is not None and int(local.group(1)) < 1:
            raise UsageError(f"--spark-master {url}: a local master needs at least one thread (local[1], or local[*] for all cores)")
        return url
    cluster = _LOCAL_CLUSTER.fullmatch(url)
    if cluster:
        if min(int(g) for g in cluster.groups()) < 1:
            raise UsageError(f"--spark-master {url}: local-cluster[N,C,M] needs at least 1 worker, 1 core and 1 MB")
        return url
    if url.startswith("spark://"):
        parts = url[len("spark://"):].split(",")
        matches = [_HOST_PORT.fullmatch(p) for p in parts]
        if all(m and _port_ok(m.group(1)) for m in matches):
            return url
        raise UsageError(f"--spark-master {url}: a standalone master is spark://HOST:PORT (e.g. spark://127.0.0.1:7077), "
                         f"several separated by commas")
    if url == "yarn":
        return url
    k8s = _K8S.fullmatch(url)
    if k8s and _port_ok(k8s.group(1)):
        return url
    raise UsageError(f"--spark-master {url!r} is not a Spark master URL; use {FORMS}")
