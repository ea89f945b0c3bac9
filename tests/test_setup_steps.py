"""Set-up says what it does: a line as each install step starts and ends, with its time, and a total.

The real ``conformance setup`` runs over the cache ``make test`` already filled (every step is then
quick, but each still prints its two lines); its output is read as it comes, so the test also sees
that no line waited longer than a step may stay silent. A slow step's "still running" lines are
shown on a step that sleeps (a cold install takes minutes: too long for a test).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import config, setup
from conformance.members import kinds

STEP = re.compile(r"setup: \[(\d+)/(\d+)\] (.+?)(?: \.\.\.|: done in (\d+\.\d)s)$")


def test_set_up_over_the_warm_cache_prints_each_step_as_it_starts_and_ends():
    cli = Path(sys.executable).parent / "conformance"
    proc = subprocess.Popen([str(cli), "setup"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[tuple[float, str]] = []
    assert proc.stdout is not None
    last = time.monotonic()
    for line in proc.stdout:
        now = time.monotonic()
        lines.append((now - last, line.rstrip("\n")))
        last = now
    assert proc.wait(timeout=300) == 0, "\n".join(text for _, text in lines)
    text = "\n".join(t for _, t in lines)
    steps = [STEP.fullmatch(t) for _, t in lines if t.startswith("setup: [")]
    started = [m.group(3) for m in steps if m and m.group(4) is None]
    ended = [m.group(3) for m in steps if m and m.group(4) is not None]
    # The default mix's clients, the default broker and toxiproxy: one step each, announced and finished.
    n = len(kinds.default_mix()) + 2
    assert started == ended and len(started) == n, text
    assert {m.group(2) for m in steps if m} == {str(n)}, text
    assert any(s.startswith("client java ") for s in started) and f"broker {config.DEFAULT_BROKER}" in started, text
    assert re.fullmatch(rf"setup: ready in \d+\.\ds \({n} steps; cache: .+\)", lines[-1][1]), text
    # Nothing silent longer than a step may be, plus a little for the process's own start.
    assert max(gap for gap, _ in lines[1:]) <= setup.TICK_S + 2, text


def test_a_slow_step_says_it_still_runs_and_a_failed_one_says_so(capsys):
    # A step that takes 0.35 s with a tick of 0.1 s: "still running" lines between its start and end.
    steps = setup.Steps(2, tick_s=0.1)
    assert steps.run("client slow 1.0", lambda: time.sleep(0.35) or 7) == 7
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "setup: [1/2] client slow 1.0 ..."
    assert 2 <= sum("client slow 1.0: still running (" in x for x in out) <= 4
    assert re.fullmatch(r"setup: \[1/2\] client slow 1\.0: done in 0\.[3-9]s", out[-1])

    # A step that raises: its line says it failed, and the error goes on to the caller.
    def broken():
        raise OSError("no space left")
    with pytest.raises(OSError):
        steps.run("broker 9.9.9", broken)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "setup: [2/2] broker 9.9.9 ..."
    assert re.fullmatch(r"setup: \[2/2\] broker 9\.9\.9: failed after 0\.\ds: OSError", out[-1])
