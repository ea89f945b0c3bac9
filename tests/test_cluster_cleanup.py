"""SIGINT to a process running a broker and toxiproxy leaves no child process and no listening port."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _listening(port: int) -> bool:
    try:
        with socket.create_connection((config.HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def test_sigint_stops_broker_toxiproxy_and_tap(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cluster", "--runs-dir", str(tmp_path),
                             "--slots", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=config.REPO_ROOT)
    try:
        line = proc.stdout.readline()  # blocks until ready (or the process dies: empty line)
        while line and not line.startswith("{"):  # installers' "already installed" lines
            line = proc.stdout.readline()
        assert line, f"cluster demo exited early: {proc.stderr.read()}"
        info = json.loads(line)
        pids, ports = list(info["pids"].values()), info["ports"]
        assert {"broker", "toxiproxy"} <= set(info["pids"])
        assert all(_alive(p) for p in pids)
        assert all(_listening(p) for p in ports), "a port of the running cluster is not listening"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (any(_alive(p) for p in pids) or any(_listening(p) for p in ports)):
        time.sleep(0.2)
    assert [p for p in pids if _alive(p)] == [], "a child process outlived SIGINT"
    assert [p for p in ports if _listening(p)] == [], "a port is still listening after SIGINT"
