"""The cost of judging one small run in a fresh process, Spark start included, phase by phase.

Starts a fresh Python process per repetition (so Spark start is paid each
time, as ``conformance run`` pays it), judges one run directory (default:
a recorded real run of fixtures/real-runs/, bench/recorded_run.py; or the run
directories given) and prints the wall time, the breakdown per phase
(Spark start, ingest, derive, checks, table writes) and the load average
before and after (other engineers share this machine: compare figures
measured back to back only). Goal: at most 10 s.

    .venv/bin/python bench/pipeline_small.py [RUN_DIR ...] [--repeat 3] [--pythonpath DIR]

``--pythonpath`` runs another checkout of the suite (e.g. the code before a
change) for a before/after pair.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import host_reference
import recorded_run

CHILD = """
import json, sys, time
t0 = time.time()
from pathlib import Path
from conformance.pipeline import verdicts
root = Path(sys.argv[1])
dirs = [Path(p) for p in json.loads(sys.argv[2])]
imported = time.time() - t0
phases = {}
try:
    v = verdicts.judge(dirs, root / "out", phases=phases)
except TypeError:   # a checkout without phase timing
    v = verdicts.judge(dirs, root / "out")
phases = {"import": round(imported, 3), **phases}
print("RESULT " + json.dumps({"wall": round(time.time() - t0, 3), "phases": phases,
                              "verdicts": sorted(x["verdict"] for x in v)}))
"""


def load() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0] if Path("/proc/loadavg").exists() else "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pythonpath", default=None, help="import the suite from this directory instead")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    print(host_reference.line(), flush=True)
    default = tempfile.TemporaryDirectory(prefix="pipeline-small-input-")
    given = args.runs or [recorded_run.unpack(Path(default.name))]
    runs = json.dumps([str(p.resolve()) for p in given])
    walls = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="pipeline-small-") as tmp:
            before = load()
            t0 = time.time()
            done = subprocess.run([sys.executable, "-c", CHILD, tmp, runs], capture_output=True, text=True, env=env,
                                  cwd=args.pythonpath or None)
            wall = time.time() - t0
            line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(f"run {i + 1}: failed ({done.returncode}): {done.stderr[-2000:]}", flush=True)
                return 1
            res = json.loads(line[len("RESULT "):])
            walls.append(wall)
            phases = " ".join(f"{k}={v}" for k, v in res["phases"].items())
            print(f"run {i + 1}: {wall:.1f} s process wall (judge {res['wall']:.1f} s) load {before}->{load()} | "
                  f"{phases} | verdicts {res['verdicts']}", flush=True)
    walls.sort()
    print(f"median {walls[len(walls) // 2]:.1f} s over {len(walls)} fresh process(es)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
