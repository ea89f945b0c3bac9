"""The pytest plugin of the suite: options that parameterise the conformance tests.

Options: ``--clients`` (member specs), ``--scenario`` (repeatable), ``--broker``,
``--seed`` and ``--runs-dir``. Loaded through the ``pytest11`` entry point, so
``pytest`` anywhere in the project knows them.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "Kafka cooperative rebalance conformance")
    group.addoption("--clients", default=None, help="comma-separated member specs (default: the default mix)")
    group.addoption("--scenario", action="append", default=None, help="scenario name (repeatable)")
    group.addoption("--broker", default=None, help="broker version (default: the default broker)")
    group.addoption("--seed", type=int, default=None, help="schedule seed")
    group.addoption("--runs-dir", default=None, help="where run directories go (default: reports/)")
