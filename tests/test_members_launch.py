"""Launching members: wait_ready per incarnation, failures that name the member and show its log.

The harnesses here are tiny real Python processes (no broker): one that writes
its ``started`` event, one that dies first, one that never starts.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conformance import config
from conformance.cluster.supervisor import Supervisor
from conformance.errors import SuiteError, UsageError
from conformance.history import read_history
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.members.launch import MemberProcess, _python_env, launch_member, log_tail
from conformance.members.producer import runs
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir

pytestmark = pytest.mark.slow  # real processes

GOOD = textwrap.dedent("""
    import os, sys, time
    from conformance.history import HistoryWriter
    w = HistoryWriter(sys.argv[1], "m1", "fake", "1")
    w.record("started", pythonpath=os.environ.get("PYTHONPATH", ""))
    time.sleep(60)
""")


def _proc(tmp_path: Path, sup: Supervisor, body: str, name: str = "m1") -> MemberProcess:
    script = tmp_path / f"{name}.py"
    script.write_text(body)
    history = tmp_path / f"{name}.jsonl"
    return MemberProcess(name, [sys.executable, str(script), str(history)], _python_env({}),
                         tmp_path / "cfg.json", history, sup)


def test_wait_ready_sees_each_incarnation(tmp_path: Path) -> None:
    with Supervisor(tmp_path / "logs") as sup:
        m = _proc(tmp_path, sup, GOOD)
        first = m.wait_ready(30)
        assert str(config.REPO_ROOT) in first["pythonpath"].split(":")
        m.restart()          # graceful stop, same argv, same history file
        second = m.wait_ready(30)
        assert m.incarnation == 2 and second["ts"] > first["ts"]
        m.terminate()
        assert not m.alive()
        with open(m.history_path) as f:
            started = [e for _, e, _ in read_history(f) if e and e["event"] == "started"]
        assert len(started) == 2


def test_restart_does_not_accept_the_previous_incarnations_started(tmp_path: Path) -> None:
    with Supervisor(tmp_path / "logs") as sup:
        m = _proc(tmp_path, sup, GOOD)
        m.wait_ready(30)
        m.kill()
        m.argv = [sys.executable, "-c", "import time; time.sleep(60)"]  # next incarnation never starts
        m.restart()
        with pytest.raises(SuiteError, match="did not start within 1s"):
            m.wait_ready(1)


def test_exit_before_started_names_member_log_and_tail(tmp_path: Path) -> None:
    body = "import sys\nprint('cannot connect to the moon', file=sys.stderr)\nsys.exit(7)\n"
    with Supervisor(tmp_path / "logs") as sup:
        m = _proc(tmp_path, sup, body, name="crasher")
        with pytest.raises(SuiteError) as info:
            m.wait_ready(30)
    message = str(info.value)
    assert "member crasher exited with code 7" in message
    assert str(m.log_path) in message and "cannot connect to the moon" in message


def test_log_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert log_tail(log, 3) == "line 97\nline 98\nline 99"
    assert log_tail(tmp_path / "missing.log") == "(no log)"


def test_launch_member_writes_config_and_checks_spec(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "launch")
    cfg = HarnessConfig(member="r1", client="reference", client_version=kinds.default_version("reference"),
                        bootstrap_servers="127.0.0.1:1", group_id="g", topics=["t"],
                        history_path=str(run.history("r1")))
    with Supervisor(run.logs) as sup:
        with pytest.raises(UsageError, match="config says reference@.* but the spec is java@"):
            launch_member(MemberSpec("java", "4.4.0"), cfg, run, sup)
        m = launch_member(MemberSpec.parse("reference/skip-revoke"), cfg, run, sup)
        written = json.loads(run.harness_config("r1").read_text())
        assert written["extra"]["faults"] == ["skip-revoke"] and written["member"] == "r1"
        assert m.argv[1:3] == ["-m", "conformance.reference"]
        m.kill()


def test_producer_runs_split_on_gaps() -> None:
    assert runs([0, 1, 2, 5, 6]) == [(0, 2), (5, 6)]
    assert runs([3, 1, 2, 2]) == [(1, 3)]
    assert runs([]) == []
