"""The kind modules (the harness contract, docs/contracts.md): capabilities, commands, version errors.

Capability answers come from the clients' own sources (see each module's
docstring). The version-error tests ask the real registries (PyPI, the Go
module proxy) and are marked slow; so is the harness run that shows
librdkafka refusing a mixed eager/cooperative list.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conformance import config
from conformance.errors import UsageError
from conformance.history import read_history
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import franz_go, kafka_python, library_version, librdkafka, sarama

KINDS = [librdkafka, kafka_python, sarama, franz_go]


@pytest.mark.parametrize("mod", KINDS, ids=lambda m: m.KIND)
def test_known_versions_are_new_and_old_with_the_default_first(mod) -> None:
    versions = mod.known_versions()
    assert versions[0] == kinds.default_version(mod.KIND)
    assert len(versions) >= 2


def test_cooperative_support_boundaries() -> None:
    assert librdkafka.supports_cooperative("1.6.1") and not librdkafka.supports_cooperative("1.6.0")
    # librdkafka 1.9.2 (checked by constructing a Consumer): range, roundrobin, cooperative-sticky; no sticky.
    assert librdkafka.strategies_supported("1.9.2") == ["cooperative-sticky", "range", "roundrobin"]
    assert librdkafka.needs_legacy_python("1.9.2") and not librdkafka.needs_legacy_python("2.0.2")
    assert [librdkafka.legacy_python(v) for v in ("1.6.1", "1.8.2", "1.9.0", "2.0.2")] == ["3.9", "3.9", "3.10", None]
    assert kafka_python.supports_cooperative("3.0.0") and not kafka_python.supports_cooperative("2.3.3")
    # PR 3696 (member-side incremental rebalancing) first ships in 1.61.0; 1.60.x has the leader side only.
    assert sarama.supports_cooperative("1.61.0") and not sarama.supports_cooperative("1.60.2")
    assert "cooperative-sticky" in sarama.strategies_supported("1.60.1")
    assert "cooperative-sticky" not in sarama.strategies_supported("1.38.1")
    # franz-go: CooperativeStickyBalancer in every 1.x (kgo's default balancer); ServerSideBalancer from 1.22.0.
    assert franz_go.supports_cooperative("1.7.0") and franz_go.strategies_supported("1.7.0")[0] == "cooperative-sticky"
    assert franz_go.supports_server_side_balancer("1.22.0") and not franz_go.supports_server_side_balancer("1.21.7")


def test_strategies_are_canonical_and_match_each_client() -> None:
    assert "sticky" not in librdkafka.strategies_supported("2.16.1")  # librdkafka has no eager sticky
    assert kafka_python.strategies_supported("2.3.3") == ["sticky", "range", "roundrobin"]
    assert kafka_python.strategies_supported("2.0.0") == ["range", "roundrobin"]  # sticky from 2.0.2
    assert sarama.strategies_supported("1.23.1") == ["range", "roundrobin"]  # BalanceStrategySticky from 1.24.0
    assert sarama.build_tags("1.26.4") == ["sarama_sticky"]
    assert sarama.build_tags("1.27.0")[:2] == ["sarama_sticky", "sarama_session_commit"]
    assert kafka_python.strategies_supported("3.0.12")[0] == "cooperative-sticky"
    for mod in KINDS:
        for v in mod.known_versions():
            assert set(mod.strategies_supported(v)) <= {"cooperative-sticky", "sticky", "range", "roundrobin"}


def test_commands_name_the_version_and_config(tmp_path: Path) -> None:
    cfg = tmp_path / "m1.json"
    argv, env = librdkafka.command("2.16.1", cfg)
    assert argv[0].endswith("venvs/librdkafka-2.16.1/bin/python") and argv[-1] == str(cfg)
    assert env["PYTHONPATH"] == str(config.REPO_ROOT)
    argv, env = kafka_python.command("3.0.12", cfg)
    assert "kafka-python-3.0.12" in argv[0] and argv[1].endswith("clients/kafka-python/harness.py")
    argv, env = sarama.command("1.38.1", cfg)
    assert argv == [str(kinds.cache_dir("sarama") / "1.38.1" / "harness"), str(cfg)]
    argv, env = franz_go.command("1.7.0", cfg)
    assert argv == [str(kinds.cache_dir("franz-go") / "1.7.0" / "harness"), str(cfg)] and env == {}


@pytest.mark.slow
def test_pypi_version_errors_name_real_versions() -> None:
    with pytest.raises(UsageError, match=r"no version '9\.9\.9'.*3\.0\.12"):
        kafka_python.ensure("9.9.9")
    assert not (config.VENVS_DIR / "kafka-python-9.9.9").exists()


@pytest.mark.slow
def test_go_version_error_names_both_module_paths() -> None:
    with pytest.raises(UsageError, match=r"^sarama@1\.39\.7: the Go module proxy \(github.com/IBM/sarama, "
                                         r"github.com/Shopify/sarama\) has no release 1\.39\.7; closest: 1\.4.*1\.38\.1"):
        sarama.ensure("1.39.7")
    assert sarama.module_for("1.38.1") == sarama.SHOPIFY_MODULE
    assert sarama.module_for("1.61.1") == sarama.IBM_MODULE


@pytest.mark.slow
def test_franz_go_version_errors_ask_the_proxy_by_exact_version() -> None:
    with pytest.raises(UsageError, match=r"^franz-go@1\.6\.0: .*GroupMetadata.*; choose 1\.7\.0 or later"):
        franz_go.ensure("1.6.0")
    with pytest.raises(UsageError, match=r"^franz-go@1\.21\.99: the Go module proxy \(github.com/twmb/franz-go\) "
                                         r"has no release 1\.21\.99; closest: .*1\.21\.7"):
        franz_go.ensure("1.21.99")
    assert not (kinds.cache_dir("franz-go") / "1.21.99").exists()
    assert franz_go.release_exists("1.7.0") and "1.22.3" in franz_go.listed_versions()


@pytest.mark.slow
def test_franz_go_before_1_22_refuses_the_consumer_group_protocol_with_a_fatal_error(tmp_path: Path) -> None:
    """1.7.0 is built without the franzgo_848 tag (no kgo.ServerSideBalancer): a consumer config gets a
    fatal error naming 1.22.0 and exit 2, never a silently classic member. 1.22.3 has the tag."""
    assert franz_go.build_tags("1.7.0") == franz_go.build_tags("1.21.7") == []
    assert franz_go.build_tags("1.22.0") == franz_go.build_tags("1.22.3") == ["franzgo_848"]
    franz_go.ensure("1.7.0")
    cfg = HarnessConfig(member="m1", client="franz-go", client_version="1.7.0",
                        bootstrap_servers=f"{config.HOST}:9", group_id="g", topics=["t"],
                        history_path=str(tmp_path / "m1.jsonl"), group_protocol="consumer")
    argv, env = franz_go.command("1.7.0", cfg.write(tmp_path / "m1.json"))
    proc = subprocess.run(argv, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=60)
    assert proc.returncode == 2
    events = [e for _, e, problem in read_history(open(tmp_path / "m1.jsonl")) if not problem]
    assert [e["event"] for e in events] == ["started", "error"]
    assert events[1]["fatal"] is True and "needs franz-go 1.22.0 or later" in events[1]["error"], events[1]


@pytest.mark.slow
def test_librdkafka_rejects_a_mixed_list_with_a_fatal_error(tmp_path: Path) -> None:
    librdkafka.ensure("2.16.1")
    cfg = HarnessConfig(member="m1", client="librdkafka", client_version="2.16.1",
                        bootstrap_servers=f"{config.HOST}:9", group_id="g", topics=["t"],
                        history_path=str(tmp_path / "m1.jsonl"),
                        assignment_strategies=["cooperative-sticky", "range"])
    argv, env = librdkafka.command("2.16.1", cfg.write(tmp_path / "m1.json"))
    proc = subprocess.run(argv, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=60)
    assert proc.returncode == 2
    events = [e for _, e, problem in read_history(open(tmp_path / "m1.jsonl")) if not problem]
    assert [e["event"] for e in events] == ["started", "error"]
    assert events[1]["fatal"] is True and "mixing eager and cooperative" in events[1]["error"]


@pytest.mark.slow
def test_librdkafka_1x_venv_runs_python_3_10_and_is_reused() -> None:
    librdkafka.ensure("1.9.2")
    marker = json.loads((librdkafka.venv_dir("librdkafka", "1.9.2") / ".conformance-installed.json").read_text())
    assert marker["python_version"] == librdkafka.legacy_python("1.9.2") == "3.10"
    before = marker["installed_at"]
    librdkafka.ensure("1.9.2")  # idempotent: the complete venv is kept
    again = json.loads((librdkafka.venv_dir("librdkafka", "1.9.2") / ".conformance-installed.json").read_text())
    assert again["installed_at"] == before
    out = subprocess.run([str(librdkafka.venv_python("librdkafka", "1.9.2")), "-c",
                          "import sys, confluent_kafka; print(sys.version_info[:2], confluent_kafka.version()[0])"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "(3, 10) 1.9.2", out.stderr


@pytest.mark.slow
def test_librdkafka_harness_and_its_imports_load_on_the_legacy_python() -> None:
    """The harness and every conformance module it imports stay 3.10-compatible (no 3.11-only syntax/APIs)."""
    librdkafka.ensure("1.9.2")
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('harness', {str(librdkafka.HARNESS)!r})\n"
            "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
            "print(sys.version_info[:2], sorted(m for m in sys.modules if m.startswith('conformance')))\n")
    argv, env = librdkafka.command("1.9.2", Path("unused.json"))
    proc = subprocess.run([argv[0], "-c", code], env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("(3, 10)") and "conformance.members.harness_main" in proc.stdout


def test_librdkafka_specs_name_the_confluent_kafka_release_and_record_the_real_library() -> None:
    # confluent-kafka 2.16.1 bundles librdkafka 2.16.0 (libversion()); 2.0.2 bundles 2.0.2.
    assert librdkafka.is_installed("2.16.1") and librdkafka.is_installed("2.0.2"), "set up by make test"
    assert library_version("librdkafka", "2.16.1") == "2.16.0"
    assert library_version("librdkafka", "2.0.2") == "2.0.2"
    assert (librdkafka.venv_dir("librdkafka", "2.16.1") / librdkafka.LIBRARY_FILE).read_text().strip() == "2.16.0"
    assert library_version("librdkafka", "2.99.0") is None  # not installed: nothing to read
    assert library_version("java", "4.4.0") == "4.4.0" and library_version("sarama", "1.38.1") == "1.38.1"
    listing = subprocess.run([str(config.REPO_ROOT / ".venv" / "bin" / "conformance"), "clients", "list"],
                             capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    row = next(line for line in listing.stdout.splitlines() if line.startswith("librdkafka "))
    assert "2.16.1 (librdkafka 2.16.0)" in row and "2.0.2 [known:" in row


@pytest.mark.slow
def test_sarama_before_1_37_builds_with_one_assignor_and_refuses_what_it_lacks(tmp_path: Path) -> None:
    """Sarama 1.30.0 has neither GroupStrategies (1.37) nor InstanceId (1.34), but has the sticky
    strategy (1.24) and session commits (1.27): the harness builds with only those two tags and says,
    as a fatal error in its history, what a configuration asks that it lacks."""
    sarama.ensure("1.30.0")
    marker = json.loads((kinds.cache_dir("sarama") / "1.30.0" / "install.json").read_text())
    assert (marker["module"], marker["tags"], marker["cooperative_member"]) == (
        sarama.SHOPIFY_MODULE, ["sarama_sticky", "sarama_session_commit"], False)
    for name, change, message in [
        ("static", {"group_instance_id": "g-static"}, "static membership (group_instance_id) needs Sarama 1.34.0"),
        ("two", {"assignment_strategies": ["sticky", "range"]}, "takes exactly one assignment strategy"),
    ]:
        cfg = HarnessConfig(member=name, client="sarama", client_version="1.30.0",
                            bootstrap_servers=f"{config.HOST}:9", group_id="g", topics=["t"],
                            history_path=str(tmp_path / f"{name}.jsonl"),
                            **{"assignment_strategies": ["range"], **change})
        argv, env = sarama.command("1.30.0", cfg.write(tmp_path / f"{name}.json"))
        proc = subprocess.run(argv, env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=60)
        assert proc.returncode == 2, proc.stderr[-2000:]
        events = [e for _, e, problem in read_history(open(tmp_path / f"{name}.jsonl")) if not problem]
        assert [e["event"] for e in events] == ["started", "error"]
        assert events[1]["fatal"] is True and message in events[1]["error"], events[1]
