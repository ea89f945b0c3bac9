"""The project's test tiers.

Every test runs in CI (the README's test command) except those marked ``nightly``: long real
cells (one per deliberate fault of the reference consumer, ...) that the nightly job runs with
``pytest --nightly`` (or ``CONFORMANCE_NIGHTLY=1``). Without it they are skipped, saying how to
run them. ``--shard I/N`` keeps the I-th of N shards of the selected tests (whole modules, their
fixtures are shared; a nightly test weighs more), so that the nightly workflow can run the tier in
parallel jobs; every module is in exactly one shard.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

import pytest

import recorded


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--nightly", action="store_true", default=False,
                     help="also run the nightly tier (tests marked nightly: long real cells)")
    parser.addoption("--shard", default=None, metavar="I/N",
                     help="run only the I-th of N shards of the selected tests (whole modules)")


#: How much a nightly test weighs against another when modules are dealt into shards (a long real
#: cell against mostly seconds).
NIGHTLY_WEIGHT = 20


def shard_of(modules: dict[str, int], shards: int) -> dict[str, int]:
    """Module -> shard (1..shards): the heaviest module first, each to the lightest shard so far
    (ties: the lower shard); deterministic for the same modules and weights."""
    load = [0] * shards
    out: dict[str, int] = {}
    for module, weight in sorted(modules.items(), key=lambda mw: (-mw[1], mw[0])):
        i = min(range(shards), key=lambda k: (load[k], k))
        load[i] += weight
        out[module] = i + 1
    return out


@pytest.hookimpl(trylast=True)   # after -m and -k chose the tests: shards deal what is left
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    nightly = config.getoption("--nightly") or os.environ.get("CONFORMANCE_NIGHTLY") == "1"
    shard = config.getoption("--shard")
    if shard is not None:
        m = re.fullmatch(r"([0-9]+)/([0-9]+)", shard)
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise pytest.UsageError(f"--shard {shard}: give I/N with 1 <= I <= N (e.g. 2/4)")
        weights: dict[str, int] = {}
        for item in items:
            weight = NIGHTLY_WEIGHT if nightly and "nightly" in item.keywords else 1
            weights[item.nodeid.split("::")[0]] = weights.get(item.nodeid.split("::")[0], 0) + weight
        dealt = shard_of(weights, int(m.group(2)))
        mine = [dealt[i.nodeid.split("::")[0]] == int(m.group(1)) for i in items]
        config.hook.pytest_deselected(items=[i for i, keep in zip(items, mine) if not keep])
        items[:] = [i for i, keep in zip(items, mine) if keep]
    if nightly:
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
