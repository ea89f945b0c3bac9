"""Member kind ``librdkafka``: librdkafka through confluent-kafka-python.

``librdkafka@V`` means the confluent-kafka wheel ``V`` from PyPI, installed in
its own virtual environment ``config.VENVS_DIR/librdkafka-V`` so several
versions coexist.

Naming: a member spec names the confluent-kafka release (the unit PyPI serves
and the cache holds), never the librdkafka inside it. The bundled librdkafka is
usually the same version, but not always: confluent-kafka 2.16.1 bundles
librdkafka 2.16.0. So the real library version (``confluent_kafka.libversion()``,
read once from the installed venv: :func:`library_version`) is recorded beside
the spec: in the harness's ``started`` event (``librdkafka_version``), in the
manifest's member entries (``library_version``) and in ``conformance clients
list``; known issues, which upstream documents by librdkafka version, are
matched on the spec's version (for the releases in the table the two agree). The harness is
``clients/librdkafka/harness.py`` run by that venv's interpreter with the
repository root on ``PYTHONPATH`` (it imports :mod:`conformance.history`).

Versions: only binary wheels are used (no build of librdkafka from source).
PyPI has no cp311 wheel of any confluent-kafka 1.x (the oldest with one is
2.0.2); 1.9.0 and 1.9.2 have cp310 manylinux wheels, and 1.6.0, 1.6.1, 1.7.0
and 1.8.2 (the 1.6-1.8 releases PyPI has) cp39 ones at the newest (``pip
download --only-binary=:all: --python-version 3.X``, checked 2026). So each
release below 2.0.0 gets a venv built with the Python :data:`LEGACY_PYTHONS`
names for it, found by :func:`conformance.members.interpreters.find_python`;
newer ones use the suite's own interpreter. The harness and what it imports
run on 3.9 and 3.10.

Assignors (librdkafka's ``rd_kafka_assignor``s, the same in 1.9.2 and 2.x):
``range``, ``roundrobin`` and, from 1.6.0, ``cooperative-sticky``; there is no
eager ``sticky``, and one list may not mix eager and cooperative assignors.

Expected verdicts on old versions (true verdicts, not harness faults: 2.16.1
with the same harness passes):

- D1 before 2.1.0. ``consume(num_messages > 1)`` (rd_kafka_consume_batch_queue)
  loses records it had fetched when a rebalance runs alongside it: a known
  issue of the 2.0.0 release notes, fixed in 2.1.0; 1.9.x also skips other
  partitions' offsets (fixed in 2.0.0). Seen: 2.0.2 in rolling-restart,
  crash-restart and partition; 1.9.2 in 8 of the 13 scenarios. Every gap
  borders records librdkafka consumed.
- L1 before 2.10.0, intermittently. A commit of the previous generation that
  fails with ILLEGAL_GENERATION while the member joins sets its generation to
  -1; elected leader, it then syncs generation -1, which the broker refuses,
  and the group rebalances again (librdkafka issue 4059, fixed in 2.10.0). The
  violation names the SyncGroup's generation. Seen: 1.9.2 in leader-rotation
  and rolling-restart.
- L4 before 1.7.0. The cooperative-sticky assignor reads each member's current
  partitions from the list meant for its output (empty), not from the owned
  partitions the member declared: a librdkafka leader moves partitions between
  members that stay on every join and leave (librdkafka issue 3306, fixed in
  1.7.0). Seen: 1.6.1 leading the bug corpus's librdkafka-issue-3306 scenario.
- C1 before 1.7.0. ``consume(num_messages > 1)`` serves a revoke mid-batch and
  still returns the records it had collected of the revoked partitions
  (librdkafka issue 3269, fixed in 1.7.0). Seen: 1.6.1 in the same scenario.

Brokers: releases before 1.8.0 cannot consume from Kafka 4.0 and later (:data:`BROKER_LIMITS`;
a run that pairs them is refused before it starts). They resolve a logical offset (BEGINNING or
END, as ``auto.offset.reset`` asks for a partition without a committed offset) with ListOffsets
v0, hard-coded (``rd_kafka_OffsetRequest(..., 0, ...)`` in ``rdkafka_partition.c``); Kafka 4.0
removed ListOffsets v0 (KIP-896: its ListOffsetsRequest's lowest version is 1, read from the
4.0.2 and 4.4.0 jars; 3.9.2's is 0), so librdkafka fails each lookup locally with
``_UNSUPPORTED_FEATURE`` ("Failed to query logical offset BEGINNING: Local: Required feature not
supported by broker"): the member joins and is assigned but consumes nothing. librdkafka 1.8.0
negotiates ListOffsets v0-v2 (commit 5924170c5, #3423). Seen, contract test on broker 4.4.0: 1.6.1
and 1.7.0 consume nothing (about 1200 such errors a minute), 1.8.2, 1.9.2 and 2.16.1 pass; on
broker 3.9.2 1.6.1 and 1.7.0 pass.
PyPI has no confluent-kafka 1.8.0 or 1.8.1, so 1.8.2 is the oldest release to run on the default
broker.

The venv installer is :mod:`conformance.members.pypi_venv`, shared with every
kind installed from PyPI.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conformance import registries
from conformance.members.harness_config import STRATEGIES
from conformance.members.interpreters import find_python
from conformance.members.kinds import BrokerLimit, Feature, ImageRecipe, harness_dir, release_tuple
from conformance.members.known_issues import KnownIssue
from conformance.members.pypi_venv import MARKER, install_pypi_venv, python_env, venv_dir, venv_python

KIND = "librdkafka"
PYPI_PACKAGE = "confluent-kafka"
#: Where releases come from, for messages.
REGISTRY = f"PyPI ({PYPI_PACKAGE})"
#: The oldest release the suite runs, and why.
OLDEST = "1.6.1"
OLDEST_WHY = ("the harness rebalances cooperatively with Consumer.incremental_assign/unassign, which "
              "confluent-kafka has from 1.6.1 (1.6.0 bundles librdkafka 1.6.0 without them)")
#: The Python of a release's venv where the suite's own has no wheel of it: (first release that no
#: longer needs it, Python minor), oldest first (see the module docstring for the wheels).
LEGACY_PYTHONS: tuple[tuple[tuple[int, ...], str], ...] = (((1, 9, 0), "3.9"), ((2, 0, 0), "3.10"))
HARNESS: Path = harness_dir(KIND) / "harness.py"

DEFAULT_VERSION = "2.16.1"
#: The longest the member's fetch long-poll waits for records (P1 reads it):
#: librdkafka's ``fetch.wait.max.ms`` default (the harness leaves it).
FETCH_MAX_WAIT_MS: int = 500
#: Versions exercised by the harness tests against a real broker, the default first.
KNOWN_VERSIONS: tuple[str, ...] = ("2.16.1", "2.0.2", "1.9.2")
#: New and old releases: what ``setup --all`` installs (2.0.2 is the oldest with a wheel for the
#: suite's Python, 1.9.2 the newest 1.x, on Python 3.10, both KNOWN_VERSIONS) and, first
#: and last, what CI's contract test runs: the newest and 1.8.2, the oldest that runs on the
#: default broker (BROKER_LIMITS; on Python 3.9).
TEST_VERSIONS: tuple[str, ...] = ("2.16.1", "2.0.2", "1.9.2", "1.8.2")
#: The newest patch of every minor from OLDEST on PyPI (the nightly contract tier).
MINOR_VERSIONS: tuple[str, ...] = (
    "2.16.1", "2.15.1", "2.14.2", "2.13.2", "2.12.2", "2.11.1", "2.10.1", "2.9.0", "2.8.2", "2.7.0", "2.6.2",
    "2.5.3", "2.4.0", "2.3.0", "2.2.0", "2.1.1", "2.0.2", "1.9.2", "1.8.2", "1.7.0", "1.6.1")

_SRC = "librdkafka's rd_kafka_assignor list and CONFIGURATION.md"
FEATURES: tuple[Feature, ...] = (
    Feature("assignor:range", None, _SRC),
    Feature("assignor:roundrobin", None, _SRC),
    Feature("assignor-list", None, "partition.assignment.strategy takes a list"),
    Feature("static-membership", None, "group.instance.id, librdkafka 1.4.0 (older than OLDEST)"),
    Feature("consumer-protocol", "2.12.0", "group.protocol=consumer, KIP-848: GA in librdkafka 2.12.0 "
                                           "(CHANGELOG; early access from 2.4.0 is not run)"),
    Feature("cooperative", "1.6.1", "KIP-429 in librdkafka 1.6.0; confluent-kafka's incremental_assign/unassign "
                                    "from 1.6.1 (checked: 1.6.0's Consumer has neither)"),
    Feature("assignor:cooperative-sticky", "1.6.1", _SRC + "; usable with incremental_assign, from 1.6.1"),
    # No mix-eager-cooperative: librdkafka refuses a list mixing eager and cooperative assignors.
)

#: Brokers a release cannot work with (see "Brokers" in the module docstring).
BROKER_LIMITS: tuple[BrokerLimit, ...] = (
    BrokerLimit("1.8.0", "4.0.0",
                "queries logical offsets (BEGINNING, END: auto.offset.reset) with ListOffsets v0, which Kafka 4.0 "
                "removed (KIP-896), so it consumes nothing",
                "librdkafka v1.7.0 rdkafka_partition.c sends ListOffsets v0; v1.8.0 negotiates v0-v2 (commit "
                "5924170c5, #3423); Kafka 4.0's ListOffsetsRequest starts at v1"),
)

#: The first confluent-kafka with the cooperative-sticky assignor and
#: incremental_assign/unassign (KIP-429 support in librdkafka 1.6.0; the binding's calls from 1.6.1).
FIRST_COOPERATIVE = (1, 6, 1)



#: Its rows of the known-issues table (conformance.members.known_issues); see "Expected verdicts" above.
KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue("librdkafka", None, "2.1.0", "D1", "librdkafka v2.0.0 release notes (known issue; fixed in v2.1.0)",
               "consume(num_messages > 1) loses records it had fetched when a rebalance runs alongside it",
               # D1's culprit is the owner when the records were acknowledged; a rebalance moved the partition.
               evidence=(("owner_changed", True),)),
    KnownIssue("librdkafka", None, "2.10.0", "L1", "confluentinc/librdkafka issue 4059",
               "a failed commit of the previous generation during a join sets the generation to -1; as leader it "
               "then syncs generation -1, which the broker refuses",
               # L1's culprit is the leader; its SyncGroup went out for generation -1.
               evidence=(("sync_generation", -1),)),
    KnownIssue("librdkafka", "1.6.0", "1.7.0", "L4", "confluentinc/librdkafka issue 3306",
               "the cooperative-sticky leader reads no member's owned partitions (the assignor's empty output "
               "list instead), so it plans every round from scratch and moves partitions that could stay",
               # L4's culprit is the leader that planned the moves; taken_by names its kind.
               evidence=(("taken_by", "librdkafka"),)),
    KnownIssue("librdkafka", None, "1.7.0", "C1", "confluentinc/librdkafka issue 3269",
               "consume(num_messages > 1) returns the records it had collected of partitions a rebalance callback "
               "revoked during the same call",
               # C1's culprit is the member that handed the records over; its history had revoked the partition.
               evidence=(("ownership_ended_by", "revoked"),)),
)


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    return release_tuple(version) >= FIRST_COOPERATIVE


def strategies_supported(version: str) -> list[str]:
    """librdkafka has range, roundrobin and (1.6+) cooperative-sticky; no eager ``sticky``."""
    have = {f.name for f in FEATURES if f.available(version)}
    return [s for s in STRATEGIES if f"assignor:{s}" in have]


def release_exists(version: str) -> bool:
    """Whether PyPI has confluent-kafka ``version``; RegistryUnreachable without an answer."""
    return registries.pypi_has(PYPI_PACKAGE, version)


def listed_versions() -> tuple[str, ...]:
    """Every confluent-kafka release PyPI records (for naming nearby ones)."""
    return registries.pypi_versions(PYPI_PACKAGE)


def is_installed(version: str) -> bool:
    """True when the venv of ``version`` is complete (no I/O but stat)."""
    return (venv_dir(KIND, version) / MARKER).is_file()


def legacy_python(version: str) -> str | None:
    """The Python minor (``"3.9"``) whose wheel confluent-kafka ``version`` needs, where the suite's
    own Python has none (:data:`LEGACY_PYTHONS`); None when the suite's own serves."""
    release = release_tuple(version)
    return next((minor for below, minor in LEGACY_PYTHONS if release < below), None)


def needs_legacy_python(version: str) -> bool:
    """True for confluent-kafka versions with no wheel for the suite's Python (1.x)."""
    return legacy_python(version) is not None


def ensure(version: str) -> None:
    """Install confluent-kafka ``version`` into its own venv (idempotent).

    1.x goes into a venv of the Python :func:`legacy_python` names; SuiteError (one line, what to
    install) when none is found.
    """
    python = None
    minor = legacy_python(version)
    if minor is not None and not (venv_dir(KIND, version) / MARKER).is_file():
        python = find_python(minor)
    install_pypi_venv(KIND, PYPI_PACKAGE, version, python)
    library_version(version)


#: The file in a venv holding the librdkafka version its confluent-kafka bundles (written once).
LIBRARY_FILE = ".librdkafka-version"


def library_version(version: str) -> str | None:
    """The librdkafka version that confluent-kafka ``version`` bundles (``libversion()``), read once
    from the installed venv and kept in it; None when that version is not installed or its
    interpreter cannot say (a broken venv: the run's own start reports that)."""
    venv = venv_dir(KIND, version)
    if not (venv / MARKER).is_file():
        return None
    kept = venv / LIBRARY_FILE
    if kept.is_file():
        return kept.read_text(encoding="utf-8").strip() or None
    try:
        proc = subprocess.run([str(venv_python(KIND, version)), "-c",
                               "import confluent_kafka; print(confluent_kafka.libversion()[0])"],
                              capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        return None
    found = proc.stdout.strip()
    if proc.returncode != 0 or not re.fullmatch(r"[0-9][0-9A-Za-z.\-+]*", found):
        return None
    tmp = venv / f"{LIBRARY_FILE}.{os.getpid()}"
    tmp.write_text(found + "\n", encoding="utf-8")
    os.replace(tmp, kept)
    return found


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(venv_python(KIND, version)), str(HARNESS), str(config_path)], python_env()


def image(version: str) -> ImageRecipe:
    """The member image: the suite's Python with confluent-kafka ``version`` in its venv path; none
    for a release that needs an older Python than the images' 3.11 (:func:`needs_legacy_python`)."""
    refused = (f"confluent-kafka {version} has no wheel for the images' Python 3.11; in containers use "
               f"librdkafka 2.x") if needs_legacy_python(version) else None
    return ImageRecipe("member-python.Dockerfile", suite=True, requirement=f"{PYPI_PACKAGE}=={version}",
                       venv=venv_dir(KIND, version), refused=refused)
