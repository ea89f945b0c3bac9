"""Cluster set-up and tap figures.

Prints:
- install times: warm (already installed) and, with ``--cold``, a cold install
  of broker + toxiproxy into an empty temporary cache (downloads from Maven
  Central and the Go module proxy; slow);
- Cluster start-to-ready per broker version (broker ready = metadata + probe
  produce; plus toxiproxy and the tap) and a broker kill-restart to ready;
- the wire tap's added latency per request on loopback, p50/p99: the same
  Kafka-framed request/response against an echo server, direct vs through the
  tap (goal p99 <= 1 ms).

Usage: .venv/bin/python bench/cluster_setup.py [--cold] [--versions 4.4.0,3.9.2] [--requests 3000]
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance import config
from conformance.cluster.cluster import Cluster
from conformance.cluster.install import ensure_broker, ensure_toxiproxy
from conformance.cluster.ports import free_port
from conformance.cluster.supervisor import Supervisor
from conformance.cluster.tap import WireTap
from conformance.rundir import RunDir

_ECHO = textwrap.dedent("""
    import socket, struct, sys
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0)); srv.listen(); print(srv.getsockname()[1], flush=True)
    while True:
        c, _ = srv.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        while True:
            d = c.recv(65536)
            if not d: break
            buf += d
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                n = 4 + struct.unpack(">i", buf[:4])[0]; frame, buf = buf[:n], buf[n:]
                c.sendall(struct.pack(">ii", 4, struct.unpack(">i", frame[8:12])[0]))
        c.close()
""")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def roundtrips(port: int, n: int, api_key: int = 12) -> list[float]:
    """n Heartbeat-sized framed requests on one connection, from another process; seconds each."""
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import cluster_setup as b; " \
           f"print(' '.join(map(repr, b._roundtrips({port}, {n}, {api_key}))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=config.REPO_ROOT).stdout
    return [float(x) for x in out.split()]


def _roundtrips(port: int, n: int, api_key: int) -> list[float]:
    out = []
    with socket.create_connection((config.HOST, port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(n):
            payload = struct.pack(">hhih", api_key, 4, i, 2) + b"c1" + b"\x00" + b"\x04grp" + struct.pack(">i", 1) + \
                b"\x04mid\x00\x00"
            start = time.perf_counter()
            s.sendall(struct.pack(">i", len(payload)) + payload)
            got = b""
            while len(got) < 8:
                got += s.recv(8 - len(got))
            out.append(time.perf_counter() - start)
    return out


def bench_tap(n: int) -> None:
    echo = subprocess.Popen([sys.executable, "-c", _ECHO], stdout=subprocess.PIPE, text=True)
    try:
        upstream = int(echo.stdout.readline())
        with tempfile.TemporaryDirectory() as tmp:
            tap = WireTap(Path(tmp) / "wire.jsonl", lambda slot: "bench")
            port = free_port()
            tap.listen(0, port, upstream)
            try:
                roundtrips(upstream, 200), roundtrips(port, 200)  # warm up
                direct = roundtrips(upstream, n)
                tapped = roundtrips(port, n)
                relayed = roundtrips(port, n, api_key=3)  # Metadata: relayed, not recorded
            finally:
                tap.stop()
        d50, d99 = pct(direct, 0.5) * 1e3, pct(direct, 0.99) * 1e3
        print(f"tap latency, {n} requests each, client in its own process, echo server upstream:")
        print(f"  direct                      p50 {d50:.3f} ms  p99 {d99:.3f} ms")
        for label, values in (("tapped, Heartbeat (recorded)", tapped), ("tapped, Metadata (relayed)", relayed)):
            t50, t99 = pct(values, 0.5) * 1e3, pct(values, 0.99) * 1e3
            print(f"  {label:<27} p50 {t50:.3f} ms  p99 {t99:.3f} ms  "
                  f"added p50 {t50 - d50:.3f} ms p99 {t99 - d99:.3f} ms (goal p99 <= 1 ms)")
    finally:
        echo.kill()
        echo.wait()


def bench_cold() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CONFORMANCE_CACHE=cache)
        code = ("from conformance.cluster.install import ensure_broker, ensure_toxiproxy; "
                f"ensure_broker({config.DEFAULT_BROKER!r}); ensure_toxiproxy()")
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=config.REPO_ROOT)
        print(f"cold install (broker {config.DEFAULT_BROKER} + toxiproxy, empty cache): "
              f"{time.monotonic() - start:.1f} s")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cold", action="store_true")
    p.add_argument("--versions", default=",".join(config.BROKER_VERSIONS))
    p.add_argument("--requests", type=int, default=3000)
    args = p.parse_args()
    versions = [v for v in args.versions.split(",") if v]
    if args.cold:
        bench_cold()
    start = time.monotonic()
    for v in versions:
        ensure_broker(v)
    ensure_toxiproxy()
    print(f"warm install check ({', '.join(versions)} + toxiproxy): {time.monotonic() - start:.2f} s")
    bench_tap(args.requests)
    with tempfile.TemporaryDirectory() as runs:
        for v in versions:
            run = RunDir.create(Path(runs), f"bench-{v}")
            with Supervisor(run.logs) as sup:
                t = time.monotonic()
                with Cluster(run, v, sup, slots=config.CLUSTER_SLOTS) as cluster:
                    total = time.monotonic() - t
                    t = time.monotonic()
                    cluster.broker.restart()
                    clean = time.monotonic() - t
                    t = time.monotonic()
                    cluster.broker.restart(kill=True)
                    killed = time.monotonic() - t
                print(f"broker {v}: cluster start-to-ready {total:.1f} s (goal <= 10 s warm); "
                      f"clean restart {clean:.1f} s; kill restart {killed:.1f} s")


if __name__ == "__main__":
    main()
