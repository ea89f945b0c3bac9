"""Bench: start-to-ready time of every member kind, per version, on one real broker.

For each kind@version (default: the reference consumer and every client of
``kinds.setup_all_specs()``), ``--runs`` times: a lone member is spawned into its
own group on a one-partition topic (through its tap and proxy). Prints the
median and the worst of: seconds from spawn to the harness's ``started`` event
(ready: ``MemberProcess.wait_ready`` returns) and from spawn to its first
``assigned`` event (it joined the group), then stops it with SIGTERM.

    .venv/bin/python bench/members_ready.py [--runs 3] [kind@version ...]

Figures depend on the machine's load (others' brokers, Spark); compare runs
made side by side only.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from conformance import config
from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.history import read_history
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import kind_module
from conformance.members.launch import launch_member
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir

#: Strategy per spec where cooperative-sticky is not available.
EAGER = {"sarama@1.38.1": ["range"], "kafka-python@2.3.3": ["range"]}


def first_ts(path: Path, event: str, after: int) -> float | None:
    """``ts`` of the first ``event`` written at or after byte ``after`` of a history."""
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as f:
        f.seek(after)
        for _, e, _ in read_history(f):
            if e is not None and e["event"] == event:
                return e["ts"]
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("specs", nargs="*", default=[f"reference@{kinds.default_version('reference')}",
                                                 *kinds.setup_all_specs()])
    args = ap.parse_args()
    specs = [MemberSpec.parse(s) for s in args.specs]
    for spec in specs:
        kind_module(spec.kind).ensure(spec.version)
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir.create(Path(tmp), "bench-ready")
        with Supervisor(run.logs) as sup, Cluster(run, supervisor=sup, slots=len(specs)) as cluster:
            print(f"{'member':22} {'runs':>4} {'ready_med_s':>11} {'ready_max_s':>11} "
                  f"{'assigned_med_s':>14} {'assigned_max_s':>14}")
            for i, spec in enumerate(specs):
                topic = f"ready-{i}"
                cluster.create_topic(topic, 1)
                member = f"ready-{i}-{spec.kind}"
                ready: list[float] = []
                assigned: list[float] = []
                for r in range(args.runs):
                    cfg = HarnessConfig(member=member, client=spec.kind, client_version=spec.version,
                                        bootstrap_servers=cluster.bootstrap_for(member), group_id=f"g-{topic}-{r}",
                                        topics=[topic], history_path=str(run.history(member)),
                                        assignment_strategies=EAGER.get(spec.label, ["cooperative-sticky"]))
                    offset = run.history(member).stat().st_size if run.history(member).exists() else 0
                    t0 = time.time() * 1000
                    proc = launch_member(spec, cfg, run, sup)
                    proc.wait_ready(config.MEMBER_READY_TIMEOUT_S)
                    deadline = time.monotonic() + config.HARNESS_TEST_WAIT_S
                    got = None
                    while got is None and time.monotonic() < deadline:
                        got = first_ts(run.history(member), "assigned", offset)
                        time.sleep(0.02)
                    started = first_ts(run.history(member), "started", offset)
                    proc.terminate(30)
                    if started is None or got is None:
                        raise SystemExit(f"{spec.label}: no started/assigned event (log {proc.log_path})")
                    ready.append((started - t0) / 1000)
                    assigned.append((got - t0) / 1000)
                print(f"{spec.label:22} {args.runs:4d} {statistics.median(ready):11.2f} {max(ready):11.2f} "
                      f"{statistics.median(assigned):14.2f} {max(assigned):14.2f}")


if __name__ == "__main__":
    main()
