"""`make test` lints first (`make lint`: scripts/lint.sh), and its go vet step can fail.

Story: the Go harnesses have no go.mod of their own (the build writes one per client release), so
`go vet` on them ran nowhere; a Printf with a wrong verb in a harness would have gone unseen.
scripts/lint_go.py vets each package in the module the build writes, with its build tags on and off.
"""

from __future__ import annotations

import importlib.util
import re
import shutil

import pytest

from conformance import config, go_install
from conformance.errors import SuiteError

ROOT = config.REPO_ROOT


def _lint_go():
    spec = importlib.util.spec_from_file_location("lint_go", ROOT / "scripts" / "lint_go.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_test_lints_before_its_tests():
    makefile = (ROOT / "Makefile").read_text()
    test_rule = re.search(r"^test:([^#\n]*)", makefile, re.M)
    assert test_rule and "lint" in test_rule.group(1).split(), f"make test does not lint first: {test_rule}"
    assert re.search(r"^lint:.*\n\tbash scripts/lint\.sh$", makefile, re.M), "make lint must run scripts/lint.sh"
    script = (ROOT / "scripts" / "lint.sh").read_text()
    for step in ("ruff check", "mypy", "gofmt -l clients", "scripts/lint_go.py"):
        assert step in script, f"scripts/lint.sh lost its {step} step"


def test_build_tags_are_read_from_the_constraints_and_a_compound_one_is_refused(tmp_path):
    lint_go = _lint_go()
    (tmp_path / "a.go").write_text("//go:build sarama_coop\n\npackage main\n", encoding="utf-8")
    (tmp_path / "b.go").write_text("//go:build !sarama_coop\n\npackage main\n", encoding="utf-8")
    (tmp_path / "c.go").write_text("package main\n", encoding="utf-8")
    assert lint_go.tags_of(tmp_path) == ["sarama_coop"]
    (tmp_path / "d.go").write_text("//go:build a && !b\n\npackage main\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="is not `tag` or `!tag`"):
        lint_go.tags_of(tmp_path)


@pytest.mark.slow
def test_go_vet_finds_a_wrong_printf_verb_in_a_copy_of_the_franz_go_harness(tmp_path):
    # The real harness, vetted as make lint vets it, plus one planted line vet must name.
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain on PATH (make setup needs one)")
    module, version = _lint_go().default_build("franz-go")
    package = tmp_path / "franz-go" / "harness"
    shutil.copytree(config.CLIENTS_DIR / "franz-go" / "harness", package)
    tags = _lint_go().tags_of(package)
    assert go_install.vet_package(package, module, version, [tags, []]) == []
    with (package / "main.go").open("a", encoding="utf-8") as f:
        f.write('\nfunc planted() { fmt.Printf("%d\\n", "not a number") }\n')
    findings = go_install.vet_package(package, module, version, [tags, []])
    assert len(findings) == 1 and findings[0].startswith(f"{package}/main.go:"), findings
    assert "fmt.Printf format %d has arg \"not a number\" of wrong type string" in findings[0]
