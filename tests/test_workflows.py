"""The GitHub Actions workflows (.github/workflows/ci.yml, nightly.yml) are valid and call only
documented commands: a broken workflow fails here, not on the first night."""

from __future__ import annotations

import re
import subprocess

import pytest

from conformance.actionlint import ensure_actionlint
from conformance.config import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
NAMES = ("ci.yml", "nightly.yml")


def test_both_workflows_exist():
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_actionlint_reports_nothing(name):
    # Installed by `conformance setup --all` (make test); idempotent, so a no-op here once set up.
    actionlint = ensure_actionlint()
    result = subprocess.run([str(actionlint), "-no-color", str(WORKFLOWS / name)], capture_output=True, text=True,
                            cwd=REPO_ROOT, timeout=120)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def _run_commands(text: str) -> list[str]:
    """The commands of every ``run:`` step (one-line steps: the workflows have no others)."""
    return [m.group(1).strip() for m in re.finditer(r"^\s*(?:- )?run: (.+)$", text, re.M)]


@pytest.mark.parametrize("name", NAMES)
def test_every_step_runs_a_command_the_readme_documents(name):
    readme = (REPO_ROOT / "README.md").read_text()
    commands = _run_commands((WORKFLOWS / name).read_text())
    assert commands, "no run: steps found"
    for command in commands:
        words = command.split()
        if words[0] == "make":
            documented = f"make {words[1]}"
        else:
            assert words[0] == ".venv/bin/conformance", command
            documented = f"conformance {words[1]}"
            options = [w.split("=")[0] for w in words[2:] if w.startswith("--")]
            for option in options:
                assert re.search(rf"{re.escape(documented)}\b[^\n]*{re.escape(option)}\b", readme), \
                    f"{name}: {option} of {documented} is not in README.md"
        assert re.search(rf"(^|[\s`]){re.escape(documented)}([\s`]|$)", readme, re.M), \
            f"{name}: `{command}` calls {documented}, which README.md does not document"


def _jobs_running(text: str, command: str) -> list[str]:
    """The ``run:`` commands of ``text`` that start with ``command``."""
    return [c for c in _run_commands(text) if c == command or c.startswith(command + " ")]


def test_every_test_that_leaves_ci_runs_every_night():
    # CI runs `make test` (the nightly tier skipped); the nightly workflow runs every shard of
    # `make test-nightly SHARD=I/N` (all tests, the tier included, but the container backend's)
    # and `make test-containers` (those), so no test is left out of a night.
    ci = (WORKFLOWS / "ci.yml").read_text()
    nightly = (WORKFLOWS / "nightly.yml").read_text()
    assert _run_commands(ci) == ["make test"]
    [sharded] = _jobs_running(nightly, "make test-nightly")
    assert sharded == "make test-nightly SHARD=${{ matrix.shard }}/4", sharded
    tests_job = nightly[nightly.index("\n  tests:"):nightly.index("\n  containers:")]
    assert re.search(r"shard: \[1, 2, 3, 4\]", tests_job), "the tests job must run every shard of SHARD=I/4"
    assert _jobs_running(nightly, "make test-containers") == ["make test-containers"]
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert '-m pytest --nightly $(if $(SHARD),--shard $(SHARD) -m "not containers")' in makefile
    assert "-m pytest --nightly -m containers" in makefile


def test_shards_deal_every_module_to_exactly_one_shard():
    # The real test modules, weighted as a nightly run weighs them (any weights: the deal is a partition).
    from conftest import shard_of
    modules = {p.name: len(p.read_text()) % 97 + 1 for p in (REPO_ROOT / "tests").glob("test_*.py")}
    for n in (1, 2, 4, 7):
        dealt = shard_of(modules, n)
        assert set(dealt) == set(modules) and set(dealt.values()) <= set(range(1, n + 1))
        assert len(set(dealt.values())) == min(n, len(modules))
    # Heaviest first, each to the lightest shard so far: a (5) to 1, b (3) and c (2) to 2, d to the lower of two at 5.
    assert shard_of({"a": 5, "b": 3, "c": 2, "d": 2}, 2) == {"a": 1, "b": 2, "c": 2, "d": 1}


def test_the_readme_states_the_ci_budget():
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    # The budget is stated; whether a run met it is a measurement the README reports, not a claim a test makes.
    assert ("`make test` (what CI runs, `.github/workflows/ci.yml`) is to finish within 30 minutes of tests on a "
            "fresh clone with a warm cache on a 2-core machine.") in readme
    assert "make test-nightly SHARD=I/4" in readme and "make test-containers" in readme
