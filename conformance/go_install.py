"""Building a Go program from its module through the Go module proxy, into the cache.

One way for every Go tool the suite installs (toxiproxy, actionlint): ``go install
MODULE/PACKAGE@VERSION`` with GOPATH and the module cache under ``config.GO_DIR``,
``GOFLAGS=-mod=mod`` and ``CGO_ENABLED=0``.

Guarantees of :func:`go_install`:

- Idempotent: when ``DEST/install.json`` and the binary exist it only says "already
  installed" and returns the binary's path.
- Never half-written: the build goes into a temporary directory next to ``DEST`` that is
  renamed into place only once the binary and the marker are there; a failure removes it
  and raises :class:`~conformance.errors.SuiteError` with the end of Go's output.
- Nothing but the Go module proxy (``go``'s own ``GOPROXY``) is asked for anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from conformance import config
from conformance.errors import SuiteError

#: The file whose presence says an install finished (written last, before the rename).
MARKER: str = "install.json"


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
