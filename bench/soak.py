"""Leak soak: consecutive real cells, some interrupted with SIGINT; afterwards nothing of the suite remains.

Usage: ``.venv/bin/python bench/soak.py [--cells 20] [--interrupted 5] [--seed 26]
[--scenario rolling-restart] [--clients reference,librdkafka] [--work DIR]`` (``make soak``;
the nightly tier runs it as tests/test_soak.py).

The cells run one after another, each with its own cluster, as ``conformance run`` runs a matrix;
which cells are interrupted is drawn from the seed (never the first), and so is each interrupt
point: a fraction (5-90%) of the scenario's span (the median of the cells that ran to their end),
counted from the interrupted cell's first ``phase`` line, i.e. while the cluster and the members
run. Consecutive cells up to an interrupted one share one ``conformance run`` (which the SIGINT
then stops, after judging what ran), so the soak judges once per interrupt, not once per cell: a
cell is its scenario's content, so each cell runs a copy of the built-in scenario's file with one
``describe`` line more. Each run gets a session of its own.

Each cell's processes run with a private temporary directory (``TMPDIR``, ``SPARK_LOCAL_DIRS``
and the JVMs' ``java.io.tmpdir``), so that what the suite leaves there is the suite's, whatever
else runs on the machine. After every cell and at the end it counts:

- processes: any process of the cells' sessions, or one they started, still alive;
- listening ports: a TCP port listening now that did not before the soak and that a process of
  the cells holds (listeners of other processes on the machine are counted apart, not as leaks);
- temporary entries: anything left in the private temporary directory;
- interrupted cells: exit 130, ``summary.json`` marked interrupted with the cell's verdict in it
  (partial verdicts), and the cell's run directory with its manifest.

Prints one line per cell and the counts; exit 0 when nothing leaked and every interrupted cell
left its run directory and partial verdicts, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: The default cell: the shortest built-in scenario over two light clients.
SCENARIO = "rolling-restart"
CLIENTS = "reference,librdkafka"


@dataclass
class CellOutcome:
    index: int
    seed: int
    interrupt_after_s: float | None       # seconds into its scenario the SIGINT was due (None: not yet known)
    seconds: float
    exit_code: int | None
    verdict: str | None = None
    cut_short: str | None = None
    scenario_s: float | None = None
    run_dir_kept: bool = False
    partial_verdicts: bool = False
    problems: list[str] = field(default_factory=list)
    interrupted: bool = False             # drawn to be interrupted


@dataclass
class SoakResult:
    cells: list[CellOutcome] = field(default_factory=list)
    leaked_processes: list[str] = field(default_factory=list)
    leaked_ports: list[str] = field(default_factory=list)
    leaked_temp: list[str] = field(default_factory=list)
    other_new_listeners: list[str] = field(default_factory=list)
    stopped: bool = False                 # the soak was stopped (Ctrl-C) before its last run

    @property
    def interrupted(self) -> list[CellOutcome]:
        return [c for c in self.cells if c.interrupted]

    @property
    def interrupted_ok(self) -> int:
        return sum(c.exit_code == 130 and c.run_dir_kept and c.partial_verdicts for c in self.interrupted)

    @property
    def ok(self) -> bool:
        return (not self.stopped and not self.leaked_processes and not self.leaked_ports and not self.leaked_temp
                and self.interrupted_ok == len(self.interrupted) and all(not c.problems for c in self.cells))

    def counts(self) -> str:
        done = [c for c in self.cells if not c.interrupted]
        verdicts: dict[str, int] = {}
        for c in done:
            verdicts[str(c.verdict)] = verdicts.get(str(c.verdict), 0) + 1
        return (f"soak{' (stopped early)' if self.stopped else ''}: {len(self.cells)} cells ({len(done)} ran to the end: "
                + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
                + f"; {len(self.interrupted)} interrupted, {self.interrupted_ok} of them left their run directory "
                f"and partial verdicts); leaked: {len(self.leaked_processes)} process(es), "
                f"{len(self.leaked_ports)} listening port(s), {len(self.leaked_temp)} temporary entr(ies); "
                f"{len(self.other_new_listeners)} new listener(s) of other processes (not the suite's)")


# --- processes -----------------------------------------------------------------------------------

def _proc_table() -> dict[int, tuple[int, int, str, int]]:
    """pid -> (parent pid, session id, state, start time in clock ticks), of every process now."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(entry.name)] = (int(fields[1]), int(fields[3]), fields[0], int(fields[19]))
        except (OSError, ValueError, IndexError):
            continue
    return out


class Watch:
    """Every process seen in the sessions of a cell's process tree: pid -> start time."""

    def __init__(self, root_pid: int) -> None:
        self.root = root_pid
        self.sessions: set[int] = set()
        self.seen: dict[int, int] = {}
        self.own_session = os.getsid(0)

    def poll(self) -> None:
        table = _proc_table()
        tree, frontier = set(), {self.root}
        while frontier:
            tree |= frontier
            frontier = {p for p, (ppid, *_rest) in table.items() if ppid in frontier} - tree
        for pid in tree:
            if pid in table:
                self.seen[pid] = table[pid][3]
                if table[pid][1] != self.own_session:
                    self.sessions.add(table[pid][1])
        for pid, (_ppid, sid, _state, start) in table.items():
            if sid in self.sessions:
                self.seen.setdefault(pid, start)

    def alive(self) -> list[str]:
        """The watched processes still running (not zombies), as 'pid command'."""
        table = _proc_table()
        out = []
        for pid, (_ppid, sid, state, start) in table.items():
            if state == "Z":
                continue
            if sid in self.sessions or self.seen.get(pid) == start:
                try:
                    cmd = (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
                except OSError:
                    cmd = "?"
                out.append(f"{pid} {cmd[:160]}")
        return out


# --- ports ---------------------------------------------------------------------------------------

def listening() -> dict[tuple[str, int], int]:
    """Listening TCP sockets now: (family, port) -> socket inode."""
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A":
                out[(name, int(parts[1].rsplit(":", 1)[1], 16))] = int(parts[9])
    return out


def socket_owners() -> dict[int, int]:
    """Socket inode -> a pid holding it."""
    owners = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                try:
                    target = os.readlink(fd)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    owners[int(target[8:-1])] = int(entry.name)
        except OSError:
            continue
    return owners


# --- the cells ----------------------------------------------------------------------------------

def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TMPDIR"] = str(tmp)
    env["SPARK_LOCAL_DIRS"] = str(tmp)
    env["JAVA_TOOL_OPTIONS"] = f"-Djava.io.tmpdir={tmp} -XX:-UsePerfData"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def scenario_copies(scenario: str, count: int, into: Path) -> list[Path]:
    """``count`` files holding the built-in ``scenario``'s text, each with one ``describe`` line more
    (a cell is its scenario's content, so one ``conformance run`` runs each copy as a cell of its own)."""
    text = (REPO / "fixtures" / "scenarios" / f"{scenario}.scenario").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("name ")) + 1
    into.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(count):
        path = into / f"{scenario}-{k:02d}.scenario"
        path.write_text("".join(lines[:at] + [f"describe (soak copy {k})\n"] + lines[at:]), encoding="utf-8")
        out.append(path)
    return out


def _spans(work: Path) -> list[float]:
    """Scenario spans (s) of the cells that ran to their end so far (from their manifests)."""
    spans = []
    for manifest in work.glob("runs/*/*/runs/*/manifest.json"):
        try:
            m = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        starts = [p.get("start_ts") for p in m.get("phases") or [] if p.get("start_ts")]
        if m.get("complete") and starts and m.get("end_ts"):
            spans.append((m["end_ts"] - min(starts)) / 1000)
    return spans


def _copy_number(run_dir_name: str) -> int:
    """Which cell of a run a run directory is: ``<cell-id>`` the first, ``<cell-id>--N`` the N-th
    (conformance.run.matrix.run_dir_names)."""
    tail = run_dir_name.rsplit("--", 1)[-1]
    return int(tail) if tail.isdigit() else 1


def run_group(group: int, first: int, files: list[Path], seed: int, clients: str, work: Path, tmp: Path,
              interrupt_fraction: float | None, watches: list[Watch]) -> list[CellOutcome]:
    """One ``conformance run`` of the cells ``files`` (numbered from ``first``); with
    ``interrupt_fraction``, SIGINT to it that far into its last cell's scenario (see the module
    docstring). One outcome per cell."""
    runs = work / "runs" / f"{group:02d}"
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out_path = logs / f"{group:02d}.txt"
    argv = [sys.executable, "-m", "conformance", "run", "--clients", clients, "--seed", str(seed), "--runs-dir", str(runs)]
    for f in files:
        argv += ["--scenario", str(f)]
    started = time.monotonic()
    with out_path.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=REPO, env=_env(tmp), start_new_session=True)
    watch = Watch(proc.pid)
    watches.append(watch)
    last = f"[{len(files)}/{len(files)}]"
    deadline = started + 600 + 300 * len(files)
    state: dict = {}
    try:
        _follow(proc, watch, out_path, last, interrupt_fraction, work, deadline, state)
    except KeyboardInterrupt:   # the soak itself is stopped: stop the run as Ctrl-C would, then go on
        os.kill(proc.pid, signal.SIGINT)
        proc.wait()
        raise
    finally:
        watch.poll()
    wait_s, signalled, timed_out = state.get("wait_s"), state.get("signalled", False), state.get("timed_out", False)
    seconds = round(time.monotonic() - started, 1)
    return _outcomes(runs, files, first, seed, proc.returncode, interrupt_fraction, wait_s, signalled, timed_out,
                     seconds, out_path)


def _follow(proc, watch: Watch, out_path: Path, last: str, interrupt_fraction: float | None, work: Path,
            deadline: float, state: dict) -> None:
    """Watch the run until it exits; SIGINT it at its interrupt point (``state`` says when it was due,
    whether it was sent, whether the run timed out)."""
    phase_seen_at = None
    while proc.poll() is None:
        watch.poll()
        now = time.monotonic()
        if interrupt_fraction is not None and not state.get("signalled"):
            if phase_seen_at is None:
                text = out_path.read_text(errors="replace")
                if any(last in line and "· phase " in line for line in text.splitlines()):
                    phase_seen_at = now
                    spans = _spans(work)
                    state["wait_s"] = interrupt_fraction * (statistics.median(spans) if spans else 30.0)
            elif now - phase_seen_at >= state["wait_s"]:
                os.kill(proc.pid, signal.SIGINT)
                state["signalled"] = True
        if now > deadline:
            state["timed_out"] = True
            os.kill(proc.pid, signal.SIGINT)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.25)
    proc.wait()


def _outcomes(runs: Path, files: list[Path], first: int, seed: int, exit_code: int | None,
              interrupt_fraction: float | None, wait_s: float | None, signalled: bool, timed_out: bool,
              seconds: float, out_path: Path) -> list[CellOutcome]:
    """One outcome per cell of a finished run, from its summary.json and run directories."""
    summary = next(iter(runs.glob("*/summary.json")), None)
    s = json.loads(summary.read_text()) if summary else {}
    by_dir = {Path(v.get("run_dir") or "").name: v for v in s.get("cells") or []}
    dirs = sorted((p.name for p in runs.glob("*/runs/*")), key=_copy_number)
    outcomes = []
    for k, _f in enumerate(files):
        cut = interrupt_fraction is not None and k == len(files) - 1
        c = CellOutcome(first + k, seed, wait_s if cut else None, seconds, exit_code, interrupted=cut)
        name = dirs[k] if k < len(dirs) else None
        v = by_dir.get(name or "")
        c.run_dir_kept = name is not None and any(runs.glob(f"*/runs/{name}/manifest.json"))
        if v:
            c.verdict, c.cut_short = v.get("verdict"), v.get("cut_short")
        if cut:
            c.partial_verdicts = bool(s.get("interrupted")) and v is not None and "verdict" in v
            if not signalled:
                c.problems.append("the run ended before its interrupt point")
        elif exit_code not in (0, 1) and interrupt_fraction is None:
            c.problems.append(f"exit {exit_code} (see {out_path})")
        if v is None:
            c.problems.append(f"no verdict in summary.json (see {out_path})")
        if timed_out:
            c.problems.append("timed out")
        outcomes.append(c)
    return outcomes


def soak(work: Path, cells: int = 20, interrupted: int = 5, seed: int = 26, scenario: str = SCENARIO,
         clients: str = CLIENTS, say=print) -> SoakResult:
    """Run the soak in ``work`` (created); see the module docstring."""
    work = Path(work)
    tmp = work / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    cut = sorted(rng.sample(range(1, cells), interrupted))
    fractions = {i: rng.uniform(0.05, 0.9) for i in cut}
    # Consecutive cells up to and including each interrupted one share a run; the rest, one more.
    bounds = [*cut, cells - 1] if not cut or cut[-1] != cells - 1 else cut
    files = scenario_copies(scenario, cells, work / "scenarios")
    baseline = set(listening())
    result = SoakResult()
    watches: list[Watch] = []
    first = 0
    for group, last in enumerate(bounds):
        try:
            outcomes = run_group(group, first, files[first:last + 1], seed + group, clients, work, tmp,
                                 fractions.get(last), watches)
        except KeyboardInterrupt:
            say(f"soak stopped during run {group} (cells {first}-{last}); counting what the runs so far left")
            result.stopped = True
            time.sleep(5)
            result.leaked_processes += [f"run {group}: {a}" for a in watches[-1].alive()] if watches else []
            break
        result.cells += outcomes
        alive = watches[-1].alive()
        if alive:
            time.sleep(5)   # a process may still be on its way out: look again before counting it
            alive = watches[-1].alive()
        leaked_now = [f"run {group}: {a}" for a in alive]
        result.leaked_processes += leaked_now
        left = sorted(str(p.relative_to(tmp)) for p in tmp.iterdir())
        for c in outcomes:
            what = ("ran to the end" if not c.interrupted else
                    f"SIGINT {c.interrupt_after_s:.1f}s into its scenario" if c.interrupt_after_s is not None
                    else "to be interrupted, but its scenario never started")
            say(f"cell {c.index:2d} (run {group}, seed {c.seed}): {what}; verdict {c.verdict}"
                + (f" (cut short: {c.cut_short})" if c.cut_short else "")
                + ("" if not c.interrupted else
                   f"; run directory {'kept' if c.run_dir_kept else 'MISSING'}, partial verdicts "
                   f"{'written' if c.partial_verdicts else 'MISSING'}")
                + (f"; problems: {'; '.join(c.problems)}" if c.problems else ""))
        say(f"run {group}: {len(outcomes)} cell(s), exit {outcomes[-1].exit_code}, {outcomes[-1].seconds:.0f}s; "
            f"{len(leaked_now)} process(es) left, {len(left)} temporary entr(ies) now")
        first = last + 1
    ours = {pid for w in watches for pid in w.seen}
    sessions = {s for w in watches for s in w.sessions}
    table = _proc_table()
    owners = socket_owners()
    new = {key: inode for key, inode in listening().items() if key not in baseline}
    for key, inode in sorted(new.items()):
        pid = owners.get(inode)
        label = f"{key[0]} port {key[1]}" + (f" (pid {pid})" if pid else " (no process)")
        if pid is None or pid in ours or (pid in table and table[pid][1] in sessions):
            result.leaked_ports.append(label)
        else:
            result.other_new_listeners.append(label)
    result.leaked_temp = sorted(str(p.relative_to(tmp)) for p in tmp.iterdir())
    for line in result.leaked_processes + result.leaked_ports + [f"temporary: {t}" for t in result.leaked_temp]:
        say(f"  leak: {line}")
    say(result.counts())
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Leak soak: consecutive real cells, some interrupted with SIGINT.")
    p.add_argument("--cells", type=int, default=20)
    p.add_argument("--interrupted", type=int, default=5)
    p.add_argument("--seed", type=int, default=26)
    p.add_argument("--scenario", default=SCENARIO)
    p.add_argument("--clients", default=CLIENTS)
    p.add_argument("--work", type=Path, default=None, help="where the cells' runs and logs go (default: a new "
                   "temporary directory, removed when nothing leaked)")
    args = p.parse_args(argv)
    if not 0 <= args.interrupted < args.cells:
        p.error("--interrupted must be at least 0 and less than --cells (the first cell is never interrupted)")
    work = args.work or Path(tempfile.mkdtemp(prefix="conformance-soak-"))
    result = soak(work, args.cells, args.interrupted, args.seed, args.scenario, args.clients)
    if args.work is None and result.ok:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"soak: runs and logs kept in {work}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
