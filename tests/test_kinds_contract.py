"""The contract over kinds x versions: every kind, at old and new versions, installs, builds, joins
a group, consumes and leaves it cleanly, against a real broker.

For each case (kind, version), with the strategy list the mixing rules give a lone member of it
(:func:`conformance.members.mixing.plan_mix`):

1. ``ensure`` installs or builds it (idempotent: the cache is reused, nothing is fetched twice);
2. the member joins a group of its own, is assigned every partition of its topic and consumes
   every record produced there;
3. SIGTERM: it exits 0, its history is one clean incarnation (started first, stopped last, no
   fatal error, ownership consistent), and its LeaveGroup crosses the wire (the tap records it).

In the cases of ``CONTROL_CI`` (and every nightly case) the member also obeys its control file
(:mod:`conformance.members.control`) before it is stopped: a ``stall`` keeps its application
from the records produced meanwhile until the stall is over, and a ``subscribe`` to a second topic
gets that topic's partition and records, without a restart.

Tiers: CI runs one old and one new version of every kind on the default broker (each kind's
``TEST_VERSIONS``: the newest and the oldest of them, which must be the oldest any tier runs on
the default broker; ``setup --all`` installs exactly these, so CI builds nothing here). The
nightly tier (``pytest --nightly``) runs the newest patch of every supported minor (each kind
module's ``MINOR_VERSIONS``), the first run of which builds or installs each one into the cache.
Each case runs on the default broker unless its release cannot work with it (its kind's
``BROKER_LIMITS``: librdkafka before 1.8.0 on Kafka 4.x), then on the newest of
``config.TESTED_BROKERS`` it can work with; the case's id names that broker
(``librdkafka@1.6.1-on-3.9.2``). One cluster runs at a time: the cases of the default broker run
first, then the cluster is swapped.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Iterator

import pytest

from conformance import config
from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.history import now_ms
from conformance.members import kinds
from conformance.members.control import ControlWriter
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import KIND_MODULES, kind_module, release_tuple
from conformance.members.launch import launch_member
from conformance.members.mixing import plan_mix
from conformance.members.spec import MemberSpec
from conformance.members.versions import broker_problem, brokers_for
from conformance.rundir import RunDir
from test_harness_common import (
    check_clean_incarnation,
    load_history,
    missing_records,
    owned_after,
    produce_records,
    requests,
    wait_for,
    wire_records,
)

pytestmark = pytest.mark.slow

PARTITIONS = 2
RECORDS_PER_PARTITION = 20


def broker_for(kind: str, version: str) -> str:
    """The broker a case runs on: the default one, unless ``kind@version`` cannot work with it
    (BROKER_LIMITS), then the newest tested broker it can work with (``"none"`` when there is none:
    the tiers test says so)."""
    can = brokers_for(kind, version)
    if config.DEFAULT_BROKER in can:
        return config.DEFAULT_BROKER
    return next((b for b in config.TESTED_BROKERS if b in can), "none")


def ci_cases() -> list[tuple[str, str, str]]:
    """``(kind, version, broker)``: the newest and the oldest of each kind's TEST_VERSIONS (the
    reference has one version)."""
    out: list[tuple[str, str, str]] = []
    for kind in KIND_MODULES:
        versions = kinds.test_versions(kind)
        out += [(kind, v, broker_for(kind, v)) for v in dict.fromkeys((versions[0], versions[-1]))]
    return out


def nightly_cases() -> list[tuple[str, str, str]]:
    """Every kind at the newest patch of each supported minor, but for the CI cases; the cases on
    the default broker first (so that the cluster is swapped at most once per other broker)."""
    ci = {(k, v) for k, v, _ in ci_cases()}
    cases = [(k, v, broker_for(k, v)) for k in KIND_MODULES for v in kinds.minor_versions(k) if (k, v) not in ci]
    return sorted(cases, key=lambda case: case[2] != config.DEFAULT_BROKER)


def case_id(kind: str, version: str, broker: str) -> str:
    return f"{kind}@{version}" + ("" if broker == config.DEFAULT_BROKER else f"-on-{broker}")


CI = ci_cases()
NIGHTLY = nightly_cases()


class Clusters:
    """One running cluster at a time (two cores): the cluster of the broker a case asks for, started
    when first asked for and stopped when a case asks for another broker (or the module ends). Each
    cluster has a member slot for every selected case of the module, and its own run directory."""

    def __init__(self, root: Path, slots: int) -> None:
        self.root, self.slots = root, slots
        self.broker: str | None = None
        self.current: tuple | None = None
        self._stack = ExitStack()

    def get(self, broker: str) -> tuple:
        """``(run, supervisor, cluster)`` of ``broker``, started now unless it is the running one."""
        if broker != self.broker:
            self.close()
            run = RunDir.create(self.root, f"contract-{broker}")
            sup = self._stack.enter_context(Supervisor(run.logs))
            self.current = (run, sup, self._stack.enter_context(Cluster(run, broker, sup, slots=self.slots)))
            self.broker = broker
        assert self.current is not None
        return self.current

    def close(self) -> None:
        self._stack.close()
        self._stack, self.broker, self.current = ExitStack(), None, None


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Clusters]:
    """The module's clusters; a member path for every selected case (each case's member has its own)."""
    slots = max(1, sum(1 for item in request.session.items if item.module is request.module))
    made = Clusters(tmp_path_factory.mktemp("runs"), slots)
    try:
        yield made
    finally:
        made.close()


#: The CI cases whose member also obeys its control file: one per way a harness reads it (the shared
#: Python reader in a client's own venv, the Java harness, the shared Go file); nightly, every case.
CONTROL_CI: frozenset[str] = frozenset({"librdkafka", "java", "franz-go"})
STALL_MS = 2000


def obeys_control(c, run: RunDir, member: str, proc, spec: MemberSpec, topic: str) -> None:
    """The member stalls (nothing consumed while records wait, everything after) and then
    subscribes to a second topic in place (its partition assigned and its records consumed)."""
    control = ControlWriter(run.control(member))
    seq = control.send("stall", now_ms(), ms=STALL_MS)
    acted = proc.wait_event("control", 15, seq=seq)
    assert acted is not None, f"{spec} did not act on its stall command (log {proc.log_path})"
    # the same count again: offsets RECORDS_PER_PARTITION.. of each partition, waiting through the stall
    more = {tp: n + RECORDS_PER_PARTITION
            for tp, n in produce_records(c.direct_bootstrap, topic, RECORDS_PER_PARTITION, PARTITIONS).items()}
    wait_for(lambda: not missing_records(load_history(run.history(member)), more), 60,
             f"{spec} to consume the records produced during its stall (log {proc.log_path})")
    during = [e for e in load_history(run.history(member))
              if e["event"] == "consumed" and acted["ts"] <= e["ts"] < acted["ts"] + STALL_MS - 100]
    assert not during, f"{spec} consumed during its {STALL_MS} ms stall from {acted['ts']}: {during}"
    second = f"{topic}-b"
    c.create_topic(second, 1)
    expected = produce_records(c.direct_bootstrap, second, RECORDS_PER_PARTITION, 1)
    seq = control.send("subscribe", now_ms(), topics=[topic, second])
    assert proc.wait_event("control", 15, seq=seq) is not None, f"{spec} did not act on subscribe ({proc.log_path})"
    wait_for(lambda: (second, 0) in owned_after(load_history(run.history(member))), 90,
             f"{spec} to own {second}-0 after subscribing to it in place (log {proc.log_path})")
    wait_for(lambda: not missing_records(load_history(run.history(member)), expected), 60,
             f"{spec} to consume {second} after subscribing to it (log {proc.log_path})")


def join_consume_leave(cluster: tuple, kind: str, version: str, control: bool = False) -> None:
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
                        control_path=str(run.control(member)), assignment_strategies=strategies)
    proc = launch_member(spec, cfg, run, sup)
    proc.wait_ready(90)
    everything = {(topic, p) for p in range(PARTITIONS)}
    wait_for(lambda: owned_after(load_history(run.history(member))) == everything, 90,
             f"{spec} ({strategies}) to own {sorted(everything)} (log {proc.log_path})")
    wait_for(lambda: not missing_records(load_history(run.history(member)), expected), 60,
             f"{spec} to consume {sum(expected.values())} records (log {proc.log_path})")
    if control:
        obeys_control(c, run, member, proc, spec, topic)
    assert proc.terminate(30) == 0, f"{spec} exit code (log {proc.log_path})"
    events = load_history(run.history(member))
    check_clean_incarnation(events)
    assert events[0]["client"] == kind and events[0]["client_version"] == version
    assert requests(wire_records(run.wire), "LeaveGroup", member), f"no LeaveGroup from {spec} in {run.wire}"


@pytest.mark.parametrize("kind,version,broker", CI, ids=[case_id(*case) for case in CI])
def test_oldest_and_newest_join_and_leave(clusters: Clusters, kind: str, version: str, broker: str) -> None:
    newest = version == kinds.test_versions(kind)[0]
    join_consume_leave(clusters.get(broker), kind, version, control=kind in CONTROL_CI and newest)


@pytest.mark.nightly
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kind,version,broker", NIGHTLY, ids=[case_id(*case) for case in NIGHTLY])
def test_every_minor_joins_and_leaves(clusters: Clusters, kind: str, version: str, broker: str) -> None:
    join_consume_leave(clusters.get(broker), kind, version, control=True)


def test_the_tiers_cover_each_kind_old_and_new() -> None:
    # CI runs, for every kind, its newest release and the oldest that any tier runs on the default
    # broker, both on the default broker; a case leaves the default broker only for a release that
    # cannot work with it, and no tier runs a pairing the suite itself refuses.
    default = config.DEFAULT_BROKER
    assert {k for k, _, _ in CI} == set(KIND_MODULES)
    for kind, version, broker in CI + NIGHTLY:
        assert broker in config.TESTED_BROKERS, f"no tested broker can run {kind}@{version}"
        assert broker_problem(kind, version, broker) is None, (kind, version, broker)
        assert broker == default or broker_problem(kind, version, default), (kind, version, broker)
    for kind in KIND_MODULES:
        ours = [(v, b) for k, v, b in CI if k == kind]
        assert len(ours) == (1 if kind == "reference" else 2), (kind, ours)
        assert all(b == default for _, b in ours), f"CI must run {kind} on the default broker {default}: {ours}"
        ci_oldest = min((release_tuple(v) for v, _ in ours))
        on_default = sorted((v for k, v, b in CI + NIGHTLY if k == kind and b == default), key=release_tuple)
        assert ci_oldest <= release_tuple(on_default[0]), \
            f"CI's oldest {kind} is {ours}, but {on_default[0]} runs on the default broker {default}"
        every = [v for k, v, _ in CI + NIGHTLY if k == kind]
        assert max(release_tuple(v) for v, _ in ours) >= max(release_tuple(v) for v in every), (kind, ours, every)
