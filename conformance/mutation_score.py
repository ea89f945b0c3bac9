"""``conformance mutation-score [RUN_DIR_OR_ARCHIVE ...]``: does every check fail on real runs?

Builds every mutant (:mod:`conformance.mutate`) of every original run, judges
the originals and the mutants together in one judge call, and prints one line
per invariant that has a mutation: mutants killed (the invariant failed) out of
all, the percentage, and how many of them named the mutant's culprit among the
members of a failing finding; then whether every original passed, and every
surviving mutant by name with what it edited.

Input: run directories, ``.tar.xz`` (or ``.tar.gz``, ``.tar``) archives of run
directories, or folders holding either; by default the corpus of real runs in
``fixtures/real-runs/`` (see its README.md). Archives are unpacked into a
temporary directory, which, with the mutants, is removed afterwards.

Exit 0 only when every original passed every invariant and every mutant failed
its invariant (every mutation applied to some original), and every neighbour (a
legitimate behaviour beside a narrowed exemption rule, :data:`conformance.mutate.NEIGHBOURS`)
was allowed by its rule; 1 otherwise; 2 on bad input (a missing path, an unreadable archive, no run directory), one line.
"""

from __future__ import annotations

import argparse
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import UsageError
from conformance.mutate import MUTATIONS, NEIGHBOURS, BadRun, Mutant, NotApplicable, RunEdit, mutate

#: The corpus of real runs judged by default.
CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "real-runs"
ARCHIVES = (".tar.xz", ".tar.gz", ".tgz", ".tar")

DESCRIPTION = """\
Inject one anomaly class at a time into copies of real run directories and judge them all:
prints, per invariant, the mutants that made it fail (killed) out of all, and whether every
original passed. Default input: the corpus of real runs in fixtures/real-runs/.

Exit 0 when every original passed, every mutant failed its invariant and every neighbour was
allowed by its rule; 1 otherwise; 2 on bad input.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("mutation-score", help="mutate real runs, one anomaly at a time, and check that "
                              "every check fails", description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN_DIR_OR_ARCHIVE",
                   help="run directories, archives of them (.tar.xz), or folders holding either "
                        "(default: fixtures/real-runs/)")
    p.set_defaults(func=run)


@dataclass
class Score:
    """What one mutation-score pass found."""

    originals: dict[Path, dict] = field(default_factory=dict)            # original -> verdict
    mutants: list[tuple[Mutant, dict]] = field(default_factory=list)     # (mutant, its verdict)
    not_applicable: list[tuple[Path, str, str]] = field(default_factory=list)   # (original, mutation, why)
    names: dict[Path, str] = field(default_factory=dict)                 # original -> name to show
    neighbours: list[tuple[Mutant, dict]] = field(default_factory=list)  # (neighbour, its verdict)

    def failing_originals(self) -> dict[Path, dict[str, str]]:
        """Original -> {invariant: first messages} of every original that did not pass."""
        out = {}
        for path, v in self.originals.items():
            if v["verdict"] != "pass":
                bad = {inv: "; ".join(x["message"] for x in i["violations"][:2]) or str(i.get("error") or i["status"])
                       for inv, i in v["invariants"].items() if i["status"] != "pass"}
                out[path] = bad or {"-": f"verdict {v['verdict']}" + (f": {v['malformed'][:1]}" if v["malformed"] else "")}
        return out

    @staticmethod
    def killed(mutant: Mutant, verdict: dict) -> bool:
        return verdict["invariants"].get(mutant.invariant, {}).get("status") == "fail"

    @staticmethod
    def blamed(mutant: Mutant, verdict: dict) -> bool:
        """A failing finding of the mutant's invariant names its culprit among its members."""
        inv = verdict["invariants"].get(mutant.invariant, {})
        return any(mutant.culprit in (v.get("members") or []) for v in inv.get("violations") or []
                   if not v.get("known_issue"))

    def survivors(self) -> list[tuple[Mutant, dict]]:
        return [(m, v) for m, v in self.mutants if not self.killed(m, v)]

    def unapplied(self) -> list[str]:
        """Mutations and neighbours that made no copy of any original."""
        made = {m.mutation for m, _ in self.mutants + self.neighbours}
        names = [mu.name for mu in MUTATIONS] + [nb.name for nb in NEIGHBOURS]
        return [name for name in names if name not in made]

    @staticmethod
    def allowed(neighbour: Mutant, verdict: dict) -> bool:
        """A neighbour is judged right when its invariant passed with an allowed finding of its rule."""
        rule = next(n.allowed_by for n in NEIGHBOURS if n.name == neighbour.mutation)
        inv = verdict["invariants"].get(neighbour.invariant, {})
        return inv.get("status") == "pass" and any(a.get("allowed_by") == rule for a in inv.get("allowed") or [])

    def misjudged_neighbours(self) -> list[tuple[Mutant, dict]]:
        """Neighbours (legitimate behaviour beside a narrowed rule) not allowed by their rule: a false alarm."""
        return [(m, v) for m, v in self.neighbours if not self.allowed(m, v)]

    def perfect(self) -> bool:
        return (not self.failing_originals() and not self.survivors() and not self.unapplied()
                and not self.misjudged_neighbours() and bool(self.originals))


def _originals(paths: list[Path], into: Path) -> tuple[list[Path], dict[Path, str]]:
    """The run directories behind ``paths`` (archives unpacked under ``into``), with a name each."""
    from conformance.pipeline.ingest import find_run_dirs

    runs: list[Path] = []
    names: dict[Path, str] = {}
    for k, path in enumerate(paths):
        if not path.exists():
            raise UsageError(f"mutation-score: no such path: {path}")
        found: list[tuple[Path, str]] = []
        archives = ([path] if path.is_file() else
                    sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(ARCHIVES))
                    if not (path / "manifest.json").is_file() else [])
        if path.is_file() and not path.name.endswith(ARCHIVES):
            raise UsageError(f"mutation-score: {path} is neither a run directory nor a .tar.xz archive of one")
        for n, archive in enumerate(archives):
            dest = into / f"{k}-{n}"
            dest.mkdir(parents=True)
            try:
                with tarfile.open(archive) as tar:
                    if hasattr(tarfile, "data_filter"):
                        tar.extractall(dest, filter="data")
                    else:  # pragma: no cover - Python before 3.11.4
                        tar.extractall(dest)
            except tarfile.ReadError:
                raise UsageError(f"mutation-score: cannot unpack {archive}: not a readable tar archive "
                                 "(.tar.xz, .tar.gz or .tar)") from None
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise UsageError(f"mutation-score: cannot unpack {archive}: {exc}") from None
            inside = find_run_dirs([dest])
            if not inside:
                raise UsageError(f"mutation-score: {archive} holds no run directory (no manifest.json)")
            found += [(r, archive.name if len(inside) == 1 else f"{archive.name}:{r.name}") for r in inside]
        if path.is_dir():
            found += [(r, r.name) for r in find_run_dirs([path]) if into not in r.parents]
        if not found:
            raise UsageError(f"mutation-score: no run directory (manifest.json) or .tar.xz archive in {path}")
        for r, name in found:
            if r not in names:
                runs.append(r)
                names[r] = name
    return runs, names


@dataclass
class Built:
    """Every run one score judges: the originals (each with a name to show) and the mutants and
    neighbours built from them; what could not be built, and why."""

    originals: list[Path]
    names: dict[Path, str]
    mutants: list[Mutant] = field(default_factory=list)
    neighbours: list[Mutant] = field(default_factory=list)
    not_applicable: list[tuple[Path, str, str]] = field(default_factory=list)

    def run_dirs(self) -> list[Path]:
        """The run directories to judge, originals first."""
        return [*self.originals, *(m.path for m in self.mutants + self.neighbours)]

    def assess(self, verdicts: list[dict]) -> Score:
        """The score of these runs from their verdicts (a verdict per run directory, by ``run_dir``)."""
        by_dir = {Path(v["run_dir"]).resolve(): v for v in verdicts if v.get("run_dir")}
        return Score(originals={o: by_dir[o.resolve()] for o in self.originals},
                     mutants=[(m, by_dir[m.path.resolve()]) for m in self.mutants],
                     not_applicable=list(self.not_applicable), names=dict(self.names),
                     neighbours=[(m, by_dir[m.path.resolve()]) for m in self.neighbours])


def build(paths: list[Path] | None, work: Path) -> Built:
    """Every mutant and neighbour of every original under ``paths`` (default: the corpus), built
    under ``work``. Raises :class:`UsageError` on bad input."""
    paths = [Path(p) for p in paths] if paths else [CORPUS]
    originals, names = _originals(paths, work / "originals")
    built = Built(originals, names)
    for k, original in enumerate(originals):
        try:
            RunEdit.load(original)
        except BadRun as exc:
            raise UsageError(f"mutation-score: cannot read run {names[original]}: {exc}") from None
        for mutation in MUTATIONS:
            try:
                built.mutants.append(mutate(original, mutation, work / "mutants" / f"{k}-{mutation.name}"))
            except NotApplicable as exc:
                built.not_applicable.append((original, mutation.name, str(exc)))
        for neighbour in NEIGHBOURS:
            try:
                built.neighbours.append(mutate(original, neighbour, work / "neighbours" / f"{k}-{neighbour.name}"))
            except NotApplicable as exc:
                built.not_applicable.append((original, neighbour.name, str(exc)))
    return built


def score(paths: list[Path] | None = None, work: Path | None = None) -> Score:
    """Build every mutant of every original under ``paths`` (default: the corpus) and judge all in one
    judge call; temporary files live under ``work`` (a new temporary directory, removed afterwards,
    when not given). Raises :class:`UsageError` on bad input."""
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="conformance-mutation-")) if work is None else Path(work)
    try:
        built = build(paths, work)
        from conformance.pipeline import judge

        return built.assess(judge(built.run_dirs(), work / "judged"))
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def render(s: Score) -> list[str]:
    """The lines ``conformance mutation-score`` prints."""
    lines = [f"mutation score: {len(s.mutants)} mutant(s) of {len(s.originals)} real run(s)"]
    for inv in dict.fromkeys(mu.invariant for mu in MUTATIONS):
        ms = [(m, v) for m, v in s.mutants if m.invariant == inv]
        names = ", ".join(mu.name for mu in MUTATIONS if mu.invariant == inv)
        if not ms:
            lines.append(f"  {inv:<3} no mutant: {names} applied to no original")
            continue
        killed = sum(1 for m, v in ms if s.killed(m, v))
        named = [(m, v) for m, v in ms if m.culprit]
        blame = (f"  culprit named {sum(1 for m, v in named if s.blamed(m, v))}/{len(named)}" if named else "")
        lines.append(f"  {inv:<3} killed {killed}/{len(ms)} {100.0 * killed / len(ms):5.1f}%{blame}  ({names})")
    bad = s.failing_originals()
    lines.append(f"originals: {len(s.originals) - len(bad)}/{len(s.originals)} passed every invariant"
                 + ("" if bad else " (all passed)"))
    for path, invs in bad.items():
        for inv, msg in invs.items():
            lines.append(f"  original {s.names.get(path, path)} fails {inv}: {msg}")
    for m, v in s.survivors():
        inv = v["invariants"].get(m.invariant, {})
        lines.append(f"  survivor {m.mutation} of {s.names.get(m.original, m.original)}: {m.invariant} "
                     f"{inv.get('status', 'missing')} ({m.detail})")
    for m, v in s.mutants:
        if m.culprit and s.killed(m, v) and not s.blamed(m, v):
            lines.append(f"  unblamed {m.mutation} of {s.names.get(m.original, m.original)}: {m.invariant} failed "
                         f"without naming the culprit {m.culprit}")
    if s.neighbours:
        right = len(s.neighbours) - len(s.misjudged_neighbours())
        lines.append(f"neighbours: {right}/{len(s.neighbours)} allowed by their rule "
                     f"({', '.join(sorted({m.mutation for m, _ in s.neighbours}))})")
    for m, v in s.misjudged_neighbours():
        inv = v["invariants"].get(m.invariant, {})
        lines.append(f"  false alarm: neighbour {m.mutation} of {s.names.get(m.original, m.original)}: {m.invariant} "
                     f"{inv.get('status', 'missing')}, allowed by {sorted({a.get('allowed_by') for a in inv.get('allowed') or []})} "
                     f"({m.detail})")
    for original, name, why in s.not_applicable:
        lines.append(f"  not applicable: {name} to {s.names.get(original, original)}: {why}")
    return lines


def run(args: argparse.Namespace) -> int:
    s = score(args.runs)
    for line in render(s):
        print(line)
    return 0 if s.perfect() else 1
