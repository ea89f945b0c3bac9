"""Asking the package registries about releases: does this exact one exist, and what do they list.

One place for the three registries the client kinds come from, asked over HTTPS:

- Maven Central (:data:`conformance.config.MAVEN_CENTRAL`): a release exists when its POM does
  (``GROUP/ARTIFACT/V/ARTIFACT-V.pom``); the listing is ``maven-metadata.xml``.
- PyPI: a release exists when ``/pypi/PACKAGE/V/json`` answers; when that answers 404 the
  project's own record (``/pypi/PACKAGE/json``, its ``releases``) decides, because the
  per-release endpoint is not served everywhere (behind some egress proxies it answers 404
  for every release). The listing is the same record.
- The Go module proxy (the first URL of ``GOPROXY``, default ``https://proxy.golang.org``): a
  version exists when ``MODULE/@v/VERSION.info`` answers. Its ``@v/list`` can be incomplete
  (it may omit versions that ``.info`` serves), so it is only used to name nearby versions,
  never to refuse one.

Guarantees:

- :func:`maven_has`, :func:`pypi_has` and :func:`go_has` return True or False only on the
  registry's own answer (a 2xx, or a "not found": 404, 410, or the Go proxy's 403 "not
  available"); anything else (no network, a timeout, a 5xx) raises
  :class:`RegistryUnreachable`, a :class:`~conformance.errors.SuiteError` naming the URL, so
  "no such release" is never said on a guess.
- Each request waits at most :data:`TIMEOUT_S` and is tried :data:`ATTEMPTS` times; answers
  are cached for the process.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from functools import lru_cache

from conformance import config
from conformance.errors import SuiteError

#: Seconds one request may take, and how often it is tried before the registry counts as unreachable.
TIMEOUT_S: float = 15.0
ATTEMPTS: int = 2
PYPI: str = "https://pypi.org"
DEFAULT_GOPROXY: str = "https://proxy.golang.org"


class RegistryUnreachable(SuiteError):
    """A registry gave no answer (network, timeout, server error): nothing is known about the release."""


def _get(url: str) -> tuple[int, bytes]:
    """``(status, body)`` of a GET; a 4xx is an answer; RegistryUnreachable for no answer or a 5xx."""
    last = ""
    for _ in range(ATTEMPTS):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "conformance"}),
                                        timeout=TIMEOUT_S) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                return exc.code, exc.read()
            last = f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            last = str(getattr(exc, "reason", exc))
    raise RegistryUnreachable(f"no answer from {url} ({last}); check the network, then try again")


def _found(url: str, status: int, body: bytes) -> bool:
    if 200 <= status < 300:
        return True
    if status in (404, 410) or (status == 403 and b"not available" in body):
        return False
    raise RegistryUnreachable(f"{url} answered HTTP {status}: {body[:200].decode('utf-8', 'replace').strip()}")


# --------------------------------------------------------------------------- Maven Central


def _maven_path(group: str, artifact: str) -> str:
    return f"{config.MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}"


@lru_cache(maxsize=None)
def maven_has(group: str, artifact: str, version: str) -> bool:
    """True when Maven Central has ``group:artifact:version`` (its POM)."""
    url = f"{_maven_path(group, artifact)}/{version}/{artifact}-{version}.pom"
    return _found(url, *_get(url))


@lru_cache(maxsize=None)
def maven_versions(group: str, artifact: str) -> tuple[str, ...]:
    """Every version of ``maven-metadata.xml`` for ``group:artifact``."""
    url = f"{_maven_path(group, artifact)}/maven-metadata.xml"
    status, body = _get(url)
    if not _found(url, status, body):
        return ()
    try:
        return tuple(v.text for v in ET.fromstring(body).iter("version") if v.text)
    except ET.ParseError as exc:
        raise RegistryUnreachable(f"{url} is not XML: {exc}") from None


# --------------------------------------------------------------------------- PyPI


@lru_cache(maxsize=None)
def pypi_versions(package: str) -> tuple[str, ...]:
    """Every release PyPI records for ``package`` (its project JSON), in PyPI's order; () for no such project."""
    url = f"{PYPI}/pypi/{package}/json"
    status, body = _get(url)
    if not _found(url, status, body):
        return ()
    try:
        return tuple(json.loads(body)["releases"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RegistryUnreachable(f"{url} is not PyPI's project JSON: {exc}") from None


@lru_cache(maxsize=None)
def pypi_has(package: str, version: str) -> bool:
    """True when PyPI has release ``version`` of ``package`` under exactly that spelling."""
    url = f"{PYPI}/pypi/{package}/{version}/json"
    if _found(url, *_get(url)):
        return True
    return version in pypi_versions(package)


# --------------------------------------------------------------------------- Go module proxy


def goproxy() -> str:
    """The first proxy URL of ``GOPROXY`` (what ``go`` itself asks first); SuiteError when it names none."""
    raw = os.environ.get("GOPROXY", DEFAULT_GOPROXY)
    for entry in re.split(r"[,|]", raw):
        if entry.startswith(("https://", "http://")):
            return entry.rstrip("/")
    raise SuiteError(f"GOPROXY={raw!r} names no module proxy URL; the Go kinds' versions are looked up there")


def _escape(path: str) -> str:
    """The module proxy's case encoding: every capital letter becomes ``!`` and its lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group().lower(), path)


@lru_cache(maxsize=None)
def go_has(module: str, version: str) -> bool:
    """True when the module proxy serves ``module`` at ``version`` (``v`` prefix added if missing)."""
    v = version if version.startswith("v") else f"v{version}"
    url = f"{goproxy()}/{_escape(module)}/@v/{_escape(v)}.info"
    return _found(url, *_get(url))


@lru_cache(maxsize=None)
def go_versions(module: str) -> tuple[str, ...]:
    """The proxy's ``@v/list`` of ``module`` without the ``v``: possibly incomplete, for naming nearby versions."""
    url = f"{goproxy()}/{_escape(module)}/@v/list"
    status, body = _get(url)
    if not _found(url, status, body):
        return ()
    return tuple(v.removeprefix("v") for v in body.decode("utf-8", "replace").split())


def clear_cache() -> None:
    """Forget every cached answer (the next question asks the registry again)."""
    for cached in (maven_has, maven_versions, pypi_has, pypi_versions, go_has, go_versions):
        cached.cache_clear()
