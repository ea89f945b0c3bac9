"""What ``conformance run``, ``reproduce`` and ``plan`` check before anything starts.

Guarantee: every check here is offline or asks only what it names (a Docker engine, the runs
directory), starts nothing and installs nothing; a mistake is a :class:`UsageError` with one line
(argparse's error for :func:`seed`). The checks: the broker version against each member release
(:mod:`conformance.members.versions`; a release that cannot work with the cell's broker, by its
kind's ``BROKER_LIMITS``), each scenario against the mix (its targets:
:func:`conformance.scenarios.parse.check_targets`; its start strategies:
:func:`conformance.members.mixing.plan_mix`; the features it needs), every fault of the scenario
on the cell's backend, ``--spark-master`` (:mod:`conformance.spark_master`) and the runs directory,
which is created.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance import config
from conformance.errors import UsageError
from conformance.members.kinds import feature_since, has_feature
from conformance.members.mixing import plan_mix
from conformance.members.versions import broker_problem, check_specs
from conformance.nemesis.faults import FAULTS, unsupported
from conformance.rundir import ready_dir
from conformance.scenarios.parse import check_targets
from conformance.scenarios.runner import Cell
from conformance.spark_master import check_spark_master

#: The largest seed: a manifest's seed is judged as a 64-bit integer (the pipeline's ``cells.seed``).
MAX_SEED: int = 2**63 - 1


def seed(text: str) -> int:
    """``--seed``: an integer from 0 to :data:`MAX_SEED` (argparse reports anything else in one line)."""
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 19 and int(digits) <= MAX_SEED):
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed: give an integer from 0 to {MAX_SEED}")
    return int(digits)



def check_backend(cell: Cell) -> None:
    """UsageError (one line) unless every fault of ``cell``'s scenario exists on the cell's backend
    (each fault's ``backends`` in :data:`conformance.nemesis.faults.FAULTS`)."""
    missing = unsupported((a.verb for p in cell.scenario.phases for a in p.actions), cell.backend)
    if missing:
        where = next(a.source for p in cell.scenario.phases for a in p.actions if a.verb == missing[0])
        needs = " or ".join(f"--backend {b}" for b in FAULTS[missing[0]].backends)
        raise UsageError(f"{where}: {missing[0]} needs {needs}; this run's backend is {cell.backend}")


def check_engine() -> None:
    """UsageError (one line) unless a Docker engine answers (nothing is installed or started here)."""
    from conformance.containers.engine import engine

    if engine() is None:
        raise UsageError("--backend docker: no Docker engine answers (DOCKER_HOST, else /var/run/docker.sock); "
                         "start one, or let 'conformance setup --backend docker' install and start it, "
                         "or run with --backend processes")


def check_cell(cell: Cell) -> None:
    """UsageError (one line) unless ``cell``'s scenario can run on its mix: every member's release
    can work with the cell's broker (:func:`~conformance.members.versions.broker_problem`), every
    target exists (:func:`~conformance.scenarios.parse.check_targets`), every member has the features the
    scenario needs (static membership for ``members static=true``, KIP-848 for a ``+consumer`` spec;
    the kind modules' FEATURES) and
    the members form a group (:func:`~conformance.members.mixing.plan_mix`, which also knows who
    lacks cooperative rebalancing or an assignor). Offline: versions are :func:`preflight`'s."""
    for spec in dict.fromkeys(cell.specs):
        found = broker_problem(spec.kind, spec.version, cell.broker)
        if found:
            raise UsageError(found)
    check_targets(cell.scenario, [s.kind for s in cell.specs])
    check_backend(cell)
    for spec in cell.specs:
        if spec.protocol == "consumer" and not has_feature(spec.kind, spec.version, "consumer-protocol"):
            since = feature_since(spec.kind, "consumer-protocol")
            raise UsageError(f"{spec}: {spec.kind}@{spec.version} does not speak the consumer group protocol "
                             f"(KIP-848, +consumer)" + (f"; {spec.kind} does from {since}" if since else
                                                         f"; {spec.kind} has no KIP-848 member"))
    if cell.scenario.static_members:
        for spec in cell.specs:
            if not has_feature(spec.kind, spec.version, "static-membership"):
                since = feature_since(spec.kind, "static-membership")
                raise UsageError(f"scenario {cell.scenario.name} runs static members (group.instance.id, KIP-345); "
                                 f"{spec} has no static membership"
                                 + (f" ({spec.kind} has it from {since})" if since else ""))
    try:
        plan_mix(list(cell.specs), cell.scenario.start_strategies)
    except UsageError as exc:
        raise UsageError(f"scenario {cell.scenario.name}: {exc}") from None


def preflight(cells: list[Cell], runs_dir: Path | None, spark_master: str | None) -> None:
    """Check what ``cells`` need before anything starts (see the module's guarantee);
    UsageError for the first mistake. Creates the runs directory."""
    if spark_master is not None:
        check_spark_master(spark_master)
    for cell in cells:
        check_cell(cell)
    check_specs(s for cell in cells for s in cell.specs)
    if any(cell.backend == "docker" for cell in cells):
        check_engine()
    ready_dir(Path(runs_dir or config.RUNS_DIR), "runs directory")
