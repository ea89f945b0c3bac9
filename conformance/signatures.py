"""Failure signatures: when findings of different cells are the same bug, for a hunt.

A signature is what a maintainer would call "the same failure": the invariant, the culprit's
release (kind and version; ``group`` for a finding that names no culprit), the known issue it
matched (its reference; None for a new failure) and ``what``, the finding's own headline with
its particulars taken out. The headline is the message up to its first ``": "`` or ``"; "`` (the
checks put the anomaly first and the state after it); the culprit's name becomes ``culprit`` and
every other member's ``member`` (which members it harmed is not the bug's kind), every number
becomes ``N`` (generations, partitions, times, counts) and a list of one thing repeated becomes
the thing. So "m2-sarama sent no SyncGroup for generation 7" and "m3-sarama sent no SyncGroup for
generation 12" are one signature; an L1 of Sarama and an L1 of Java are two (their culprits).

Guarantees: :func:`signature` depends only on the verdict and the finding (no clock, no order);
:func:`tally` counts every failing finding (:func:`conformance.pipeline.matrix.failing_findings`)
and every known-issue finding once, and keeps, per signature, the cells it was seen in and the
first of them in the order given (its seed and run directory: the one to replay). Warnings and
allowed findings are not failures and make no signature.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from conformance.pipeline.matrix import culprit_spec, failing_findings, known_findings

#: The longest ``what`` kept (a headline that runs on is cut, ending in "...").
WHAT_MAX = 140
_MEMBER = re.compile(r"\bm\d+-[a-z][a-z-]*[a-z]\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_REPEATED = re.compile(r"([\w.-]+)(?:, \1)+")


@dataclass(frozen=True, order=True)
class Signature:
    invariant: str
    culprit: str
    what: str
    known: str | None = None

    def __str__(self) -> str:
        return f"{self.invariant} {self.culprit}: {self.what}" + (f" [known: {self.known}]" if self.known else "")


def headline(message: str, culprit: str | None = None) -> str:
    """A finding's message reduced to its anomaly (see the module docstring); ``culprit`` is the
    culprit member's name."""
    head = re.split(r": |; ", message, maxsplit=1)[0]
    head = _MEMBER.sub(lambda m: "culprit" if m.group(0) == culprit else "member", head)
    head = _REPEATED.sub(r"\1", _NUMBER.sub("N", head)).strip()
    return head if len(head) <= WHAT_MAX else head[:WHAT_MAX - 3].rstrip() + "..."


def signature(verdict: dict[str, Any], finding: dict[str, Any]) -> Signature:
    """The signature of ``finding`` (with its ``invariant``) of the cell judged ``verdict``."""
    known = finding.get("known_issue") or {}
    return Signature(str(finding.get("invariant")), culprit_spec(verdict, finding) or "group",
                     headline(str(finding.get("message") or ""), finding.get("culprit")), known.get("reference"))


@dataclass
class Seen:
    """One signature's tally: ``count`` findings in ``cells`` (run directories, in order); ``first``
    is the verdict of the first cell that showed it."""

    signature: Signature
    count: int = 0
    cells: list[str] = field(default_factory=list)
    first: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"invariant": self.signature.invariant, "culprit": self.signature.culprit,
                "what": self.signature.what, "known_issue": self.signature.known, "findings": self.count,
                "cells": len(self.cells), "first_seed": self.first.get("seed"),
                "first_run_dir": self.first.get("run_dir"), "first_scenario": self.first.get("scenario")}


def tally(verdicts: list[dict[str, Any]]) -> list[Seen]:
    """Every signature of ``verdicts``' failing and known-issue findings, new failures first, then by
    how many cells showed it (most first), then by signature."""
    seen: dict[Signature, Seen] = {}
    for verdict in verdicts:
        cell = str(verdict.get("run_dir") or verdict.get("run") or "?")
        for finding in failing_findings(verdict) + known_findings(verdict):
            sig = signature(verdict, finding)
            entry = seen.setdefault(sig, Seen(sig, first=verdict))
            entry.count += 1
            if cell not in entry.cells:
                entry.cells.append(cell)
    return sorted(seen.values(), key=lambda s: (s.signature.known is not None, -len(s.cells), s.signature))
