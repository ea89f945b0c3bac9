"""``conformance mutation-score`` on bad input: one line on stderr, exit 2, nothing judged, no temp dir left."""

from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path

import pytest

from conformance import cli


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, str]]:
    (tmp / "empty").mkdir()
    (tmp / "garbage.tar.xz").write_bytes(b"not an archive")
    (tmp / "notes.txt").write_text("x")
    (tmp / "readme").write_text("x")
    with tarfile.open(tmp / "nomanifest.tar.xz", "w:xz") as tar:
        tar.add(tmp / "readme", arcname="run/readme")
    (tmp / "broken").mkdir()
    (tmp / "broken" / "manifest.json").write_text("{")
    return {"missing": (tmp / "nope", "no such path"),
            "empty-dir": (tmp / "empty", "no run directory"),
            "garbage": (tmp / "garbage.tar.xz", "not a readable tar archive"),
            "not-archive": (tmp / "notes.txt", "neither a run directory nor"),
            "no-manifest": (tmp / "nomanifest.tar.xz", "holds no run directory"),
            "broken-manifest": (tmp / "broken", "cannot read run")}


@pytest.mark.parametrize("case", ["missing", "empty-dir", "garbage", "not-archive", "no-manifest", "broken-manifest"])
def test_bad_input_is_one_line_and_exit_2(case: str, tmp_path: Path, capsys, monkeypatch) -> None:
    import conformance.pipeline as pipeline

    monkeypatch.setattr(pipeline, "judge", lambda *a, **k: pytest.fail("judged bad input"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "in").mkdir()
    path, words = _bad_inputs(tmp_path / "in")[case]
    assert cli.main(["mutation-score", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("conformance: mutation-score: ") and words in err[0], err
    assert not list((tmp_path / "tmp").iterdir()), "temporary directory left behind"
