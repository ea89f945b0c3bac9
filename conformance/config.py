"""Every setting of the suite, in one place.

Paths, pinned versions and defaults live here and nowhere else. Environment
variables override the paths so that CI and users can move caches and output.

- ``CONFORMANCE_CACHE``: where set-up installs brokers, toxiproxy, client
  builds and per-version virtual environments (default ``~/.cache/conformance``).
- ``CONFORMANCE_RUNS``: where run directories go (default ``<repo>/reports``).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The repository root (the directory holding ``pyproject.toml``).
REPO_ROOT: Path = Path(__file__).resolve().parent.parent

#: Everything set-up installs, keyed by what it is and its version.
CACHE_DIR: Path = Path(os.environ.get("CONFORMANCE_CACHE", Path.home() / ".cache" / "conformance"))

#: Run directories: ``<RUNS_DIR>/<run-id>/``.
RUNS_DIR: Path = Path(os.environ.get("CONFORMANCE_RUNS", REPO_ROOT / "reports"))

CLIENTS_DIR: Path = REPO_ROOT / "clients"
FIXTURES_DIR: Path = REPO_ROOT / "fixtures"

# Sub-caches (each installer owns exactly one of these).
MAVEN_REPO: Path = CACHE_DIR / "m2"          # Maven local repository (-Dmaven.repo.local)
BROKERS_DIR: Path = CACHE_DIR / "kafka"      # kafka/<version>/lib/*.jar
TOXIPROXY_DIR: Path = CACHE_DIR / "toxiproxy"  # toxiproxy/<version>/toxiproxy-server
GO_DIR: Path = CACHE_DIR / "go"              # GOPATH (module cache) for Go builds
JAVA_DIR: Path = CACHE_DIR / "java"          # java/harness.jar, java/kafka-clients-<v>/*.jar
SARAMA_DIR: Path = CACHE_DIR / "sarama"      # sarama/<version>/harness
VENVS_DIR: Path = CACHE_DIR / "venvs"        # venvs/<kind>-<version>/

# ---------------------------------------------------------------------------
# Pinned versions. Resolved from the registries, not guessed (late 2026).
# ---------------------------------------------------------------------------

#: Broker versions the suite supports; the first is the default.
BROKER_VERSIONS: tuple[str, ...] = ("4.4.0", "3.9.2")
DEFAULT_BROKER: str = BROKER_VERSIONS[0]

#: toxiproxy, built from its Go module.
TOXIPROXY_MODULE: str = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION: str = "v2.12.0"

#: Default version per member kind (an omitted ``@VERSION`` means this).
DEFAULT_CLIENT_VERSIONS: dict[str, str] = {
    "reference": "0.1.0",
    "java": "4.4.0",
    "librdkafka": "2.16.1",
    "sarama": "1.61.1",
    "kafka-python": "3.0.12",
}

#: The default member mix of ``conformance run``: one member of each kind.
DEFAULT_MIX: tuple[str, ...] = ("reference", "java", "librdkafka", "sarama", "kafka-python")

#: The default matrix of ``conformance run``.
DEFAULT_SCENARIOS: tuple[str, ...] = ("leader-rotation", "rolling-restart", "crash-restart", "partition")

# ---------------------------------------------------------------------------
# Group timing defaults for fast, deterministic scenarios (milliseconds).
# Checks derive their time bounds from these, never from magic numbers.
# ---------------------------------------------------------------------------

SESSION_TIMEOUT_MS: int = 10_000
HEARTBEAT_INTERVAL_MS: int = 1_000
MAX_POLL_INTERVAL_MS: int = 30_000
REBALANCE_TIMEOUT_MS: int = MAX_POLL_INTERVAL_MS

#: Loopback only: everything the suite starts listens here.
HOST: str = "127.0.0.1"

#: What ``conformance setup --all`` prepares: every client version the
#: project's own tests use (old and new release of every kind).
TEST_CLIENTS: tuple[str, ...] = (
    "java@4.4.0",
    "java@2.8.1",
    "librdkafka@2.16.1",
    "librdkafka@1.9.2",
    "sarama@1.61.1",
    "sarama@1.38.1",
    "kafka-python@3.0.12",
    "kafka-python@2.3.3",
)
