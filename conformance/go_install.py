"""Building Go programs into the cache: the suite's Go tools and the Go client harnesses.

One place for every Go build, all in one environment (:func:`go_env`: GOPATH, the module
cache and the build cache under ``config.GO_DIR``, ``GOFLAGS=-modcacherw -mod=mod``, no
toolchain download, ``CGO_ENABLED=0``):

- :func:`go_install`: a tool from its module (toxiproxy, actionlint), ``go install
  MODULE/PACKAGE@VERSION``.
- :func:`build_harness`: a client harness (``clients/<kind>/harness``, package main) against
  one client module at one exact version (the Sarama and franz-go kinds).
- :func:`vet_package`: ``go vet`` over such a package, in the module the build would write
  (:func:`write_module`), for ``make lint``.

Guarantees of :func:`go_install`:

- Idempotent: when ``DEST/install.json`` and the binary exist it only says "already
  installed" and returns the binary's path.
- Never half-written: the build goes into a temporary directory next to ``DEST`` that is
  renamed into place only once the binary and the marker are there; a failure removes it
  and raises :class:`~conformance.errors.SuiteError` with the end of Go's output.
- Nothing but the Go module proxy (``go``'s own ``GOPROXY``) is asked for anything.

Guarantees of :func:`build_harness`: the same (idempotent: a finished build is reused without
running ``go`` while it was built from the harness source now in the tree, whose digest its
marker records (:func:`is_current`); an edited harness is rebuilt; atomic: built in a temporary sibling of ``dest`` with its marker written last,
then renamed; concurrent builds of one ``dest`` wait on a lock file), and a failed step is a
:class:`~conformance.errors.SuiteError` quoting the end of Go's output.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance import config
from conformance.errors import SuiteError

#: The file whose presence says an install finished (written last, before the rename).
MARKER: str = "install.json"


def go_env() -> dict[str, str]:
    """The environment of every Go build: caches under ``config.GO_DIR``, no toolchain download."""
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


def go_language_version() -> str:
    """The local toolchain's ``major.minor`` (the ``go`` line of a generated go.mod)."""
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, env=go_env(),
                         timeout=60).stdout.strip()
    m = re.match(r"go(\d+\.\d+)", out)
    return m.group(1) if m else "1.22"


def is_built(dest: Path, binary_name: str = "harness") -> bool:
    """True when ``dest`` holds a finished build (its marker and its binary; stat only)."""
    return (dest / MARKER).is_file() and (dest / binary_name).is_file()


#: Go files every Go package this module builds compiles with its own (the control file's reader:
#: ``clients/go-shared/``). They are self-contained: they name nothing of the package they join.
SHARED_SOURCE: Path = config.CLIENTS_DIR / "go-shared"


def go_sources(source: Path) -> list[Path]:
    """The ``*.go`` files a build of ``source`` compiles: its own, then :data:`SHARED_SOURCE`'s (a shared
    file's name must not be one of its own: SuiteError)."""
    own = sorted(source.glob("*.go"))
    shared = sorted(SHARED_SOURCE.glob("*.go"))
    clash = sorted({f.name for f in own} & {f.name for f in shared})
    if clash:
        raise SuiteError(f"{source}: {', '.join(clash)} is also a file of {SHARED_SOURCE}; rename one")
    return own + shared


def harness_digest(source: Path) -> str:
    """A digest of a harness's source: the names and bytes of the ``*.go`` files it compiles
    (:func:`go_sources`). (Tags, flags, rewrites and generated files follow from the client version,
    which names ``dest``.)"""
    h = hashlib.sha256()
    for f in go_sources(source):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def is_current(dest: Path, source: Path) -> bool:
    """True when ``dest`` holds a finished harness build (:func:`is_built`) made from the harness
    source now in ``source`` (its marker records :func:`harness_digest`)."""
    if not is_built(dest):
        return False
    try:
        return json.loads((dest / MARKER).read_text(encoding="utf-8")).get("source") == harness_digest(source)
    except (OSError, ValueError):
        return False


def write_module(source: Path, src: Path, module: str, version: str, *, rewrite: Mapping[str, str] | None = None,
                 extra_files: Mapping[str, str] | None = None) -> str:
    """Write into the empty directory ``src`` the module a build of the package ``source`` runs in:
    its ``*.go`` files (``rewrite`` applied: old -> new text), ``extra_files`` (name -> text) and a
    go.mod requiring ``module`` at exactly ``v<version>``. Returns the go.mod's language version."""
    for f in go_sources(source):
        text = f.read_text(encoding="utf-8")
        for old, new in (rewrite or {}).items():
            text = text.replace(old, new)
        (src / f.name).write_text(text, encoding="utf-8")
    for fname, text in (extra_files or {}).items():
        (src / fname).write_text(text, encoding="utf-8")
    go = go_language_version()
    v = version if version.startswith("v") else f"v{version}"
    (src / "go.mod").write_text(f"module conformance/{source.parent.name}-{source.name}\n\ngo {go}\n\n"
                                f"require {module} {v}\n", encoding="utf-8")
    return go


def vet_package(source: Path, module: str, version: str, tag_sets: Sequence[Sequence[str]]) -> list[str]:
    """``go vet`` over the Go package ``source`` (a harness or golden generator, no go.mod of its own)
    in a temporary module requiring ``module`` at ``version`` (:func:`write_module`), once per build
    tag set of ``tag_sets``. Returns vet's findings, each ``<source>/<file>:<line>:<col>: <message>``
    (the same finding under two tag sets once), in order; none when clean. SuiteError when ``go mod
    tidy`` fails (the module cannot be resolved), quoting Go's output."""
    if shutil.which("go") is None:
        raise SuiteError(f"go vet {source}: the Go toolchain (`go`) is not on PATH")
    findings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="conformance-vet-") as tmp:
        src = Path(tmp)
        write_module(source, src, module, version)
        tidy = subprocess.run(["go", "mod", "tidy"], cwd=src, env=go_env(), capture_output=True, text=True,
                              timeout=900)
        if tidy.returncode != 0:
            raise SuiteError(f"go vet {source}: `go mod tidy` against {module} v{version} failed:\n"
                             f"{(tidy.stdout + tidy.stderr)[-3000:]}")
        for tags in tag_sets:
            vet = subprocess.run(["go", "vet", f"-tags={','.join(tags)}", "."], cwd=src, env=go_env(),
                                 capture_output=True, text=True, timeout=900)
            said = False
            for line in (vet.stdout + vet.stderr).splitlines():
                if not line.strip() or line.startswith("# "):  # the package heading before its findings
                    continue
                said = True
                line = line.replace(str(src) + "/", "").removeprefix("./")
                finding = f"{source}/{line}" if re.match(r"[\w.-]+\.go:\d", line) else f"{source}: {line}"
                if finding not in findings:
                    findings.append(finding)
            if vet.returncode != 0 and not said:
                findings.append(f"{source}: `go vet -tags={','.join(tags)}` exited {vet.returncode} saying nothing")
    return findings


def build_harness(name: str, source: Path, dest: Path, module: str, version: str, *,
                  tags: Sequence[str] = (), ldflags: Sequence[str] = (), rewrite: Mapping[str, str] | None = None,
                  extra_files: Mapping[str, str] | None = None, record: Mapping[str, Any] | None = None) -> Path:
    """Build the Go package in ``source`` (its ``*.go`` files) against ``module`` at ``version`` into
    ``dest/harness`` (see the module's guarantees); ``name`` is what messages call it
    (``sarama@1.30.0``). Returns the binary's path.

    ``rewrite`` replaces text in every source file (an import path under an older module path);
    ``extra_files`` adds generated files (name -> text) to the build's copy of the source; ``tags``
    and ``ldflags`` go to ``go build``; ``record`` is kept in the marker beside module, version, tags
    and the Go version. The generated go.mod requires ``module`` at exactly ``v<version>``; ``go mod
    tidy`` takes the rest at what that release requires."""
    binary = dest / "harness"
    digest = harness_digest(source)
    if is_current(dest, source):
        return binary
    if shutil.which("go") is None:
        raise SuiteError(f"{name}: the Go toolchain (`go`) is not on PATH; it is needed to build its harness")
    dest.parent.mkdir(parents=True, exist_ok=True)
    config.GO_DIR.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_current(dest, source):
            return binary
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{dest.name}-", dir=dest.parent))
        try:
            src = tmp / "src"
            src.mkdir()
            go = write_module(source, src, module, version, rewrite=rewrite, extra_files=extra_files)
            steps = [["go", "mod", "tidy"],
                     ["go", "build", "-trimpath", f"-tags={','.join(tags)}", f"-ldflags={' '.join(ldflags)}",
                      "-o", str(tmp / "harness"), "."]]
            for argv in steps:
                proc = subprocess.run(argv, cwd=src, env=go_env(), capture_output=True, text=True, timeout=900)
                if proc.returncode != 0:
                    raise SuiteError(f"{name}: `{' '.join(argv)}` failed (exit {proc.returncode}):\n"
                                     f"{(proc.stdout + proc.stderr)[-3000:]}")
            shutil.rmtree(src)
            (tmp / MARKER).write_text(json.dumps({"module": module, "version": version, "tags": list(tags),
                                                  "go": go, **(record or {}), "source": digest,
                                                  "built_at": time.time()}) + "\n",
                                      encoding="utf-8")
            shutil.rmtree(dest, ignore_errors=True)  # an unfinished leftover (no marker)
            os.rename(tmp, dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return binary


def go_install(name: str, module: str, package: str, version: str, dest: Path, binary_name: str) -> Path:
    """Build ``module/package@version`` into ``dest/binary_name`` (see the module's guarantees);
    ``name`` is what messages call it. Returns the binary's path."""
    binary = dest / binary_name
    if (dest / MARKER).is_file() and binary.is_file():
        print(f"{name} {version}: already installed ({binary})")
        return binary
    if shutil.which("go") is None:
        raise SuiteError(f"{name}: the Go toolchain (`go`) is not on PATH; it is needed to build {name}")
    started = time.monotonic()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=dest.parent))
    try:
        env = dict(os.environ, GOPATH=str(config.GO_DIR), GOMODCACHE=str(config.GO_DIR / "pkg" / "mod"),
                   GOFLAGS="-mod=mod", GOBIN=str(tmp), CGO_ENABLED="0")
        target = f"{module}/{package}@{version}" if package else f"{module}@{version}"
        result = subprocess.run(["go", "install", target], cwd=tmp, env=env, capture_output=True, text=True,
                                timeout=1200)
        if result.returncode != 0:
            raise SuiteError(f"{name} {version}: `go install {target}` failed: "
                             f"{(result.stderr or result.stdout).strip()[-800:]}")
        built = tmp / (package.rsplit("/", 1)[-1] if package else module.rsplit("/", 1)[-1])
        if built.name != binary_name:
            built.rename(tmp / binary_name)
        (tmp / MARKER).write_text(json.dumps({"module": module, "package": package, "version": version}) + "\n",
                                  encoding="utf-8")
        try:
            os.rename(tmp, dest)
        except OSError:
            if not (dest / MARKER).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process installed it meanwhile
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"{name} {version}: built in {time.monotonic() - started:.1f}s")
    return binary
