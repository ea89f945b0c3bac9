"""Supervision: process groups, graceful stop with kill fallback, pause, and nothing left behind."""

import os
import signal
import sys
import time
from pathlib import Path

from conformance.cluster.ports import free_port
from conformance.cluster.supervisor import Supervisor

SLEEPER = [sys.executable, "-c", "import time\nwhile True: time.sleep(0.05)"]
# Ignores SIGTERM: only SIGKILL ends it.
STUBBORN = [sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\nwhile True: time.sleep(0.05)"]
# Forks a grandchild: the group signal must reach it too.
FORKER = [sys.executable, "-c", "import subprocess, sys, time\n"
          "c = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.05)'])\n"
          "print(c.pid, flush=True)\nwhile True: time.sleep(0.05)"]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); look at its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True


def _wait_line(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.strip():
            return text.strip().splitlines()[0]
        time.sleep(0.02)
    raise AssertionError(f"{path} stayed empty for {timeout}s")


def test_terminate_falls_back_to_kill(tmp_path: Path) -> None:
    with Supervisor(tmp_path) as sup:
        p = sup.spawn("stubborn", STUBBORN)
        _wait_line(p.log_path)
        code = p.terminate(timeout=0.5)
        assert code == -signal.SIGKILL and not p.alive()


def test_group_signal_reaches_grandchildren_and_stop_all_cleans_up(tmp_path: Path) -> None:
    sup = Supervisor(tmp_path)
    p = sup.spawn("forker", FORKER)
    grandchild = int(_wait_line(p.log_path))
    q = sup.spawn("sleeper", SLEEPER)
    q.pause()
    sup.stop_all()  # a paused process must die too
    assert not p.alive() and not q.alive()
    deadline = time.monotonic() + 5
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild), f"grandchild {grandchild} outlived its group"


def test_free_ports_are_distinct() -> None:
    ports = {free_port() for _ in range(50)}
    assert len(ports) == 50
