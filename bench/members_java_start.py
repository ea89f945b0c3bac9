"""Java harness start-up: seconds from spawn to the ``started`` event, and (with --broker)
to the first ``assigned`` event of a lone member, per kafka-clients version.

    python bench/members_java_start.py [--runs 3] [--broker]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from conformance.cluster.supervisor import Supervisor
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import java
from conformance.members.launch import launch_member
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir


def first_event(path: Path, name: str, after: int, timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            with open(path, "rb") as f:
                f.seek(after)
                if f'"event":"{name}"'.encode() in f.read():
                    return time.monotonic()
        time.sleep(0.01)
    raise SystemExit(f"no {name} event in {path} within {timeout}s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--broker", action="store_true", help="also time the first assignment on a real broker")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir.create(Path(tmp), "bench")
        with Supervisor(run.logs) as sup:
            cluster = None
            if args.broker:
                from conformance.cluster import Cluster
                cluster = Cluster(run, "4.4.0", sup, slots=2).__enter__()
                cluster.create_topic("bench", 4)
            print(f"{'version':<8} {'to started (s)':>16} {'to assigned (s)':>16}")
            for version in java.known_versions():
                java.ensure(version)
                started, assigned = [], []
                for i in range(args.runs):
                    name = f"j{version.replace('.', '')}-{i}"
                    boot = cluster.direct_bootstrap if cluster else "127.0.0.1:1"
                    cfg = HarnessConfig(member=name, client="java", client_version=version, bootstrap_servers=boot,
                                        group_id=f"bench-{name}", topics=["bench"],
                                        history_path=str(run.history(name)))
                    t0 = time.monotonic()
                    m = launch_member(MemberSpec("java", version), cfg, run, sup)
                    started.append(first_event(m.history_path, "started", 0) - t0)
                    if cluster:
                        assigned.append(first_event(m.history_path, "assigned", 0) - t0)
                    m.terminate()

                def med(xs: list[float]) -> str:
                    return f"{statistics.median(xs):.2f}" if xs else "-"

                print(f"{version:<8} {med(started):>16} {med(assigned):>16}   (median of {args.runs})")
            if cluster:
                cluster.__exit__(None, None, None)


if __name__ == "__main__":
    main()
