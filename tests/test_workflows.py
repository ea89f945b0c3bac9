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
