"""A manifest's bad fields become problems naming the field; the good ones are kept (pure Python)."""

from __future__ import annotations

import json

from conformance.pipeline.manifest import read_manifest


def _write(tmp_path, content) -> None:
    (tmp_path / "manifest.json").write_text(content if isinstance(content, str) else json.dumps(content))


def test_wrong_typed_fields_are_dropped_one_problem_each(tmp_path):
    _write(tmp_path, {
        "run_id": "r1", "scenario": {"name": "crash-restart"}, "seed": "7", "leader_rotation": 1,
        "topics": {"t": 4, "u": "four", "v": -1},
        "timing": {"session_timeout_ms": "10s", "heartbeat_interval_ms": 1000},
        "members": [{"name": "m1", "spec": "java@4.4.0", "strategies": ["cooperative-sticky", 3]}, "m2", {"spec": "x"}],
        "phases": [{"name": "all", "start_ts": 5.0}, {"start_ts": "soon"}],
        "end_ts": True,
    })
    m, problems = read_manifest(tmp_path)
    assert m["run_id"] == "r1" and m["scenario"] is None and m["seed"] is None and m["end_ts"] is None
    assert m["leader_rotation"] is None            # 1 is not true: only booleans are
    assert m["topics"] == {"t": 4}
    assert m["timing"] == {"heartbeat_interval_ms": 1000}
    assert [x["name"] for x in m["members"]] == ["m1"]
    assert m["members"][0]["spec"] == "java@4.4.0" and m["members"][0]["strategies"] is None
    assert m["phases"] == [{"name": "all", "start_ts": 5.0}]
    fields = sorted(p.split(" must be ")[0].removeprefix("manifest field ") for p in problems)
    assert fields == sorted(["scenario", "seed", "leader_rotation", "topics.u", "topics.v", "timing.session_timeout_ms",
                             "members[0].strategies", "members[1]", "members[2]", "phases[1]", "end_ts"])
    assert 'manifest field topics.u must be a partition count (an integer >= 0), got "four": ignored' in problems


def test_a_clean_manifest_has_no_problems(tmp_path):
    _write(tmp_path, {"run_id": "r1", "scenario": "pause", "seed": 3, "broker_version": "4.4.0",
                      "topics": {"t": 4}, "members": [{"name": "m1", "spec": "java", "faults": []}],
                      "timing": {"session_timeout_ms": 6000}, "leader_rotation": False, "complete": True})
    m, problems = read_manifest(tmp_path)
    assert problems == []
    assert m["seed"] == 3 and m["topics"] == {"t": 4} and m["complete"] is True


def test_unreadable_manifests(tmp_path):
    _write(tmp_path, "[1, 2]")
    m, problems = read_manifest(tmp_path)
    assert m["members"] == [] and m["run_id"] is None
    assert problems == ["unreadable manifest: a list, not an object"]
    _write(tmp_path, '{"run_id": ')
    assert read_manifest(tmp_path)[1][0].startswith("unreadable manifest: Expecting value")
    (tmp_path / "manifest.json").unlink()
    assert read_manifest(tmp_path)[1][0].startswith("unreadable manifest: [Errno 2]")


def test_a_wrong_container_is_one_problem(tmp_path):
    _write(tmp_path, {"run_id": "r1", "topics": ["t"], "members": {"m1": {}}, "timing": 5, "phases": "all"})
    m, problems = read_manifest(tmp_path)
    assert (m["topics"], m["members"], m["timing"], m["phases"]) == ({}, [], {}, [])
    assert sorted(p.split(" must be ")[0] for p in problems) == [
        "manifest field members", "manifest field phases", "manifest field timing", "manifest field topics"]


def test_exit_notes_are_kept_and_a_bad_one_is_a_problem(tmp_path):
    # The runner notes a member process that ended on its own (here a SIGSEGV, code -11); a
    # rotate-leader note is for people and ignored; an exit note without a number ts is a problem.
    _write(tmp_path, {"run_id": "r1", "notes": [
        {"ts": 1000.5, "exited": "m2-librdkafka", "code": -11, "text": "m2-librdkafka exited on its own"},
        {"ts": 1001, "rotate-leader": "no leader seen on the wire"},
        {"ts": "later", "exited": "m1-java", "code": 1}]})
    m, problems = read_manifest(tmp_path)
    assert m["exits"] == [{"member": "m2-librdkafka", "ts": 1000.5, "code": -11}]
    assert len(problems) == 1 and problems[0].startswith("manifest field notes[2] must be an exit note"), problems


def test_a_migration_policy_is_kept_only_when_the_broker_has_it(tmp_path):
    # K5 judges joins against the recorded policy: one the broker does not know is a problem, not a policy.
    _write(tmp_path, {"run_id": "r1", "migration_policy": "disabled"})
    assert read_manifest(tmp_path) == ({**read_manifest(tmp_path)[0], "migration_policy": "disabled"}, [])
    _write(tmp_path, {"run_id": "r1", "migration_policy": "sideways"})
    m, problems = read_manifest(tmp_path)
    assert m["migration_policy"] is None
    assert problems == ['manifest field migration_policy must be one of bidirectional, upgrade, downgrade, disabled, '
                        'got "sideways": ignored']
