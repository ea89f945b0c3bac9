"""Known client bugs: one table of what a released client version is known to violate.

A finding of a cell that matches a row (same invariant, and a member the finding
implicates is of that kind at an affected version) is reported as "known issue
<reference>", not as a new failure; the cell's verdict is ``known-issue`` when
every failing finding is known, and any other finding still fails it. Only
violations that name their members can match: one the evidence cannot attribute
is never excused by a known issue.

Each row is a true verdict on a real version (the same harness passes on a fixed
release) with the upstream reference that documents it. ``conformance clients
list`` shows each kind's known issues.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def version_key(version: str) -> tuple[int, ...]:
    """``"2.10.0"`` -> ``(2, 10, 0)``; non-numeric parts count as 0 (``"1.0.0rc1"`` -> ``(1, 0, 0)``)."""
    return tuple(int(m) if m.isdigit() else 0 for m in re.findall(r"\d+", version.split("+")[0])[:4])


@dataclass(frozen=True)
class KnownIssue:
    """``kind`` versions from ``since`` (None: every earlier one) up to, not including, ``fixed``
    (None: not fixed) violate ``invariant``; ``reference`` is where upstream documents it."""

    kind: str
    since: str | None
    fixed: str | None
    invariant: str
    reference: str
    summary: str

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
)


def issues_of(kind: str, version: str | None) -> list[KnownIssue]:
    """The known issues of ``kind`` at ``version``, in table order."""
    return [i for i in KNOWN_ISSUES if i.affects(kind, version)]


def spec_kind_version(spec: str) -> tuple[str, str | None]:
    """``"java@4.4.0/fault"`` -> ``("java", "4.4.0")``."""
    head = spec.split("/", 1)[0]
    kind, _, version = head.partition("@")
    return kind, version or None


def match(invariant: str, specs: list[str]) -> KnownIssue | None:
    """The first known issue of ``invariant`` that affects one of ``specs`` (the implicated members'
    specs), or None."""
    for spec in specs:
        kind, version = spec_kind_version(spec)
        for issue in issues_of(kind, version):
            if issue.invariant == invariant:
                return issue
    return None
