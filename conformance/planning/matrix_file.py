"""Matrix files: what a plan must cover, in TOML (``fixtures/matrices/*.toml``).

Format (every key but ``must-have`` required)::

    description = "what this matrix is for"
    seed = 1                     # the plan's seed when `conformance plan` is given no --seed
    group-size = 4               # members per group (2 to config.CLUSTER_SLOTS)
    brokers = ["4.4.0", "3.9.2"] # of config.BROKER_VERSIONS
    members = ["reference", "java@4.4.0", "java@2.8.2", ...]   # member specs (KIND[@VERSION][/FAULT...])

    [classes]                    # scenario classes: every pair meets in a group of each class
    membership = ["rolling-restart", "leader-rotation"]   # catalog scenario names
    faults = ["crash-restart", "pause"]

    [[must-have]]                # cells the plan always holds, beside the pairwise ones
    name = "upgrade from eager"
    scenario = "upgrade-eager-to-cooperative"
    clients = ["java@4.4.0", "sarama", "reference"]
    broker = "4.4.0"
    seed = 7                     # optional: else drawn from the plan's seed

Guarantee: :func:`load_matrix` checks everything that needs no registry and raises
:class:`~conformance.errors.UsageError`, one line naming the file and the key, for the first
mistake: an unknown key, a wrong type, a member spec or scenario that does not parse or exist, a
broker the suite does not support, a duplicate. Whether the member versions exist is
:func:`conformance.members.versions.check_specs`'s question (``conformance plan`` asks it).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance import config
from conformance.errors import UsageError
from conformance.members.spec import MemberSpec
from conformance.scenarios.catalog import get_scenario

KEYS: tuple[str, ...] = ("description", "seed", "group-size", "brokers", "members", "classes", "must-have")
MUST_HAVE_KEYS: tuple[str, ...] = ("name", "scenario", "clients", "broker", "seed")
MAX_SEED: int = 2**63 - 1


@dataclass(frozen=True)
class MustHave:
    name: str
    scenario: str
    specs: tuple[MemberSpec, ...]
    broker: str
    seed: int | None


@dataclass(frozen=True)
class MatrixFile:
    path: Path
    description: str
    seed: int
    group_size: int
    brokers: tuple[str, ...]
    members: tuple[MemberSpec, ...]
    classes: dict[str, tuple[str, ...]]
    must_have: tuple[MustHave, ...]


def _strings(where: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(x, str) and x.strip() for x in value):
        raise UsageError(f"{where} must be a non-empty list of strings")
    if len(set(value)) != len(value):
        raise UsageError(f"{where} names {next(x for x in value if value.count(x) > 1)!r} twice")
    return value


def _int(where: str, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise UsageError(f"{where} must be an integer from {low} to {high}, not {value!r}")
    return value


def _broker(where: str, value: Any) -> str:
    if value not in config.BROKER_VERSIONS:
        raise UsageError(f"{where}: broker {value!r} is not supported; supported: {', '.join(config.BROKER_VERSIONS)}")
    return value


def _scenario(where: str, name: str) -> str:
    try:
        get_scenario(name)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return name


def _spec(where: str, text: str) -> MemberSpec:
    try:
        return MemberSpec.parse(text)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None


def load_matrix(path: Path) -> MatrixFile:
    """Read and check a matrix file (see the module's guarantee)."""
    try:
        data = tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read matrix file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"matrix file {path} is not UTF-8 text (byte offset {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"matrix file {path} is not TOML: {exc}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise UsageError(f"{path}: unknown key {unknown[0]!r}; known: {', '.join(KEYS)}")
    missing = [k for k in KEYS if k != "must-have" and k not in data]
    if missing:
        raise UsageError(f"{path}: no {missing[0]!r} (every matrix file states {', '.join(KEYS[:-1])})")
    if not isinstance(data["description"], str):
        raise UsageError(f"{path}: description must be a string")
    seed = _int(f"{path}: seed", data["seed"], 0, MAX_SEED)
    group_size = _int(f"{path}: group-size", data["group-size"], 2, config.CLUSTER_SLOTS)
    brokers = tuple(_broker(f"{path}: brokers", b) for b in _strings(f"{path}: brokers", data["brokers"]))
    specs = [_spec(f"{path}: members", m) for m in _strings(f"{path}: members", data["members"])]
    if len(set(specs)) != len(specs):
        raise UsageError(f"{path}: members name {next(str(s) for s in specs if specs.count(s) > 1)} twice "
                         "(a version left out is the kind's default)")
    classes_raw = data["classes"]
    if not isinstance(classes_raw, dict) or not classes_raw:
        raise UsageError(f"{path}: [classes] must name at least one scenario class")
    classes: dict[str, tuple[str, ...]] = {}
    for name, scenarios in classes_raw.items():
        where = f"{path}: classes.{name}"
        classes[name] = tuple(_scenario(where, s) for s in _strings(where, scenarios))
    must: list[MustHave] = []
    raw_must = data.get("must-have", [])
    if not isinstance(raw_must, list) or not all(isinstance(m, dict) for m in raw_must):
        raise UsageError(f"{path}: must-have must be a list of tables ([[must-have]])")
    for i, m in enumerate(raw_must, start=1):
        where = f"{path}: must-have #{i}"
        unknown = sorted(set(m) - set(MUST_HAVE_KEYS))
        if unknown:
            raise UsageError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(MUST_HAVE_KEYS)}")
        absent = [k for k in MUST_HAVE_KEYS[:4] if k not in m]
        if absent:
            raise UsageError(f"{where}: no {absent[0]!r}")
        if not isinstance(m["name"], str) or not m["name"].strip():
            raise UsageError(f"{where}: name must be a non-empty string")
        if any(x.name == m["name"] for x in must):
            raise UsageError(f"{where}: the name {m['name']!r} is taken by an earlier must-have cell")
        must.append(MustHave(m["name"], _scenario(where, m["scenario"]) if isinstance(m["scenario"], str) else
                             _scenario(where, ""),
                             tuple(_spec(f"{where}: clients", c) for c in _strings(f"{where}: clients", m["clients"])),
                             _broker(where, m["broker"]),
                             _int(f"{where}: seed", m["seed"], 0, MAX_SEED) if "seed" in m else None))
    return MatrixFile(Path(path), data["description"], seed, group_size, brokers, tuple(specs), classes, tuple(must))
