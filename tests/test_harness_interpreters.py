"""The interpreter rule for legacy venvs (conformance.members.interpreters).

Story: confluent-kafka 1.x needs Python 3.10. The rule takes the first
``python3.10`` on PATH that runs and reports 3.10 (a pyenv shim for an
inactive version fails and is skipped), then pyenv's versions, newest patch
first; none found is one line saying what to install. Fake interpreters here
are tiny shell scripts that print a version, which is all the rule looks at.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conformance.errors import SuiteError
from conformance.members.interpreters import candidates, find_python


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_a_failing_shim_on_path_is_skipped_for_pyenv(tmp_path: Path) -> None:
    shim = _script(tmp_path / "shims" / "python3.10", "echo 'pyenv: python3.10: command not found' >&2; exit 127")
    root = tmp_path / "pyenv"
    _script(root / "versions" / "3.10.2" / "bin" / "python3.10", "echo 3.10")
    newest = _script(root / "versions" / "3.10.13" / "bin" / "python3.10", "echo 3.10")
    _script(root / "versions" / "3.11.7" / "bin" / "python3.10", "echo 3.11")  # wrong minor dir: not looked at
    assert candidates("3.10", str(shim.parent), root) == [shim, newest, root / "versions/3.10.2/bin/python3.10"]
    assert find_python("3.10", str(shim.parent), root) == newest


def test_a_working_interpreter_on_path_wins(tmp_path: Path) -> None:
    on_path = _script(tmp_path / "bin" / "python3.10", "echo 3.10")
    root = tmp_path / "pyenv"
    _script(root / "versions" / "3.10.13" / "bin" / "python3.10", "echo 3.10")
    assert find_python("3.10", os.pathsep.join([str(tmp_path / "empty"), str(on_path.parent)]), root) == on_path


def test_an_interpreter_reporting_another_version_is_rejected(tmp_path: Path) -> None:
    liar = _script(tmp_path / "bin" / "python3.10", "echo 3.11")
    with pytest.raises(SuiteError, match=r"no Python 3\.10 interpreter found .*install Python 3\.10"):
        find_python("3.10", str(liar.parent), tmp_path / "no-pyenv")


def test_nothing_found_is_one_line_naming_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as info:
        find_python("3.10", str(tmp_path), tmp_path / "no-pyenv")
    assert "\n" not in str(info.value) and "pyenv install 3.10" in str(info.value)
