"""``conformance clients list``: every member kind, its default version, its known versions with
their known issues, and the table of known issues.

Then the deliberate faults a ``reference/FAULT`` spec may name (each explained in
:mod:`conformance.reference.faults`).

Known versions come from each kind's module (``known_versions()``); a kind whose
module is not built yet is listed as ``(not built)``. A version whose client library is another
version than the spec's is shown with it once installed: ``librdkafka`` names the confluent-kafka
release, so ``2.16.1 (librdkafka 2.16.0)``. Installing a version is
``conformance setup --clients KIND@VERSION,...``.
"""

from __future__ import annotations

import argparse

from conformance import config
from conformance.errors import SuiteError
from conformance.members.install import load_kind
from conformance.members.known_issues import KNOWN_ISSUES, issues_of
from conformance.members.kinds import KIND_MODULES, library_version
from conformance.members.spec import REFERENCE_FAULTS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("clients", help="list client kinds and versions")
    sub = p.add_subparsers(dest="clients_command", metavar="ACTION")
    ls = sub.add_parser("list", help="each kind, its default version, its known versions and their known issues")
    ls.set_defaults(func=list_clients)
    p.set_defaults(func=list_clients)


def _with_issues(kind: str, version: str) -> str:
    """``version``, then the client library it really runs where that differs (``2.16.1 (librdkafka
    2.16.0)``, known once installed) and the invariants its known issues violate (``2.0.2 [known: D1]``)."""
    found = issues_of(kind, version)
    library = library_version(kind, version)
    shown = version + (f" ({kind} {library})" if library and library != version else "")
    return shown + (f" [known: {', '.join(i.invariant for i in found)}]" if found else "")


def rows() -> list[tuple[str, str, str]]:
    """``(kind, default version, known versions or "(not built)")`` for every registered kind; a
    version with known issues (:mod:`conformance.members.known_issues`) names their invariants."""
    out = []
    for kind in KIND_MODULES:
        default = config.DEFAULT_CLIENT_VERSIONS.get(kind, "-")
        try:
            known = ", ".join(_with_issues(kind, v) for v in load_kind(kind).known_versions()) or "(none tested)"
        except SuiteError:
            known = "(not built)"
        out.append((kind, default, known))
    return out


def list_clients(args: argparse.Namespace) -> int:
    table = [("KIND", "DEFAULT", "KNOWN VERSIONS"), *rows()]
    widths = [max(len(r[i]) for r in table) for i in range(2)]
    for kind, default, known in table:
        print(f"{kind:<{widths[0]}}  {default:<{widths[1]}}  {known}")
    print("\nknown issues (a matching finding is reported as a known issue, not a new failure):")
    for issue in KNOWN_ISSUES:
        print(f"  {issue.kind} {issue.versions}: {issue.invariant}: {issue.summary} ({issue.reference})")
    print(f"\nreference/FAULT (see conformance/reference/faults.py): {', '.join(REFERENCE_FAULTS)}")
    return 0
