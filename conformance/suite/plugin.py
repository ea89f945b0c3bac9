"""The pytest plugin of the suite: the conformance tests' options and parameters.

Options: ``--clients`` (member specs), ``--scenario`` (repeatable), ``--broker``,
``--seed``, ``--runs-dir``, ``--spark-master`` and ``--backend`` (``processes`` or
``docker``, as ``conformance run --backend``; docker with no engine answering is a usage
error before any test runs). Loaded through the
``pytest11`` entry point, so any ``pytest`` in the project knows them. The
conformance tests themselves live in :mod:`conformance.suite.test_conformance`
and run with ``pytest --pyargs conformance.suite [options]``: one test per
cell (scenario x member mix x broker), with allure steps per phase and the
run directory's files attached.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from conformance import config
from conformance.members import kinds


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "Kafka cooperative rebalance conformance")
    group.addoption("--clients", default=None, help="comma-separated member specs (default: one of each kind)")
    group.addoption("--scenario", action="append", default=None, help="scenario name or file (repeatable)")
    group.addoption("--broker", action="append", default=None, help="broker version (repeatable)")
    group.addoption("--seed", type=int, default=None, help="schedule seed (default: random, recorded)")
    group.addoption("--runs-dir", default=None, help="where run directories go (default: reports/)")
    group.addoption("--spark-master", default=None, help="Spark master URL (default local[*])")
    from conformance.scenarios.runner import BACKENDS

    group.addoption("--backend", choices=BACKENDS, default="processes",
                    help="run the cells' parts as local processes (default) or as containers on a Docker engine")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_cell" not in metafunc.fixturenames:
        return
    from conformance.members.spec import MemberSpec, parse_specs
    from conformance.run.matrix import build_cells

    opt = metafunc.config.getoption
    specs = parse_specs(opt("clients")) if opt("clients") is not None else [MemberSpec.parse(s) for s in kinds.default_mix()]
    seed = opt("seed") if opt("seed") is not None else random.SystemRandom().randrange(1, 2**31)
    cells = [c for broker in (opt("broker") or [config.DEFAULT_BROKER])
             for c in build_cells(opt("scenario") or list(config.DEFAULT_SCENARIOS), specs, broker, seed)]
    backend = opt("backend")
    if backend == "docker":
        from conformance.errors import UsageError
        from conformance.preflight import check_engine
        try:
            check_engine()
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
    cells = [replace(c, backend=backend) for c in cells]
    metafunc.parametrize("conformance_cell", cells, ids=[c.cell_id for c in cells])
