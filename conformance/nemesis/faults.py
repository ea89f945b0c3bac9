"""The one table of faults: every fault a scenario can inject, and everything the suite knows of it.

:data:`FAULTS` holds one :class:`Fault` per scenario verb that injects a fault. Each row says:

- its **arguments**: the target it takes (a member, a topic, none), its keys with their
  checkers, the keys it requires, and any check across keys. The scenario parser
  (:mod:`conformance.scenarios.parse`) reads them, so a mistake is one line and exit 2 before
  anything starts.
- the **nemesis log lines** it writes (:class:`Line`): for each, whether it can make its target
  look dead to the group (always, or by the toxic rule below), whether its target dies (a kill:
  the member is gone without leaving the group), and which later line heals it. The nemesis log's
  vocabulary (:data:`LOG_LINES`), the pipeline's fault windows (:data:`DEAD_LOOKING`,
  :data:`HEAL_OF`, :data:`HEALED_BY_NEXT_LINE`), the leadership checks' stopped members
  (:data:`STOP_LINES`) and the mutations' quiet spans (:data:`WINDOW_LINES`) are read from these
  rows.
- whether **chaos** may pick it (:class:`ChaosPick`): under which name, with which weight, and how
  the seeded schedule draws its arguments.
- its **implementation** (``act``): what it does to the running cell (:class:`Run`), through the
  nemesis, which logs each step and calls a :class:`Backend`. A backend is the small set of
  primitives that differ between the processes path (SIGKILL, SIGSTOP, the local toxiproxy) and the
  container path (``docker kill``, ``docker pause``, toxiproxy in its container). A compound fault
  (``restart``, ``resubscribe``, the bounces, ``rotate-leader``, ``chaos``) is its own sequence of
  the runner's primitives (start, stop, settle) and of other rows' actions: the runner plays a
  scenario line by calling its row's ``act`` and implements no fault itself.

Guarantees:

- Nothing else names a fault: the parser's verbs, ``Scenario.fault_count``, the chaos schedule,
  the nemesis log's vocabulary and heal map, the checks' dead-looking faults and the mutations'
  windows are derived from :data:`FAULTS` (``tests/test_faults_table.py`` checks that they are).
- The table's order is the parser's order of verbs; chaos draws its picks in ``ChaosPick.rank``
  order, which is fixed so that a seed gives the schedule it always gave.
- A nemesis log line of a fault is written exactly as before this table existed (the pipeline
  and recorded runs read them): ``ts``, ``fault`` (a :class:`Line` name), ``target``, ``phase``,
  ``details``.

The toxic rule (``Line.looks_dead == BY_TOXIC_RULE``): a toxic can make its member look dead when
its type is one of :data:`SILENCING_TOXICS` (the connection hangs, is reset, or closes after a few
bytes: the coordinator stops hearing heartbeats), or when the sum of its
:data:`DELAY_ATTRIBUTES` (latency plus jitter) is at least a session timeout minus a heartbeat
interval, which delays a heartbeat past the coordinator's session deadline. Less latency slows a
member and never makes it look dead.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol

from conformance import config
from conformance.cluster.toxiproxy import TOXIC_ATTRIBUTES, Toxic
from conformance.errors import SuiteError
from conformance.history import now_ms
from conformance.members.mixing import bounce_lists, bounce_steps, group_protocol, protocol_moves
from conformance.values import (
    Schema,
    choice,
    fraction,
    int_in,
    parse_duration_ms,
    positive_duration_ms,
    strategy_list,
    topic_list,
)

#: What a fault's line can do to how its target looks to the group.
LooksDead = Literal["no", "yes", "by-toxic-rule"]
BY_TOXIC_RULE: LooksDead = "by-toxic-rule"
#: ``Line.healed_by`` of a line that the target's next nemesis line heals (a broker fault: the
#: broker is back when its next line is written).
NEXT_LINE = "<the target's next line>"
#: The target a fault takes in a scenario line: a member (``m<i>``, ``each``, ...), a topic, or none.
Target = Literal["member", "topic", "none"]

#: toxiproxy toxics that stop a member's requests or answers outright (see the module docstring).
SILENCING_TOXICS: tuple[str, ...] = ("timeout", "reset_peer", "limit_data")
#: The toxic that delays every message, and its attributes (ms) whose sum is the delay (see the
#: module docstring).
DELAYING_TOXIC: str = "latency"
DELAY_ATTRIBUTES: tuple[str, ...] = ("latency", "jitter")


@dataclass(frozen=True)
class Line:
    """One ``fault`` name a nemesis log line may carry.

    ``looks_dead``: whether the fault invoked by this line can make its target look dead to the
    group (``by-toxic-rule``: as the module docstring's toxic rule says). ``stops``: its target
    member stops until its next ``start`` line; ``dies``: it stops without leaving the group (a
    kill). ``healed_by``: the line that ends it (``NEXT_LINE``: the target's next line), None when
    nothing heals it. ``expires_after``: for a dead-looking fault that lasts a stated time
    (:data:`TIMED_DEAD_LOOKING`), the member setting that time must reach before the group can take the
    member for gone: ``session`` (a frozen or cut-off member misses heartbeats for a session timeout) or
    ``max-poll`` (an application that stops polling keeps heartbeating; its client leaves the group,
    or the coordinator drops it, once ``max.poll.interval.ms`` passed)."""

    name: str
    looks_dead: LooksDead = "no"
    stops: bool = False
    dies: bool = False
    healed_by: str | None = None
    expires_after: Literal["session", "max-poll"] = "session"


@dataclass(frozen=True)
class ChaosPick:
    """One fault chaos may inject: its name in the schedule, its weight, its rank (the order of
    the weighted draw) and ``args``, which draws the fault's arguments from the schedule's random
    generator given the session timeout (ms)."""

    name: str
    weight: int
    rank: int
    args: Callable[[random.Random, int], dict[str, Any]]


class Backend(Protocol):
    """The primitives a fault is made of, per way of running a cell.

    ``handle`` is the backend's handle of a member's current incarnation (what it launched).
    Every method returns once the primitive is in force (a killed member has exited, a paused one
    is frozen, a disabled path refuses connections); a toxic's name is what ``remove_toxic`` takes.
    ``hold_member`` runs before a kill is logged: it keeps the member from doing anything more, so
    that nothing in its history follows the log's ``kill`` line (a no-op where the kill itself acts
    the moment it is sent).
    """

    name: str

    def terminate_member(self, member: str, handle: Any) -> None: ...
    def hold_member(self, member: str, handle: Any) -> None: ...
    def kill_member(self, member: str, handle: Any) -> None: ...
    def pause_member(self, member: str, handle: Any) -> None: ...
    def resume_member(self, member: str, handle: Any) -> None: ...
    def disable_path(self, member: str) -> None: ...
    def enable_path(self, member: str) -> None: ...
    def add_toxic(self, member: str, toxic: Toxic) -> str: ...
    def remove_toxic(self, member: str, toxic_name: str) -> None: ...
    def restart_broker(self, kill: bool) -> None: ...
    def add_partitions(self, topic: str, total: int) -> None: ...
    def disconnect_member(self, member: str, handle: Any) -> None: ...
    def connect_member(self, member: str, handle: Any) -> None: ...


class Injector(Protocol):
    """What a fault's ``act`` uses of the nemesis (:class:`conformance.nemesis.Nemesis`): each call
    logs its nemesis line(s) and does the step through the cell's :class:`Backend`. (A protocol, so
    that the table does not import the nemesis, which reads its vocabulary from the table.)"""

    def terminate(self, name: str, proc: Any) -> None: ...
    def kill(self, name: str, proc: Any) -> None: ...
    def pause(self, name: str, proc: Any) -> None: ...
    def resume(self, name: str, proc: Any) -> None: ...
    def cut(self, name: str) -> None: ...
    def uncut(self, name: str) -> None: ...
    def disconnect(self, name: str, proc: Any) -> None: ...
    def connect(self, name: str, proc: Any) -> None: ...
    def add_toxic(self, name: str, toxic: Toxic) -> str: ...
    def remove_toxic(self, name: str, toxic_name: str) -> None: ...
    def add_partitions(self, topic: str, total: int) -> None: ...
    def broker_restart(self, kill: bool) -> None: ...
    def stall(self, name: str, for_ms: int) -> None: ...
    def stall_end(self, name: str) -> None: ...
    def subscribe(self, name: str, topics: list[str]) -> None: ...


class Member(Protocol):
    """One member of the mix as the running cell holds it (:class:`conformance.scenarios.runner.Slot`):
    its name, spec, harness config (``assignment_strategies``, ``topics``, ``group_protocol``, which a
    compound fault changes before starting it again), its current incarnation (``proc``) and
    whether that is paused."""

    name: str
    spec: Any
    config: Any
    proc: Any
    paused: bool

    @property
    def running(self) -> bool: ...


class ChaosSchedule(Protocol):
    """The cell's seeded schedule (:class:`conformance.scenarios.schedule.Schedule`): ``chaos`` gives
    the steps (``fault``, ``member_index``, ``verb``, ``args``) of a chaos action."""

    def chaos(self, count: int, members: int, session_timeout_ms: int) -> list[Any]: ...


class Run(Protocol):
    """What a fault's ``act`` uses of the running cell (:class:`conformance.scenarios.runner.CellRun`):
    its nemesis, topics, members and schedule; the manifest's record of the mix
    (``expected_protocol``, ``mix_reason``, ``protocol_changes``), which a bounce updates; and the
    runner's primitives. ``start`` starts a member that is not running (logged ``start``, ready when
    it returns); ``stop`` notes an exit nobody asked for, then stops a running member gracefully or
    by a kill (logged ``terminate`` or ``kill``); ``settle`` waits for the group to be stable with the
    runner's bound; ``await_stable`` waits at most ``timeout_ms`` and says whether it was (a timeout
    is in the manifest's notes); ``leader`` is the leader the observer last saw; ``note`` adds a
    note (with its ``ts``) to the manifest; ``command`` gives a running member's application a
    command of its control file (:mod:`conformance.members.control`) and returns the ``ts`` of the
    member's ``control`` event for it, or None (noted) when the member did not act on it in time."""

    nemesis: Injector
    partitions: dict[str, int]
    slots: list[Any]
    schedule: ChaosSchedule
    expected_protocol: str
    mix_reason: str
    protocol_changes: list[dict[str, Any]]
    progress: Callable[[str], None]

    def start(self, slot: Any) -> None: ...
    def stop(self, slot: Any, mode: str = "graceful") -> None: ...
    def settle(self) -> None: ...
    def await_stable(self, timeout_ms: int) -> bool: ...
    def leader(self) -> str | None: ...
    def note(self, **fields: Any) -> None: ...
    def command(self, slot: Any, op: str, **args: Any) -> float | None: ...


#: ``act(run, on, args)``: ``on`` is the member's slot, the topic, or None (by ``Fault.target``);
#: returns whether it acted (a member fault on a member that is not running does nothing).
Act = Callable[[Run, Any, dict[str, Any]], bool]


@dataclass(frozen=True)
class Fault:
    """One row of the table (see the module docstring for what each column is read by).

    ``check(target, args, topics)`` checks what one key's checker cannot (across keys, or
    against ``topics``, each declared topic's partition count at that line of the file, which it
    may update); it raises ``ValueError`` with the message after ``file:line:``.
    ``settle_each``: with target ``each``, the runner waits for the group to settle after acting
    on each member. ``backends``: the backends that have it (a scenario that states a fault its
    cell's backend lacks is refused before anything starts)."""

    verb: str
    summary: str
    target: Target
    act: Act
    keys: Schema = field(default_factory=dict)
    required: tuple[str, ...] = ()
    check: Callable[[str | None, dict[str, Any], dict[str, int]], None] | None = None
    lines: tuple[Line, ...] = ()
    chaos: tuple[ChaosPick, ...] = ()
    settle_each: bool = False
    backends: tuple[str, ...] = ("processes", "docker")

    @property
    def looks_dead(self) -> bool:
        """Whether this fault can make a member (or the broker) look dead to the group."""
        return any(line.looks_dead != "no" for line in self.lines)


# -- implementations ------------------------------------------------------------------------


def _stop(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    if not slot.running:
        return False
    run.nemesis.terminate(slot.name, slot.proc)
    return True


def _kill(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    if not slot.running:
        return False
    run.nemesis.kill(slot.name, slot.proc)
    return True


def _restart(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    """Stop ``slot`` (``mode`` graceful or kill) if it runs, wait ``down``, start it again."""
    run.stop(slot, args.get("mode", "graceful"))
    if args.get("down", 0):
        time.sleep(args["down"] / 1000)
    run.start(slot)
    return True


def _pause(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    if not slot.running:
        return False
    run.nemesis.pause(slot.name, slot.proc)
    slot.paused = True
    time.sleep(args["for"] / 1000)
    run.nemesis.resume(slot.name, slot.proc)
    slot.paused = False
    return True


def _subscribe_config(run: Run, slot: Any, verb: str, topics: list[str]) -> None:
    """Set the topics ``slot`` (re)starts with; SuiteError for a topic the scenario did not declare."""
    unknown = [t for t in topics if t not in run.partitions]
    if unknown:
        raise SuiteError(f"{verb} to undeclared topics {unknown}")
    slot.config.topics = list(topics)


def _stall(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    """The member's application stops calling its client for ``for`` (its control file's ``stall``):
    logged ``stall`` before the command, ``stall-end`` once the stall the member recorded is over."""
    if not slot.running:
        return False
    run.nemesis.stall(slot.name, args["for"])
    acted = run.command(slot, "stall", ms=args["for"])
    if acted is not None:
        time.sleep(max(0.0, acted + args["for"] - now_ms()) / 1000)
    run.nemesis.stall_end(slot.name)
    return True


def _subscribe(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    """The member's application changes its subscription to ``topics`` in place (its control file's
    ``subscribe``; no restart); a later start of the member subscribes to them too."""
    _subscribe_config(run, slot, "subscribe", args["topics"])
    if not slot.running:
        return False
    run.nemesis.subscribe(slot.name, list(args["topics"]))
    run.command(slot, "subscribe", topics=list(args["topics"]))
    return True


def _broker_restart(run: Run, on: None, args: dict[str, Any]) -> bool:
    run.nemesis.broker_restart(kill=args.get("mode", "clean") == "kill")
    return True


def toxic_of(args: dict[str, Any]) -> Toxic:
    """The toxic a ``toxic`` fault's arguments describe (every key but type, for, stream and
    toxicity is a toxic attribute); ``ValueError`` when toxiproxy would not take it."""
    attributes = {k: v for k, v in args.items() if k not in ("type", "for", "stream", "toxicity")}
    return Toxic(type=args["type"], stream=args.get("stream", "downstream"), attributes=attributes,
                 toxicity=args.get("toxicity", 1.0))


def _toxic(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    toxic_name = run.nemesis.add_toxic(slot.name, toxic_of(args))
    time.sleep(args["for"] / 1000)
    run.nemesis.remove_toxic(slot.name, toxic_name)
    return True


def _check_toxic(target: str | None, args: dict[str, Any], topics: dict[str, int]) -> None:
    toxic_of(args)  # the cluster's own rule for a toxic's attributes, applied before any cluster exists


def _cut(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    run.nemesis.cut(slot.name)
    time.sleep(args["for"] / 1000)
    run.nemesis.uncut(slot.name)
    return True


def _disconnect(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    if not slot.running:
        return False
    run.nemesis.disconnect(slot.name, slot.proc)
    time.sleep(args["for"] / 1000)
    run.nemesis.connect(slot.name, slot.proc)
    return True


def _add_partitions(run: Run, topic: str, args: dict[str, Any]) -> bool:
    run.nemesis.add_partitions(topic, args["total"])
    run.partitions[topic] = args["total"]
    return True


def _check_add_partitions(target: str | None, args: dict[str, Any], topics: dict[str, int]) -> None:
    assert target is not None
    if args["total"] <= topics[target]:
        raise ValueError(f"add-partitions {target}: total={args['total']} does not grow it: it has "
                         f"{topics[target]} partitions here; give more than {topics[target]}")
    topics[target] = args["total"]


def _check_topics(verb: str) -> Callable[[str | None, dict[str, Any], dict[str, int]], None]:
    """The check of a fault that subscribes a member to ``topics``: declared topics only."""
    def check(target: str | None, args: dict[str, Any], topics: dict[str, int]) -> None:
        unknown = [t for t in args["topics"] if t not in topics]
        if unknown:
            raise ValueError(f"{verb}: undeclared topic {', '.join(map(repr, unknown))}; "
                             f"declared: {', '.join(topics)}")
    return check


def _resubscribe(run: Run, slot: Any, args: dict[str, Any]) -> bool:
    """Restart ``slot`` gracefully, subscribed to ``topics`` (declared topics only)."""
    _subscribe_config(run, slot, "resubscribe", args["topics"])
    return _restart(run, slot, {"mode": "graceful"})


def _bounce(run: Run, on: None, args: dict[str, Any]) -> bool:
    """Move every member onto the strategy list ``to`` by graceful restarts, in the steps
    :func:`conformance.members.mixing.bounce_steps` gives, the group settling after each. The
    protocol the group is expected to end on follows from the lists it then holds (judged by R5)."""
    to = list(args["to"])
    current = [tuple(slot.config.assignment_strategies) for slot in run.slots]
    moves = bounce_lists(list(zip((slot.spec for slot in run.slots), current)), to)
    for step in bounce_steps(current, moves):
        group = [run.slots[i] for i in step]
        for slot in group:
            run.stop(slot)
        for slot, i in zip(group, step):
            slot.config.assignment_strategies = list(moves[i])
            run.start(slot)
        run.settle()
    run.expected_protocol = group_protocol(moves) or run.expected_protocol
    run.mix_reason = (f"after bouncing to [{', '.join(to)}] the members offer "
                      + "; ".join(f"{s.name}: {', '.join(s.config.assignment_strategies)}" for s in run.slots))
    return True


def _bounce_protocol(run: Run, on: None, args: dict[str, Any]) -> bool:
    """Move members onto group protocol ``to`` (``consumer`` or ``classic``) one at a time, in mix
    order: each member :func:`conformance.members.mixing.protocol_moves` names is stopped gracefully
    (it leaves the group), started on ``to`` with its planned strategy list, and the group settles
    before the next. A member that is not running is started on ``to``. Each change is in
    ``run.protocol_changes`` (``ts`` is when the member starts on ``to``)."""
    to = args["to"]
    moves = protocol_moves([s.spec for s in run.slots], [s.config.group_protocol for s in run.slots], to)
    if not moves:
        run.progress(f"bounce-protocol to={to}: no member moves")
    for i in moves:
        slot = run.slots[i]
        before = slot.config.group_protocol
        run.stop(slot)
        run.protocol_changes.append({"ts": now_ms(), "member": slot.name, "from": before, "to": to})
        slot.config.group_protocol = to
        run.progress(f"bounce-protocol: {slot.name} {before} -> {to}")
        run.start(slot)
        run.settle()
    return True


def _rotate_leader(run: Run, on: None, args: dict[str, Any]) -> bool:
    """Make every member kind lead at least once (L5): stop leaders whose kind has led.

    The broker elects a new leader among the members that remain; a leader whose kind already led
    is stopped too, until a new kind leads; then the stopped members come back as followers.
    Bounded by the number of members; the kinds that led are in the manifest's notes."""
    timeout_ms = args.get("timeout", 60_000)
    kinds = {s.spec.kind for s in run.slots}
    led: set[str] = set()
    by_name = {s.name: s for s in run.slots}
    for _ in range(2 * len(run.slots) + 2):
        if not run.await_stable(timeout_ms):
            run.note(**{"rotate-leader": "the group did not settle; rotation stopped, "
                        f"kinds that led: {sorted(led)} of {sorted(kinds)}"})
            return True
        leader = by_name.get(run.leader() or "")
        if leader is None:
            run.note(**{"rotate-leader": "no leader seen on the wire"})
            return True
        led.add(leader.spec.kind)
        if led >= kinds:
            return True
        stopped = [leader]
        run.stop(leader)
        # Stop further leaders of already-led kinds until a new kind leads.
        while True:
            run.await_stable(timeout_ms)
            nxt = by_name.get(run.leader() or "")
            if nxt is None or nxt in stopped or nxt.spec.kind not in led or not any(
                    s.running for s in run.slots if s is not nxt):
                break
            stopped.append(nxt)
            run.stop(nxt)
        for slot in stopped:
            run.start(slot)
    run.note(**{"rotate-leader": f"kinds that led: {sorted(led)} of {sorted(kinds)}"})
    return True


def _chaos(run: Run, on: None, args: dict[str, Any]) -> bool:
    """``count`` seeded faults (the schedule's chaos steps), ``gap`` apart: each the fault of its
    chaos pick on its member (a member that is not running is started instead); a broker fault
    needs no member. Chaos ends with every member running."""
    gap_ms = args.get("gap", 5000)
    for step in run.schedule.chaos(args["count"], len(run.slots), config.SESSION_TIMEOUT_MS):
        slot = run.slots[step.member_index]
        fault = FAULTS[step.verb]
        run.progress(f"chaos: {step.fault} {slot.name}")
        if fault.target == "none":
            fault.act(run, None, step.args)
        elif not slot.running:
            run.start(slot)
        else:
            fault.act(run, slot, step.args)
        time.sleep(gap_ms / 1000)
    for slot in run.slots:  # chaos ends with everyone back
        if not slot.running:
            run.start(slot)
    return True


# -- the table -------------------------------------------------------------------------------

#: Every fault, in the parser's order of verbs.
FAULTS: dict[str, Fault] = {f.verb: f for f in (
    Fault("stop", "graceful stop (SIGTERM; docker stop)", "member", _stop,
          lines=(Line("terminate", stops=True),), settle_each=True),
    Fault("kill", "crash (SIGKILL; docker kill -s KILL)", "member", _kill,
          lines=(Line("kill", stops=True, dies=True),), settle_each=True),
    Fault("restart", "stop (mode=graceful|kill), wait down=DUR, start again", "member", _restart,
          keys={"mode": choice("graceful", "kill"), "down": parse_duration_ms},
          chaos=(ChaosPick("restart-graceful", 3, 0, lambda rng, session: {
                     "mode": "graceful", "down": rng.choice([0, 1000, 3000])}),
                 ChaosPick("restart-kill", 3, 1, lambda rng, session: {
                     "mode": "kill", "down": rng.choice([0, 1000, 3000])})),
          settle_each=True),
    Fault("pause", "freeze for=DUR, then resume (SIGSTOP/SIGCONT; docker pause/unpause)", "member", _pause,
          keys={"for": positive_duration_ms}, required=("for",),
          lines=(Line("pause", looks_dead="yes", healed_by="resume"), Line("resume")),
          chaos=(ChaosPick("pause", 2, 2, lambda rng, session: {
              "for": rng.choice([session // 2, session + 3000])}),)),
    Fault("broker-restart", "restart the broker (mode=clean|kill)", "none", _broker_restart,
          keys={"mode": choice("clean", "kill")},
          lines=(Line("broker-restart", looks_dead="yes", healed_by=NEXT_LINE),
                 Line("broker-kill", looks_dead="yes", healed_by=NEXT_LINE)),
          chaos=(ChaosPick("broker-restart", 1, 5, lambda rng, session: {}),)),
    Fault("toxic", "a toxiproxy toxic on the member's path for=DUR", "member", _toxic,
          keys={"type": choice(*TOXIC_ATTRIBUTES), "for": positive_duration_ms,
                "stream": choice("upstream", "downstream"), "toxicity": fraction, "*": int_in("toxic *")},
          required=("type", "for"), check=_check_toxic,
          lines=(Line("toxic-add", looks_dead=BY_TOXIC_RULE, healed_by="toxic-remove"), Line("toxic-remove")),
          chaos=(ChaosPick("latency", 2, 3, lambda rng, session: {
              "type": "latency", "latency": rng.choice([100, 300, 800]), "for": rng.choice([3000, 8000])}),)),
    Fault("cut", "the member's toxiproxy proxy down for=DUR, then up", "member", _cut,
          keys={"for": positive_duration_ms}, required=("for",),
          lines=(Line("proxy-disable", looks_dead="yes", healed_by="proxy-enable"), Line("proxy-enable")),
          chaos=(ChaosPick("cut", 2, 4, lambda rng, session: {
              "for": rng.choice([2000, session + 3000])}),)),
    Fault("disconnect", "the member's container off the run's network for=DUR, then back (docker)", "member",
          _disconnect, keys={"for": positive_duration_ms}, required=("for",),
          lines=(Line("net-disconnect", looks_dead="yes", healed_by="net-connect"), Line("net-connect")),
          backends=("docker",)),
    Fault("add-partitions", "grow a topic to total=N partitions (permanent)", "topic", _add_partitions,
          keys={"total": int_in("add-partitions total")}, required=("total",), check=_check_add_partitions,
          lines=(Line("add-partitions"),)),
    Fault("bounce-strategies", "rolling graceful restart onto to=LIST strategies", "none", _bounce,
          keys={"to": strategy_list}, required=("to",)),
    Fault("bounce-protocol", "rolling graceful restart onto group protocol to=consumer|classic (KIP-848)", "none",
          _bounce_protocol, keys={"to": choice("consumer", "classic")}, required=("to",)),
    Fault("resubscribe", "graceful restart subscribed to topics=A,B", "member", _resubscribe,
          keys={"topics": topic_list}, required=("topics",), check=_check_topics("resubscribe")),
    Fault("subscribe", "the member's application changes its subscription to topics=A,B in place", "member",
          _subscribe, keys={"topics": topic_list}, required=("topics",), check=_check_topics("subscribe"),
          lines=(Line("subscribe"),)),
    Fault("stall", "the member's application stops polling for=DUR (its client's threads go on)", "member",
          _stall, keys={"for": positive_duration_ms}, required=("for",),
          lines=(Line("stall", looks_dead="yes", healed_by="stall-end", expires_after="max-poll"),
                 Line("stall-end"))),
    Fault("rotate-leader", "stop the current leader until every kind has led", "none", _rotate_leader,
          keys={"timeout": positive_duration_ms}),
    Fault("chaos", "count=N seeded faults of the chaos picks, gap=DUR apart", "none", _chaos,
          keys={"count": int_in("chaos count"), "gap": parse_duration_ms}, required=("count",)),
)}

#: Lines the runner writes that belong to no fault: a member's start, and a heal that raised in teardown.
RUNNER_LINES: tuple[Line, ...] = (Line("start"), Line("heal-failed"))

# -- what the rest of the suite reads, derived from the table ---------------------------------------

#: Every ``fault`` name of the nemesis log, in table order (start first, heal-failed last).
LOG_LINES: dict[str, Line] = {line.name: line for line in (
    RUNNER_LINES[0], *(line for f in FAULTS.values() for line in f.lines), *RUNNER_LINES[1:])}
#: Lines whose fault can make its target look dead (``toxic-add`` only by the toxic rule).
DEAD_LOOKING: tuple[str, ...] = tuple(n for n, line in LOG_LINES.items() if line.looks_dead != "no")
#: A dead-looking line -> the line that heals it, where one line does.
HEAL_OF: dict[str, str] = {n: line.healed_by for n, line in LOG_LINES.items()
                           if line.looks_dead != "no" and line.healed_by not in (None, NEXT_LINE)}
#: Dead-looking lines that the target's next nemesis line heals.
HEALED_BY_NEXT_LINE: tuple[str, ...] = tuple(n for n in DEAD_LOOKING if LOG_LINES[n].healed_by == NEXT_LINE)
#: Lines after which their member is stopped until its next ``start`` line.
STOP_LINES: tuple[str, ...] = tuple(n for n, line in LOG_LINES.items() if line.stops)
#: Lines after which the runner has asked their member to stop gracefully (it stops, it does not die):
#: the member may close, revoke and leave until its next ``start`` line.
GRACEFUL_STOP_LINES: tuple[str, ...] = tuple(n for n, line in LOG_LINES.items() if line.stops and not line.dies)
#: Lines that open a span where a member may look dead or be dead (dead-looking, or its target dies).
WINDOW_LINES: tuple[str, ...] = tuple(n for n, line in LOG_LINES.items() if line.looks_dead != "no" or line.dies)
#: Dead-looking lines of faults that last a stated time (``for``: a pause, a cut, a disconnect): the member
#: looks dead to the group only when that time reaches its session timeout (a shorter one is noticed by
#: nobody). Dead-looking lines not listed (a broker's restart or kill; a toxic, by the toxic rule) count
#: whatever their length.
TIMED_DEAD_LOOKING: tuple[str, ...] = tuple(line.name for f in FAULTS.values() if "for" in f.keys
                                            for line in f.lines if line.looks_dead == "yes")
#: The timed dead-looking lines whose member looks gone only after ``max.poll.interval.ms``, not a session
#: timeout (``Line.expires_after``: a stalled application keeps heartbeating).
MAX_POLL_TIMED: tuple[str, ...] = tuple(n for n in TIMED_DEAD_LOOKING if LOG_LINES[n].expires_after == "max-poll")


def can_expire(fault: str, lasted_ms: float, session_ms: float, max_poll_ms: float) -> bool:
    """Whether a dead-looking fault line ``fault`` that lasted ``lasted_ms`` can have made the group take
    its member for gone: an untimed one always; a timed one when it lasted its ``expires_after`` bound."""
    if fault not in TIMED_DEAD_LOOKING:
        return True
    return lasted_ms >= (max_poll_ms if fault in MAX_POLL_TIMED else session_ms)


def unsupported(verbs: Any, backend: str) -> list[str]:
    """The fault verbs among ``verbs`` that ``backend`` does not have, each once, in order."""
    return [v for v in dict.fromkeys(verbs) if v in FAULTS and backend not in FAULTS[v].backends]


#: Every chaos pick, in the order of the seeded draw, with the verb it injects.
CHAOS_PICKS: tuple[tuple[ChaosPick, str], ...] = tuple(sorted(
    ((pick, f.verb) for f in FAULTS.values() for pick in f.chaos), key=lambda pv: pv[0].rank))
