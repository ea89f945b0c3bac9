"""Wall time of one four-member scenario, launch to verdict, next to the group's own rebalancing time.

Usage: ``.venv/bin/python bench/scenario_wall.py [--scenario crash-restart] [--matrix]``

Prints: wall time of the cell (cluster start, members, schedule, teardown),
the judging time, the time the group spent rebalancing according to the wire
capture (for every generation: first JoinGroup request to last SyncGroup
response), and the overhead ratio. ``--matrix`` also times the default matrix.
Goals (issue 6): one scenario <= 30 s once set up; overhead <= 1.5x; the
default matrix <= 10 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from conformance import config
from conformance.members import kinds
from conformance.members.spec import MemberSpec, parse_specs
from conformance.run.matrix import build_cells, run_matrix


def rebalancing_ms(wire: Path) -> float:
    """Sum over rebalances of (first JoinGroup request -> last SyncGroup response) from the capture."""
    spans: list[list[float]] = []
    open_span: list[float] | None = None
    for line in wire.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("api") == "JoinGroup" and rec.get("direction") == "request" and open_span is None:
            open_span = [rec["ts"], rec["ts"]]
            spans.append(open_span)
        elif rec.get("api") == "SyncGroup" and rec.get("direction") == "response" and open_span is not None:
            open_span[1] = rec["ts"]
        elif rec.get("api") == "Heartbeat" and rec.get("direction") == "response" and open_span is not None \
                and not rec.get("error_code"):
            open_span = None
    return sum(end - start for start, end in spans)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="crash-restart")
    ap.add_argument("--clients", default="reference,java,librdkafka,sarama")
    ap.add_argument("--matrix", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cells = build_cells([args.scenario], parse_specs(args.clients), config.DEFAULT_BROKER, 1)
        t0 = time.monotonic()
        result = run_matrix(cells, Path(tmp), label="bench")
        wall = time.monotonic() - t0
        run = next((result.path / "runs").iterdir())
        manifest = json.loads((run / "manifest.json").read_text())
        scenario_s = (manifest["end_ts"] - manifest["start_ts"]) / 1000
        cell_s = (manifest["teardown_end_ts"] - manifest["start_ts"]) / 1000
        rebalance_s = rebalancing_ms(run / "wire.jsonl") / 1000
        print(f"scenario {args.scenario} with {args.clients}")
        print(f"  wall time launch -> verdict : {wall:7.1f} s")
        print(f"  start..scenario end         : {scenario_s:7.1f} s")
        print(f"  cell (cluster..teardown)    : {cell_s:7.1f} s")
        print(f"  judging (Spark included)    : {wall - cell_s:7.1f} s")
        print(f"  group rebalancing (wire)    : {rebalance_s:7.1f} s")
        if rebalance_s:
            print(f"  overhead ratio (cell/rebal.): {cell_s / rebalance_s:7.2f} x  (the schedule's own waits, "
                  "such as a kill's session timeout, count as overhead here)")
        if args.matrix:
            specs = [MemberSpec.parse(s) for s in kinds.default_mix()]
            t0 = time.monotonic()
            run_matrix(build_cells(list(config.DEFAULT_SCENARIOS), specs, config.DEFAULT_BROKER, 1), Path(tmp))
            print(f"  default matrix              : {time.monotonic() - t0:7.1f} s")


if __name__ == "__main__":
    main()
