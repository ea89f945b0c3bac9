"""The ``conformance`` command.

Each subcommand lives in the module that owns its subject and exposes
``register(subparsers)``; this module only wires them together and turns the
suite's errors into exit codes:

- 0: done (for ``run``: every cell passed, or failed only by known client bugs: a "known-issue"
  cell exits 0, like a pass; :func:`conformance.pipeline.matrix.cell_result`)
- 1: an invariant was violated by something not known (``run``, ``reproduce``, ``report --check``)
- 2: misuse or a suite error, explained on stderr in one line (also a wrong option or
  argument: ``PROG: what is wrong (see PROG --help)``)
- 130: interrupted (every process the run started has been stopped)
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn, Sequence

from conformance import __version__
from conformance.errors import SuiteError, UsageError, one_line

#: Modules that provide subcommands, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "conformance.setup",
    "conformance.members.command",
    "conformance.protocol.command",
    "conformance.planning.command",
    "conformance.run.command",
    "conformance.run.corpus",
    "conformance.run.hunt",
    "conformance.run.shrink",
    "conformance.report.command",
    "conformance.mutation_score",
)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like every other mistake (exit 2)."""

    def error(self, message: str) -> "NoReturn":
        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="conformance",
        description="Interoperability conformance suite for Kafka cooperative consumer groups (KIP-429).",
    )
    parser.add_argument("--version", action="version", version=f"conformance {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"conformance: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except SuiteError as exc:
        print(f"conformance: suite error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("conformance: interrupted; every process the run started has been stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
