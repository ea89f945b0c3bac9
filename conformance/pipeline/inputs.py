"""Which input files of a run directory each invariant was judged from.

A run directory has four inputs (:data:`INPUTS`): the manifest, the wire capture, the members'
histories and the nemesis log. Every table a check reads derives from some of them
(:data:`TABLE_INPUTS`). While the checks run, :class:`Reading` records which tables each one
reads (also through the pieces checks share, :meth:`conformance.pipeline.derived.Tables.shared`),
so :func:`inputs_read` says which inputs an invariant depends on without a hand-kept list that
could drift from the checks' code.

:mod:`conformance.pipeline.verdicts` uses this to keep damaged data from being blamed on a client:
an invariant that read an input with a malformed line (:func:`input_of` says which input a
malformed row's file is) is "malformed" for that cell, and its findings are set aside, not
counted as violations.

Guarantees: a file :func:`input_of` cannot place counts as damaging every input; an invariant
whose reads were not recorded counts as reading every input. Both err towards "malformed",
never towards a violation on damaged data.
"""

from __future__ import annotations

import threading
from pathlib import PurePath
from typing import Any, Callable

#: The inputs of a run directory, as :func:`input_of` names them.
INPUTS: tuple[str, ...] = ("manifest", "wire", "history", "nemesis")

#: Table of :class:`conformance.pipeline.derived.Tables` -> the inputs its rows derive from
#: (the derived tables' from :mod:`conformance.pipeline.derived`'s definitions).
TABLE_INPUTS: dict[str, frozenset[str]] = {
    "cells": frozenset({"manifest"}),
    "members": frozenset({"manifest"}),
    "topics": frozenset({"manifest"}),
    "partitions": frozenset({"manifest"}),
    "nemesis": frozenset({"nemesis"}),
    "frames": frozenset({"wire"}),
    "subscriptions": frozenset({"wire"}),
    "assignments": frozenset({"wire"}),
    # Topic ids are named through the manifest's topic_ids; an id it does not name makes the wire line malformed.
    "commits": frozenset({"wire"}),
    "heartbeats": frozenset({"wire"}),
    "epoch_ends": frozenset({"wire"}),
    "member_ids": frozenset({"wire"}),
    "leader_assignments": frozenset({"wire"}),
    "generations": frozenset({"wire", "manifest"}),            # joined with the members for the leader's kind
    "events": frozenset({"history"}),
    "events_inc": frozenset({"history"}),
    "run_end": frozenset({"manifest", "history", "wire"}),     # end_ts, else the last event or frame
    "incarnations": frozenset({"history", "nemesis", "manifest", "wire"}),   # kills; the run's end
    "ownership": frozenset({"history", "nemesis", "manifest", "wire"}),      # closed by incarnations
    "malformed": frozenset(),
}


def input_of(file: str) -> str | None:
    """The input (:data:`INPUTS`) a malformed row's ``file`` belongs to; None when it is none of
    them (it then counts as damaging all)."""
    p = PurePath(file)
    if p.name == "manifest.json":
        return "manifest"
    if p.name == "wire.jsonl":
        return "wire"
    if p.name == "nemesis.jsonl":
        return "nemesis"
    if p.parent.name == "members" and p.suffix == ".jsonl":
        return "history"
    return None


def damaged_inputs(files: list[str]) -> frozenset[str]:
    """The inputs the malformed rows of ``files`` damage (every input for a file of none)."""
    out: set[str] = set()
    for f in files:
        which = input_of(f)
        out.update(INPUTS if which is None else (which,))
    return frozenset(out)


def inputs_of_tables(tables: set[str] | frozenset[str]) -> frozenset[str]:
    """The inputs ``tables`` derive from (an unknown table: every input)."""
    out: set[str] = set()
    for name in tables:
        out.update(TABLE_INPUTS.get(name, INPUTS))
    return frozenset(out)


class Reading:
    """A view of a Tables (:class:`conformance.pipeline.derived.Tables`) for one check that records
    which tables the check reads (:attr:`tables`). Everything else is the Tables' own.

    A piece built through :meth:`shared` remembers the tables its build read (in ``pieces``, one
    dict for every Reading over the same Tables), so a check that gets a piece another check
    built is credited with those tables too. One Reading is used by one check's thread.
    """

    def __init__(self, t: Any, pieces: dict[str, frozenset[str]], lock: threading.Lock) -> None:
        self._t = t
        self._pieces = pieces
        self._lock = lock
        self._recording: list[set[str]] = []
        self.tables: set[str] = set()

    def _note(self, names) -> None:
        self.tables.update(names)
        for s in self._recording:
            s.update(names)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._t, name)
        if name in TABLE_INPUTS:
            self._note((name,))
        return value

    def shared(self, name: str, build: Callable[[], Any], heavy: bool = False) -> Any:
        """:meth:`Tables.shared`, crediting this check with the tables the piece was built from."""
        def recorded() -> Any:
            mine: set[str] = set()
            self._recording.append(mine)
            try:
                df = build()
            finally:
                self._recording.pop()
            with self._lock:   # stored before the Tables' lock is released: no reader sees it missing
                self._pieces[name] = frozenset(mine)
            return df

        df = self._t.shared(name, recorded, heavy)
        with self._lock:
            # A piece built without a Reading has no record of its reads: count it as reading
            # every table (the safe side), never as reading none.
            self._note(self._pieces.get(name, TABLE_INPUTS.keys()))
        return df


def readings(t: Any, names) -> dict[str, Reading]:
    """One :class:`Reading` of ``t`` per name (e.g. per invariant), sharing what pieces read."""
    pieces: dict[str, frozenset[str]] = {}
    lock = threading.Lock()
    return {n: Reading(t, pieces, lock) for n in names}


def inputs_read(r: Reading | None) -> frozenset[str]:
    """The inputs a check read through ``r`` (every input when nothing was recorded: None)."""
    return frozenset(INPUTS) if r is None else inputs_of_tables(r.tables)
