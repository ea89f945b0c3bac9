"""Pipeline throughput: events/s through ingestion + every check, and the cost of one small run.

Generates synthetic run directories (members owning partitions, a producer,
consumption batches, a cooperative rebalance per cell; the wire capture from
the tests' CellBuilder, tests/stories/builder.py), judges them with the real pipeline
and prints figures. Goals: 10M events <= 2 min; one small run (Spark start
included, fresh process) <= 10 s.

    .venv/bin/python bench/pipeline_throughput.py [--events 1000000 10000000] [--spark-master URL]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import host_reference
import recorded_run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))   # the tests' story builder
from stories.builder import CellBuilder


def build(root: Path, events: int, cells: int) -> tuple[list[Path], int]:
    dirs, total = [], 0
    for i in range(cells):
        d = root / f"cell-{i}"
        total += synth_cell_stream(d.parent, d.name, events // cells)
        dirs.append(d)
    return dirs, total


def synth_cell_stream(root: Path, run_id: str, events: int) -> int:
    """:func:`synth_cell` with histories written after the builder's own files."""
    names = [f"m{i + 1}" for i in range(4)]
    partitions, batch = 16, 10
    b = CellBuilder(root, run_id, members=[(n, "java@4.4.0") for n in names], topics={"t": partitions})
    owner = {p: names[p % 4] for p in range(partitions)}
    owned = {n: [("t", p) for p in range(partitions) if owner[p] == n] for n in names}
    for n in names:
        b.started(n, 1000)
    b.join(1, 2000, "m1", {n: b.subscription(n) for n in names})
    b.sync(1, 2100, "m1", owned)
    for n in names:
        b.assigned(n, 2200, owned[n])
    rounds = max(1, (events - 12) // (2 * partitions))
    end = 3000.0 + rounds * partitions * 0.5 + 300
    b.write(end)
    files = {n: (b.path / "members" / f"{n}.jsonl").open("a") for n in names + ["producer"]}
    common = '"client":"java","client_version":"4.4.0"'
    count = 12
    ts = 3000.0
    for r in range(rounds):
        first, last = r * batch, r * batch + batch - 1
        for p in range(partitions):
            ts += 0.5
            m = owner[p]
            files["producer"].write(f'{{"ts":{ts},"member":"producer",{common},"event":"produced","topic":"t",'
                                    f'"partition":{p},"first_offset":{first},"last_offset":{last},"count":{batch}}}\n')
            files[m].write(f'{{"ts":{ts + 0.2},"member":"{m}",{common},"event":"consumed","member_id":"{m}-id",'
                           f'"generation":1,"protocol":"cooperative","topic":"t","partition":{p},'
                           f'"first_offset":{first},"last_offset":{last},"count":{batch}}}\n')
            count += 2
    for n in names:
        files[n].write(f'{{"ts":{ts + 100},"member":"{n}",{common},"event":"stopped","reason":"end"}}\n')
        count += 1
    for f in files.values():
        f.close()
    return count


def bench_wire_decode(frames: int = 50_000) -> None:
    """Python decoding of JoinGroup/SyncGroup frames during ingestion (no Spark): frames/s."""
    import json

    from conformance.pipeline.wire import decode_wire

    with tempfile.TemporaryDirectory() as tmp:
        b = CellBuilder(Path(tmp), "w", topics={"t": 16, "u": 16})
        meta = b.subscription("m1", owned=[("t", p) for p in range(8)], generation=7)
        lines = []
        for i in range(frames // 2):
            lines.append(json.dumps({"ts": i, "member": "m1", "api": "JoinGroup", "direction": "request",
                                     "member_id": "m1-id", "generation": -1,
                                     "protocols": [{"name": "cooperative-sticky", "metadata": meta}]}))
            lines.append(json.dumps({"ts": i, "member": "m1", "api": "SyncGroup", "direction": "response",
                                     "assignment": "0003" + "00000001" + "000174" + "00000002" + "0000000000000001"
                                     + "ffffffff"}))
    t0 = time.time()
    rows = decode_wire("w", "wire.jsonl", lines)
    took = time.time() - t0
    print(f"wire decode in Python: {frames:,} frames in {took:.2f} s = {frames / took:,.0f} frames/s "
          f"({len(rows.subscriptions)} subscriptions, {len(rows.assignments)} assignments, "
          f"{len(rows.malformed)} malformed)", flush=True)


SMALL = """
import sys, time
t0 = time.time()
from pathlib import Path
from conformance.pipeline import verdicts
root = Path(sys.argv[1])
phases = {}
v = verdicts.judge([Path(sys.argv[2])], root / "out", phases=phases)
print(round(time.time() - t0, 2), v[0]["verdict"], phases)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--cells", type=int, default=4, help="cells the events are spread over")
    ap.add_argument("--spark-master", default=None)
    ap.add_argument("--skip-small", action="store_true")
    args = ap.parse_args()
    from conformance.pipeline import verdicts as verdicts_mod
    from conformance.pipeline.session import get_session

    print(host_reference.line(), flush=True)
    bench_wire_decode()
    if not args.skip_small:
        with tempfile.TemporaryDirectory(prefix="pipeline-small-") as tmp:
            t0 = time.time()
            run = recorded_run.unpack(Path(tmp) / "input")
            done = subprocess.run([sys.executable, "-c", SMALL, tmp, str(run)], capture_output=True, text=True)
            wall = time.time() - t0
            inner = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
            print(f"small run (fresh process, Spark start included): {wall:.1f} s wall; in-process {inner}", flush=True)
    t0 = time.time()
    get_session(args.spark_master)
    print(f"spark start: {time.time() - t0:.1f} s", flush=True)
    for n in args.events:
        root = Path(tempfile.mkdtemp(prefix=f"pipeline-bench-{n}-"))
        try:
            t0 = time.time()
            dirs, total = build(root, n, args.cells)
            gen = time.time() - t0
            size = sum(f.stat().st_size for f in root.rglob("*.jsonl"))
            t0 = time.time()
            load0 = Path("/proc/loadavg").read_text().split()[0]
            phases: dict = {}
            verdicts = verdicts_mod.judge(dirs, root / "out", args.spark_master, phases=phases)
            took = time.time() - t0
            statuses = sorted({v["verdict"] for v in verdicts})
            print(f"{total:>11,} events ({size / 1e6:,.0f} MB, {len(dirs)} cells, generated in {gen:.0f} s): "
                  f"judged in {took:.1f} s = {total / took:,.0f} events/s; verdicts {statuses}; "
                  f"load {load0}->{Path('/proc/loadavg').read_text().split()[0]}", flush=True)
            print("   phases: " + " ".join(f"{k}={v}" for k, v in phases.items()), flush=True)
            for v in verdicts:
                bad = {k: i["status"] for k, i in v["invariants"].items() if i["status"] != "pass"}
                if bad:
                    print(f"   {v['run']}: {bad}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
