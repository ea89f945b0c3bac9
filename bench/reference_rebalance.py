"""A reference member's time from a rebalance starting to consuming again, in a four-member group.

The group: the measured reference member ``ref`` plus three others (``--others reference`` or
``--others java``), on one topic fed continuously by the producer harness. Each round is
triggered by a fifth member joining, then by that member leaving (graceful close: LeaveGroup);
the script waits for the group to settle before the next trigger.

Per round (all from the run's records, never from the process's own clock):

- start: the first JoinGroup request of the round on the wire (``wire.jsonl``, any member);
- assigned: ``ref``'s last ``assigned`` event of the round (its new assignment, history);
- consuming again: ``ref``'s first ``consumed`` event after that (history).

Printed: the figure per round, then p50 and max for joins, leaves and all rounds; also the time
from the start to the round's last SyncGroup response (the rebalance itself) and ``ref``'s
longest gap between ``consumed`` events inside the round (cooperative: it keeps consuming its
retained partitions, so this stays small).

What dominates: a member learns of a round from its next Heartbeat (up to one heartbeat
interval; after a round all members heartbeat in phase, as Java's timer is reset on the JoinGroup
answer), and a join takes two rounds (the cooperative follow-up after the revoke).

Run: ``.venv/bin/python bench/reference_rebalance.py [--others reference|java] [--rounds 6] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from conformance import __version__, config
from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.jsonl import read_records
from conformance.members.harness_config import HarnessConfig
from conformance.members.launch import MemberProcess, launch_member, launch_producer
from conformance.members.spec import MemberSpec
from conformance.reference import observe
from conformance.rundir import RunDir

TOPIC = "bench-topic"
GROUP = "bench-group"
PARTITIONS = 12
RATE_PER_S = 300
SETTLE_BOUND_S = 120.0  # generous: other engineers share the 2-core machine
QUIET_S = 2.0           # nothing assigned/revoked for this long (after convergence) = settled


class Bench:
    def __init__(self, cluster: Cluster, run: RunDir, sup: Supervisor, others: str) -> None:
        self.cluster, self.run, self.sup, self.others = cluster, run, sup, others
        self.procs: dict[str, MemberProcess] = {}

    def start(self, name: str, spec_text: str) -> MemberProcess:
        spec = MemberSpec.parse(spec_text)
        cfg = HarnessConfig(member=name, client=spec.kind, client_version=spec.version,
                            bootstrap_servers=self.cluster.bootstrap_for(name), group_id=GROUP, topics=[TOPIC],
                            history_path=str(self.run.history(name)), commit_mode="auto")
        self.procs[name] = proc = launch_member(spec, cfg, self.run, self.sup)
        proc.wait_ready()
        return proc

    def owned(self, name: str) -> set:
        return observe.owned_at(read_records(self.run.history(name)), math.inf)

    def round_start(self, trigger_ts: float) -> float | None:
        """The first JoinGroup request on the wire at or after ``trigger_ts`` (the round's start)."""
        wire = observe.group_wire(self.cluster.run_dir.wire, GROUP)
        return next((r["ts"] for r in observe.select(wire, "JoinGroup") if r["ts"] >= trigger_ts), None)

    def settled(self, names: list[str], since: float) -> bool:
        """Every partition owned once by ``names``, each owning some, and no ownership change for QUIET_S.

        ``since``: the round's start; the round counts as settled only after a change after it.
        """
        owned = {n: self.owned(n) for n in names}
        flat = [tp for tps in owned.values() for tp in tps]
        if not (len(flat) == len(set(flat)) == PARTITIONS and all(owned.values())):
            return False
        changes = [e["ts"] for n in names for e in read_records(self.run.history(n))
                   if e["event"] in ("assigned", "revoked", "lost")]
        last = max(changes, default=0.0)
        return last > since and time.time() * 1000.0 - last >= QUIET_S * 1000.0

    def wait_settled(self, names: list[str], trigger_ts: float) -> float:
        """Wait for the round triggered at ``trigger_ts`` to start and settle; returns its start."""
        deadline = time.monotonic() + SETTLE_BOUND_S
        start = None
        while start is None or not self.settled(names, start):
            start = start or self.round_start(trigger_ts)
            for n, p in self.procs.items():
                if n in names and not p.alive():
                    sys.exit(f"{n} exited {p.returncode}; see {p.log_path}")
            if time.monotonic() > deadline:
                sys.exit(f"group {names} did not settle within {SETTLE_BOUND_S}s after {trigger_ts}: "
                         f"{ {n: len(self.owned(n)) for n in names} }")
            time.sleep(0.2)
        return start

    def measure(self, start: float) -> dict[str, float] | None:
        wire = observe.group_wire(self.cluster.run_dir.wire, GROUP)
        syncs = [r["ts"] for r in observe.select(wire, "SyncGroup", "response") if r["ts"] > start]
        events = read_records(self.run.history("ref"))
        assigned = [e["ts"] for e in events if e["event"] == "assigned" and e["ts"] > start]
        if not assigned or not syncs:
            return None
        consumed = [e["ts"] for e in events if e["event"] == "consumed"]
        again = next((ts for ts in consumed if ts > assigned[-1]), None)
        if again is None:
            return None
        inside = [start, *[ts for ts in consumed if start < ts <= again]]
        return {"to_consuming_ms": again - start, "rebalance_ms": max(syncs) - start,
                "max_gap_ms": max(b - a for a, b in zip(inside, inside[1:])) if len(inside) > 1 else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--others", default="reference", help="member spec of the three others (reference, java, ...)")
    parser.add_argument("--rounds", type=int, default=6, help="rebalances measured (alternately join and leave)")
    parser.add_argument("--keep", type=Path, help="write the run here and keep it (default: a temporary directory)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-reference-rebalance-") as scratch:
        tmp = args.keep or Path(scratch)
        run = RunDir(Path(tmp))
        for sub in (run.members_dir, run.logs):
            sub.mkdir(parents=True, exist_ok=True)
        with Supervisor(run.logs) as sup, Cluster(run, config.DEFAULT_BROKER, sup, slots=6) as cluster:
            cluster.create_topic(TOPIC, PARTITIONS)
            producer_cfg = HarnessConfig(member="producer", client="producer", client_version=__version__,
                                         bootstrap_servers=cluster.direct_bootstrap, group_id=GROUP, topics=[TOPIC],
                                         history_path=str(run.history("producer")),
                                         extra={"rate_per_s": RATE_PER_S, "partitions": PARTITIONS})
            launch_producer(producer_cfg, run, sup).wait_ready()
            bench = Bench(cluster, run, sup, args.others)
            group = ["ref", "o1", "o2", "o3"]
            begin = time.time() * 1000.0
            bench.start("ref", "reference")
            for name in group[1:]:
                bench.start(name, args.others)
            bench.wait_settled(group, begin)

            results: dict[str, list[dict[str, float]]] = {"join": [], "leave": []}
            for i in range(args.rounds):
                kind = "join" if i % 2 == 0 else "leave"
                trigger = time.time() * 1000.0
                if kind == "join":
                    bench.start("x", args.others)
                    start = bench.wait_settled(group + ["x"], trigger)
                else:
                    bench.procs["x"].terminate(timeout=30)
                    start = bench.wait_settled(group, trigger)
                figures = bench.measure(start)
                if figures is None:
                    print(f"round {i + 1} ({kind}): not measurable (no JoinGroup/assignment/consumption seen)")
                    continue
                results[kind].append(figures)
                print(f"round {i + 1} ({kind:5}): rebalance start -> ref consuming again "
                      f"{figures['to_consuming_ms']:7.0f} ms   (rebalance {figures['rebalance_ms']:6.0f} ms, "
                      f"ref's longest consumption gap {figures['max_gap_ms']:6.0f} ms)", flush=True)
            for proc in bench.procs.values():
                if proc.alive():
                    proc.terminate(timeout=30)

    print(f"\nreference member in a group of ref + 3 x {args.others} "
          f"({PARTITIONS} partitions, {RATE_PER_S} rec/s, heartbeat {config.HEARTBEAT_INTERVAL_MS} ms)")
    for label, rows in (("join", results["join"]), ("leave", results["leave"]),
                        ("all", results["join"] + results["leave"])):
        if rows:
            values = [r["to_consuming_ms"] for r in rows]
            print(f"  {label:5} n={len(rows)}  p50 {statistics.median(values):7.0f} ms   max {max(values):7.0f} ms")


if __name__ == "__main__":
    main()
