"""The shared recorded judge (tests/recorded.py) judges copies of one recorded run once only when
their files are the same but for the run id; a mutant, however small, is judged on its own."""

from __future__ import annotations

from pathlib import Path

import recorded

ARCHIVE = Path(__file__).resolve().parent.parent / "fixtures" / "real-runs" / "reference-java-librdkafka--seed-26.tar.xz"


def test_copies_differing_only_in_run_id_share_a_judge_and_a_mutant_does_not(tmp_path: Path) -> None:
    # Three modules unpack one real run: two keep it as recorded (renamed), one appends a line to a
    # member's history. The renamed copies are one group; the edited copy is a group of its own.
    original = recorded.unpack(ARCHIVE, tmp_path / "original")
    a = recorded.copy_run(original, tmp_path / "a", "-a")
    b = recorded.copy_run(original, tmp_path / "b", "-b")
    edited = recorded.copy_run(original, tmp_path / "edited", "-edited")
    history = next((edited / "members").glob("*.jsonl"))
    events = recorded.read_jsonl(history)
    recorded.write_jsonl(history, [*events, {**events[-1], "ts": events[-1]["ts"] + 1}])
    assert recorded._same_content([a, b, edited]) == {a: [a, b], edited: [edited]}


def test_a_renamed_file_is_other_content(tmp_path: Path) -> None:
    # The same bytes under another member's name are another run.
    original = recorded.unpack(ARCHIVE, tmp_path / "original")
    a = recorded.copy_run(original, tmp_path / "a", "-a")
    b = recorded.copy_run(original, tmp_path / "b", "-b")
    history = sorted((b / "members").glob("*.jsonl"))[0]
    history.rename(history.with_name("m9-renamed.jsonl"))
    assert recorded._same_content([a, b]) == {a: [a], b: [b]}


def test_a_shared_verdict_names_each_copy_as_its_own(tmp_path: Path) -> None:
    # The verdict of copy a, handed to copy b: b's id, b's directory, b's files in its findings.
    original = recorded.unpack(ARCHIVE, tmp_path / "original")
    a = recorded.copy_run(original, tmp_path / "a", "-a")
    b = recorded.copy_run(original, tmp_path / "b", "-b")
    verdict = {"run": recorded._run_id(a), "run_dir": str(a), "verdict": "malformed",
               "malformed": [{"file": str(a / "wire.jsonl"), "line": 3}]}
    assert recorded._as_copy(verdict, b) == {"run": recorded._run_id(b), "run_dir": str(b), "verdict": "malformed",
                                             "malformed": [{"file": str(b / "wire.jsonl"), "line": 3}]}
    assert recorded._run_id(b) == recorded._run_id(a)[:-2] + "-b"
