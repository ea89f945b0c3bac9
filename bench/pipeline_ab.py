"""Judge the same run directories with two checkouts of the suite, alternating A B A B, side by side.

Each side is a (python, checkout) pair: the checkout's ``conformance`` package is imported from
that directory, by that Python (its own venv, so its own PySpark). Every repetition starts a fresh
process per side (Spark's start is paid each time, as ``conformance run`` pays it), A then B, so
both sides see the same moments of a shared machine. Prints per process: wall, judge phases, the
CPU seconds of the Python driver and of Spark's JVM, the load average before and after; then the
median of each side and the B/A ratio of every pair (wall and CPU: CPU seconds depend less on
what else runs on the host than wall seconds do).

    .venv/bin/python bench/pipeline_ab.py RUN_DIR... --a PYTHON:CHECKOUT --b PYTHON:CHECKOUT [--pairs 3]

Uses only the standard library and each checkout's public ``verdicts.judge``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, resource, sys, time
t0 = time.time()
from pathlib import Path
from conformance.pipeline import verdicts
root = Path(sys.argv[1])
dirs = [Path(p) for p in json.loads(sys.argv[2])]
phases = {}
v = verdicts.judge(dirs, root / "out", phases=phases)
wall = time.time() - t0
log = phases.pop("collect_log", None) or []
jvm_cpu = None
try:
    from pyspark import SparkContext
    pid = SparkContext._gateway.proc.pid
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    jvm_cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
except Exception:
    pass
ru = resource.getrusage(resource.RUSAGE_SELF)
print("RESULT " + json.dumps({"wall": round(wall, 3), "phases": phases, "rounds": log,
                              "py_cpu": round(ru.ru_utime + ru.ru_stime, 2),
                              "jvm_cpu": None if jvm_cpu is None else round(jvm_cpu, 2),
                              "verdicts": sorted(x["verdict"] for x in v)}))
"""


def load() -> str:
    """The 1-minute load average (``?`` where /proc is missing)."""
    p = Path("/proc/loadavg")
    return p.read_text().split(" ")[0] if p.exists() else "?"


def side(spec: str) -> tuple[str, Path]:
    """``PYTHON:CHECKOUT`` -> (python executable, checkout directory)."""
    python, _, checkout = spec.partition(":")
    if not python or not checkout:
        raise SystemExit(f"expected PYTHON:CHECKOUT, got {spec!r}")
    return python, Path(checkout).resolve()


def judge_once(python: str, checkout: Path, runs: str) -> dict:
    """One fresh process judging ``runs`` with ``checkout``'s suite; its RESULT plus process wall."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    with tempfile.TemporaryDirectory(prefix="pipeline-ab-") as tmp:
        before = load()
        t0 = time.time()
        done = subprocess.run([python, "-c", CHILD, tmp, runs], capture_output=True, text=True, env=env,
                              cwd=checkout)
        wall = time.time() - t0
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"{checkout}: judge failed ({done.returncode}): {done.stderr[-2000:]}")
    res = json.loads(line[len("RESULT "):])
    res.update(process_wall=round(wall, 2), load_before=before, load_after=load())
    return res


def describe(name: str, r: dict) -> str:
    """One line per process: wall, CPU, load and the judge's phases."""
    ph = r["phases"]
    keep = " ".join(f"{k}={ph[k]}" for k in ("spark_start", "ingest", "checks", "writes") if k in ph)
    rounds = " ".join(f"wait={x.get('wait_s')} serve={x.get('serve_s')}" for x in r["rounds"])
    cpu = r["py_cpu"] + (r["jvm_cpu"] or 0.0)
    return (f"{name}: {r['process_wall']:.1f} s wall, cpu {cpu:.1f} s (python {r['py_cpu']}, jvm {r['jvm_cpu']}), "
            f"load {r['load_before']}->{r['load_after']} | {keep} | {rounds} | verdicts {r['verdicts']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--a", required=True, help="PYTHON:CHECKOUT of side A (e.g. the old path)")
    ap.add_argument("--b", required=True, help="PYTHON:CHECKOUT of side B (e.g. the new path)")
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    runs = json.dumps([str(p.resolve()) for p in args.runs])
    sides = {"A": side(args.a), "B": side(args.b)}
    for name, (python, checkout) in sides.items():
        print(f"{name} = {python} on {checkout}", flush=True)
    got: dict[str, list[dict]] = {"A": [], "B": []}
    for i in range(args.pairs):
        for name, (python, checkout) in sides.items():
            r = judge_once(python, checkout, runs)
            got[name].append(r)
            print(f"pair {i + 1} {describe(name, r)}", flush=True)

    def cpu(r: dict) -> float:
        return r["py_cpu"] + (r["jvm_cpu"] or 0.0)

    for name in sides:
        walls = [r["process_wall"] for r in got[name]]
        print(f"{name} median: {statistics.median(walls):.1f} s wall, {statistics.median(map(cpu, got[name])):.1f} s cpu")
    ratios = [b["process_wall"] / a["process_wall"] for a, b in zip(got["A"], got["B"])]
    cpu_ratios = [cpu(b) / cpu(a) for a, b in zip(got["A"], got["B"])]
    print("B/A wall per pair: " + " ".join(f"{x:.2f}" for x in ratios) + f" (median {statistics.median(ratios):.2f})")
    print("B/A cpu per pair: " + " ".join(f"{x:.2f}" for x in cpu_ratios) + f" (median {statistics.median(cpu_ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
