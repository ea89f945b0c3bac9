"""The scenario catalog: every ``fixtures/scenarios/*.scenario`` file, by name.

``get_scenario`` accepts a catalog name or a path to a scenario file, so a
user can run a scenario of their own without adding it to the catalog.
"""

from __future__ import annotations

from pathlib import Path

from conformance.config import FIXTURES_DIR
from conformance.errors import UsageError
from conformance.scenarios.model import Scenario
from conformance.scenarios.parse import load_scenario

SCENARIOS_DIR: Path = FIXTURES_DIR / "scenarios"


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS_DIR.glob("*.scenario"))


def builtin_file(name: str) -> Path:
    """Where the catalog keeps the scenario called ``name`` (whether or not it exists)."""
    return SCENARIOS_DIR / f"{name}.scenario"


def is_builtin(name: str, source: Path | str | None) -> bool:
    """True when ``source`` is the catalog's own file for ``name``: only then does the name alone
    say which scenario ran (a user's file may carry a built-in's name, or live in any folder
    called ``scenarios``)."""
    if source is None:
        return False
    try:
        return Path(source).resolve() == builtin_file(name).resolve() and builtin_file(name).is_file()
    except (OSError, RuntimeError, ValueError):  # an unreadable path, a symlink loop, a NUL
        return False


def get_scenario(name_or_path: str) -> Scenario:
    """Load a scenario by catalog name or file path; UsageError naming the known ones."""
    if not name_or_path.strip():
        raise UsageError(f"an empty scenario name; give one of {', '.join(scenario_names())} or a scenario file")
    path = Path(name_or_path)
    if path.suffix == ".scenario" or path.exists():
        return load_scenario(path)
    candidate = SCENARIOS_DIR / f"{name_or_path}.scenario"
    if not candidate.exists():
        raise UsageError(f"unknown scenario {name_or_path!r}; known: {', '.join(scenario_names())}")
    scenario = load_scenario(candidate)
    if scenario.name != name_or_path:
        raise UsageError(f"{candidate}: its name statement says {scenario.name!r}, not {name_or_path!r}")
    return scenario
