"""The registry of kinds (conformance.members.kinds): each kind's module owns its knowledge, and
what the rest of the suite knows about kinds derives from it.

Adding a kind must mean its harness, its kind module and its golden files: these tests fail when a
kind's knowledge is copied elsewhere (config's defaults, mixing rules, the golden script, the
table in docs/running.md) or when a kind module reaches into a sibling's private helpers.
"""

from __future__ import annotations

import ast
import subprocess

import pytest

from conformance import config
from conformance.errors import UsageError
from conformance.members import kinds
from conformance.members.command import markdown_table
from conformance.members.harness_config import STRATEGIES
from conformance.members.kinds import FEATURE_NAMES, KIND_MODULES, features_of, has_feature, kind_module
from conformance.members.mixing import bounce_list, plan_mix
from conformance.members.spec import MemberSpec, parse_specs

KINDS_DIR = config.REPO_ROOT / "conformance" / "members" / "kinds"


@pytest.mark.parametrize("kind", list(KIND_MODULES))
def test_every_kind_module_has_the_interface_and_consistent_features(kind: str) -> None:
    module = kind_module(kind)
    for name in ("KIND", "known_versions", "ensure", "command", "supports_cooperative", "strategies_supported"):
        assert hasattr(module, name), f"{module.__name__} lacks {name}"
    assert module.KIND == kind
    assert kinds.default_version(kind) == module.known_versions()[0]
    for version in {*module.known_versions(), *kinds.test_versions(kind), *kinds.minor_versions(kind)}:
        have = features_of(kind, version)
        assert have <= set(FEATURE_NAMES), have - set(FEATURE_NAMES)
        # The features and the module's own answers never disagree.
        assert ("cooperative" in have) == module.supports_cooperative(version), version
        assert [s for s in STRATEGIES if f"assignor:{s}" in have] == list(module.strategies_supported(version)), version


def test_config_is_the_ground_floor() -> None:
    # config imports nothing of the suite: what kinds define is read from the registry, not config.
    tree = ast.parse((config.REPO_ROOT / "conformance" / "config.py").read_text(encoding="utf-8"))
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("conformance")], imported
    assert not hasattr(config, "__getattr__") and not hasattr(config, "DEFAULT_MIX")


def test_defaults_derive_from_the_registry() -> None:
    assert list(kinds.default_versions()) == list(KIND_MODULES)
    assert list(kinds.default_mix()) == [k for k in KIND_MODULES if getattr(kind_module(k), "IN_DEFAULT_MIX", True)]
    assert "franz-go" in kinds.default_mix() and "java" in kinds.default_mix()
    assert kinds.default_version("sarama") == kind_module("sarama").DEFAULT_VERSION
    assert set(kinds.setup_all_specs()) == {f"{k}@{v}" for k in KIND_MODULES if k != "reference"
                                        for v in kinds.test_versions(k)}
    assert MemberSpec.parse("librdkafka").version == kinds.default_version("librdkafka")


def test_features_by_version_read_from_the_clients() -> None:
    # Sarama: InstanceId from 1.34.0, GroupStrategies from 1.37.0, cooperative member from 1.61.0.
    assert not has_feature("sarama", "1.33.0", "static-membership") and has_feature("sarama", "1.34.0", "static-membership")
    assert not has_feature("sarama", "1.36.0", "assignor-list") and has_feature("sarama", "1.37.0", "assignor-list")
    assert not has_feature("sarama", "1.60.2", "cooperative") and has_feature("sarama", "1.61.0", "cooperative")
    # librdkafka and kafka-python 3.x cannot list an eager and a cooperative assignor together; Java can.
    assert not has_feature("librdkafka", "2.16.1", "mix-eager-cooperative")
    assert not has_feature("kafka-python", "3.0.12", "mix-eager-cooperative")
    assert has_feature("java", "2.4.1", "mix-eager-cooperative")
    assert not has_feature("kafka-python", "2.3.3", "static-membership")
    with pytest.raises(ValueError, match="unknown feature"):
        has_feature("java", "4.4.0", "time-travel")


def test_mixing_follows_the_features() -> None:
    # Sarama 1.30 takes one assignor and has no cooperative-sticky: it runs [range] beside Java's upgrade list.
    plan = plan_mix(parse_specs("sarama@1.30.0,java@2.4.1,librdkafka@2.16.1"))
    assert plan.expected_protocol == "eager"
    assert plan.strategies == (("range",), ("cooperative-sticky", "range"), ("range",))
    with pytest.raises(UsageError, match=r"sarama@1\.30\.0 takes exactly one assignor"):
        plan_mix(parse_specs("sarama@1.30.0,java"), ["range", "roundrobin"])
    assert bounce_list(MemberSpec.parse("sarama@1.30.0"), ["sticky", "range"], ("range",)) == ("range",)
    assert bounce_list(MemberSpec.parse("sarama@1.38.1"), ["sticky", "range"], ("range",)) == ("sticky", "range")


def test_static_scenarios_refuse_a_version_without_static_membership(capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import main

    assert main(["run", "--clients", "sarama@1.30.0,java@2.4.1", "--scenario", "static-restart"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["conformance: scenario static-restart runs static members (group.instance.id, KIP-345); "
                   "sarama@1.30.0 has no static membership (sarama has it from 1.34.0)"]


def test_no_kind_module_imports_a_private_name_of_another() -> None:
    offenders = []
    for path in sorted(KINDS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("conformance.members.kinds."):
                offenders += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert offenders == []


def test_the_golden_script_and_the_readme_follow_the_registry() -> None:
    golden = kinds.golden_kinds()
    assert {"java", "sarama", "kafka-python"} <= set(golden)
    for kind in golden:
        assert (config.CLIENTS_DIR / kind / "golden").is_dir(), f"{kind} declares GOLDEN_VERSIONS but has no generator"
    proc = subprocess.run(["bash", str(config.REPO_ROOT / "scripts" / "regen-golden.sh"), "no-such-kind"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(f"(kinds with one: {' '.join(golden)})")
    readme = (config.REPO_ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    assert markdown_table() in readme, "docs/running.md's table of kinds differs from the registry: paste markdown_table()"


def test_known_issues_are_each_kinds_rows() -> None:
    from conformance.members import known_issues

    assert known_issues.table() == tuple(row for kind in KIND_MODULES
                                         for row in getattr(kind_module(kind), "KNOWN_ISSUES", ()))
    assert all(row.kind == kind for kind in KIND_MODULES for row in getattr(kind_module(kind), "KNOWN_ISSUES", ()))
    # Sarama before 1.31 cannot decode a v1+ subscription as leader; the evidence of a real
    # sarama@1.30.0 + java@2.4.1 cell (L1, leader-rotation), and nothing broader, is excused.
    evidence = {"faults": [], "leader_errors": ["consume: kafka: error decoding packet: invalid length"],
                "leader_id": "m0-sarama-58a907f4"}
    found = known_issues.match("L1", "sarama@1.30.0", evidence)
    assert found is not None and "issue 1808" in found.reference
    # From 1.31 it reads OwnedPartitions but not the version 2 and 3 fields after it: the same error,
    # another row (Java 3.4+ subscriptions), until 1.41.1.
    later = known_issues.match("L1", "sarama@1.31.0", evidence)
    assert later is not None and "e9bd1b89" in later.reference
    assert known_issues.match("L1", "sarama@1.41.1", evidence) is None
    assert known_issues.match("L1", "sarama@1.30.0", dict(evidence, leader_errors=["consume: EOF"])) is None
