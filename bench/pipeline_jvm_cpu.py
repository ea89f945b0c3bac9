"""Where the judge's CPU goes inside Spark's JVM: seconds per thread group, one fresh process per side.

Judges the same run directories in a fresh process per repetition (Spark's start included, as
``conformance run`` pays it) and prints, per process, the wall, the judge's phases and the CPU
seconds of the driver JVM's threads grouped as: ``jit`` (HotSpot's compiler threads), ``gc``,
``tasks`` (Spark's executor task threads: the queries' work), ``driver`` (Py4J threads: planning
and analysing what the Python side asks for), ``scheduler`` (DAG scheduler, listeners, RPC) and
``other``. CPU seconds depend less on what else runs on the host than wall seconds do.

The ``plain`` side's driver runs without JVM options (``config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS``
emptied); ``--java-options`` runs a second side with these instead (e.g. the suite's own,
``-XX:TieredStopAtLevel=1``), alternating plain, options, plain, options.

    .venv/bin/python bench/pipeline_jvm_cpu.py RUN_DIR... [--pairs 2] [--java-options="-XX:..."]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, re, sys, time
from collections import Counter
from pathlib import Path
from conformance import config
config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS = sys.argv[3]
from conformance.pipeline import verdicts
t0 = time.time()
phases = {}
v = verdicts.judge([Path(p) for p in json.loads(sys.argv[2])], Path(sys.argv[1]), phases=phases)
wall = time.time() - t0
from pyspark import SparkContext
pid = SparkContext._gateway.proc.pid
tck = os.sysconf("SC_CLK_TCK")
groups = Counter()
for task in Path(f"/proc/{pid}/task").iterdir():
    try:
        name = (task / "comm").read_text().strip()
        stat = (task / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:   # the thread ended meanwhile
        continue
    cpu = (int(stat[11]) + int(stat[12])) / tck
    group = ("jit" if "Compiler" in name else "gc" if re.search(r"GC|G1|Conc|Refine", name)
             else "tasks" if name.startswith("Executor task") else "driver" if re.fullmatch(r"Thread-\d+", name)
             else "scheduler" if re.match(r"(dag-sched|spark-listen|dispatcher|task-result|element-track)", name)
             else "other")
    groups[group] += cpu
print("RESULT " + json.dumps({"wall": round(wall, 2), "phases": {k: phases[k] for k in ("spark_start", "ingest", "checks")},
                              "jvm": {k: round(c, 1) for k, c in groups.items()},
                              "verdicts": sorted(x["verdict"] for x in v)}))
"""

GROUPS = ("jit", "gc", "tasks", "driver", "scheduler", "other")


def judge_once(runs: list[Path], java_options: str) -> dict:
    """One fresh process judging ``runs``; its RESULT record."""
    with tempfile.TemporaryDirectory(prefix="jvm-cpu-") as out:
        done = subprocess.run([sys.executable, "-c", CHILD, out, json.dumps([str(r) for r in runs]), java_options],
                              capture_output=True, text=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"the judge failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(line[len("RESULT "):])


def show(side: str, r: dict) -> None:
    total = sum(r["jvm"].values())
    parts = " ".join(f"{g}={r['jvm'].get(g, 0.0)}" for g in GROUPS)
    ph = " ".join(f"{k}={v}" for k, v in r["phases"].items())
    print(f"{side}: {r['wall']} s wall, jvm cpu {total:.1f} s ({parts}) | {ph} | {r['verdicts']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--java-options", default="", help="a second side with these JVM options (measurement only)")
    args = ap.parse_args()
    sides = {"plain": ""} | ({"options": args.java_options} if args.java_options else {})
    seen: dict[str, list[dict]] = {s: [] for s in sides}
    for i in range(args.pairs):
        for side, opts in sides.items():
            r = judge_once(args.runs, opts)
            seen[side].append(r)
            show(f"{i + 1} {side}", r)
    for side, rs in seen.items():
        med = {g: statistics.median(r["jvm"].get(g, 0.0) for r in rs) for g in GROUPS}
        print(f"{side} median: {statistics.median(r['wall'] for r in rs):.1f} s wall, "
              f"jvm cpu {statistics.median(sum(r['jvm'].values()) for r in rs):.1f} s ("
              + " ".join(f"{g}={v:.1f}" for g, v in med.items()) + ")")


if __name__ == "__main__":
    main()
