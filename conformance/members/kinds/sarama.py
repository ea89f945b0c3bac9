"""Member kind ``sarama``: the Go client Sarama, one harness binary per version.

``sarama@V`` is ``clients/sarama/harness`` built with the Go toolchain against
Sarama ``vV`` into ``config.SARAMA_DIR/V/harness`` (module cache under
``config.GO_DIR``). The build is atomic (a temporary directory renamed into
place) and idempotent (a finished binary is reused).

Module path: releases up to 1.38.1 are ``github.com/Shopify/sarama``; from
1.40.0 ``github.com/IBM/sarama``. Which one serves a version is asked of the
Go module proxy by exact version (:func:`module_for`), since its version lists
omit versions it serves (IBM v1.41.0 and v1.41.1). The harness
source imports ``github.com/IBM/sarama``; for a Shopify release the build
copies the source into its temporary build directory and rewrites that import
path there (a ``replace`` directive cannot rename a module: Go rejects a
replacement whose go.mod declares another path). The generated go.mod
requires the one module at the exact version.

Cooperative support, read from the releases' sources:

- 1.60.0+: ``NewBalanceStrategyCooperativeSticky`` (leader side; build tag
  ``sarama_coop``).
- 1.61.0+: member-side incremental rebalancing (IBM/sarama PR 3696,
  ``consumer_group_cooperative.go``: the session survives a rebalance, only
  revoked claims stop). 1.60.x lacks that file. So 1.61.0 is the first
  release with full KIP-429 member support, and ``supports_cooperative`` is
  true from there.
- Before 1.60: eager ``sticky``, ``range``, ``roundrobin``.

Expected verdicts: Sarama before 1.43.3 could send two OffsetCommit requests
of one member out of order (fixed by "maintain ordering of offset commit
requests", IBM/sarama PR 2947, in 1.43.3), so the broker accepts an offset
below one it accepted a few milliseconds earlier. Cells with ``sarama@1.38.1``
fail D2 with every violation its own (seen in rolling-restart and
crash-restart): a true verdict on that version; 1.61.1 with the same harness
passes.
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
from conformance.members.kinds.librdkafka import _vtuple

KIND = "sarama"
SOURCE_DIR: Path = config.CLIENTS_DIR / "sarama" / "harness"
IBM_MODULE = "github.com/IBM/sarama"
SHOPIFY_MODULE = "github.com/Shopify/sarama"

#: Versions exercised by tests/test_harness_sarama.py against a real broker.
KNOWN_VERSIONS: tuple[str, ...] = ("1.61.1", "1.38.1")
#: Where releases come from, for messages.
REGISTRY = f"the Go module proxy ({IBM_MODULE}, {SHOPIFY_MODULE})"
#: The oldest release the harness builds against, and why.
OLDEST = "1.37.0"
OLDEST_WHY = "the Sarama harness sets Consumer.Group.Rebalance.GroupStrategies, which Sarama has from 1.37.0"

FIRST_COOPERATIVE_STRATEGY = (1, 60, 0)
FIRST_COOPERATIVE_MEMBER = (1, 61, 0)   # IBM/sarama PR 3696
FIRST_IBM_MODULE = (1, 40, 0)
_MARKER = "install.json"


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    return _vtuple(version) >= FIRST_COOPERATIVE_MEMBER


def strategies_supported(version: str) -> list[str]:
    coop = ["cooperative-sticky"] if _vtuple(version) >= FIRST_COOPERATIVE_STRATEGY else []
    return coop + ["sticky", "range", "roundrobin"]


def binary(version: str) -> Path:
    return config.SARAMA_DIR / version / "harness"


def go_env() -> dict[str, str]:
    """The Go environment of every build: caches under config.GO_DIR, no toolchain download."""
    env = dict(os.environ)
    env.update({
        "GOPATH": str(config.GO_DIR),
        "GOMODCACHE": str(config.GO_DIR / "pkg" / "mod"),
        "GOCACHE": str(config.GO_DIR / "build-cache"),
        "GOFLAGS": "-modcacherw -mod=mod",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    })
    return env


def module_for(version: str) -> str | None:
    """The module path under which the Go module proxy serves Sarama ``version`` (asked by exact
    version, ``@v/VERSION.info``; the proxy's version list can omit versions it serves), or None
    when it serves it under neither. The path of the version's era is asked first (Shopify before
    1.40). RegistryUnreachable when the proxy does not answer."""
    ibm_era = not re.match(r"^\d", version) or _vtuple(version) >= FIRST_IBM_MODULE
    for module in ((IBM_MODULE, SHOPIFY_MODULE) if ibm_era else (SHOPIFY_MODULE, IBM_MODULE)):
        if registries.go_has(module, version):
            return module
    return None


def release_exists(version: str) -> bool:
    """Whether the Go module proxy serves Sarama ``version`` under either module path."""
    return module_for(version) is not None


def listed_versions() -> tuple[str, ...]:
    """The versions the proxy lists under both module paths (possibly incomplete: for naming nearby ones)."""
    return registries.go_versions(IBM_MODULE) + registries.go_versions(SHOPIFY_MODULE)


def is_installed(version: str) -> bool:
    """True when the harness binary of ``version`` is built (no I/O but stat)."""
    return (config.SARAMA_DIR / version / _MARKER).is_file() and binary(version).is_file()


def _go_version() -> str:
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, env=go_env()).stdout.strip()
    m = re.match(r"go(\d+\.\d+)", out)
    return m.group(1) if m else "1.22"


def ensure(version: str) -> None:
    """Build the harness against Sarama ``version`` into SARAMA_DIR/<version>/harness (idempotent, atomic)."""
    target = config.SARAMA_DIR / version
    if (target / _MARKER).is_file() and (target / "harness").is_file():
        return
    module = module_for(version)
    if module is None:
        from conformance.members.versions import check
        raise UsageError(check(KIND, version) or f"sarama@{version}: the Go module proxy has no such release")
    config.SARAMA_DIR.mkdir(parents=True, exist_ok=True)
    with open(config.SARAMA_DIR / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _MARKER).is_file() and (target / "harness").is_file():
            return
        tmp = config.SARAMA_DIR / f".tmp-{version}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _build(version, module, tmp)
            shutil.rmtree(target, ignore_errors=True)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _build(version: str, module: str, out_dir: Path) -> None:
    src = out_dir / "src"
    src.mkdir(parents=True)
    for f in SOURCE_DIR.glob("*.go"):
        text = f.read_text(encoding="utf-8")
        if module != IBM_MODULE:
            text = text.replace(f'"{IBM_MODULE}"', f'"{module}"')
        (src / f.name).write_text(text, encoding="utf-8")
    vt = _vtuple(version)
    # Shopify releases declare go 1.17/1.19 and need no newer language; IBM ones state their own.
    (src / "go.mod").write_text(f"module conformance/sarama-harness\n\ngo {_go_version()}\n\n"
                                f"require {module} v{version}\n", encoding="utf-8")
    tags = ["sarama_coop"] if vt >= FIRST_COOPERATIVE_STRATEGY else []
    coop_member = "true" if vt >= FIRST_COOPERATIVE_MEMBER else "false"
    env = go_env()
    steps = [
        ["go", "mod", "tidy"],
        ["go", "build", "-trimpath", f"-tags={','.join(tags)}",
         f"-ldflags=-X main.moduleName={module} -X main.cooperativeMember={coop_member}",
         "-o", str(out_dir / "harness"), "."],
    ]
    for argv in steps:
        proc = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise SuiteError(f"sarama@{version}: `{' '.join(argv)}` failed (exit {proc.returncode}):\n"
                             f"{(proc.stdout + proc.stderr)[-3000:]}")
    (out_dir / _MARKER).write_text(json.dumps({"version": version, "module": module, "tags": tags,
                                               "cooperative_member": coop_member == "true",
                                               "go": _go_version(), "built_at": time.time()}) + "\n")
    shutil.rmtree(src, ignore_errors=True)


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(binary(version)), str(config_path)], {}
