"""The options every command that runs cells shares (``run``, ``reproduce``, ``corpus``, ``hunt``,
``shrink``): one definition, so they are spelled, defaulted and described alike."""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance import config
from conformance.scenarios.runner import BACKENDS
from conformance.spark_master import FORMS


def add_cell_options(p: argparse.ArgumentParser, what: str, backend: bool = True) -> None:
    """``--runs-dir`` (where ``what`` goes), ``--spark-master`` and, where ``backend``, ``--backend``."""
    p.add_argument("--runs-dir", type=Path, default=None,
                   help=f"where {what} goes (created if missing; default {config.RUNS_DIR})")
    p.add_argument("--spark-master", default=None, metavar="URL",
                   help=f"Spark master URL for judging (default {config.SPARK_MASTER}): {FORMS}")
    if backend:
        p.add_argument("--backend", choices=BACKENDS, default="processes",
                       help="run broker, toxiproxy and members as local processes (default) or as containers "
                            "on a Docker engine")
