"""The project's test tiers.

Every test runs in CI (the README's test command) except those marked ``nightly``: long real
cells (one per deliberate fault of the reference consumer, ...) that the nightly job runs with
``pytest --nightly`` (or ``CONFORMANCE_NIGHTLY=1``). Without it they are skipped, saying how to
run them.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

import recorded


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--nightly", action="store_true", default=False,
                     help="also run the nightly tier (tests marked nightly: long real cells)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--nightly") or os.environ.get("CONFORMANCE_NIGHTLY") == "1":
        return
    skip = pytest.mark.skip(reason="nightly tier: run with `pytest --nightly` (or CONFORMANCE_NIGHTLY=1)")
    for item in items:
        if "nightly" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def docker_client() -> Iterator["object"]:
    """A docker SDK client of an answering engine (as root, one is installed and started: a failure
    then fails the test); the test is skipped, saying why, only where no engine can be had."""
    from conformance.containers.engine import engine_for_tests

    got, reason = engine_for_tests()
    if got is None:
        pytest.skip(f"no Docker engine can be had: {reason}")
    yield got


@pytest.fixture(scope="session")
def recorded_judge(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> recorded.Judged:
    """One ``conformance report`` over the recorded-run copies of every module of this session that
    declares ``recorded_copies(root)`` and has a selected test taking ``recorded_verdicts``
    (tests/recorded.py says what is guaranteed)."""
    modules = {item.module.__name__: item.module for item in request.session.items
               if "recorded_verdicts" in getattr(item, "fixturenames", ())
               and hasattr(getattr(item, "module", None), recorded.DECLARATION)}
    return recorded.judge(list(modules.values()), tmp_path_factory.mktemp("recorded"))


@pytest.fixture(scope="module")
def recorded_verdicts(request: pytest.FixtureRequest, recorded_judge: recorded.Judged) -> dict[str, dict]:
    """This module's verdicts, by the names its ``recorded_copies(root)`` gave its copies."""
    return recorded_judge.of(request.module)
