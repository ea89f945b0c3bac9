"""The pytest conformance suite parameterises one test per cell from its options."""

import subprocess
import sys


def test_cells_follow_the_options() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "--pyargs", "conformance.suite",
         "--clients", "reference,java@2.8.1", "--scenario", "crash-restart", "--scenario", "pause",
         "--broker", "3.9.2", "--seed", "11", "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    ids = [line for line in out.stdout.splitlines() if "test_cell[" in line]
    assert len(ids) == 2, out.stdout
    assert "crash-restart--reference-0.1.0_java-2.8.1--kafka-3.9.2--seed-11" in ids[0]
    assert "pause--" in ids[1]


def test_bad_option_is_a_clear_error() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "--pyargs", "conformance.suite",
         "--clients", "jav@1", "-p", "no:cacheprovider"], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "unknown kind 'jav'" in out.stdout + out.stderr
