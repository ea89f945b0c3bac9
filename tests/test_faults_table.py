"""The table of faults is the single source of what a fault is (pure Python, no cluster).

Stories:

- The parser's verbs, ``Scenario.fault_count``'s verbs, the chaos schedule's picks, the nemesis
  log's vocabulary and heal map, the checks' dead-looking faults, heals and stopped members, and
  the mutations' windows are all read from :data:`conformance.nemesis.faults.FAULTS`; nothing else in the package names a
  fault's log line.
- Every fault chaos draws is a fault a scenario file could state: its arguments, written as a
  scenario line, parse back to the same arguments.
- The seeded chaos schedule is what it was before the table existed (pinned steps of seed 11).
- The nemesis writes each fault's lines under the table's names, heals what is still in force in
  teardown, and calls the backend's primitive for each step (a backend that records the calls;
  real backends are exercised by the real cells of test_e2e_slice.py and test_harness_faults.py).
- The compound faults (restart, resubscribe, the bounces, rotate-leader, chaos) are their rows' acts,
  not the runner's: each asks the runner for primitives in the order its story says (a run that
  records the calls; the real cells play them against real members).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

import conformance
from conformance.cluster.toxiproxy import Toxic
from conformance.errors import UsageError
from conformance.nemesis import FAULTS as LOG_FAULTS
from conformance.nemesis import Nemesis, NemesisLog, faults
from conformance.scenarios import model, parse
from conformance.scenarios.schedule import Schedule

PACKAGE = Path(conformance.__file__).parent


def test_parser_verbs_are_the_table_plus_start_sleep_await() -> None:
    assert [v for v in parse.ACTIONS if v not in ("start", "sleep", "await")] == list(faults.FAULTS)
    for verb, fault in faults.FAULTS.items():
        target, keys, required = parse.ACTIONS[verb]
        assert keys is fault.keys and required == fault.required
        assert target == ("required" if fault.target == "member" else fault.target)
    assert model.FAULT_VERBS == frozenset(faults.FAULTS)
    # Every fault verb is documented in the scenario format's table.
    for verb in faults.FAULTS:
        assert f"``{verb}" in parse.__doc__, verb


def test_the_parser_uses_each_faults_own_check() -> None:
    good = "name demo\ntopic orders partitions=3\nphase one\n  start each\n"
    with pytest.raises(UsageError, match=r"demo.scenario:5: toxic latency: .*missing \['latency'\]"):
        parse.parse_scenario(good + "  toxic m0 type=latency rate=5 for=1s\n", Path("demo.scenario"))
    with pytest.raises(UsageError, match=r"demo.scenario:5: add-partitions orders: total=2 does not grow it"):
        parse.parse_scenario(good + "  add-partitions orders total=2\n", Path("demo.scenario"))


def test_log_vocabulary_heals_and_windows_come_from_the_table() -> None:
    lines = [line.name for f in faults.FAULTS.values() for line in f.lines]
    assert LOG_FAULTS == ("start", *lines, "heal-failed")
    assert len(set(LOG_FAULTS)) == len(LOG_FAULTS)
    # What the checks and the mutations read is the table's, not a copy.
    from conformance.pipeline.checks import common
    assert common.DEAD_LOOKING is faults.DEAD_LOOKING and common.HEAL_OF is faults.HEAL_OF
    from conformance.mutate import run_edit
    assert run_edit._WINDOW_FAULTS is faults.WINDOW_LINES
    from conformance.pipeline.checks import leadership
    assert leadership._STOPS is faults.STOP_LINES and faults.STOP_LINES == ("terminate", "kill")
    assert faults.GRACEFUL_STOP_LINES == ("terminate",)
    assert set(faults.DEAD_LOOKING) == {"pause", "proxy-disable", "toxic-add", "broker-restart", "broker-kill",
                                        "net-disconnect", "stall"}
    assert faults.HEAL_OF == {"pause": "resume", "proxy-disable": "proxy-enable", "toxic-add": "toxic-remove",
                              "net-disconnect": "net-connect", "stall": "stall-end"}
    assert set(faults.WINDOW_LINES) == set(faults.DEAD_LOOKING) | {"kill"}
    assert faults.TIMED_DEAD_LOOKING == ("pause", "proxy-disable", "net-disconnect", "stall")
    assert common.TIMED_DEAD_LOOKING is faults.TIMED_DEAD_LOOKING
    for name, line in faults.LOG_LINES.items():
        assert line.healed_by in (None, faults.NEXT_LINE) or line.healed_by in faults.LOG_LINES, name
    looks_dead = {f.verb for f in faults.FAULTS.values() if f.looks_dead}
    assert looks_dead == {"pause", "broker-restart", "toxic", "cut", "disconnect", "stall"}


def test_each_backend_has_the_faults_the_table_gives_it() -> None:
    from conformance.cluster.backend import ProcessesBackend
    from conformance.containers.backend import DockerBackend

    assert faults.unsupported(["kill", "disconnect", "start", "disconnect", "cut"], "processes") == ["disconnect"]
    assert faults.unsupported(list(faults.FAULTS), "docker") == []
    primitives = [m for m in vars(faults.Backend) if not m.startswith("_")]
    for backend in (ProcessesBackend, DockerBackend):
        assert all(callable(getattr(backend, m, None)) for m in primitives), backend
    # No chaos pick injects a fault that only some backends have: one seed, one schedule, everywhere.
    assert all(faults.FAULTS[verb].backends == ("processes", "docker") for _, verb in faults.CHAOS_PICKS)


def test_no_other_module_names_a_faults_log_line() -> None:
    """Line names that are no scenario verb appear as string literals only in the table and in the
    nemesis that writes them."""
    names = [n for n in faults.LOG_LINES if n not in faults.FAULTS and n not in ("start", "kill", "pause")]
    names += [pick.name for pick, _ in faults.CHAOS_PICKS  # 'latency' is also a toxic type and a scenario's name
              if pick.name not in faults.FAULTS and pick.name != faults.DELAYING_TOXIC]
    allowed = {PACKAGE / "nemesis" / "faults.py", PACKAGE / "nemesis" / "__init__.py"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path in allowed:
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if re.search(rf"[\"']{re.escape(n)}[\"']", text)]
    assert "proxy-disable" in names and "restart-kill" in names
    assert found == []


def _as_scenario_line(verb: str, args: dict[str, Any]) -> str:
    fault = faults.FAULTS[verb]
    durations = {k for k, check in fault.keys.items() if check in (parse.parse_duration_ms, parse.positive_duration_ms)}
    words = [f"{k}={v}ms" if k in durations else f"{k}={v}" for k, v in args.items()]
    return " ".join([verb, *(["m0"] if fault.target == "member" else []), *words])


def test_every_chaos_pick_is_a_fault_a_scenario_could_state() -> None:
    assert [pick.rank for pick, _ in faults.CHAOS_PICKS] == sorted(pick.rank for pick, _ in faults.CHAOS_PICKS)
    seen = set()
    for seed in range(40):
        for step in Schedule(seed).chaos(30, 3, 10_000):
            seen.add(step.fault)
            text = f"name demo\nphase p\n  start each\n  {_as_scenario_line(step.verb, step.args)}\n"
            action = parse.parse_scenario(text, Path("demo.scenario")).phases[0].actions[1]
            assert (action.verb, action.args) == (step.verb, step.args)
    assert seen == {pick.name for pick, _ in faults.CHAOS_PICKS}


def test_the_chaos_schedule_of_a_seed_is_unchanged() -> None:
    steps = [(s.fault, s.member_index, s.args) for s in Schedule(11).chaos(10, 5, 10_000)]
    assert steps == PINNED_SEED_11


# Schedule(11).chaos(10, 5, 10_000), as the schedule drew it before the table of faults existed.
PINNED_SEED_11: list[tuple[str, int, dict[str, Any]]] = [
    ('restart-kill', 4, {'mode': 'kill', 'down': 1000}),
    ('restart-kill', 4, {'mode': 'kill', 'down': 0}),
    ('restart-graceful', 4, {'mode': 'graceful', 'down': 1000}),
    ('latency', 1, {'type': 'latency', 'latency': 100, 'for': 8000}),
    ('restart-kill', 0, {'mode': 'kill', 'down': 3000}),
    ('cut', 0, {'for': 13000}),
    ('broker-restart', 4, {}),
    ('latency', 4, {'type': 'latency', 'latency': 100, 'for': 3000}),
    ('restart-graceful', 1, {'mode': 'graceful', 'down': 0}),
    ('pause', 3, {'for': 13000}),
]


class RecordingBackend:
    """Records which primitive the nemesis called, in order (a stand-in for the cluster)."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __getattr__(self, primitive: str) -> Any:
        if primitive.startswith("_"):
            raise AttributeError(primitive)

        def call(*args: Any) -> Any:
            self.calls.append((primitive, *(a if isinstance(a, (str, bool, int)) else type(a).__name__ for a in args)))
            return "latency_downstream_1" if primitive == "add_toxic" else None
        return call


def test_the_nemesis_logs_the_tables_lines_and_heals_in_teardown(tmp_path: Path) -> None:
    backend = RecordingBackend()
    log = NemesisLog(tmp_path / "nemesis.jsonl")
    nem = Nemesis(log, backend)
    nem.kill("m0", object())
    nem.pause("m1", object())
    nem.cut("m2")
    nem.add_toxic("m0", Toxic(type="latency", attributes={"latency": 300}))
    nem.broker_restart(kill=True)
    nem.add_partitions("orders", 6)
    nem.disconnect("m1", object())
    nem.heal_all()  # resumes m1, re-enables m2's path, removes the toxic, reconnects m1
    log.close()
    lines = [json.loads(x) for x in (tmp_path / "nemesis.jsonl").read_text().splitlines()]
    assert [(x["fault"], x["target"], x["phase"]) for x in lines] == [
        ("kill", "m0", "invoke"), ("pause", "m1", "invoke"), ("proxy-disable", "m2", "invoke"),
        ("toxic-add", "m0", "invoke"), ("broker-kill", "broker", "invoke"), ("broker-kill", "broker", "heal"),
        ("add-partitions", "broker", "invoke"),
        ("net-disconnect", "m1", "invoke"),
        ("resume", "m1", "heal"), ("proxy-enable", "m2", "heal"), ("toxic-remove", "m0", "heal"),
        ("net-connect", "m1", "heal")]
    assert [sorted(x) for x in lines] == [["details", "fault", "phase", "target", "ts"]] * len(lines)
    assert lines[3]["details"] == {"type": "latency", "stream": "downstream", "attributes": {"latency": 300},
                                   "toxic": "latency_downstream_1"}
    assert lines[6]["details"] == {"topic": "orders", "total": 6}
    assert backend.calls == [
        ("hold_member", "m0", "object"), ("kill_member", "m0", "object"), ("pause_member", "m1", "object"), ("disable_path", "m2"),
        ("add_toxic", "m0", "Toxic"), ("restart_broker", True), ("add_partitions", "orders", 6),
        ("disconnect_member", "m1", "object"),
        ("resume_member", "m1", "object"), ("enable_path", "m2"), ("remove_toxic", "m0", "latency_downstream_1"),
        ("connect_member", "m1", "object")]


# -- compound faults: the table's rows own them ---------------------------------------------------


def test_the_runner_implements_no_fault() -> None:
    # Every fault is its row's act, in the table's module; the runner only plays a line by calling
    # it and offers the primitives of faults.Run (start, stop, settle, ...). A runner method named
    # after a verb, other than a primitive, would be a second implementation of that fault.
    from conformance.scenarios.runner import CellRun

    primitives = {name for name in vars(faults.Run) if not name.startswith("_")}
    assert {"start", "stop", "settle"} <= primitives
    for verb, fault in faults.FAULTS.items():
        assert fault.act.__module__ == faults.__name__, verb
        method = verb.replace("-", "_")
        assert method in primitives or not hasattr(CellRun, method), f"CellRun implements {verb!r}"
    for name in ("bounce_strategies", "bounce_protocol", "resubscribe", "restart", "rotate_leader", "chaos"):
        assert not hasattr(CellRun, name), name


class _Proc:
    def __init__(self) -> None:
        self.up = True

    def alive(self) -> bool:
        return self.up


class _Slot:
    def __init__(self, name: str, spec: Any, strategies: list[str]) -> None:
        self.name, self.spec, self.paused, self.proc = name, spec, False, _Proc()
        self.config = type("Config", (), {"assignment_strategies": strategies, "topics": ["orders"],
                                          "group_protocol": "classic"})()

    @property
    def running(self) -> bool:
        return self.proc.alive()


class _RecordingNemesis:
    """The nemesis's member-application lines, recorded into the run's calls."""

    def __init__(self, calls: list[tuple[str, ...]]) -> None:
        self.calls = calls

    def stall(self, name: str, for_ms: int) -> None:
        self.calls.append(("log stall", name, str(for_ms)))

    def stall_end(self, name: str) -> None:
        self.calls.append(("log stall-end", name))

    def subscribe(self, name: str, topics: list[str]) -> None:
        self.calls.append(("log subscribe", name, ",".join(topics)))


class RecordingRun:
    """The runner's primitives, recorded (what a compound fault asks of the cell, in order); the
    leader is read from ``leaders``, one per ``leader()`` call."""

    def __init__(self, specs: list[str], strategies: list[str], leaders: list[str] = ()) -> None:
        from conformance.members.spec import MemberSpec

        self.slots = [_Slot(f"m{i}", MemberSpec.parse(s), list(strategies)) for i, s in enumerate(specs)]
        self.calls: list[tuple[str, ...]] = []
        self.partitions = {"orders": 6}
        self.protocol_changes: list[dict[str, Any]] = []
        self.expected_protocol, self.mix_reason = "eager", ""
        self.notes: list[dict[str, Any]] = []
        self._leaders = list(leaders)
        self.progress = lambda msg: None
        self.schedule: Any = None
        self.nemesis = _RecordingNemesis(self.calls)
        self.acted_ts: float | None = None   # what ``command`` answers: the member's control event's ts

    def command(self, slot: Any, op: str, **args: Any) -> float | None:
        self.calls.append(("command", slot.name, op, *(f"{k}={v}" for k, v in sorted(args.items()))))
        return self.acted_ts

    def start(self, slot: Any) -> None:
        self.calls.append(("start", slot.name))
        slot.proc = _Proc()

    def stop(self, slot: Any, mode: str = "graceful") -> None:
        self.calls.append(("stop", slot.name, mode))
        slot.proc.up = False

    def settle(self) -> None:
        self.calls.append(("settle",))

    def await_stable(self, timeout_ms: int) -> bool:
        return True

    def leader(self) -> str | None:
        return self._leaders.pop(0) if self._leaders else None

    def note(self, **fields: Any) -> None:
        self.notes.append(fields)


def test_bounce_strategies_moves_members_in_steps_and_settles_after_each() -> None:
    # An eager group of three cooperative-capable members bounces onto cooperative-sticky: each
    # member is stopped gracefully and started on its new list, the group settling after each step,
    # and the group is then expected to run cooperative.
    run = RecordingRun(["java", "reference", "sarama"], ["range"])
    assert faults.FAULTS["bounce-strategies"].act(run, None, {"to": ["cooperative-sticky", "range"]})
    stops = [c for c in run.calls if c[0] == "stop"]
    assert sorted(c[1] for c in stops) == ["m0", "m1", "m2"] and all(c[2] == "graceful" for c in stops)
    assert run.calls[-1] == ("settle",)
    for i, call in enumerate(run.calls):  # every start follows its own stop, and a settle ends each step
        if call[0] == "start":
            assert ("stop", call[1], "graceful") in run.calls[:i]
    assert [s.config.assignment_strategies[0] for s in run.slots] == ["cooperative-sticky"] * 3
    assert run.expected_protocol == "cooperative" and "after bouncing to [cooperative-sticky, range]" in run.mix_reason


def test_restart_by_kill_stops_then_starts_and_resubscribe_restarts_gracefully() -> None:
    run = RecordingRun(["java", "sarama"], ["cooperative-sticky"])
    faults.FAULTS["restart"].act(run, run.slots[0], {"mode": "kill"})
    faults.FAULTS["resubscribe"].act(run, run.slots[1], {"topics": ["orders"]})
    assert run.calls == [("stop", "m0", "kill"), ("start", "m0"), ("stop", "m1", "graceful"), ("start", "m1")]
    with pytest.raises(conformance.errors.SuiteError, match="undeclared topics"):
        faults.FAULTS["resubscribe"].act(run, run.slots[1], {"topics": ["payments"]})


def test_rotate_leader_stops_leaders_of_kinds_that_led_until_each_kind_leads() -> None:
    # m0 (java) leads; stopped, m2 (java too) takes over and is stopped as well; m1 (sarama) then
    # leads: both java members come back, and once sarama has led too the rotation ends.
    run = RecordingRun(["java", "sarama", "java"], ["cooperative-sticky"], leaders=["m0", "m2", "m1", "m1"])
    faults.FAULTS["rotate-leader"].act(run, None, {})
    assert run.calls == [("stop", "m0", "graceful"), ("stop", "m2", "graceful"), ("start", "m0"), ("start", "m2")]
    assert run.notes == []


def test_chaos_starts_a_stopped_target_acts_on_a_running_one_and_ends_with_everyone_running() -> None:
    # Seed 11 draws restart-kill on m2 twice (down 1 s, then 0). Nobody runs: the first step starts
    # m2 instead of restarting it; the second kills and starts it; chaos then starts m0 and m1.
    run = RecordingRun(["java", "sarama", "reference"], ["cooperative-sticky"])
    run.schedule = Schedule(11)
    for slot in run.slots:
        slot.proc.up = False
    faults.FAULTS["chaos"].act(run, None, {"count": 2, "gap": 0})
    assert run.calls == [("start", "m2"), ("stop", "m2", "kill"), ("start", "m2"), ("start", "m0"), ("start", "m1")]
    assert all(s.running for s in run.slots)


def test_stall_logs_before_the_command_and_ends_when_the_member_s_stall_is_over() -> None:
    # The member acted on the command 50 ms ago and stalls 200 ms: the fault waits out the rest of
    # the member's own stall before it logs the end, so the log's window covers the stall.
    from conformance.history import now_ms

    run = RecordingRun(["java", "librdkafka"], ["cooperative-sticky"])
    run.acted_ts = now_ms() - 50
    began = time.monotonic()
    assert faults.FAULTS["stall"].act(run, run.slots[1], {"for": 200})
    assert 0.1 <= time.monotonic() - began < 1
    assert run.calls == [("log stall", "m1", "200"), ("command", "m1", "stall", "ms=200"), ("log stall-end", "m1")]


def test_stall_of_a_member_that_never_acts_still_ends_its_window_and_a_stopped_member_is_left_alone() -> None:
    run = RecordingRun(["java"], ["cooperative-sticky"])
    assert faults.FAULTS["stall"].act(run, run.slots[0], {"for": 60_000})  # no answer: no waiting
    assert run.calls[-1] == ("log stall-end", "m0")
    run.slots[0].proc.up = False
    run.calls.clear()
    assert not faults.FAULTS["stall"].act(run, run.slots[0], {"for": 1000}) and run.calls == []


def test_subscribe_changes_the_running_member_in_place_and_a_stopped_one_at_its_next_start() -> None:
    # In place: logged, then the command; no stop, no start. A stopped member gets no command, but
    # the topics it will start with change (its harness config).
    run = RecordingRun(["java", "sarama"], ["cooperative-sticky"])
    run.partitions = {"orders": 6, "payments": 3}
    assert faults.FAULTS["subscribe"].act(run, run.slots[0], {"topics": ["orders", "payments"]})
    assert run.calls == [("log subscribe", "m0", "orders,payments"),
                         ("command", "m0", "subscribe", "topics=['orders', 'payments']")]
    run.slots[1].proc.up = False
    assert not faults.FAULTS["subscribe"].act(run, run.slots[1], {"topics": ["payments"]})
    assert run.slots[1].config.topics == ["payments"] and len(run.calls) == 2
    with pytest.raises(conformance.errors.SuiteError, match="undeclared topics"):
        faults.FAULTS["subscribe"].act(run, run.slots[0], {"topics": ["refunds"]})


def test_a_stall_can_expire_its_member_only_after_the_max_poll_interval() -> None:
    # A frozen member misses heartbeats (a session timeout is enough); a stalled application keeps
    # heartbeating until max.poll.interval.ms passes.
    assert faults.MAX_POLL_TIMED == ("stall",)
    assert not faults.can_expire("stall", 20_000, 10_000, 30_000)
    assert faults.can_expire("stall", 30_000, 10_000, 30_000)
    assert faults.can_expire("pause", 10_000, 10_000, 30_000)
    assert faults.can_expire("broker-kill", 1, 10_000, 30_000)
