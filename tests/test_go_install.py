"""A Go harness build is reused only while the harness source it was built from is unchanged.

Story: the Sarama harness's main.go was edited, but the cached builds of 1.38.1 and 1.61.1 were
keyed by client version alone, so runs kept using binaries of the old source. The marker now
records the source's digest; an edited harness is no longer current, so the kind rebuilds it.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance import go_install


def _built(dest: Path, marker: dict) -> None:
    dest.mkdir(parents=True)
    (dest / "harness").write_bytes(b"\x7fELF")
    (dest / go_install.MARKER).write_text(json.dumps(marker), encoding="utf-8")


def test_a_build_is_current_only_for_the_source_it_was_built_from(tmp_path):
    source = tmp_path / "harness"
    source.mkdir()
    (source / "main.go").write_text("package main\n", encoding="utf-8")
    dest = tmp_path / "cache" / "1.61.1"
    _built(dest, {"version": "1.61.1", "source": go_install.harness_digest(source)})
    assert go_install.is_current(dest, source)
    (source / "main.go").write_text("package main\n\n// edited\n", encoding="utf-8")
    assert not go_install.is_current(dest, source)
    (source / "main.go").write_text("package main\n", encoding="utf-8")
    (source / "config_new.go").write_text("package main\n", encoding="utf-8")   # a file added
    assert not go_install.is_current(dest, source)


def test_a_build_from_before_the_digest_or_unfinished_is_not_current(tmp_path):
    source = tmp_path / "harness"
    source.mkdir()
    (source / "main.go").write_text("package main\n", encoding="utf-8")
    old = tmp_path / "cache" / "1.38.1"
    _built(old, {"version": "1.38.1"})                      # a marker written before digests
    assert go_install.is_built(old) and not go_install.is_current(old, source)
    unfinished = tmp_path / "cache" / "1.41.1"
    unfinished.mkdir(parents=True)
    (unfinished / "harness").write_bytes(b"\x7fELF")         # binary, no marker: not finished
    assert not go_install.is_current(unfinished, source)
