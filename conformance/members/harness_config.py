"""The harness contract's config: one JSON file, its path the harness's only argument.

Every harness (``clients/*`` and the reference consumer) reads this file and
nothing else to know what to do. Keys (all present; ``null`` where unset):

==========================  ==================================================
``member``                  unique member name in the run (history file name)
``client``                  member kind (``java``, ``librdkafka``, ...)
``client_version``          the version the harness must report and run
``client_id``               Kafka ``client.id``
``bootstrap_servers``       ``host:port`` of this member's wire-tap port
``group_id``                the consumer group
``topics``                  subscribed topics
``assignment_strategies``   ordered canonical names: ``cooperative-sticky``,
                            ``sticky``, ``range``, ``roundrobin``
``group_protocol``          ``classic`` | ``consumer`` (KIP-848)
``group_instance_id``       static membership id, or null
``session_timeout_ms``      session timeout
``heartbeat_interval_ms``   heartbeat interval
``max_poll_interval_ms``    max poll interval (rebalance timeout)
``commit_mode``             ``auto`` | ``sync-batch`` (commit after each
                            batch) | ``on-revoke`` (commit only on revoke/close)
``processing_delay_ms``     sleep per record, to make rebalances overlap work
``auto_offset_reset``       ``earliest`` | ``latest``
``history_path``            JSONL history file (see :mod:`conformance.history`)
``rack_id``                 ``client.rack``, or null
``control_path``            the member's control file (commands from the
                            runner: :mod:`conformance.members.control`), or
                            null for none
``extra``                   kind-specific settings (the reference consumer's
                            ``faults`` and ``subscription_version``, and as a
                            KIP-848 member ``server_assignor``: ``uniform`` |
                            ``range``, null for the broker's default; the
                            producer's ``rate_per_s``, ``partitions``)
==========================  ==================================================
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance import config
from conformance.errors import UsageError

STRATEGIES: tuple[str, ...] = ("cooperative-sticky", "sticky", "range", "roundrobin")
COMMIT_MODES: tuple[str, ...] = ("auto", "sync-batch", "on-revoke")
GROUP_PROTOCOLS: tuple[str, ...] = ("classic", "consumer")


@dataclass
class HarnessConfig:
    member: str
    client: str
    client_version: str
    bootstrap_servers: str
    group_id: str
    topics: list[str]
    history_path: str
    client_id: str = ""
    assignment_strategies: list[str] = field(default_factory=lambda: ["cooperative-sticky"])
    group_protocol: str = "classic"
    group_instance_id: str | None = None
    session_timeout_ms: int = config.SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = config.HEARTBEAT_INTERVAL_MS
    max_poll_interval_ms: int = config.MAX_POLL_INTERVAL_MS
    commit_mode: str = "sync-batch"
    processing_delay_ms: int = 0
    auto_offset_reset: str = "earliest"
    rack_id: str | None = None
    control_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.client_id:
            self.client_id = self.member
        self.validate()

    def validate(self) -> None:
        """Raise :class:`UsageError` naming the first key that is wrong."""
        bad = [s for s in self.assignment_strategies if s not in STRATEGIES]
        if not self.assignment_strategies or bad:
            raise UsageError(f"member {self.member}: assignment_strategies {self.assignment_strategies!r}: "
                             f"each must be one of {', '.join(STRATEGIES)}")
        if self.commit_mode not in COMMIT_MODES:
            raise UsageError(f"member {self.member}: commit_mode {self.commit_mode!r} is not one of {', '.join(COMMIT_MODES)}")
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise UsageError(f"member {self.member}: group_protocol {self.group_protocol!r} is not one of {', '.join(GROUP_PROTOCOLS)}")
        if not self.topics:
            raise UsageError(f"member {self.member}: topics must not be empty")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise UsageError(f"member {self.member}: heartbeat_interval_ms ({self.heartbeat_interval_ms}) "
                             f"must be below session_timeout_ms ({self.session_timeout_ms})")

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "HarnessConfig":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        try:
            return cls(**data)
        except TypeError as exc:
            raise UsageError(f"harness config {path}: {exc}") from None
