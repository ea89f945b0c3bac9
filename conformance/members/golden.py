"""Golden vector regeneration: each kind's own generator, run for each of its GOLDEN_VERSIONS.

``bash scripts/regen-golden.sh [KIND ...]`` runs ``python -m conformance.members.golden [KIND ...]``
(every kind with a generator when none is named). The kinds, their releases and how each
generator is built and run come from the registry (:func:`conformance.members.kinds.golden_kinds`):
a kind module with ``GOLDEN_VERSIONS`` has ``golden_vectors(version, work) -> str``, which builds
its generator (``clients/<kind>/golden``) against that release in the scratch directory ``work``
and returns what it printed (a JSON list of vectors).

Guarantees: each output is validated (a non-empty JSON list, no duplicate ``id``), written
deterministically (``indent=1``, UTF-8, trailing newline) to a temporary file and renamed into
place as ``fixtures/golden/<kind>-<version>.json``, so an interrupted run never leaves a
half-written fixture; a second run re-uses the caches (Maven repository, Go module cache,
per-release venvs under ``config.VENVS_DIR``) and rewrites byte-identical files. A kind without
a generator is one line and exit 2; a generator that fails is one line naming it and exit 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance import config
from conformance.errors import SuiteError
from conformance.members.kinds import golden_kinds, kind_module


def go_env() -> dict[str, str]:
    """The environment the Go generators are built in: the suite's module cache under
    ``config.GO_DIR``, module files writable, the installed toolchain only."""
    return dict(os.environ, GOPATH=str(config.GO_DIR), GOMODCACHE=str(config.GO_DIR / "pkg" / "mod"),
                GOFLAGS="-modcacherw", GOTOOLCHAIN="local")


def run(argv: list[str], what: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run ``argv`` and return its standard output; SuiteError naming ``what`` (with the end of
    its output) when it fails."""
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise SuiteError(f"{what} failed (exit {proc.returncode}, in {cwd or os.getcwd()}):\n{tail}")
    return proc.stdout


def go_generator(src: Path, work: Path, module: str, version: str, what: str, tags: str = "",
                 import_path: str | None = None) -> Path:
    """A Go generator (``src/*.go``) built in a throw-away module under ``work`` that requires
    ``module@version`` (tidied: the rest at what that release requires); ``import_path``, when the
    sources import the client under another path than ``module``, is rewritten to ``module``.
    Nothing built is kept in the repository. Returns the binary."""
    build = work / "build"
    build.mkdir()
    for go in sorted(src.glob("*.go")):
        text = go.read_text(encoding="utf-8")
        if import_path:
            text = text.replace(f'"{import_path}"', f'"{module}"')
        (build / go.name).write_text(text, encoding="utf-8")
    env = go_env()
    try:
        for argv in (["go", "mod", "init", "golden"], ["go", "get", f"{module}@{version}"], ["go", "mod", "tidy"],
                     ["go", "build", "-tags", tags, "-o", "golden", "."]):
            run(argv, " ".join(argv), cwd=build, env=env)
    except SuiteError as exc:
        raise SuiteError(f"building {what} failed in {build}: {exc}") from None
    return build / "golden"


def write_fixture(raw: str, name: str, what: str) -> Path:
    """Validate ``raw`` (a generator's output) and write it as ``GOLDEN_DIR/name``, atomically."""
    try:
        vectors = json.loads(raw)
    except ValueError as exc:
        raise SuiteError(f"{what} printed no JSON: {exc}") from None
    if not isinstance(vectors, list) or not vectors:
        raise SuiteError(f"{what} printed no vectors")
    ids = [v["id"] for v in vectors]
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        raise SuiteError(f"duplicate vector ids from {what}: {dups}")
    dst = config.GOLDEN_DIR / name
    tmp = dst.with_name(dst.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(vectors, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, dst)
    print(f"regen-golden: wrote {dst} ({len(vectors)} vectors)")
    return dst


def regenerate(kind: str) -> list[Path]:
    """Every golden file of ``kind``: its generator run for each of its GOLDEN_VERSIONS."""
    module = kind_module(kind)
    written = []
    for version in golden_kinds()[kind]:
        with tempfile.TemporaryDirectory(prefix=f"golden-{kind}-{version}-") as work:
            raw = module.golden_vectors(version, Path(work))
            written.append(write_fixture(raw, f"{kind}-{version}.json", f"the {kind} {version} generator"))
    return written


def main(argv: list[str] | None = None) -> int:
    targets = list(sys.argv[1:] if argv is None else argv)
    known = golden_kinds()
    for kind in targets:
        if kind not in known:
            print(f"regen-golden: no golden generator for '{kind}' (kinds with one: {' '.join(known)})", file=sys.stderr)
            return 2
    for path in (config.GOLDEN_DIR, config.MAVEN_REPO, config.GO_DIR, config.VENVS_DIR):
        path.mkdir(parents=True, exist_ok=True)
    try:
        for kind in targets or known:
            regenerate(kind)
    except SuiteError as exc:
        print(f"regen-golden: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
