"""The reference member kind: this project's own cooperative consumer.

It runs from the suite's own virtual environment as
``python -m conformance.reference CONFIG`` (built in :mod:`conformance.reference`),
so there is nothing to install and exactly one version: the suite's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from conformance import __version__, config
from conformance.members.harness_config import STRATEGIES
from conformance.members.kinds import Feature, ImageRecipe

KIND = "reference"
#: The suite's own version: the reference consumer has this one.
DEFAULT_VERSION: str = __version__
#: The longest the member's fetch long-poll waits for records (P1 reads it):
#: the reference consumer's Fetch ``max_wait_ms``.
FETCH_MAX_WAIT_MS: int = config.REFERENCE_FETCH_MAX_WAIT_MS
KNOWN_VERSIONS: tuple[str, ...] = (DEFAULT_VERSION,)
#: In docker-compose.yml's default set: the suite's own consumer, needing nothing but the suite.
IN_COMPOSE_DEFAULT = True
#: Everything the harness contract asks for (conformance/reference/member.py).
FEATURES: tuple[Feature, ...] = tuple(Feature(name) for name in (
    "cooperative", "static-membership", "assignor-list", "mix-eager-cooperative", "consumer-protocol",
    *(f"assignor:{s}" for s in STRATEGIES)))


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def ensure(version: str) -> None:
    """Nothing to install; the version must be the suite's own (UsageError otherwise)."""
    from conformance.errors import UsageError

    if version not in known_versions():
        raise UsageError(f"reference@{version}: the reference consumer is part of the suite and has one version: "
                         f"{', '.join(known_versions())}")


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [sys.executable, "-m", "conformance.reference", str(config_path)], {}


def supports_cooperative(version: str) -> bool:
    return True


def strategies_supported(version: str) -> list[str]:
    return list(STRATEGIES)


def image(version: str) -> ImageRecipe:
    """The member image: the suite itself on the images' Python (nothing from the cache)."""
    return ImageRecipe("member-reference.Dockerfile", suite=True)
