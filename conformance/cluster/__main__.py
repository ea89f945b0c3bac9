"""``python -m conformance.cluster``: start an embedded cluster and keep it up until Ctrl-C.

Prints one JSON line ``{"ready": true, ...}`` with the DIRECT bootstrap, each
member's tap bootstrap, the broker and toxiproxy pids and every port in use,
then waits. SIGINT/SIGTERM stop everything (the Supervisor's handlers), so no
child process or listening port remains; used by the cleanup test and handy
for poking at a broker by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from conformance import config
from conformance.cluster.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.errors import SuiteError
from conformance.rundir import RunDir


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.cluster", description=__doc__.splitlines()[0])
    p.add_argument("--broker", default=config.DEFAULT_BROKER, help="broker version")
    p.add_argument("--members", default="m1,m2", help="comma-separated member names to give slots")
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--runs-dir", type=Path, default=None, help="where the run directory goes")
    args = p.parse_args(argv)
    run = RunDir.create(args.runs_dir, "cluster")
    try:
        with Supervisor(run.logs) as sup, Cluster(run, args.broker, sup, slots=args.slots) as cluster:
            members = {m: cluster.bootstrap_for(m) for m in args.members.split(",") if m}
            info = {
                "ready": True, "run_dir": str(run.path), "broker_version": args.broker,
                "direct_bootstrap": cluster.direct_bootstrap, "members": members,
                "pids": {p.name: p.pid for p in sup.processes() if p.alive()},
                "ports": sorted({*cluster.tap_ports, cluster.broker.direct_port, cluster.broker.controller_port,
                                 *cluster.broker.slot_ports, cluster.toxiproxy.port,
                                 *(int(x.listen.rsplit(":", 1)[1]) for x in cluster._proxies)}),
            }
            print(json.dumps(info), flush=True)
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        print("cluster: interrupted; everything stopped", file=sys.stderr)
        return 130
    except SuiteError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
