"""The pytest conformance suite parameterises one test per cell from its options."""

import subprocess
import sys

import pytest


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


@pytest.mark.parametrize("clients, message", [("jav@1", "unknown kind 'jav'"), ("", "no member specs given")])
def test_bad_option_is_a_clear_error(clients: str, message: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "--pyargs", "conformance.suite",
         "--clients", clients, "-p", "no:cacheprovider"], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert message in out.stdout + out.stderr
