"""The grammar of a member spec string, ``KIND[@VERSION][+PROTOCOL][/FAULT...]``, and nothing else.

:func:`split_spec` is the one place a spec string is split into its words; it imports nothing of
the suite, so every reader can use it (:mod:`conformance.members.known_issues`, which the kind
modules import, and :mod:`conformance.pipeline.matrix` read recorded spec strings with it), and
:meth:`conformance.members.spec.MemberSpec.parse` validates and defaults the words it gives.
Guarantee: for every ``MemberSpec`` ``s``, ``split_spec(str(s))`` gives back ``s``'s kind,
version, faults and (for a consumer-protocol member) protocol.
"""

from __future__ import annotations

from typing import NamedTuple


class SpecWords(NamedTuple):
    """The words of a spec string, as written: ``None`` where the separator is absent (no ``@``, no
    ``+``), ``""`` where it is present with nothing after it; nothing is validated or defaulted."""

    kind: str
    version: str | None
    protocol: str | None
    faults: tuple[str, ...]

    @property
    def tail(self) -> str:
        """The text after ``KIND@`` of the spec these words spell (``4.4.0+consumer``,
        ``0.1.0/skip-revoke``): with :attr:`kind`, the one order of spec strings (:func:`sort_key`)."""
        return ((self.version or "") + ("" if self.protocol is None else f"+{self.protocol}")
                + "".join(f"/{f}" for f in self.faults))


def split_spec(text: str) -> SpecWords:
    """The grammar ``KIND[@VERSION][+PROTOCOL][/FAULT...]``: the one place a spec string is split.
    Total (never raises): a spec string a run recorded is read with it as written, whatever it
    names, and as given (not stripped); :meth:`MemberSpec.parse` validates the words of one a user
    gave."""
    head, *faults = text.split("/")
    head, plus, protocol = head.partition("+")
    kind, at, version = head.partition("@")
    return SpecWords(kind, version if at else None, protocol if plus else None, tuple(faults))


def sort_key(text: str) -> tuple[str, str]:
    """The order of spec strings: by kind, then by the rest of the spec as written (so
    ``java@4.4.0`` < ``java@4.4.0+consumer``, and a reference's faulted specs after its plain one)."""
    words = split_spec(text)
    return words.kind, words.tail
