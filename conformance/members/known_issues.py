"""Known client bugs: one table of what a released client version is known to violate.

A finding of a cell that matches a row (same invariant, the finding's culprit is
of that kind at an affected version, and the finding's evidence carries the row's
``evidence``) is reported as "known issue <reference>", not as a new failure; the
cell's verdict is ``known-issue`` when every failing finding is known, and any
other finding still fails it. Only a finding that names its culprit can match,
and only through it: a finding the evidence cannot attribute, or one whose
culprit is another client (a Java member's backwards commit beside an affected
librdkafka), is never excused by a known issue. Every row has evidence
(a test refuses one without).

Each row is a true verdict on a real version (the same harness passes on a fixed
release, where there is one) with the reference that documents it: upstream's
issue or release notes, or, for a bug upstream has no report of yet, the
suite's own write-up under ``docs/client-bugs/`` (source location, the wire and
history evidence of a recorded real run, ready to file). A row is as narrow as
the evidence: ``evidence`` lists values the finding's evidence must carry (e.g.
a stale claim of an assignment the member never applied), so the same
invariant broken another way by the same client still fails. ``conformance
clients list`` shows each kind's known issues.

The rows live in the kind modules (``KNOWN_ISSUES`` of
``conformance/members/kinds/<kind>.py``, next to what else the suite knows of
that client); this module holds the row's type and the matching, and
:func:`table` is every kind's rows in registry order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from conformance.members.spec_grammar import split_spec


def version_key(version: str) -> tuple[int, ...]:
    """``"2.10.0"`` -> ``(2, 10, 0)``; non-numeric parts count as 0 (``"1.0.0rc1"`` -> ``(1, 0, 0)``)."""
    return tuple(int(m) if m.isdigit() else 0 for m in re.findall(r"\d+", version.split("+")[0])[:4])


@dataclass(frozen=True)
class KnownIssue:
    """``kind`` versions from ``since`` (None: every earlier one) up to, not including, ``fixed``
    (None: not fixed) violate ``invariant``; ``reference`` is where the bug is documented. Only a
    finding whose culprit is of ``kind`` at an affected version and whose evidence has every (key,
    value) of ``evidence`` matches; ``evidence`` is never empty (tests/test_verdict_attribution.py
    refuses such a row: it would excuse any finding of ``invariant``)."""

    kind: str
    since: str | None
    fixed: str | None
    invariant: str
    reference: str
    summary: str
    evidence: tuple[tuple[str, Any], ...] = ()

    def explains(self, evidence: dict[str, Any] | None) -> bool:
        """True when a finding with ``evidence`` has the evidence this row is about."""
        ev = evidence or {}
        return all(key in ev and ev[key] == value for key, value in self.evidence)

    def affects(self, kind: str, version: str | None) -> bool:
        if kind != self.kind or not version:
            return False
        v = version_key(version)
        return ((self.since is None or v >= version_key(self.since))
                and (self.fixed is None or v < version_key(self.fixed)))

    @property
    def versions(self) -> str:
        if self.fixed is None:
            return f"{self.since} and later" if self.since else "every version"
        return f"{self.since} up to {self.fixed}" if self.since else f"before {self.fixed}"


def table() -> tuple[KnownIssue, ...]:
    """Every known issue: each kind module's ``KNOWN_ISSUES`` rows, in registry order
    (:func:`conformance.members.kinds.known_issues`; a kind owns its rows)."""
    from conformance.members.kinds import known_issues

    return known_issues()


def __getattr__(name: str) -> object:
    """``KNOWN_ISSUES``: the table, as :func:`table` derives it from the kind modules."""
    if name == "KNOWN_ISSUES":
        return table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def issues_of(kind: str, version: str | None) -> list[KnownIssue]:
    """The known issues of ``kind`` at ``version``, in table order."""
    return [i for i in table() if i.affects(kind, version)]


def match(invariant: str, culprit_spec: str | None, evidence: dict[str, Any] | None = None) -> KnownIssue | None:
    """The first known issue of ``invariant`` that affects ``culprit_spec`` (the spec of the member
    the finding names as its culprit) and explains a finding with ``evidence``, or None (always
    None without a culprit)."""
    if not culprit_spec:
        return None
    words = split_spec(culprit_spec)
    for issue in issues_of(words.kind, words.version or None):
        if issue.invariant == invariant and issue.explains(evidence):
            return issue
    return None
