"""Member kind ``franz-go``: the Go client franz-go (package kgo), one harness binary per version.

``franz-go@V`` is ``clients/franz-go/harness`` built with the suite's Go toolchain (the
environment of :func:`conformance.members.kinds.sarama.go_env`: module and build caches under
``config.GO_DIR``, no toolchain download) against ``github.com/twmb/franz-go vV`` into
``config.FRANZ_GO_DIR/V/harness``. The generated go.mod requires that one module at the exact
version (``go mod tidy`` takes kmsg and the rest at what that release requires). The build is
atomic (a temporary directory renamed into place, its marker written last) and idempotent (a
finished binary is reused); concurrent builds of one version wait on a lock file.

What the releases have, read from their sources (the proxy's ``@v`` zips):

- every 1.x has the four balancers (``CooperativeStickyBalancer`` since before 1.0; it is kgo's
  default balancer), so ``supports_cooperative`` is true for all of them. Before 1.13.0 a
  cooperative-sticky balancer listed with an eager one could make the client sometimes think it
  was eager (franz-go's changelog, 1.13.0); single-protocol lists are unaffected.
- the harness needs ``Client.GroupMetadata`` (member id and generation for the history), which
  franz-go has from 1.7.0: :data:`OLDEST`.
- subscriptions: 1.7.0-1.14.x write v0 for range/roundrobin and v0 (sticky) or v1
  (cooperative-sticky); by 1.20 every balancer writes v3 (generation; rack when ``Rack`` is set).
  Sticky and cooperative-sticky userData are the StickyAssignor v1 layout (previous assignment,
  then generation), not Java's bare cooperative generation. The golden vectors
  (fixtures/golden/franz-go-*.json, clients/franz-go/golden) hold the bytes.
- KIP-848: ``kgo.ServerSideBalancer()`` from 1.22.0 (opt-in; classic stays the default). The
  harness refuses ``group_protocol: consumer`` for now; see clients/franz-go/harness/balancers.go
  for what that change must keep.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from conformance import config, registries
from conformance.errors import SuiteError, UsageError
from conformance.members.kinds.sarama import go_env

KIND = "franz-go"
MODULE = "github.com/twmb/franz-go"
SOURCE_DIR: Path = config.CLIENTS_DIR / "franz-go" / "harness"

#: Versions exercised by the harness tests against a real broker; the default first.
KNOWN_VERSIONS: tuple[str, ...] = ("1.22.3", "1.7.0")
#: Where releases come from, for messages.
REGISTRY = f"the Go module proxy ({MODULE})"
#: The oldest release the harness builds against, and why.
OLDEST = "1.7.0"
OLDEST_WHY = "the franz-go harness reads member id and generation with kgo.Client.GroupMetadata, which franz-go has from 1.7.0"
#: KIP-848 through kgo.ServerSideBalancer (not run by the harness yet).
FIRST_SERVER_SIDE_BALANCER = (1, 22, 0)
_MARKER = "install.json"


def _vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("-")[0])[:3])


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    """True: every franz-go 1.x has CooperativeStickyBalancer (its default balancer)."""
    return True


def strategies_supported(version: str) -> list[str]:
    return ["cooperative-sticky", "sticky", "range", "roundrobin"]


def supports_server_side_balancer(version: str) -> bool:
    """Whether franz-go ``version`` has kgo.ServerSideBalancer (KIP-848), for the change that runs it."""
    return _vtuple(version) >= FIRST_SERVER_SIDE_BALANCER


def binary(version: str) -> Path:
    return config.FRANZ_GO_DIR / version / "harness"


def is_installed(version: str) -> bool:
    """True when the harness binary of ``version`` is built (no I/O but stat)."""
    return (config.FRANZ_GO_DIR / version / _MARKER).is_file() and binary(version).is_file()


def release_exists(version: str) -> bool:
    """Whether the Go module proxy serves franz-go ``version`` (asked by exact version,
    ``@v/VERSION.info``: its list omits some versions it serves). RegistryUnreachable when the
    proxy does not answer."""
    return registries.go_has(MODULE, version)


def listed_versions() -> tuple[str, ...]:
    """The versions the proxy lists (possibly incomplete: for naming nearby ones)."""
    return registries.go_versions(MODULE)


def _go_version() -> str:
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, env=go_env()).stdout.strip()
    m = re.match(r"go(\d+\.\d+)", out)
    return m.group(1) if m else "1.22"


def ensure(version: str) -> None:
    """Build the harness against franz-go ``version`` into FRANZ_GO_DIR/<version>/harness
    (idempotent, atomic). UsageError (from :func:`conformance.members.versions.check`) for a release
    below :data:`OLDEST` or one the proxy does not serve, naming the nearest it lists."""
    if is_installed(version):
        return
    from conformance.members.versions import check
    problem = check(KIND, version)
    if problem:
        raise UsageError(problem)
    config.FRANZ_GO_DIR.mkdir(parents=True, exist_ok=True)
    with open(config.FRANZ_GO_DIR / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_installed(version):
            return
        tmp = config.FRANZ_GO_DIR / f".tmp-{version}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _build(version, tmp)
            shutil.rmtree(config.FRANZ_GO_DIR / version, ignore_errors=True)
            os.rename(tmp, config.FRANZ_GO_DIR / version)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _build(version: str, out_dir: Path) -> None:
    src = out_dir / "src"
    src.mkdir(parents=True)
    for f in SOURCE_DIR.glob("*.go"):
        shutil.copyfile(f, src / f.name)
    go = _go_version()
    (src / "go.mod").write_text(f"module conformance/franz-go-harness\n\ngo {go}\n\nrequire {MODULE} v{version}\n",
                                encoding="utf-8")
    env = go_env()
    for argv in (["go", "mod", "tidy"], ["go", "build", "-trimpath", "-o", str(out_dir / "harness"), "."]):
        proc = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise SuiteError(f"franz-go@{version}: `{' '.join(argv)}` failed (exit {proc.returncode}):\n"
                             f"{(proc.stdout + proc.stderr)[-3000:]}")
    (out_dir / _MARKER).write_text(json.dumps({"version": version, "module": MODULE, "go": go,
                                               "built_at": time.time()}) + "\n")
    shutil.rmtree(src, ignore_errors=True)


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(binary(version)), str(config_path)], {}
