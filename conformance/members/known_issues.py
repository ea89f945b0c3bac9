"""Known client bugs: one table of what a released client version is known to violate.

A finding of a cell that matches a row (same invariant, and a member the finding
implicates is of that kind at an affected version) is reported as "known issue
<reference>", not as a new failure; the cell's verdict is ``known-issue`` when
every failing finding is known, and any other finding still fails it. Only
violations that name their members can match: one the evidence cannot attribute
is never excused by a known issue.

Each row is a true verdict on a real version (the same harness passes on a fixed
release, where there is one) with the reference that documents it: upstream's
issue or release notes, or, for a bug upstream has no report of yet, the
suite's own write-up under ``docs/client-bugs/`` (source location, the wire and
history evidence of a recorded real run, ready to file). A row is as narrow as
the evidence: ``evidence`` lists values the finding's evidence must carry (e.g.
a stale claim of an assignment the member never applied), so the same
invariant broken another way by the same client still fails. ``conformance
clients list`` shows each kind's known issues.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


def version_key(version: str) -> tuple[int, ...]:
    """``"2.10.0"`` -> ``(2, 10, 0)``; non-numeric parts count as 0 (``"1.0.0rc1"`` -> ``(1, 0, 0)``)."""
    return tuple(int(m) if m.isdigit() else 0 for m in re.findall(r"\d+", version.split("+")[0])[:4])


@dataclass(frozen=True)
class KnownIssue:
    """``kind`` versions from ``since`` (None: every earlier one) up to, not including, ``fixed``
    (None: not fixed) violate ``invariant``; ``reference`` is where the bug is documented. Only a
    finding whose evidence has every (key, value) of ``evidence`` matches (empty: any finding of
    ``invariant``)."""

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


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue("librdkafka", None, "2.1.0", "D1", "librdkafka v2.0.0 release notes (known issue; fixed in v2.1.0)",
               "consume(num_messages > 1) loses records it had fetched when a rebalance runs alongside it"),
    KnownIssue("librdkafka", None, "2.10.0", "L1", "confluentinc/librdkafka issue 4059",
               "a failed commit of the previous generation during a join sets the generation to -1; as leader it "
               "then syncs generation -1, which the broker refuses"),
    KnownIssue("sarama", None, "1.43.3", "D2", "IBM/sarama PR 2947",
               "two OffsetCommit requests of one member can go out of order, so the broker accepts an offset "
               "below one it accepted a few milliseconds earlier"),
    KnownIssue("kafka-python", "3.0.0", None, "E5", "docs/client-bugs/kafka-python-discarded-join.md "
               "(kafka/coordinator/base.py join_group_async; no upstream report yet)",
               "a join whose SyncGroup answer arrives after poll()'s timeout is thrown away: the next poll sends a "
               "new JoinGroup declaring the partitions that assignment took away, and never applies it",
               evidence=(("kind", "stale-claim"), ("assignment_applied", False))),
)


def issues_of(kind: str, version: str | None) -> list[KnownIssue]:
    """The known issues of ``kind`` at ``version``, in table order."""
    return [i for i in KNOWN_ISSUES if i.affects(kind, version)]


def spec_kind_version(spec: str) -> tuple[str, str | None]:
    """``"java@4.4.0/fault"`` -> ``("java", "4.4.0")``."""
    head = spec.split("/", 1)[0]
    kind, _, version = head.partition("@")
    return kind, version or None


def match(invariant: str, specs: list[str], evidence: dict[str, Any] | None = None) -> KnownIssue | None:
    """The first known issue of ``invariant`` that affects one of ``specs`` (the implicated members'
    specs) and explains a finding with ``evidence``, or None."""
    for spec in specs:
        kind, version = spec_kind_version(spec)
        for issue in issues_of(kind, version):
            if issue.invariant == invariant and issue.explains(evidence):
                return issue
    return None
