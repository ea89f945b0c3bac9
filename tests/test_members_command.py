"""`conformance clients list`, version checks against Maven Central, and the Java harness's config errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.errors import UsageError
from conformance.members.kinds import java


def test_clients_list_shows_every_kind_with_default_and_known_versions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clients", "list"]) == 0
    table, features, brokers, known, kip848, faults = capsys.readouterr().out.split("\n\n")
    rows = {line.split()[0]: line for line in table.splitlines()[1:]}
    assert set(rows) == {"reference", "java", "librdkafka", "sarama", "kafka-python", "franz-go"}
    assert rows["franz-go"].split()[1:] == ["1.22.3", "1.7.0", "and", "later", "1.22.3", "[known:", "L4,", "R3],",
                                            "1.7.0", "[known:", "L4,", "R3]"]
    # The range each kind's harness runs, and what each version has.
    assert rows["sarama"].split()[1:5] == ["1.61.1", "1.19.0", "and", "later"]
    assert ("  sarama: range, roundrobin: every version; sticky: from 1.24.0; static membership: from 1.34.0; "
            "assignor list: from 1.37.0; cooperative-sticky, mix eager cooperative: from 1.60.0; cooperative: from 1.61.0"
            in features.splitlines())
    assert "4.4.0 [known: C2], 3.9.2, 2.8.2, 2.4.1" in rows["java"]
    # Releases that cannot work with newer brokers, and why (a run pairing them is refused).
    assert brokers.splitlines()[1].startswith("  librdkafka before 1.8.0: not with brokers 4.0.0 and later: queries "
                                              "logical offsets (BEGINNING, END: auto.offset.reset) with ListOffsets v0")
    assert brokers.splitlines()[-1] == "  reference, java, sarama, kafka-python, franz-go: no limit known"
    # Each version with known issues names their invariants, and the table says what they are.
    # An invariant two of a version's issues violate is named once.
    assert "1.38.1 [known: D2, L1, D3]" in rows["sarama"] and "1.61.1 [known: R1, D2, D3]," in rows["sarama"]
    assert "1.9.2 [known: D1, L1]" in rows["librdkafka"]
    assert known.startswith("known issues") and "sarama before 1.43.3: D2:" in known and "IBM/sarama PR 2947" in known
    assert faults.startswith("reference/FAULT") and "stale-owned-partitions, subscription-v0" in faults
    assert "reference+consumer/FAULT: ack-unrevoked, stale-epoch, ignore-fenced" in faults
    # Which kinds speak KIP-848 (a +consumer spec), from which release; the others are named.
    assert kip848.startswith("consumer group protocol (KIP-848, KIND@VERSION+consumer): reference every version; "
                             "java from 3.7.0 ")
    assert "librdkafka from 2.12.0 " in kip848 and "franz-go from 1.22.0 (kgo.ServerSideBalancer" in kip848
    assert kip848.endswith("classic only: sarama, kafka-python")


def test_java_strategies_and_cooperative_support() -> None:
    assert java.supports_cooperative("2.4.0") and not java.supports_cooperative("2.3.1")
    assert java.strategies_supported("4.4.0") == ["cooperative-sticky", "sticky", "range", "roundrobin"]
    assert java.version_key("3.10.1") > java.version_key("3.9.2")


@pytest.mark.slow  # asks Maven Central
def test_unknown_java_version_names_the_real_ones() -> None:
    with pytest.raises(UsageError) as info:
        java.check_version("9.9.9")
    assert str(info.value).startswith("java@9.9.9: Maven Central (org.apache.kafka:kafka-clients) has no release "
                                      "9.9.9; closest: 4.4.0, ")
    with pytest.raises(UsageError, match="runs kafka-clients 2.4.0 or later"):
        java.check_version("2.3.1")
    java.check_version("2.8.2")  # a real one passes


@pytest.mark.slow  # runs the JVM
@pytest.mark.parametrize("version", ["2.4.1", "4.4.0"])
def test_java_harness_rejects_a_bad_config_naming_the_key(tmp_path: Path, version: str) -> None:
    java.ensure(version)
    cfg = {"member": "m", "client": "java", "client_version": version, "client_id": "m",
           "bootstrap_servers": "127.0.0.1:1", "group_id": "g", "topics": ["t"],
           "assignment_strategies": ["cooperative-sticky"], "group_protocol": "classic",
           "group_instance_id": None, "session_timeout_ms": 10000, "heartbeat_interval_ms": 1000,
           "max_poll_interval_ms": 30000, "commit_mode": "sync-batch", "processing_delay_ms": 0,
           "auto_offset_reset": "earliest", "history_path": str(tmp_path / "m.jsonl"), "rack_id": None,
           "extra": {}}
    for broken, expected in ((dict(cfg, session_timeout_ms="10s"), "session_timeout_ms must be an integer"),
                             ({k: v for k, v in cfg.items() if k != "group_id"}, "missing key group_id"),
                             (dict(cfg, commit_mode="never"), "commit_mode never is not one of")):
        path = tmp_path / "cfg.json"
        path.write_text(json.dumps(broken))
        argv, env = java.command(version, path)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and expected in proc.stderr, (proc.returncode, proc.stderr)
    path.write_text("{\"member\": ")  # malformed JSON
    proc = subprocess.run(java.command(version, path)[0], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "JSON error at offset" in proc.stderr, proc.stderr
    # an unknown strategy: recorded as a fatal error in the history, exit 2
    path.write_text(json.dumps(dict(cfg, assignment_strategies=["fair"])))
    proc = subprocess.run(java.command(version, path)[0], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown assignment strategy fair" in proc.stderr, proc.stderr
    event = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[-1])
    assert event["event"] == "error" and event["fatal"] is True


def test_run_stops_at_an_unknown_version_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A version that does not exist is refused before any cell, broker or install starts (exit 2,
    # one line naming the closest real versions, asked of Maven Central): no run directory at all.
    code = main(["run", "--scenario", "crash-restart", "--clients", "reference,java@9.9.9", "--seed", "3",
                 "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "java@9.9.9" in err and "has no release 9.9.9; closest: 4.4.0" in err and len(err.splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []
