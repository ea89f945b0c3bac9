"""Hand-made run directories that tell one story each, for the pipeline's tests and benches.

A story is a short function that writes one run directory with
:class:`stories.builder.CooperativeRun` (the healthy cooperative run, act by act) and breaks it
in one way. Its docstring tells the story; the :func:`story` decorator above it says what the
judge must find: ``fails=(invariant, [fragment, ...])``, each fragment held by some message of
that invariant's violations, or nothing when the story is allowed or passes (the test next to
it says which). The stories sit by family, beside the checks they exercise:
:mod:`stories.encoding` (E), :mod:`stories.leadership` (L), :mod:`stories.revoke` (R),
:mod:`stories.delivery` (D), :mod:`stories.consumption` (C), :mod:`stories.convergence` (V1), :mod:`stories.consumer` (K, and
the classic rules of a consumer group), :mod:`stories.progress` (P1: one story's variants, with
real timing) and :mod:`stories.cells` (eager, cut short, damaged inputs).

Tests import this package as ``stories`` (pytest puts ``tests/`` on ``sys.path``); a bench
adds ``<repo>/tests`` to ``sys.path`` first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from stories.builder import CooperativeRun, healthy


@dataclass(frozen=True)
class Story:
    """One broken cooperative run: ``build`` plays it on a fresh :class:`CooperativeRun` made with
    ``cell`` (manifest settings: members, topics, leader_rotation); ``fails`` is the invariant it
    must fail and the fragments its messages hold (None: it must not fail one)."""

    name: str
    build: Callable[[CooperativeRun], Path]
    fails: tuple[str, tuple[str, ...]] | None
    cell: dict[str, Any] = field(default_factory=dict)

    @property
    def tale(self) -> str:
        return " ".join((self.build.__doc__ or "").split())


#: name -> story, every broken cooperative story of the families below.
STORIES: dict[str, Story] = {}


def story(*, fails: tuple[str, list[str]] | None = None, **cell: Any) -> Callable:
    """Register the decorated function as the story named after it (``r2_allowed`` -> ``r2-allowed``)."""
    def register(fn: Callable[[CooperativeRun], Path]) -> Callable[[CooperativeRun], Path]:
        name = fn.__name__.replace("_", "-")
        assert name not in STORIES, name
        STORIES[name] = Story(name, fn, None if fails is None else (fails[0], tuple(fails[1])), cell)
        return fn
    return register


def write_cell(root: Path, run_id: str, name: str | None = None, **kw: Any) -> Path:
    """Write the story ``name`` (None: the healthy run) as run directory ``root/run_id``; ``kw``:
    manifest settings (``scenario``, ...)."""
    if name is None:
        return healthy(CooperativeRun(root, run_id, **kw))
    s = STORIES[name]
    return s.build(CooperativeRun(root, run_id, **{**s.cell, **kw}))


from stories import cells, consumer, consumption, convergence, delivery, encoding, leadership, revoke  # noqa: E402,F401  (fill STORIES)
from stories.cells import bad_manifest_story, cut_short_story, eager_story, malformed_story  # noqa: E402
from stories.progress import VARIANTS as PROGRESS_VARIANTS  # noqa: E402
from stories.progress import progress_story  # noqa: E402


@dataclass(frozen=True)
class CatalogJudge:
    """The catalog (:func:`catalog_dirs`) judged once: where the judge wrote (``out``), its verdicts,
    the run directories it judged and its phases (``one_partition`` among them)."""

    out: Path
    verdicts: list[dict]
    dirs: list[Path]
    phases: dict[str, Any]


_JUDGED: dict[str, CatalogJudge] = {}


def catalog_dirs(runs: Path) -> list[Path]:
    """Every story cell under ``runs``: the healthy run ``clean``, ``break-<name>`` per story,
    the eager pair, the damaged inputs, the three cut-short cells and ``p1-<variant>`` per variant of
    P1's story."""
    dirs = [write_cell(runs, "clean", scenario="rolling-restart")]
    dirs += [write_cell(runs, f"break-{name}", name, scenario=f"break-{name}") for name in STORIES]
    dirs.append(eager_story(runs, "eager-clean", scenario="upgrade-eager-to-cooperative"))
    dirs.append(eager_story(runs, "eager-r5", break_r5=True, scenario="upgrade-eager-to-cooperative"))
    dirs.append(malformed_story(runs, "malformed"))
    dirs.append(bad_manifest_story(runs, "bad-manifest"))
    dirs.append(cut_short_story(runs, "cut-short"))
    dirs.append(cut_short_story(runs, "cut-short-ended", ended=True))
    dirs.append(cut_short_story(runs, "cut-short-r2", overlap=True))
    dirs += [progress_story(runs, f"p1-{variant}", variant) for variant in PROGRESS_VARIANTS]
    return dirs


def catalog_judge(root: Path) -> CatalogJudge:
    """Write every story cell under ``root`` and judge them in one call.

    Cached per process, so that the test modules of one pytest process share one judge call (the
    first caller's ``root`` holds it)."""
    if "catalog" not in _JUDGED:
        from conformance.pipeline.verdicts import judge

        runs = root / "runs +1"     # a space and a '+': paths must survive Spark's file URIs
        out = root / "out"
        dirs = catalog_dirs(runs)
        phases: dict[str, Any] = {}
        _JUDGED["catalog"] = CatalogJudge(out, judge(dirs, out, phases=phases), dirs, phases)
    return _JUDGED["catalog"]


def judged_catalog(root: Path) -> tuple[Path, list[dict]]:
    """:func:`catalog_judge`'s (out_dir, verdicts)."""
    judged = catalog_judge(root)
    return judged.out, judged.verdicts
