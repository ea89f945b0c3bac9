"""`conformance report` (being built; see the issue that owns this module)."""

from __future__ import annotations

import argparse

from conformance.errors import SuiteError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="build reports from run directories")
    p.set_defaults(func=_not_built)


def _not_built(args: argparse.Namespace) -> int:
    raise SuiteError("'report' is not built yet")
