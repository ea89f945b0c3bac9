"""Process supervision: every process the suite starts, in one place.

Guarantees:

- Every process runs in its own process group (``start_new_session``), so a
  signal reaches the harness and every child it forked (a JVM, a Go binary's
  helpers), and a Ctrl-C in the terminal reaches only the suite.
- :meth:`Supervisor.stop_all` stops every live process: SIGCONT (a paused
  process cannot die of SIGTERM), SIGTERM to the group, SIGKILL after the
  grace period. It runs on leaving the ``with`` block, at interpreter exit,
  and on SIGINT/SIGTERM to the suite (which then re-raises as
  ``KeyboardInterrupt``/``SystemExit``), so no process or port outlives a run.
- Output of each process goes to ``<logs_dir>/<name>.log`` (appended across
  restarts), never to the suite's terminal.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
import weakref
from pathlib import Path
from typing import Mapping, Sequence

_live: "weakref.WeakSet[Supervisor]" = weakref.WeakSet()
_handlers_installed = False


def _stop_everything() -> None:
    for sup in list(_live):
        sup.stop_all()


def _on_signal(signum: int, frame: object) -> None:
    _stop_everything()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _install_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    atexit.register(_stop_everything)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(sig, _on_signal)
    _handlers_installed = True


def describe_exit(code: int | None) -> str:
    """A process's exit code as people say it: "was killed by signal SIGSEGV" (a negative code, as
    :mod:`subprocess` reports a signal), "exited with code 3", or "is still running" for None."""
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class ManagedProcess:
    """One supervised process (and its process group)."""

    def __init__(self, name: str, popen: subprocess.Popen[bytes], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._popen = popen
        self.started_at = time.time()
        self._asked_to_stop = False

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    def alive(self) -> bool:
        return self._popen.poll() is None

    @property
    def exited_unasked(self) -> bool:
        """True once the process has exited although nobody called :meth:`terminate` or :meth:`kill`
        (a crash, an abort, or a client that gave up on its own)."""
        return not self._asked_to_stop and not self.alive()

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self._popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the whole process group (no-op once it has exited)."""
        if self.alive():
            self._signal_group(sig)

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or None if still running after ``timeout`` seconds."""
        try:
            return self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self, timeout: float = 15.0) -> int:
        """Graceful stop: SIGCONT + SIGTERM to the group, SIGKILL after ``timeout``."""
        self._asked_to_stop = True
        if self.alive():
            self._signal_group(signal.SIGCONT)
            self._signal_group(signal.SIGTERM)
            code = self.wait(timeout)
            if code is not None:
                self._reap_group()
                return code
        return self.kill()

    def kill(self) -> int:
        """Crash: SIGKILL to the group, then wait for the exit code."""
        self._asked_to_stop = True
        self._signal_group(signal.SIGKILL)
        code = self._popen.wait()
        return code

    def _reap_group(self) -> None:
        # Children that outlived the leader (rare) are killed with the group.
        self._signal_group(signal.SIGKILL)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def __repr__(self) -> str:
        state = "alive" if self.alive() else f"exited {self.returncode}"
        return f"<ManagedProcess {self.name} pid={self.pid} {state}>"


class Supervisor:
    """Starts processes and guarantees they are all stopped when the run ends."""

    def __init__(self, logs_dir: Path, grace_s: float = 10.0) -> None:
        self.logs_dir = Path(logs_dir)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.grace_s = grace_s
        self._procs: list[ManagedProcess] = []
        self._lock = threading.Lock()
        _install_handlers()
        _live.add(self)

    def spawn(self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
              cwd: str | os.PathLike[str] | None = None, log_name: str | None = None) -> ManagedProcess:
        """Start ``argv`` in a new process group; output to ``logs/<log_name or name>.log``."""
        log_path = self.logs_dir / f"{log_name or name}.log"
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=full_env, cwd=cwd, start_new_session=True)
        proc = ManagedProcess(name, popen, log_path)
        with self._lock:
            self._procs.append(proc)
        return proc

    def processes(self) -> list[ManagedProcess]:
        with self._lock:
            return list(self._procs)

    def stop_all(self) -> None:
        """Stop every process still alive (SIGCONT, SIGTERM, then SIGKILL after the grace period)."""
        procs = [p for p in self.processes() if p.alive()]
        for p in procs:
            p._signal_group(signal.SIGCONT)
            p._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for p in procs:
            p.wait(max(0.0, deadline - time.monotonic()))
        for p in procs:
            p._signal_group(signal.SIGKILL)
            p.wait(5.0)

    def __enter__(self) -> "Supervisor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()
