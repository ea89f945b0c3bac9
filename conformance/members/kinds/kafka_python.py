"""Member kind ``kafka-python``: dpkp/kafka-python in its own venv per version.

``kafka-python@V`` is the PyPI release ``V`` installed into
``config.VENVS_DIR/kafka-python-V`` (the shared installer,
:mod:`conformance.members.pypi_venv`). The harness is
``clients/kafka-python/harness.py``.

Assignors, read from the releases' own sources: 3.x has
``kafka.coordinator.assignors.cooperative_sticky.CooperativeStickyAssignor``
(name ``cooperative-sticky``, KIP-429, from 3.0.0) besides ``range``,
``roundrobin`` and ``sticky`` (``...sticky.sticky_assignor.StickyPartitionAssignor``);
2.x has the eager ``range`` and ``roundrobin``, and ``sticky`` from 2.0.2.
3.x cannot list a cooperative and an eager assignor together (its coordinator
refuses the mix), so it has no ``mix-eager-cooperative`` feature. Static
membership (``group_instance_id``) is 3.x only.

Commits: ``OffsetAndMetadata`` is ``(offset, metadata)`` in 2.0.x (every
patch to 2.0.6) and ``(offset, metadata, leader_epoch)`` from 2.1.0; the
harness builds the shape the installed release defines, so every release
from 2.0.0 runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance import config, registries
from conformance.members.golden import run
from conformance.members.harness_config import STRATEGIES
from conformance.members.kinds import Feature, ImageRecipe, harness_dir, release_tuple
from conformance.members.known_issues import KnownIssue
from conformance.members.pypi_venv import MARKER, install_pypi_venv, python_env, venv_dir, venv_python

KIND = "kafka-python"
PYPI_PACKAGE = "kafka-python"
#: Where releases come from, for messages.
REGISTRY = f"PyPI ({PYPI_PACKAGE})"
#: The oldest release the harness runs, and why.
OLDEST = "2.0.0"
OLDEST_WHY = "the kafka-python harness supports kafka-python 2.0.0 or later (1.x releases are not tried)"
HARNESS: Path = harness_dir(KIND) / "harness.py"

DEFAULT_VERSION = "3.0.12"
#: The longest the member's fetch long-poll waits for records (P1 reads it):
#: kafka-python's ``fetch_max_wait_ms`` default (the harness leaves it).
FETCH_MAX_WAIT_MS: int = 500
#: Versions exercised by the harness tests against a real broker, the default first.
KNOWN_VERSIONS: tuple[str, ...] = ("3.0.12", "2.3.3", "2.0.6")
#: What ``setup --all`` installs: the newest, 2.3.3 (the harness tests) and the newest patch of the
#: oldest minor; CI's contract test runs the first and the last.
TEST_VERSIONS: tuple[str, ...] = ("3.0.12", "2.3.3", "2.0.6")
#: The newest patch of every minor from OLDEST on PyPI (the nightly contract tier).
MINOR_VERSIONS: tuple[str, ...] = ("3.0.12", "2.3.3", "2.2.21", "2.1.6", "2.0.6")
#: Releases whose golden vectors scripts/regen-golden.sh writes (clients/kafka-python/golden).
GOLDEN_VERSIONS: tuple[str, ...] = ("2.3.3", "3.0.12")

_SRC = "kafka/coordinator/assignors/ of each release"
FEATURES: tuple[Feature, ...] = (
    Feature("assignor:range", None, _SRC),
    Feature("assignor:roundrobin", None, _SRC),
    Feature("assignor:sticky", "2.0.2", _SRC + " (sticky/sticky_assignor.py)"),
    Feature("assignor-list", None, "group_protocols() lists every configured assignor"),
    Feature("cooperative", "3.0.0", "CooperativeStickyAssignor, KIP-429 (3.0.0)"),
    Feature("assignor:cooperative-sticky", "3.0.0", _SRC + " (cooperative_sticky.py)"),
    Feature("static-membership", "3.0.0", "group_instance_id (3.0.0)"),
)


#: Its rows of the known-issues table (conformance.members.known_issues).
KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue("kafka-python", "3.0.0", None, "E5", "docs/client-bugs/kafka-python-discarded-join.md "
               "(kafka/coordinator/base.py join_group_async; no upstream report yet)",
               "a join whose SyncGroup answer arrives after poll()'s timeout is thrown away: the next poll sends a "
               "new JoinGroup declaring the partitions that assignment took away, and never applies it",
               evidence=(("kind", "stale-claim"), ("assignment_applied", False))),
    KnownIssue("kafka-python", "3.0.0", None, "E5", "docs/client-bugs/kafka-python-lost-partitions-declared.md "
               "(kafka/coordinator/assignors/cooperative_sticky.py metadata; no upstream report yet)",
               "after on_partitions_lost the cooperative-sticky assignor still encodes the lost partitions as owned "
               "(its own last assignment, never reset): the member rejoins declaring them, in a v1 subscription "
               "without a generation",
               evidence=(("kind", "stale"), ("history_ended", "lost"))),
)


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    return release_tuple(version) >= (3, 0, 0)


def strategies_supported(version: str) -> list[str]:
    have = {f.name for f in FEATURES if f.available(version)}
    return [s for s in STRATEGIES if f"assignor:{s}" in have]


def release_exists(version: str) -> bool:
    """Whether PyPI has kafka-python ``version``; RegistryUnreachable without an answer."""
    return registries.pypi_has(PYPI_PACKAGE, version)


def listed_versions() -> tuple[str, ...]:
    """Every kafka-python release PyPI records (for naming nearby ones)."""
    return registries.pypi_versions(PYPI_PACKAGE)


def is_installed(version: str) -> bool:
    """True when the venv of ``version`` is complete (no I/O but stat)."""
    return (venv_dir(KIND, version) / MARKER).is_file()


def ensure(version: str) -> None:
    """Install kafka-python ``version`` into its own venv (idempotent)."""
    install_pypi_venv(KIND, PYPI_PACKAGE, version)


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(venv_python(KIND, version)), str(HARNESS), str(config_path)], python_env()


def image(version: str) -> ImageRecipe:
    """The member image: the suite's Python with kafka-python ``version`` in its venv path."""
    return ImageRecipe("member-python.Dockerfile", suite=True, requirement=f"{PYPI_PACKAGE}=={version}",
                       venv=venv_dir(KIND, version))


def golden_vectors(version: str, work: Path) -> str:
    """The golden vectors kafka-python ``version`` writes (:mod:`conformance.members.golden`):
    ``clients/kafka-python/golden/generate.py`` run in the release's own venv
    (``VENVS_DIR/golden-kafka-python-<version>``, Python 3.11; ``.complete`` is written last, so a
    half-built venv is rebuilt)."""
    venv = config.VENVS_DIR / f"golden-{KIND}-{version}"
    if not (venv / ".complete").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        run(["python3.11", "-m", "venv", str(venv)], f"creating {venv}")
        run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", f"{PYPI_PACKAGE}=={version}"],
            f"installing {PYPI_PACKAGE}=={version} into {venv}")
        (venv / ".complete").touch()
    return run([str(venv / "bin" / "python"), str(harness_dir(KIND) / "golden" / "generate.py")],
               f"the kafka-python {version} generator")
