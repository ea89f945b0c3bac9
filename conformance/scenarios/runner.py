"""Running one cell of the matrix: a scenario, a member mix, a broker version and a seed.

``CellRun.execute`` starts the cluster (broker, toxiproxy, a wire tap per
member), a producer, and the members; plays the scenario's phases through the
nemesis; stops everything; and leaves a complete run directory (manifest,
histories, wire capture, nemesis log, logs). Guarantees:

- Every member's client is installed (idempotently: milliseconds when it
  is) before the cluster starts, as the broker is: a cell never fails
  half-way for want of a client ``conformance setup`` was not asked for.
- The manifest is written before the first member starts (``complete:
  false``) and rewritten at the end, so an interrupted run still has one, and
  ``conformance reproduce`` can replay any run directory. A run that a suite
  error or Ctrl-C cut short says why in ``cut_short`` (the pipeline then
  judges what it observed, not what only the scenario's end would show).
- Every process is stopped when the cell ends, however it ends (the
  supervisor's guarantee); temporary faults are healed first.
- Time bounds (await timeouts) are scenario data; a timeout is not a suite
  error: it is recorded in the manifest's ``notes`` (``await``, ``timeout_ms``
  and the ``state`` the observer saw) and V1 judges it as a violation.
- A member process that exited although the runner did not stop it (a crash
  or abort) is noted once per incarnation, when the runner next acts on it:
  a note in ``notes`` (``exited``, ``code``) and a line in the member's log.
  The runner then starts it again only where the scenario says so.
- The cell runs on its backend (``Cell.backend``, one of :data:`BACKENDS`) with the same
  scenario, member specs, histories, wire capture, nemesis log and run directory; the
  manifest's ``backend`` names it, and its reproduce command says ``--backend`` unless it is
  ``processes``.
- ``last_fault_ts`` is the last fault before the scenario's end (``end_ts``);
  the stops of teardown are logged in the nemesis log but are not faults of
  the scenario.
- KIP-848: the broker runs with the scenario's migration policy (manifest
  ``migration_policy``); each member starts on its spec's group protocol, or classic under
  ``members start-protocol=classic`` (manifest member ``group_protocol``). Every ``start``
  line of the nemesis log names the protocol that incarnation speaks (``details.group_protocol``),
  and every change of a member's protocol (``bounce-protocol``) is in the manifest's
  ``protocol_changes`` (``ts``, ``member``, ``from``, ``to``; ``ts`` is when the stopped member
  is started on the new protocol).
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from conformance import __version__, config
from conformance.cluster.supervisor import Supervisor, describe_exit
from conformance.errors import SuiteError
from conformance.history import now_ms
from conformance.members.control import ControlWriter
from conformance.members.harness_config import HarnessConfig
from conformance.members.kinds import fetch_max_wait_ms, library_version
from conformance.members.mixing import plan_mix
from conformance.members.spec import MemberSpec
from conformance.nemesis import Nemesis, NemesisLog
from conformance.nemesis.faults import FAULTS, Backend
from conformance.rundir import RunDir
from conformance.scenarios.model import Action, Scenario
from conformance.scenarios.observe import GroupObserver
from conformance.scenarios.schedule import Schedule

Progress = Callable[[str], None]
#: How a cell can run: members, broker and toxiproxy as local processes, or as containers of the
#: suite's images on a Docker engine (:mod:`conformance.containers.cluster`). The manifest's
#: ``backend`` says which ran it.
BACKENDS: tuple[str, ...] = ("processes", "docker")


@dataclass(frozen=True)
class Cell:
    scenario: Scenario
    specs: tuple[MemberSpec, ...]
    broker: str
    seed: int
    backend: str = "processes"   # how the cell runs: one of BACKENDS

    @property
    def cell_id(self) -> str:
        """``scenario--mix--kafka-V--seed-N``, of the characters ``A-Za-z0-9.-_`` only (it names a
        directory). Two cells of scenarios with one name share it; :mod:`conformance.run.matrix`
        gives each its own run directory."""
        mix = "_".join(re.sub(r"[^A-Za-z0-9.]+", "-", str(s)) for s in self.specs)
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", self.scenario.name)
        return f"{name}--{mix}--kafka-{re.sub(r'[^A-Za-z0-9.]+', '-', self.broker)}--seed-{self.seed}"


@dataclass
class Slot:
    """One member of the mix and its current incarnation."""

    name: str
    spec: MemberSpec
    config: HarnessConfig
    proc: Any = None
    paused: bool = False

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.alive()


@dataclass
class CellRun:
    cell: Cell
    run_dir: RunDir
    progress: Progress = lambda msg: None
    phase_hook: Callable[[str], Any] | None = None   # allure steps: a context manager per phase
    notes: list[dict[str, Any]] = field(default_factory=list)
    _exits_noted: set[int] = field(default_factory=set)   # pids whose unasked exit is in notes
    cut_short: str | None = None   # why the scenario did not reach its end (an exception), once it did not

    # ------------------------------------------------------------------ setup
    def _manifest(self, complete: bool) -> dict[str, Any]:
        sc = self.cell.scenario
        return {
            "run_id": self.run_dir.path.name,
            "scenario": sc.name,
            "scenario_file": str(sc.source) if sc.source else None,
            "seed": self.cell.seed,
            "broker_version": self.cell.broker,
            "group_id": self.group_id,
            "topics": dict(self.partitions),
            # topic -> id (hex), so the judge names the topics of OffsetCommit v10+ and ConsumerGroupHeartbeat.
            "topic_ids": dict(getattr(self, "topic_ids", {})),
            "members": [
                {"name": s.name, "spec": str(s.spec), "kind": s.spec.kind, "version": s.spec.version,
                 "faults": list(s.spec.faults), "strategies": list(s.config.assignment_strategies),
                 "group_instance_id": s.config.group_instance_id,
                 "group_protocol": self._start_protocol(s.spec),
                "rack_id": s.config.rack_id,
                 # The client library the member really ran (librdkafka inside confluent-kafka: 2.16.1 has 2.16.0).
                 "library_version": library_version(s.spec.kind, s.spec.version),
                 # Its fetch long-poll wait, as its harness runs the client (P1's bound between polls).
                 "fetch_max_wait_ms": fetch_max_wait_ms(s.spec.kind)}
                for s in self.slots
            ],
            "migration_policy": sc.migration_policy,
            "broker_rack": sc.broker_rack,
            # The producer the runner starts: its history must show it acknowledging (pipeline.producer).
            "producer_rate_per_s": sc.producer_rate,
            "protocol_changes": self.protocol_changes,
            "expected_protocol": self.expected_protocol,
            "mix_reason": self.mix_reason,
            "timing": {
                "session_timeout_ms": config.SESSION_TIMEOUT_MS,
                "heartbeat_interval_ms": config.HEARTBEAT_INTERVAL_MS,
                "max_poll_interval_ms": config.MAX_POLL_INTERVAL_MS,
                "convergence_bound_ms": config.CONVERGENCE_BOUND_MS,
                "revoke_bound_ms": config.REVOKE_BOUND_MS,
            },
            "phases": self.phases,
            # The last fault of the scenario itself: teardown's stops come after ``end_ts`` and are not faults.
            "last_fault_ts": self.last_fault_ts if self.end_ts else (self.nemesis.last_fault_ts if self.nemesis else None),
            "start_ts": self.start_ts,
            "end_ts": self.end_ts,
            "teardown_end_ts": now_ms() if self.end_ts else None,
            "leader_rotation": sc.leader_rotation,
            "leaders_seen": self.observer.leaders_seen if self.observer else [],
            "versions": {"conformance": __version__, "python": sys.version.split()[0],
                         **{s.spec.kind: s.spec.version for s in self.slots}},
            "command": reproduce_command(self.cell),
            "notes": self.notes,
            "backend": self.cell.backend,
            "complete": complete,
            "cut_short": None if complete else self.cut_short,
        }

    def _write_manifest(self, complete: bool) -> None:
        self.run_dir.write_json(self.run_dir.manifest, self._manifest(complete))

    def _make_slots(self, bootstrap_for: Callable[[str], str]) -> None:
        sc = self.cell.scenario
        plan = plan_mix(list(self.cell.specs), sc.start_strategies)
        self.expected_protocol, self.mix_reason = plan.expected_protocol, plan.reason
        for i, (spec, strategies) in enumerate(zip(self.cell.specs, plan.strategies)):
            name = f"m{i}-{spec.kind}"
            extra: dict[str, Any] = {}
            if spec.kind == "reference":
                extra["faults"] = list(spec.faults)
            cfg = HarnessConfig(
                member=name, client=spec.kind, client_version=spec.version,
                bootstrap_servers=bootstrap_for(name), group_id=self.group_id,
                topics=[next(iter(sc.topics))],  # the first declared topic; `resubscribe` changes it
                history_path=str(self.run_dir.history(name)),
                control_path=str(self.run_dir.control(name)),
                assignment_strategies=list(strategies), group_protocol=self._start_protocol(spec),
                commit_mode=sc.commit_mode,
                processing_delay_ms=sc.processing_delay_ms,
                group_instance_id=f"{self.group_id}-{name}" if sc.static_members else None,
                rack_id=sc.member_rack(i),
                extra=extra,
            )
            self.slots.append(Slot(name, spec, cfg))

    def _start_protocol(self, spec: MemberSpec) -> str:
        """The group protocol ``spec``'s member starts on: its spec's, or classic when the scenario
        says ``members start-protocol=classic`` (the spec's is then where ``bounce-protocol`` takes it)."""
        return "classic" if self.cell.scenario.start_protocol == "classic" else spec.protocol

    # ------------------------------------------------------------------ run
    def execute(self) -> RunDir:
        sc = self.cell.scenario
        self.group_id = f"conformance-{sc.name}-{self.cell.seed}"
        self.partitions: dict[str, int] = dict(sc.topics)
        self.topic_ids: dict[str, str | None] = {}
        self.slots: list[Slot] = []
        self.protocol_changes: list[dict[str, Any]] = []
        self.phases: list[dict[str, Any]] = []
        self.nemesis: Nemesis | None = None
        self.observer: GroupObserver | None = None
        self.schedule = Schedule(self.cell.seed)
        self._ensure_clients()
        self._ensure_images()
        self.start_ts = now_ms()
        self.end_ts: float | None = None
        self.last_fault_ts: float | None = None
        log = NemesisLog(self.run_dir.nemesis)
        self.progress("starting broker and toxiproxy")
        with Supervisor(self.run_dir.logs) as sup, self._cluster(sup) as cluster:
            self.sup, self.cluster = sup, cluster
            self.nemesis = Nemesis(log, self._fault_backend(cluster))
            for topic, parts in self.partitions.items():
                cluster.create_topic(topic, parts)
                self.topic_ids[topic] = cluster.topic_id(topic)
            self._make_slots(cluster.bootstrap_for)
            self._write_manifest(complete=False)
            self.observer = GroupObserver(self.run_dir.members_dir, self.run_dir.wire,
                                          self.run_dir.history("producer"), quiet_ms=config.QUIET_MS,
                                          nemesis_log=self.run_dir.nemesis)
            self.producer = self._start_producer()
            finished = False
            try:
                for phase in sc.phases:
                    self._run_phase(phase.name, phase.actions)
                finished = True
            except KeyboardInterrupt:
                self.cut_short = "interrupted (Ctrl-C)"
                raise
            except BaseException as exc:
                self.cut_short = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                self.end_ts = now_ms()  # the scenario's end: what V1 judges; teardown follows
                self.last_fault_ts = self.nemesis.last_fault_ts
                self.nemesis.heal_all()
                self._stop_all_members()
                if self.producer.alive():
                    self.producer.terminate()
                self._write_manifest(complete=finished)
                log.close()
        return self.run_dir

    def _cluster(self, sup: Supervisor) -> Any:
        """The cell's cluster on its backend (not started): local processes, or containers."""
        slots = len(self.cell.specs)
        if self.cell.backend == "docker":
            from conformance.containers.cluster import DockerCluster
            return DockerCluster(self.run_dir, self.cell.broker, sup, slots, self._images,
                                 migration_policy=self.cell.scenario.migration_policy,
                                 broker_rack=self.cell.scenario.broker_rack)
        from conformance.cluster import Cluster
        return Cluster(self.run_dir, self.cell.broker, sup, slots=slots,
                       migration_policy=self.cell.scenario.migration_policy, broker_rack=self.cell.scenario.broker_rack)

    def _fault_backend(self, cluster: Any) -> Backend:
        """The primitives of the table of faults on ``cluster``'s backend."""
        if self.cell.backend == "docker":
            from conformance.containers.backend import DockerBackend
            return DockerBackend(cluster)
        from conformance.cluster.backend import ProcessesBackend
        return ProcessesBackend(cluster)

    def _ensure_images(self) -> None:
        """On the docker backend: the broker and toxiproxy in the cache, then every image the cell
        needs (:func:`conformance.containers.images.ensure_images`, idempotent)."""
        self._images: dict[str, str] = {}
        if self.cell.backend != "docker":
            return
        from conformance.cluster.install import ensure_broker, ensure_toxiproxy
        from conformance.containers.images import ensure_images

        started = time.monotonic()
        ensure_broker(self.cell.broker)
        ensure_toxiproxy()
        self._images = ensure_images([self.cell.broker], list(self.cell.specs))
        if time.monotonic() - started > 1.0:
            self.progress(f"images ready in {time.monotonic() - started:.1f}s")

    def _ensure_clients(self) -> None:
        """Install every member's client at its version unless it already is (see the module docstring)."""
        from conformance.members.install import ensure_client

        for spec in dict.fromkeys(MemberSpec(s.kind, s.version) for s in self.cell.specs):
            started = time.monotonic()
            ensure_client(spec)
            if time.monotonic() - started > 1.0:
                self.progress(f"set up {spec.label} in {time.monotonic() - started:.1f}s")

    def _run_phase(self, name: str, actions: tuple[Action, ...]) -> None:
        entry: dict[str, Any] = {"name": name, "start_ts": now_ms(), "end_ts": None}
        self.phases.append(entry)
        self.progress(f"phase {name}")
        ctx = self.phase_hook(name) if self.phase_hook else None
        if ctx is not None:
            ctx.__enter__()
        try:
            for action in actions:
                self._act(action)
        finally:
            entry["end_ts"] = now_ms()
            self._write_manifest(complete=False)
            if ctx is not None:
                ctx.__exit__(*sys.exc_info())

    # ------------------------------------------------------------------ members
    def _start_producer(self) -> Any:
        from conformance.members.launch import launch_producer

        cfg = HarnessConfig(member="producer", client="producer", client_version=__version__,
                            bootstrap_servers=self.cluster.direct_bootstrap, group_id=self.group_id,
                            topics=list(self.partitions), history_path=str(self.run_dir.history("producer")),
                            extra={"rate_per_s": self.cell.scenario.producer_rate, "partitions": self.partitions})
        return launch_producer(cfg, self.run_dir, self.sup)

    def start(self, slot: Slot) -> None:
        """Start ``slot`` unless it runs (its unasked exit noted first), logged ``start`` with the
        protocol, strategies and topics it starts with; returns once the member is ready."""
        from conformance.members.launch import launch_member

        if slot.running:
            return
        self._note_unasked_exit(slot)
        def start() -> None:
            if self.observer is not None:
                self.observer.launched(slot.name)
            if self.cell.backend == "docker":
                slot.proc = self.cluster.launch_member(slot.spec, slot.config, self.run_dir)
            else:
                slot.proc = launch_member(slot.spec, slot.config, self.run_dir, self.sup)
            slot.paused = False
            slot.proc.wait_ready(config.MEMBER_READY_TIMEOUT_S)
        self.nemesis.start(slot.name, start, strategies=slot.config.assignment_strategies,
                           topics=slot.config.topics, group_protocol=slot.config.group_protocol)

    def stop(self, slot: Slot, mode: str = "graceful") -> None:
        """Note ``slot``'s unasked exit, if it made one; then, if it runs, stop it gracefully or
        (``mode`` ``kill``) by a kill, logged ``terminate`` or ``kill``."""
        self._note_unasked_exit(slot)
        if slot.running:
            if mode == "kill":
                self.nemesis.kill(slot.name, slot.proc)
            else:
                self.nemesis.terminate(slot.name, slot.proc)

    def _stop_all_members(self) -> None:
        for slot in self.slots:
            self._note_unasked_exit(slot)
            if slot.proc is not None and slot.proc.alive():
                if slot.paused:
                    self.nemesis.backend.resume_member(slot.name, slot.proc)
                self.nemesis.terminate(slot.name, slot.proc)

    def _live(self) -> dict[str, set[str]]:
        return {s.name: set(s.config.topics) for s in self.slots if s.running and not s.paused}

    def _targets(self, target: str) -> list[Slot]:
        running = [s for s in self.slots if s.running]
        if target in ("all", "each"):
            return list(self.slots)
        if target == "reference":
            refs = [s for s in self.slots if s.spec.kind == "reference"]
            if not refs:
                raise SuiteError("the scenario targets 'reference' but the mix has no reference member")
            return refs[:1]
        if target == "leader":
            name = self.observer.leader()
            return [s for s in self.slots if s.name == name] or running[:1]
        if target == "follower":
            leader = self.observer.leader()
            followers = [s for s in running if s.name != leader]
            return [followers[self.schedule.pick(len(followers))]] if followers else []
        if target == "random":
            pool = running or self.slots
            return [pool[self.schedule.pick(len(pool))]]
        index = int(target[1:])
        if index >= len(self.slots):
            raise SuiteError(f"the scenario targets {target} but the mix has {len(self.slots)} members")
        return [self.slots[index]]

    # ------------------------------------------------------------------ waiting
    def _await(self, what: str, timeout_ms: int) -> bool:
        deadline = time.monotonic() + timeout_ms / 1000
        reason = ""
        if what == "drained" and self.producer.alive():
            self.producer.terminate()
        while time.monotonic() < deadline:
            if what == "stable":
                ok, reason = self.observer.stable(self._live(), self.partitions)
            else:
                ok, reason = self.observer.drained()
            if ok:
                return True
            time.sleep(0.2)
        note = {"ts": now_ms(), "phase": self.phases[-1]["name"] if self.phases else None,
                "await": what, "timeout_ms": timeout_ms, "state": reason}
        self.notes.append(note)
        self.progress(f"await {what} timed out after {timeout_ms / 1000:.0f}s: {reason}")
        return False

    def settle(self) -> None:
        """Wait for the group to be stable, at most the convergence bound and 30 s."""
        self._await("stable", config.CONVERGENCE_BOUND_MS + 30_000)

    def await_stable(self, timeout_ms: int) -> bool:
        """Wait at most ``timeout_ms`` for the group to be stable; whether it was (a timeout is noted)."""
        return self._await("stable", timeout_ms)

    def leader(self) -> str | None:
        """The group's leader as the observer last saw it on the wire."""
        return self.observer.leader() if self.observer else None

    def note(self, **fields: Any) -> None:
        """Add a note to the manifest: ``fields`` with the time (``ts``) first."""
        self.notes.append({"ts": now_ms(), **fields})

    def command(self, slot: Slot, op: str, **args: Any) -> float | None:
        """Append a command to ``slot``'s control file (:mod:`conformance.members.control`) and wait, at
        most :data:`~conformance.config.CONTROL_ACK_TIMEOUT_S`, for the running member's ``control`` event of
        it: that event's ``ts``, or None when the member did not act on it in time or exited (noted)."""
        seq = ControlWriter(self.run_dir.control(slot.name)).send(op, now_ms(), **args)
        event = slot.proc.wait_event("control", config.CONTROL_ACK_TIMEOUT_S, seq=seq)
        if event is None:
            self.note(control=slot.name, op=op, seq=seq,
                      text=f"{slot.name} did not act on control command {seq} ({op}) within "
                           f"{config.CONTROL_ACK_TIMEOUT_S:.0f} s")
            return None
        return float(event["ts"])

    # ------------------------------------------------------------------ actions
    def _act(self, a: Action) -> None:
        """Play one scenario line: a fault by its row of the table of faults, or start, sleep, await."""
        fault = FAULTS.get(a.verb)
        if fault is not None:
            if fault.target != "member":
                fault.act(self, a.target, a.args)
                return
            for slot in self._targets(a.target or "all"):
                if fault.act(self, slot, a.args) and fault.settle_each and a.target == "each":
                    self.settle()
        elif a.verb == "start":
            for i, slot in enumerate(self._targets(a.target or "all")):
                if i and "stagger" in a.args:
                    time.sleep(a.args["stagger"] / 1000)
                self.start(slot)
        elif a.verb == "sleep":
            time.sleep(int(a.target or 0) / 1000)
        elif a.verb == "await":
            self._await(a.target or "stable", a.args.get("timeout", 60_000))
        else:  # the parser admits only known verbs
            raise SuiteError(f"{a.source}: no runner for action {a.verb!r}")

    def _note_unasked_exit(self, slot: Slot) -> None:
        """Record, once per incarnation, that ``slot``'s process exited although the runner did not
        stop it: a note in the manifest and a line in the member's log, with the exit code (a
        negative code is the signal that ended it, as :mod:`subprocess` reports it)."""
        proc = slot.proc
        if proc is None or proc.pid in self._exits_noted or not proc.exited_unasked:
            return
        self._exits_noted.add(proc.pid)
        code = proc.returncode
        how = describe_exit(code)
        self.notes.append({"ts": now_ms(), "exited": slot.name, "code": code,
                           "text": f"{slot.name} {how}, and the runner had not stopped it"})
        try:
            with open(proc.log_path, "a", encoding="utf-8") as log:
                log.write(f"[conformance runner] {slot.name} {how} before {time.strftime('%H:%M:%S')}, "
                          "and the runner had not stopped it\n")
        except OSError:
            pass


def reproduce_command(cell: Cell) -> str:
    """The shell command that runs ``cell`` again: a catalog scenario by its name only when it was
    read from the catalog's own file (:func:`conformance.scenarios.catalog.is_builtin`), any other
    scenario file by its absolute path; every word quoted for a POSIX shell."""
    from conformance.scenarios.catalog import is_builtin

    sc = cell.scenario
    scenario = sc.name if sc.source is None or is_builtin(sc.name, sc.source) else str(sc.source.absolute())
    backend = ["--backend", cell.backend] if cell.backend != "processes" else []
    return shlex.join(["conformance", "run", "--scenario", scenario, "--clients", ",".join(str(s) for s in cell.specs),
                       "--broker", cell.broker, "--seed", str(cell.seed), *backend])
