"""``go vet`` over every Go package under ``clients/`` (the harnesses and the golden generators).

Such a package has no go.mod of its own: the build writes one per client release
(:func:`conformance.go_install.build_harness`). So each is vetted in the module the build writes
(:func:`conformance.go_install.vet_package`), against the client release its kind's default build
was made from (the module path and version recorded in that build's marker; the build is made
first, idempotently, when missing). Each package is vetted twice: with every build tag its files
name and with none, so each file of a ``//go:build tag`` / ``//go:build !tag`` pair is vetted once.

Prints each finding as ``clients/<kind>/<dir>/<file>:<line>:<col>: <message>``; exit 1 when
there is any, 2 when a package cannot be vetted (unknown kind, a build constraint other than
``tag`` or ``!tag``, the module not resolvable).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from conformance import config, go_install
from conformance.errors import SuiteError
from conformance.members.kinds import KIND_MODULES, kind_module

CONSTRAINT = re.compile(r"^//go:build\s+(!?)([A-Za-z0-9_.]+)\s*$")


def tags_of(package: Path) -> list[str]:
    """The build tags the ``//go:build`` lines of ``package``'s files name (each must be ``tag`` or ``!tag``)."""
    tags: set[str] = set()
    for f in sorted(package.glob("*.go")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.startswith("//go:build"):
                m = CONSTRAINT.match(line)
                if m is None:
                    raise SuiteError(f"{f}: build constraint {line!r} is not `tag` or `!tag`; "
                                     "scripts/lint_go.py vets each file with every tag on and off only")
                tags.add(m.group(2))
    return sorted(tags)


def default_build(kind: str) -> tuple[str, str]:
    """The (module path, version) the default build of ``kind``'s harness was made from (its marker)."""
    mod = kind_module(kind)
    marker = Path(mod.binary(mod.DEFAULT_VERSION)).parent / go_install.MARKER
    if not marker.is_file():
        mod.ensure(mod.DEFAULT_VERSION)
    made = json.loads(marker.read_text(encoding="utf-8"))
    return made["module"], made["version"]


def main() -> int:
    root = config.CLIENTS_DIR.parent
    findings: list[str] = []
    try:
        for package in sorted({f.parent for f in config.CLIENTS_DIR.glob("*/*/*.go")}):
            kind = package.parent.name
            if kind not in KIND_MODULES:
                raise SuiteError(f"{package}: Go sources under clients/{kind}, which is no member kind")
            module, version = default_build(kind)
            tags = tags_of(package)
            findings += go_install.vet_package(package, module, version, [tags, []] if tags else [[]])
    except SuiteError as exc:
        print(f"lint_go: {exc}", file=sys.stderr)
        return 2
    for finding in findings:
        print(finding.replace(f"{root}/", ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
