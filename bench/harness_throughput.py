"""Bench: each harness, alone in its group, on one real broker (through its tap and proxy).

Prints, per kind@version: seconds from spawn to ``started``, to the first
``assigned``, to having consumed every record, records/s over the consuming
phase, and seconds from SIGTERM to exit. Usage:

    .venv/bin/python bench/harness_throughput.py [--records-per-partition N] [kind@version ...]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from kafka import KafkaProducer

from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.history import read_history
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import kind_module
from conformance.members.launch import launch_member
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir

DEFAULT = ["librdkafka@2.16.1", "librdkafka@2.0.2", "librdkafka@1.9.2", "kafka-python@3.0.12", "kafka-python@2.3.3",
           "sarama@1.61.1", "sarama@1.38.1"]
STRATEGY = {"librdkafka@2.0.2": ["range"], "kafka-python@2.3.3": ["range"], "sarama@1.38.1": ["range"]}
PARTITIONS = 4


def events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as f:
        return [e for _, e, problem in read_history(f) if e is not None]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records-per-partition", type=int, default=5000)
    ap.add_argument("specs", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    n = args.records_per_partition
    for text in args.specs:
        spec = MemberSpec.parse(text)
        kind_module(spec.kind).ensure(spec.version)
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir.create(Path(tmp), "bench-harness")
        with Supervisor(run.logs) as sup, Cluster(run, supervisor=sup, slots=len(args.specs)) as cluster:
            print(f"{'member':24} {'started_s':>9} {'assigned_s':>10} {'all_s':>7} {'rec/s':>9} {'stop_s':>7}")
            for i, text in enumerate(args.specs):
                spec = MemberSpec.parse(text)
                topic = f"bench-{i}"
                cluster.create_topic(topic, PARTITIONS)
                producer = KafkaProducer(bootstrap_servers=cluster.direct_bootstrap, linger_ms=20)
                for k in range(n * PARTITIONS):
                    producer.send(topic, value=json.dumps({"seq": k}).encode(), partition=k % PARTITIONS)
                producer.flush(120)
                producer.close()
                member = f"bench-{i}-{spec.kind}"
                cfg = HarnessConfig(member=member, client=spec.kind, client_version=spec.version,
                                    bootstrap_servers=cluster.bootstrap_for(member), group_id=f"g-{topic}",
                                    topics=[topic], history_path=str(run.history(member)),
                                    assignment_strategies=STRATEGY.get(spec.label, ["cooperative-sticky"]),
                                    commit_mode="auto")
                t0 = time.time() * 1000
                proc = launch_member(spec, cfg, run, sup)
                deadline = time.monotonic() + 300
                evs: list[dict] = []
                while time.monotonic() < deadline:
                    evs = events(run.history(member))
                    if sum(e["count"] for e in evs if e["event"] == "consumed") >= n * PARTITIONS:
                        break
                    time.sleep(0.2)
                started = next(e["ts"] for e in evs if e["event"] == "started")
                assigned = next(e["ts"] for e in evs if e["event"] == "assigned")
                consumed = [e for e in evs if e["event"] == "consumed"]
                first, last = consumed[0]["ts"], consumed[-1]["ts"]
                total = sum(e["count"] for e in consumed)
                s0 = time.monotonic()
                proc.terminate(60)
                stop_s = time.monotonic() - s0
                rate = total / max((last - first) / 1000, 1e-3)
                print(f"{spec.label:24} {(started - t0) / 1000:9.2f} {(assigned - t0) / 1000:10.2f} "
                      f"{(last - t0) / 1000:7.2f} {rate:9.0f} {stop_s:7.2f}")


if __name__ == "__main__":
    main()
