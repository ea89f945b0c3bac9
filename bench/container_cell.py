"""One cell on both backends, side by side: the container path's cost next to the processes path's.

Usage: ``.venv/bin/python bench/container_cell.py [--scenario crash-restart]
[--clients reference,java,librdkafka,sarama] [--seed 31] [--pairs 2] [--broker V]``

Runs the same cell (scenario, member specs, broker, seed) once per backend, alternating
``processes, docker, processes, docker, ...`` (``--pairs N`` pairs, one cell at a time, each as its
own ``conformance run`` process in a temporary runs directory, so a load change during the bench
hits both backends alike). For each cell it prints the wall time launch -> exit and its parts,
from the clock around the process and the cell's manifest:

- ``prep``: launch -> the cell's start (clients and, on docker, the images checked or built);
- ``cluster``: the cell's start -> its first phase (broker and toxiproxy up, topics created);
- one column per scenario phase (from the manifest's phase start and end);
- ``teardown``: the scenario's end -> every member stopped and the cluster gone;
- ``judge``: the rest, up to the process's exit (the pipeline and reports);

then the verdict, and per pair the docker/processes ratio of the wall (the issue's target:
within 1.3x) and of the cell alone (cluster to teardown, without prep and judging). The load
average before and after is printed: on a shared machine it moves the figures more than a
backend does.
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
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TARGET = 1.3


def run_cell(backend: str, args: argparse.Namespace, runs: Path) -> dict[str, Any]:
    """Run the cell on ``backend`` into ``runs``; its wall, parts (seconds) and verdict."""
    cmd = [sys.executable, "-m", "conformance", "run", "--scenario", args.scenario, "--clients", args.clients,
           "--seed", str(args.seed), "--backend", backend, "--runs-dir", str(runs)]
    if args.broker:
        cmd += ["--broker", args.broker]
    launch_ms = time.time() * 1000
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    exit_ms = launch_ms + wall * 1000
    manifests = list(runs.glob("*/runs/*/manifest.json"))
    if proc.returncode not in (0, 1) or len(manifests) != 1:
        raise SystemExit(f"container_cell: the {backend} cell ended with exit {proc.returncode} and "
                         f"{len(manifests)} manifests; its output ends:\n{proc.stdout[-3000:]}")
    m = json.loads(manifests[0].read_text())
    phases = m.get("phases") or []
    first = phases[0]["start_ts"] if phases else m["end_ts"]
    parts = {"prep": (m["start_ts"] - launch_ms) / 1000, "cluster": (first - m["start_ts"]) / 1000}
    for ph in phases:
        parts[ph["name"]] = ((ph["end_ts"] or m["end_ts"]) - ph["start_ts"]) / 1000
    parts["teardown"] = (m["teardown_end_ts"] - m["end_ts"]) / 1000
    parts["judge"] = (exit_ms - m["teardown_end_ts"]) / 1000
    (summary,) = runs.glob("*/summary.json")
    cells = json.loads(summary.read_text())["cells"]
    failing = sorted(k for c in cells for k, inv in c.get("invariants", {}).items() if inv.get("status") != "pass")
    verdict = (cells[0].get("verdict", "?") if cells else "no verdict") + (f" ({' '.join(failing)})" if failing else "")
    return {"backend": backend, "wall": wall, "parts": parts, "verdict": verdict,
            "cell": (m["teardown_end_ts"] - m["start_ts"]) / 1000}


def _one_line(message: str) -> None:
    """Bad input: one line on stderr, exit 2."""
    print(f"container_cell: {message}", file=sys.stderr)
    raise SystemExit(2)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="crash-restart")
    ap.add_argument("--clients", default="reference,java,librdkafka,sarama")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--broker", default=None)
    ap.add_argument("--pairs", type=int, default=1)
    ap.error = _one_line  # type: ignore[method-assign]
    args = ap.parse_args()
    if args.pairs < 1:
        _one_line("--pairs must be at least 1")
    print(f"cell: {args.scenario} with {args.clients}, seed {args.seed}; {args.pairs} pair(s) "
          f"processes/docker; load average before: {load()}", flush=True)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="container-cell-") as tmp:
        for i in range(args.pairs):
            pair = []
            for backend in ("processes", "docker"):
                r = run_cell(backend, args, Path(tmp) / f"{i}-{backend}")
                print(f"  pair {i + 1} {backend:9s}: {r['wall']:6.1f} s wall, {r['verdict']} "
                      f"(load average {load()})", flush=True)
                pair.append(r)
            pairs.append((pair[0], pair[1]))
    names = list(dict.fromkeys(k for p in pairs for r in p for k in r["parts"]))
    head = f"{'pair':>4}  {'backend':9s}  {'wall':>6}  " + "  ".join(f"{n:>9.9s}" for n in names) + "  verdict"
    print(head)
    for i, p in enumerate(pairs, start=1):
        for r in p:
            cols = "  ".join(f"{r['parts'].get(n, float('nan')):9.1f}" for n in names)
            print(f"{i:>4}  {r['backend']:9s}  {r['wall']:6.1f}  {cols}  {r['verdict']}")
    print("docker/processes per pair (wall; cell = cluster..teardown):")
    for i, (proc, dock) in enumerate(pairs, start=1):
        ratio = dock["wall"] / proc["wall"]
        print(f"  pair {i}: wall {ratio:.2f}x ({'within' if ratio <= TARGET else 'over'} {TARGET}x), "
              f"cell {dock['cell'] / proc['cell']:.2f}x")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
