"""``conformance clients list``: every member kind, its default version, the range of versions its
harness runs, its known versions with their known issues, each kind's features by version (its
module's FEATURES), the brokers old releases cannot work with (its module's BROKER_LIMITS: such a
run is refused before it starts), and the table of known issues.

Then the kinds that speak the consumer group protocol (KIP-848; a ``KIND@VERSION+consumer`` spec)
and from which release, and the deliberate faults a ``reference/FAULT`` and a
``reference+consumer/FAULT`` spec may name (each explained in :mod:`conformance.reference.faults`).

Known versions come from each kind's module (``known_versions()``); a kind whose
module is not built yet is listed as ``(not built)``. A version whose client library is another
version than the spec's is shown with it once installed: ``librdkafka`` names the confluent-kafka
release, so ``2.16.1 (librdkafka 2.16.0)``. Installing a version is
``conformance setup --clients KIND@VERSION,...``.
"""

from __future__ import annotations

import argparse

from conformance.errors import SuiteError
from conformance.members import kinds
from conformance.members.install import load_kind
from conformance.members.kinds import KIND_MODULES, library_version, release_tuple
from conformance.members.known_issues import issues_of
from conformance.members.known_issues import table as known_issue_table
from conformance.members.spec import CONSUMER_PROTOCOL_FAULTS, REFERENCE_FAULTS


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
    invariants = dict.fromkeys(i.invariant for i in found)   # each once, in the table's order
    return shown + (f" [known: {', '.join(invariants)}]" if found else "")


def version_range(kind: str) -> str:
    """The releases the kind's harness runs: ``"1.27.0 and later"``, or its one version (reference)."""
    module = load_kind(kind)
    oldest = getattr(module, "OLDEST", None)
    return f"{oldest} and later" if oldest else ", ".join(module.known_versions())


def feature_line(kind: str) -> str:
    """What ``kind`` has from which release, from its module's FEATURES, grouped by release
    (``"range, roundrobin, sticky: every version; static membership: from 1.34.0; ..."``)."""
    by_when: dict[str, list[str]] = {}
    table = getattr(load_kind(kind), "FEATURES", None)
    if table is None:
        return "(no FEATURES table: cooperative and assignors as its module answers per version)"
    for f in table:
        by_when.setdefault(f.versions, []).append(f.name.removeprefix("assignor:").replace("-", " ")
                                                  if not f.name.startswith("assignor:") else f.name.split(":", 1)[1])
    order = sorted(by_when, key=lambda w: (w != "every version", release_tuple(w.split()[1]) if " " in w else ()))
    return "; ".join(f"{', '.join(by_when[w])}: {w}" for w in order)


def broker_lines() -> list[str]:
    """Each kind's BROKER_LIMITS as a line (``librdkafka before 1.8.0: not with brokers 4.0.0 and
    later: ...``), then the kinds without such a table."""
    lines, unlimited = [], []
    for kind in KIND_MODULES:
        limits = kinds.broker_limits(kind)
        unlimited += [] if limits else [kind]
        lines += [f"  {kind} before {row.fixed_in}: not with brokers {row.broker_from} and later: {row.reason}"
                  + (f" ({row.source})" if row.source else "") for row in limits]
    if unlimited:
        lines.append(f"  {', '.join(unlimited)}: no limit known")
    return lines


def rows() -> list[tuple[str, str, str, str]]:
    """``(kind, default version, version range, known versions or "(not built)")`` for every
    registered kind; a known version shows the client library it really runs where that differs,
    and the invariants of its known issues (:mod:`conformance.members.known_issues`)."""
    out = []
    for kind in KIND_MODULES:
        default = kinds.default_versions().get(kind, "-")
        try:
            known = ", ".join(_with_issues(kind, v) for v in load_kind(kind).known_versions()) or "(none tested)"
            span = version_range(kind)
        except SuiteError:
            known, span = "(not built)", "-"
        out.append((kind, default, span, known))
    return out


def markdown_table() -> str:
    """The table of kinds in docs/running.md, derived from the registry (a test keeps the page equal to it)."""
    lines = ["| kind | default | versions | from | features by version |", "| --- | --- | --- | --- | --- |"]
    for kind in KIND_MODULES:
        module = load_kind(kind)
        lines.append(f"| `{kind}` | {kinds.default_version(kind)} | {version_range(kind)} | "
                     f"{getattr(module, 'REGISTRY', 'the suite itself')} | {feature_line(kind)} |")
    return "\n".join(lines) + "\n"


def consumer_protocol_line() -> str:
    """``java from 3.7.0, librdkafka from 2.12.0, reference (every version)``: the kinds whose FEATURES
    have ``consumer-protocol``, with the release it starts at; the rest are named as classic only."""
    speaks, classic = [], []
    for kind in KIND_MODULES:
        row = next((f for f in getattr(kinds.kind_module(kind), "FEATURES", ()) if f.name == "consumer-protocol"), None)
        if row is None:
            classic.append(kind)
        else:
            speaks.append(f"{kind} {row.versions}" + (f" ({row.source})" if row.source else ""))
    return "; ".join(speaks) + (f"; classic only: {', '.join(classic)}" if classic else "")


def list_clients(args: argparse.Namespace) -> int:
    table = [("KIND", "DEFAULT", "VERSIONS", "KNOWN VERSIONS"), *rows()]
    widths = [max(len(r[i]) for r in table) for i in range(3)]
    for kind, default, span, known in table:
        print(f"{kind:<{widths[0]}}  {default:<{widths[1]}}  {span:<{widths[2]}}  {known}")
    print("\nfeatures by version (each kind module's FEATURES, read from the client's sources):")
    for kind in KIND_MODULES:
        try:
            print(f"  {kind}: {feature_line(kind)}")
        except SuiteError:
            print(f"  {kind}: (not built)")
    print("\nbrokers (each kind module's BROKER_LIMITS; a run pairing such a release and broker is refused "
          "before it starts):")
    for line in broker_lines():
        print(line)
    print("\nknown issues (a matching finding is reported as a known issue, not a new failure):")
    for issue in known_issue_table():
        print(f"  {issue.kind} {issue.versions}: {issue.invariant}: {issue.summary} ({issue.reference})")
    print("\nconsumer group protocol (KIP-848, KIND@VERSION+consumer): " + consumer_protocol_line())
    print(f"\nreference/FAULT (see conformance/reference/faults.py): {', '.join(REFERENCE_FAULTS)}")
    print(f"reference+consumer/FAULT: {', '.join(CONSUMER_PROTOCOL_FAULTS)}")
    return 0
