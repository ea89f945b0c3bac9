"""``conformance report RUNS_DIR... (--out DIR | --publish DIR) [--spark-master URL] [--check]``.

Finds every run directory (a directory holding manifest.json) under the
given paths, judges them all with the pipeline, and writes the report (see
conformance.report.site) into ``--out``. Exit 0 when written; with
``--check``, exit 1 when any cell failed or was cut short (a "known-issue" cell, every failing
finding a known client bug, exits 0 like a pass).

Guarantees: nothing is skipped silently. A directory under the given paths
that looks like a run directory (it sits in a matrix's ``runs/``, or holds
``members/`` and ``logs/``, ``wire.jsonl`` or ``nemesis.jsonl``) but has no manifest.json,
a given path with no run directory in it, and a folder that cannot be read
are each named on stderr, one line each with the reason, and the others are
still reported (a skipped directory changes no exit status). ``--spark-master``
and ``--out`` / ``--publish`` are checked before any judging starts.

Shards: given the run directories of several shards of one plan (``conformance run --plan
--shard``), or any runs, the report is one matrix over all of them, as if one run had run
their cells. ``--publish DIR`` writes the same report plus a copy of every linked run file
(``DIR/runs/<cell>/``), so DIR is a static site complete in itself: what the nightly workflow
uploads to GitHub Pages, and it works from a ``file://`` path.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from conformance.errors import UsageError, one_line
from conformance.rundir import ready_dir
from conformance.spark_master import FORMS, check_spark_master

#: What ``conformance report --help`` says (plain text: the module docstring is for readers of the code).
DESCRIPTION = """\
Judge run directories and write the report: the matrix, HTML (index.html), JUnit and
allure results.

Every directory holding a manifest.json under the given paths is judged. A directory
that looks like a run but has no manifest.json (a run that stopped before its cluster
started), a path with no run in it, and a folder that cannot be read are named on
stderr, one line each, and skipped; the others are still reported.

The run directories of several shards of one plan (conformance run --plan --shard) are
merged into one matrix. --publish DIR writes the report and a copy of every run file it links
to into DIR: a static site complete in itself (GitHub Pages, or a file:// path).

Exit 0 when the report is written; with --check, exit 1 when a cell did not pass;
exit 2 on a usage error.
"""

#: Files of a run directory (conformance.rundir) that mark one even without its manifest; so do
#: its two folders ``members/`` and ``logs/`` together (the pipeline's tables have a ``members`` too).
RUN_FILES: tuple[str, ...] = ("wire.jsonl", "nemesis.jsonl")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="judge run directories and build the matrix, HTML, JUnit and allure reports",
                              description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, metavar="RUNS_DIR", help="run directories or folders holding them")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="where to write the report (created if missing); it links to the "
                                                "run directories where they are")
    where.add_argument("--publish", type=Path, metavar="DIR",
                       help="write the report and a copy of the run files it links to: a static site in DIR")
    p.add_argument("--spark-master", default=None, metavar="URL", help=f"Spark master URL (default: local[*]): {FORMS}")
    p.add_argument("--history", type=Path, default=None, metavar="DIR",
                   help="keep this report's matrix as a night in DIR and write history.html over every night there")
    p.add_argument("--check", action="store_true", help="exit 1 unless every cell passed")
    p.set_defaults(func=run)


def skipped_dirs(roots: list[Path], run_dirs: list[Path]) -> list[tuple[Path, str]]:
    """Directories under ``roots`` that are not judged though they might be meant to be, each
    with why (see the module's guarantees); ``run_dirs`` are the run directories found."""
    runs = {Path(r).resolve() for r in run_dirs}
    skipped: list[tuple[Path, str]] = []

    def unreadable(exc: OSError) -> None:
        skipped.append((Path(exc.filename), f"cannot read it ({exc.strerror or exc})"))

    for root in map(Path, roots):
        if root.resolve() in runs:
            continue
        if not root.is_dir():
            skipped.append((root, "neither a run directory nor a folder holding them"))
            continue
        if not any(r == root.resolve() or root.resolve() in r.parents for r in runs):
            skipped.append((root, "no manifest.json in it or below: no run directory to report"))
            continue
        for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
            here = Path(dirpath)
            if here.resolve() in runs:
                dirnames[:] = []
                continue
            if "runs" in dirnames and "pipeline" in dirnames:  # a matrix directory: its judge's tables are no runs
                dirnames.remove("pipeline")
            looks_like_run = (here.parent.name == "runs" or {"members", "logs"} <= set(dirnames)
                              or any(f in filenames for f in RUN_FILES))
            if here != root and looks_like_run:
                skipped.append((here, "no manifest.json: a run that stopped before its cluster started, "
                                      "or not a run directory"))
                dirnames[:] = []
    return skipped


def build_report(runs: list[Path], out: Path, spark_master: str | None = None,
                 publish: bool = False, history: bool = False) -> tuple[list[dict], dict]:
    """Judge every run directory under ``runs`` and write the report into ``out``; name what is
    skipped on stderr (one line each). ``publish``: copy the linked run files into ``out`` too."""
    from conformance.pipeline import judge
    from conformance.pipeline.ingest import find_run_dirs
    from conformance.pipeline.timelines import timelines
    from conformance.report.site import write_site

    missing = [str(r) for r in runs if not Path(r).exists()]
    if missing:
        raise UsageError(f"no such path: {', '.join(missing)}; give run directories or folders that hold them")
    if spark_master is not None:
        check_spark_master(spark_master)
    run_dirs = find_run_dirs([Path(r) for r in runs])
    if not run_dirs:
        raise UsageError(f"no manifest.json under {', '.join(map(str, runs))}: nothing to report "
                         "(run `conformance run` first, or point at a reports/<run-id> directory)")
    if publish:
        site = Path(out).resolve()
        inside = next((d for d in run_dirs if site == Path(d).resolve() or site in Path(d).resolve().parents
                       or Path(d).resolve() in site.parents), None)
        if inside is not None:
            raise UsageError(f"--publish {out}: it overlaps the run directory {inside}; give a folder outside "
                             "the runs (the site gets its own copy of their files)")
    out = ready_dir(Path(out), "--publish" if publish else "--out")
    for path, why in skipped_dirs([Path(r) for r in runs], run_dirs):
        print(one_line(f"conformance: skipped {path}: {why}"), file=sys.stderr)
    if not publish:
        verdicts = judge(run_dirs, out / "pipeline", spark_master)
        return verdicts, write_site(verdicts, out, timelines(out / "pipeline", spark_master), history=history)
    # The judge's working tables are not part of a published site: a temporary folder inside it
    # (on the same filesystem, which a Spark cluster's executors see), removed once written.
    with tempfile.TemporaryDirectory(prefix=".judge-", dir=out) as work:
        verdicts = judge(run_dirs, Path(work) / "pipeline", spark_master)
        return verdicts, write_site(verdicts, out, timelines(Path(work) / "pipeline", spark_master), publish=True,
                                    history=history)


def run(args: argparse.Namespace) -> int:
    out = args.publish or args.out
    if args.history is not None:
        ready_dir(args.history, "--history")
    verdicts, matrix = build_report(args.runs, out, args.spark_master, publish=args.publish is not None,
                                    history=args.history is not None)
    if args.history is not None:
        from conformance.report import history

        night = history.record(matrix, args.history)
        page = history.render(history.analyse(history.load(args.history)))
        (out / "history.html").write_text(page, encoding="utf-8")
        print(f"history: night {night} kept in {args.history}; {out / 'history.html'}")
    s = matrix["summary"]
    cut = f", {s['incomplete']} cut short (incomplete)" if s["incomplete"] else ""
    known = f", {s['known_issue']} known issue(s)" if s.get("known_issue") else ""
    bad = f", {s['malformed']} malformed" if s.get("malformed") else ""
    print(f"{s['cells']} cell(s): {s['passed']} passed, {s['failed']} failed{known}{bad}{cut}; "
          f"report: {out / 'index.html'}")
    return 1 if args.check and (s["failed"] or s["incomplete"] or s.get("malformed")) else 0
