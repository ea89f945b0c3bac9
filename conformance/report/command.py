"""``conformance report RUNS_DIR... --out DIR [--spark-master URL] [--check]``.

Finds every run directory (a directory holding manifest.json) under the
given paths, judges them all with the pipeline, and writes the report (see
conformance.report.site) into ``--out``. Exit 0 when written; with
``--check``, exit 1 when any cell did not pass.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="judge run directories and build the matrix, HTML, JUnit and allure reports",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, metavar="RUNS_DIR", help="run directories or folders holding them")
    p.add_argument("--out", type=Path, required=True, help="where to write the report")
    p.add_argument("--spark-master", default=None, help="Spark master URL (default: local[*])")
    p.add_argument("--check", action="store_true", help="exit 1 unless every cell passed")
    p.set_defaults(func=run)


def build_report(runs: list[Path], out: Path, spark_master: str | None = None) -> tuple[list[dict], dict]:
    """Judge every run directory under ``runs`` and write the report into ``out``."""
    from conformance.pipeline import judge
    from conformance.pipeline.ingest import find_run_dirs
    from conformance.pipeline.timelines import timelines
    from conformance.report.site import write_site

    missing = [str(r) for r in runs if not Path(r).exists()]
    if missing:
        raise UsageError(f"no such path: {', '.join(missing)}; give run directories or folders that hold them")
    run_dirs = find_run_dirs([Path(r) for r in runs])
    if not run_dirs:
        raise UsageError(f"no manifest.json under {', '.join(map(str, runs))}: nothing to report "
                         "(run `conformance run` first, or point at a reports/<run-id> directory)")
    out = Path(out)
    verdicts = judge(run_dirs, out / "pipeline", spark_master)
    matrix = write_site(verdicts, out, timelines(out / "pipeline", spark_master))
    return verdicts, matrix


def run(args: argparse.Namespace) -> int:
    verdicts, matrix = build_report(args.runs, args.out, args.spark_master)
    s = matrix["summary"]
    cut = f", {s['incomplete']} cut short (incomplete)" if s["incomplete"] else ""
    print(f"{s['cells']} cell(s): {s['passed']} passed, {s['failed']} failed{cut}; report: {args.out / 'index.html'}")
    return 1 if args.check and (s["failed"] or s["incomplete"]) else 0
