"""The contract over kinds x versions: every kind, at its oldest and newest version, installs, builds,
joins a group, consumes and leaves it cleanly, against a real broker.

For each case (kind, version), with the strategy list the mixing rules give a lone member of it
(:func:`conformance.scenarios.mixing.plan_mix`):

1. ``ensure`` installs or builds it (idempotent: the cache is reused, nothing is fetched twice);
2. the member joins a group of its own, is assigned every partition of its topic and consumes
   every record produced there;
3. SIGTERM: it exits 0, its history is one clean incarnation (started first, stopped last, no
   fatal error, ownership consistent), and its LeaveGroup crosses the wire (the tap records it).

Tiers: CI runs one old and one new version of every kind (each kind's ``TEST_VERSIONS``: the
newest and the oldest of them; ``setup --all`` installs exactly these, so CI builds nothing here).
The nightly tier (``pytest --nightly``) runs the newest patch of every supported minor (each kind
module's ``MINOR_VERSIONS``), the first run of which builds or installs each one into the cache.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.members.harness_config import HarnessConfig
from conformance.members import kinds
from conformance.members.kinds import KIND_MODULES, kind_module, release_tuple
from conformance.members.launch import launch_member
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir
from conformance.scenarios.mixing import plan_mix

from test_harness_common import (check_clean_incarnation, load_history, missing_records, owned_after,
                                 produce_records, requests, wait_for, wire_records)

pytestmark = pytest.mark.slow

PARTITIONS = 2
RECORDS_PER_PARTITION = 20


def ci_cases() -> list[tuple[str, str]]:
    """The newest and the oldest of each kind's TEST_VERSIONS (the reference has one version)."""
    out: list[tuple[str, str]] = []
    for kind in KIND_MODULES:
        versions = kinds.test_versions(kind)
        out += [(kind, v) for v in dict.fromkeys((versions[0], versions[-1]))]
    return out


def nightly_cases() -> list[tuple[str, str]]:
    """Every kind at the newest patch of each supported minor, but for the CI cases."""
    ci = set(ci_cases())
    return [(k, v) for k in KIND_MODULES for v in kinds.minor_versions(k) if (k, v) not in ci]


CI = ci_cases()
NIGHTLY = nightly_cases()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[tuple]:
    """One broker for the module; a member path for every selected case (each case's member has its own)."""
    run = RunDir.create(tmp_path_factory.mktemp("runs"), "contract")
    slots = max(1, sum(1 for item in request.session.items if item.module is request.module))
    with Supervisor(run.logs) as sup, Cluster(run, supervisor=sup, slots=slots) as c:
        yield run, sup, c


def join_consume_leave(cluster: tuple, kind: str, version: str) -> None:
    run, sup, c = cluster
    spec = MemberSpec(kind, version)
    kind_module(kind).ensure(version)
    tag = f"{kind}-{version}".replace(".", "_")
    topic, group, member = f"contract-{tag}", f"g-contract-{tag}", f"c-{tag}"
    c.create_topic(topic, PARTITIONS)
    expected = produce_records(c.direct_bootstrap, topic, RECORDS_PER_PARTITION, PARTITIONS)
    strategies = list(plan_mix([spec]).strategies[0])
    cfg = HarnessConfig(member=member, client=kind, client_version=version, bootstrap_servers=c.bootstrap_for(member),
                        group_id=group, topics=[topic], history_path=str(run.history(member)),
                        assignment_strategies=strategies)
    proc = launch_member(spec, cfg, run, sup)
    proc.wait_ready(90)
    everything = {(topic, p) for p in range(PARTITIONS)}
    wait_for(lambda: owned_after(load_history(run.history(member))) == everything, 90,
             f"{spec} ({strategies}) to own {sorted(everything)} (log {proc.log_path})")
    wait_for(lambda: not missing_records(load_history(run.history(member)), expected), 60,
             f"{spec} to consume {sum(expected.values())} records (log {proc.log_path})")
    assert proc.terminate(30) == 0, f"{spec} exit code (log {proc.log_path})"
    events = load_history(run.history(member))
    check_clean_incarnation(events)
    assert events[0]["client"] == kind and events[0]["client_version"] == version
    assert requests(wire_records(run.wire), "LeaveGroup", member), f"no LeaveGroup from {spec} in {run.wire}"


@pytest.mark.parametrize("kind,version", CI, ids=[f"{k}@{v}" for k, v in CI])
def test_oldest_and_newest_join_and_leave(cluster: tuple, kind: str, version: str) -> None:
    join_consume_leave(cluster, kind, version)


@pytest.mark.nightly
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kind,version", NIGHTLY, ids=[f"{k}@{v}" for k, v in NIGHTLY])
def test_every_minor_joins_and_leaves(cluster: tuple, kind: str, version: str) -> None:
    join_consume_leave(cluster, kind, version)


def test_the_tiers_cover_each_kind_old_and_new() -> None:
    kinds_in_ci = {k for k, _ in CI}
    assert kinds_in_ci == set(KIND_MODULES)
    for kind in KIND_MODULES:
        ours = [v for k, v in CI if k == kind]
        assert len(ours) == (1 if kind == "reference" else 2), (kind, ours)
        # The CI's old version is the oldest any tier runs for that kind.
        assert min(release_tuple(v) for v in ours) <= min(release_tuple(v) for k, v in NIGHTLY + CI if k == kind)
