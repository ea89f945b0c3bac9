"""Every harness kind under faults and settings, against one real broker (module-scoped).

Stories (each waits for conditions with bounded deadlines; nothing is timed):

- SIGKILL does not leave the group (every kind, a new and an old release): two
  groups per kind run side by side, one where the new release is killed and its
  old-release peer survives, one the other way round. The wire shows no
  LeaveGroup from the killed member; the peer receives the killed member's
  partitions in a SyncGroup of a later generation than the killed member's last
  one (which, with no LeaveGroup, only the session timeout can cause).
- SIGTERM leaves (Java, both releases; the other kinds are covered in
  test_harness_members.py): a LeaveGroup request from that member on the wire.
- One member of each registered kind (reference, java, librdkafka, sarama,
  kafka-python, franz-go at their defaults) in one cooperative group converges with every partition
  owned exactly once; every history validates against conformance.history.
- Static membership (Java, librdkafka and franz-go): a static member killed and restarted
  within the session timeout gets its partitions back while its peer sends no
  JoinGroup and is revoked, assigned or loses nothing. The same check catches
  the violating story: a dynamic member's restart makes the peer rejoin.
- Pause (Java, librdkafka and franz-go): SIGSTOP past the session timeout hands the
  paused member's partitions to its peer; after SIGCONT the paused member loses
  (or revokes) its old partitions before anything is assigned again, and the
  group converges with every partition owned exactly once.
- processing_delay_ms (Java, librdkafka and franz-go): every record is consumed and
  committed, and each consumed batch of n records comes at least n * delay
  after the member's previous event (a sleep is a lower bound, never an upper).
- Commit modes (Java, librdkafka and franz-go, three groups side by side): ``auto``
  commits on the broker without the harness committing; ``sync-batch`` commits
  while consuming; ``on-revoke`` commits nothing until SIGTERM, then everything.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from kafka import KafkaAdminClient

from conformance import config
from conformance.cluster import Cluster
from conformance.cluster.supervisor import Supervisor
from conformance.members import kinds
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import KIND_MODULES, kind_module
from conformance.members.launch import MemberProcess, launch_member
from conformance.members.spec import MemberSpec
from conformance.rundir import RunDir
from test_harness_common import (
    assigned_after_generation,
    check_clean_incarnation,
    incarnations,
    last_assignment_generation,
    load_history,
    missing_records,
    owned_after,
    ownership_problems,
    produce_records,
    requests,
    wait_for,
    wire_records,
)

pytestmark = pytest.mark.slow

PARTITIONS = 4
WAIT = config.HARNESS_TEST_WAIT_S
FAST = dict(session_timeout_ms=config.HARNESS_TEST_SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=config.HARNESS_TEST_HEARTBEAT_INTERVAL_MS,
            max_poll_interval_ms=config.MAX_POLL_INTERVAL_MS)
STATIC = dict(FAST, session_timeout_ms=config.HARNESS_TEST_STATIC_SESSION_TIMEOUT_MS)

#: kind -> (new release, old release, a strategy list both releases run).
PAIRS: dict[str, tuple[str, str, list[str]]] = {
    "java": ("4.4.0", "2.8.1", ["cooperative-sticky"]),
    "librdkafka": ("2.16.1", "1.9.2", ["cooperative-sticky"]),
    "sarama": ("1.61.1", "1.38.1", ["range"]),         # 1.38.1 has no cooperative-sticky
    "kafka-python": ("3.0.12", "2.3.3", ["range"]),    # 2.x is eager only; 3.x cannot mix
    "franz-go": ("1.22.3", "1.7.0", ["cooperative-sticky"]),
}
#: The kinds the setting tests run on: Java, librdkafka and franz-go.
SETTING_KINDS = [("java", "4.4.0"), ("librdkafka", "2.16.1"), ("franz-go", "1.22.3")]
#: One member of each registered kind (conformance.members.kinds), each at its default version.
MIX = list(KIND_MODULES)


class Env:
    def __init__(self, run: RunDir, sup: Supervisor, cluster: Cluster) -> None:
        self.run, self.sup, self.cluster = run, sup, cluster
        self.procs: list[MemberProcess] = []

    def topic(self, name: str, partitions: int = PARTITIONS) -> set[tuple[str, int]]:
        self.cluster.create_topic(name, partitions)
        return {(name, p) for p in range(partitions)}

    def produce(self, topic: str, per_partition: int, partitions: int = PARTITIONS) -> dict[tuple[str, int], int]:
        return produce_records(self.cluster.direct_bootstrap, topic, per_partition, partitions)

    def start(self, member: str, kind: str, version: str, topic: str, group: str, strategies: list[str],
              wait: bool = True, **overrides: Any) -> MemberProcess:
        cfg = HarnessConfig(member=member, client=kind, client_version=version,
                            bootstrap_servers=self.cluster.bootstrap_for(member), group_id=group, topics=[topic],
                            history_path=str(self.run.history(member)), assignment_strategies=strategies,
                            **overrides)
        proc = launch_member(MemberSpec(kind, version), cfg, self.run, self.sup)
        self.procs.append(proc)
        if wait:
            proc.wait_ready(WAIT)
        return proc

    def history(self, member: str) -> list[dict]:
        return load_history(self.run.history(member))

    def owned(self, member: str) -> set[tuple[str, int]]:
        return owned_after(self.history(member))

    def owners(self, members: list[str]) -> dict[str, set[tuple[str, int]]]:
        return {m: self.owned(m) for m in members}

    def wire(self) -> list[dict]:
        return wire_records(self.run.wire)

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        admin = KafkaAdminClient(bootstrap_servers=self.cluster.direct_bootstrap)
        try:
            offsets = admin.list_group_offsets(group).get(group, {})
            return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items() if om.offset >= 0}
        finally:
            admin.close()

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.alive():
                proc.resume()  # a paused process cannot handle SIGTERM
                proc.terminate(30)
        self.procs.clear()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    for kind, (new, old, _) in PAIRS.items():
        kind_module(kind).ensure(new)
        kind_module(kind).ensure(old)
    run = RunDir.create(tmp_path_factory.mktemp("faults"), "harness-faults")
    # One slot per member name the module starts (57 with franz-go in every list; a slot is kept
    # for the cluster's life), with room for a few more.
    with Supervisor(run.logs) as sup, Cluster(run, supervisor=sup, slots=64) as cluster:
        yield Env(run, sup, cluster)


@pytest.fixture
def envt(env: Env) -> Iterator[Env]:
    """The module's cluster; every member a test started is stopped when it ends, pass or fail."""
    yield env
    env.stop_all()


def converged(env: Env, members: list[str], everything: set[tuple[str, int]]) -> bool:
    owners = env.owners(members)
    return not ownership_problems(owners, everything) and all(owners.values())


# ---------------------------------------------------------------------------
# SIGKILL and SIGTERM
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(PAIRS))
def test_sigkill_does_not_leave_and_the_peer_takes_over_in_a_later_generation(envt: Env, kind: str) -> None:
    env = envt
    new, old, strategies = PAIRS[kind]
    cases = []  # (killed member, its proc, peer member, everything)
    for victim, survivor in ((new, old), (old, new)):
        tag = f"{kind}-kill-{victim}".replace(".", "_")
        everything = env.topic(tag)
        peer = env.start(f"{tag}-peer", kind, survivor, tag, f"g-{tag}", strategies, **FAST)
        wait_for(lambda peer=peer, everything=everything: env.owned(peer.name) == everything, WAIT,
                 f"{peer.name} to own {sorted(everything)}")
        doomed = env.start(f"{tag}-victim", kind, victim, tag, f"g-{tag}", strategies, **FAST)
        cases.append((doomed, peer, everything))
    for doomed, peer, everything in cases:
        wait_for(lambda doomed=doomed, peer=peer, everything=everything:
                 converged(env, [doomed.name, peer.name], everything), WAIT,
                 f"{doomed.name} and {peer.name} to share {sorted(everything)}")
    records = env.wire()
    killed: list[tuple[Any, Any, set, set, int]] = []
    for doomed, peer, everything in cases:
        held = env.owned(doomed.name)
        generation = last_assignment_generation(records, doomed.name)
        assert generation is not None, f"no SyncGroup response to {doomed.name} on the wire"
        doomed.kill()
        killed.append((doomed, peer, everything, held, generation))
    for doomed, peer, everything, held, generation in killed:
        wait_for(lambda peer=peer, everything=everything: env.owned(peer.name) == everything, WAIT,
                 f"{peer.name} to own every partition after {doomed.name} was killed")
        records = env.wire()
        assert not requests(records, "LeaveGroup", doomed.name), f"{doomed.name} was killed yet sent LeaveGroup"
        later = assigned_after_generation(records, peer.name, generation)
        assert held <= later, (f"{peer.name} did not receive {sorted(held - later)} (held by the killed "
                               f"{doomed.name} in generation {generation}) in a later generation")
        assert env.history(doomed.name)[-1]["event"] != "stopped"
    env.stop_all()
    for _doomed, peer, *_ in killed:
        check_clean_incarnation(env.history(peer.name))


@pytest.mark.parametrize("version", [PAIRS["java"][0], PAIRS["java"][1]])
def test_java_sigterm_sends_leavegroup(envt: Env, version: str) -> None:
    env = envt
    tag = f"java-term-{version}".replace(".", "_")
    everything = env.topic(tag)
    leaving = env.start(f"{tag}-a", "java", version, tag, f"g-{tag}", ["cooperative-sticky"], **FAST)
    peer = env.start(f"{tag}-b", "java", PAIRS["java"][0], tag, f"g-{tag}", ["cooperative-sticky"], **FAST)
    wait_for(lambda: converged(env, [leaving.name, peer.name], everything), WAIT, "the two members to share")
    assert leaving.terminate(30) == 0
    check_clean_incarnation(env.history(leaving.name))
    assert requests(env.wire(), "LeaveGroup", leaving.name), f"no LeaveGroup request from {leaving.name}"
    wait_for(lambda: env.owned(peer.name) == everything, WAIT, f"{peer.name} to own every partition")


# ---------------------------------------------------------------------------
# One member of each kind
# ---------------------------------------------------------------------------

def test_one_member_of_each_kind_converges_with_every_partition_owned_once(envt: Env) -> None:
    env = envt
    everything = env.topic("mix", 2 * len(MIX))
    names = [f"mix-{kind}" for kind in MIX]
    for name, kind in zip(names, MIX):
        env.start(name, kind, kinds.default_version(kind), "mix", "g-mix", ["cooperative-sticky"],
                  wait=False, **FAST)
    for proc in env.procs:
        proc.wait_ready(WAIT)
    wait_for(lambda: converged(env, names, everything), WAIT,
             f"{names} to own every partition of 'mix' exactly once (each some)")
    env.stop_all()
    for name in names:
        check_clean_incarnation(env.history(name))  # every line validates (load_history)
    for name, kind in zip(names, MIX):
        protocols = {e.get("protocol") for e in env.history(name) if e["event"] == "assigned"}
        assert protocols == {"cooperative"}, f"{name} ({kind}) assigned under {protocols}"


# ---------------------------------------------------------------------------
# Static membership, pause, processing delay, commit modes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind,version", SETTING_KINDS, ids=[k for k, _ in SETTING_KINDS])
def test_static_member_restarted_within_session_timeout_moves_nothing(envt: Env, kind: str, version: str) -> None:
    env = envt
    tag = f"static-{kind}"
    everything = env.topic(tag)
    peer = env.start(f"{tag}-peer", kind, version, tag, f"g-{tag}", ["cooperative-sticky"], **STATIC)
    wait_for(lambda: env.owned(peer.name) == everything, WAIT, f"{peer.name} (the leader) to own everything")
    static = env.start(f"{tag}-s", kind, version, tag, f"g-{tag}", ["cooperative-sticky"],
                       group_instance_id=f"{tag}-instance", **STATIC)
    wait_for(lambda: converged(env, [static.name, peer.name], everything), WAIT, "the two members to share")
    held, peer_held = env.owned(static.name), env.owned(peer.name)
    peer_events = len(env.history(peer.name))
    restart_ts = max(r["ts"] for r in env.wire()) if env.wire() else 0.0
    static.restart(kill=True)
    static.wait_ready(WAIT)
    wait_for(lambda: owned_after(incarnations(env.history(static.name))[-1]) == held, WAIT,
             f"{static.name} to get {sorted(held)} back after its restart")
    rejoins = requests(env.wire(), "JoinGroup", static.name, restart_ts)
    assert rejoins and all(r.get("group_instance_id") == f"{tag}-instance" for r in rejoins), rejoins
    assert peer_disturbance(env, peer.name, restart_ts, peer_events) == []
    assert env.owned(peer.name) == peer_held


def peer_disturbance(env: Env, peer: str, since_ts: float, since_event: int) -> list[str]:
    """How ``peer`` was disturbed since a restart: its JoinGroup requests, its partition moves ([] if none)."""
    problems = [f"{peer} sent JoinGroup (generation {r.get('generation')}): a rebalance"
                for r in requests(env.wire(), "JoinGroup", peer, since_ts)]
    problems += [f"{peer} {e['event']} {e['partitions']}" for e in env.history(peer)[since_event:]
                 if e["event"] in ("assigned", "revoked", "lost")]
    return problems


def test_dynamic_member_restart_disturbs_the_peer(envt: Env) -> None:
    """The static test's check on a violating story: without group.instance.id a restart rebalances."""
    env = envt
    tag = "dynamic-librdkafka"
    everything = env.topic(tag)
    peer = env.start(f"{tag}-peer", "librdkafka", "2.16.1", tag, f"g-{tag}", ["cooperative-sticky"], **FAST)
    wait_for(lambda: env.owned(peer.name) == everything, WAIT, f"{peer.name} to own everything")
    member = env.start(f"{tag}-d", "librdkafka", "2.16.1", tag, f"g-{tag}", ["cooperative-sticky"], **FAST)
    wait_for(lambda: converged(env, [member.name, peer.name], everything), WAIT, "the two members to share")
    peer_events = len(env.history(peer.name))
    restart_ts = max(r["ts"] for r in env.wire())
    member.restart(kill=True)
    member.wait_ready(WAIT)
    wait_for(lambda: peer_disturbance(env, peer.name, restart_ts, peer_events), WAIT,
             f"{peer.name} to rejoin after a dynamic member's restart")


@pytest.mark.parametrize("kind,version", SETTING_KINDS, ids=[k for k, _ in SETTING_KINDS])
def test_pause_past_the_session_timeout_then_resume(envt: Env, kind: str, version: str) -> None:
    env = envt
    tag = f"pause-{kind}"
    everything = env.topic(tag)
    peer = env.start(f"{tag}-peer", kind, version, tag, f"g-{tag}", ["cooperative-sticky"], **FAST)
    paused = env.start(f"{tag}-p", kind, version, tag, f"g-{tag}", ["cooperative-sticky"], **FAST)
    wait_for(lambda: converged(env, [paused.name, peer.name], everything), WAIT, "the two members to share")
    held = env.owned(paused.name)
    before = len(env.history(paused.name))
    paused.pause()
    wait_for(lambda: env.owned(peer.name) == everything, WAIT,
             f"{peer.name} to take over while {paused.name} is stopped")
    paused.resume()
    wait_for(lambda: converged(env, [paused.name, peer.name], everything), WAIT, "the group to converge again")
    after = env.history(paused.name)[before:]
    released: set[tuple[str, int]] = set()
    for e in after:
        if e["event"] == "assigned":
            break
        if e["event"] in ("lost", "revoked"):
            released |= {(t, p) for t, p in e["partitions"]}
    assert held <= released, (f"{paused.name} did not give up {sorted(held - released)} before its next "
                              f"assignment: {[e['event'] for e in after]}")
    env.stop_all()
    check_clean_incarnation(env.history(paused.name))
    check_clean_incarnation(env.history(peer.name))


@pytest.mark.parametrize("kind,version", SETTING_KINDS, ids=[k for k, _ in SETTING_KINDS])
def test_processing_delay_applies_per_record(envt: Env, kind: str, version: str) -> None:
    env = envt
    tag, delay_ms = f"delay-{kind}", 25
    env.topic(tag)
    expected = env.produce(tag, 15)
    member = env.start(f"{tag}-m", kind, version, tag, f"g-{tag}", ["cooperative-sticky"],
                       processing_delay_ms=delay_ms, **FAST)
    wait_for(lambda: not missing_records(env.history(member.name), expected), WAIT, "every record consumed")
    wait_for(lambda: env.committed(f"g-{tag}") == expected, WAIT, "every record committed")
    events = env.history(member.name)
    for prev, e in zip(events, events[1:]):
        if e["event"] == "consumed":
            assert e["ts"] - prev["ts"] >= delay_ms * e["count"] - 1, (
                f"batch of {e['count']} at {e['ts']} only {e['ts'] - prev['ts']:.0f} ms after {prev['event']}")


@pytest.mark.parametrize("kind,version", SETTING_KINDS, ids=[k for k, _ in SETTING_KINDS])
def test_commit_modes(envt: Env, kind: str, version: str) -> None:
    env = envt
    members: dict[str, tuple[MemberProcess, str, dict]] = {}
    for mode in ("auto", "sync-batch", "on-revoke"):
        tag = f"commit-{kind}-{mode}"
        env.topic(tag)
        expected = env.produce(tag, 10)
        members[mode] = (env.start(f"{tag}-m", kind, version, tag, f"g-{tag}", ["cooperative-sticky"],
                                   commit_mode=mode, wait=False, **FAST), f"g-{tag}", expected)
    for proc, _group, expected in members.values():
        proc.wait_ready(WAIT)
        wait_for(lambda proc=proc, expected=expected: not missing_records(env.history(proc.name), expected), WAIT,
                 f"{proc.name} consumes all")

    def commits(proc: MemberProcess) -> list[dict]:
        return [e for e in env.history(proc.name) if e["event"] == "committed"]

    proc, group, expected = members["auto"]
    wait_for(lambda: env.committed(group) == expected, WAIT, "auto-commit to reach the broker")
    assert not commits(proc), "auto mode: the harness itself committed while running"
    proc, group, expected = members["sync-batch"]
    wait_for(lambda: env.committed(group) == expected, WAIT, "sync-batch commits to reach the broker")
    assert commits(proc) and all(e["error"] is None for e in commits(proc))
    proc, group, expected = members["on-revoke"]
    assert not commits(proc) and env.committed(group) == {}, "on-revoke mode committed before any revoke"
    assert proc.terminate(30) == 0
    assert env.committed(group) == expected, "on-revoke mode: SIGTERM did not commit what was consumed"
    tail = [e["event"] for e in env.history(proc.name)]
    assert "committed" in tail and tail.index("committed") > max(
        i for i, e in enumerate(tail) if e == "consumed"), tail
    env.stop_all()
    for proc, group, expected in members.values():
        check_clean_incarnation(env.history(proc.name))
        assert env.committed(group) == expected
