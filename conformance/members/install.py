"""Installing member clients: ``ensure_client(spec)`` for ``conformance setup``.

Dispatches to the kind's module (registry: :mod:`conformance.members.kinds`).
Guarantees are the kind modules' own: idempotent, atomic, and a
:class:`~conformance.errors.UsageError` naming the versions that exist when the
requested one does not. A kind whose module is not built yet is a
:class:`~conformance.errors.SuiteError` saying so.
"""

from __future__ import annotations

from types import ModuleType

from conformance.errors import SuiteError
from conformance.members.kinds import KIND_MODULES, kind_module
from conformance.members.spec import MemberSpec


def load_kind(kind: str) -> ModuleType:
    """The kind's module; SuiteError if its module does not exist yet."""
    try:
        return kind_module(kind)
    except ModuleNotFoundError as exc:
        if exc.name == KIND_MODULES.get(kind):
            raise SuiteError(f"member kind {kind!r} is not built yet (no module {exc.name})") from None
        raise


def ensure_client(spec: MemberSpec) -> None:
    """Install what ``spec`` needs to run (its kind at its version) into the cache."""
    load_kind(spec.kind).ensure(spec.version)
