"""Every check fails on REAL recorded runs, not only on synthetic stories.

The corpus in fixtures/real-runs/ holds real run directories that pass every
invariant as recorded; :mod:`conformance.mutate` injects one anomaly class at a
time into copies of them (real timing kept) and each mutant must fail the
invariant it names. Originals, mutants and neighbours are judged in the session's one shared
judge of recorded runs (tests/recorded.py); ``conformance mutation-score`` judges the same runs
in a call of its own (mutation_score.score: build, judge, assess).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.mutate import MUTATIONS
from conformance.mutation_score import CORPUS, Built, Score, build, render
from recorded import TEST_TIMEOUT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]


#: What recorded_copies built (one build a session).
_BUILT: list[Built] = []


def recorded_copies(root: Path) -> dict[str, Path]:
    """The corpus's originals, their mutants and neighbours: judged by the session's shared judge of
    recorded runs (tests/recorded.py), one judge call over them and every other recorded copy."""
    built = build([CORPUS], root)
    _BUILT.append(built)
    return {str(run): run for run in built.run_dirs()}


@pytest.fixture(scope="module")
def result(recorded_verdicts) -> Score:
    (built,) = _BUILT
    return built.assess(list(recorded_verdicts.values()))


def test_corpus_is_there() -> None:
    archives = sorted(CORPUS.glob("*.tar.xz"))
    assert len(archives) >= 2, f"expected the real-run corpus in {CORPUS}, found {archives}"
    assert sum(a.stat().st_size for a in archives) < 5 * 1024 * 1024, "the corpus is meant to stay under 5 MB"


def test_every_original_passes_every_invariant(result) -> None:
    bad = result.failing_originals()
    assert not bad, "originals that do not pass (a false alarm on a real run, or a real bug):\n" + "\n".join(
        f"  {result.names[p]}: {inv}: {msg}" for p, invs in bad.items() for inv, msg in invs.items())


def test_every_mutation_applies_to_some_original(result) -> None:
    assert not result.unapplied(), (f"mutations with no mutant: {result.unapplied()}; not applicable: "
                                    + "; ".join(f"{n} to {result.names[o]}: {why}" for o, n, why in result.not_applicable))


@pytest.mark.parametrize("invariant", sorted({m.invariant for m in MUTATIONS}))
def test_every_mutant_fails_its_invariant(result, invariant: str) -> None:
    mine = [(m, v) for m, v in result.mutants if m.invariant == invariant]
    survivors = [(m, v) for m, v in mine if not result.killed(m, v)]
    assert mine, f"no mutant for {invariant}"
    assert not survivors, f"{invariant}: {len(mine) - len(survivors)}/{len(mine)} killed; survivors:\n" + "\n".join(
        f"  {m.mutation} of {result.names[m.original]}: {v['invariants'].get(invariant, {}).get('status')} "
        f"({m.detail})" for m, v in survivors) + "\n" + "\n".join(render(result))


def test_narrowed_exemptions_still_allow_the_real_faults_run(result) -> None:
    """The neighbours of the narrowed rules' mutants: the faults original's own overlaps stay allowed.
    m1-java, paused past its session, kept orders-3 and orders-5 while generation 5 (formed without it,
    the broker's removal on the wire) gave them on: R2/fault-window (mutants taken-before-removal and
    held-beside-faulted of this run fail R2)."""
    (faults,) = [v for p, v in result.originals.items() if result.names[p].startswith("faults-")]
    allowed = faults["invariants"]["R2"]["allowed"]
    assert len(allowed) == 2, allowed
    for a in allowed:
        assert a["allowed_by"] == "R2/fault-window" and a["evidence"]["kept_by"] == "m1-java", a
        assert a["evidence"]["removed_by"] == "generation 5 formed without it", a
        assert a["evidence"]["window"]["fault"] == "pause" and a["evidence"]["removed_ts"] <= a["evidence"]["from"], a


def test_every_neighbour_is_allowed_by_its_rule(result) -> None:
    """Legitimate behaviour beside a narrowed rule stays allowed. stalled-through-rebalance: an owner
    fetches nothing of a partition across its own 8 s rebalance of the faults original (generation 5,
    REBALANCE_IN_PROGRESS to its SyncGroup answer), for its bound plus half that rebalance: over the
    bound, no more than it outside the rebalance, so P1 passes with P1/rebalance (its mutant
    stalled-past-own-bound, the same stall outside any rebalance, fails P1)."""
    assert result.neighbours, "no neighbour applied to any original"
    wrong = result.misjudged_neighbours()
    assert not wrong, "\n".join(f"{m.mutation} of {result.names[m.original]}: {v['invariants'][m.invariant]}"
                                for m, v in wrong)
    for m, v in result.neighbours:
        [a] = [a for a in v["invariants"][m.invariant]["allowed"] if a["allowed_by"] == "P1/rebalance"]
        assert a["culprit"] == m.culprit and a["evidence"]["rebalances"], a
        assert a["evidence"]["stall_ms"] > a["evidence"]["bound_ms"] >= a["evidence"]["outside_rebalances_ms"], a


def test_mutations_are_deterministic(tmp_path) -> None:
    """The same original and mutation give the same bytes (the score does not depend on the run of it)."""
    import tarfile

    from conformance.mutate import NotApplicable, mutate

    archive = sorted(CORPUS.glob("*.tar.xz"))[0]
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "orig", filter="data")
    original = next((tmp_path / "orig").iterdir())
    for mutation in MUTATIONS:
        made = []
        for k in (1, 2):
            try:
                made.append(mutate(original, mutation, tmp_path / f"{mutation.name}-{k}"))
            except NotApplicable:
                break
        if len(made) < 2:
            continue
        a, b = made
        assert (a.culprit, a.detail) == (b.culprit, b.detail)
        for f in sorted(p.relative_to(a.path) for p in a.path.rglob("*") if p.is_file()):
            assert (a.path / f).read_bytes() == (b.path / f).read_bytes(), f"{mutation.name}: {f} differs"
