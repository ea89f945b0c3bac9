"""The attributed matrix on recorded real runs (fixtures/), judged by the session's one real
``conformance report`` (tests/recorded.py).

Stories:
- franz-go 1.22.3, as leader, moves partitions kafka-python 3.0.12 declared owned without a
  generation (docs/client-bugs/franz-go-generationless-owned.md): the three recorded default cells
  (leader-rotation L4, leader-rotation R3, rolling-restart L4 beside a needed move). Every finding
  names franz-go the culprit and kafka-python the harmed, so the first grid marks franz-go x
  kafka-python only (known issue, efficiency) and every other pair of those cells passes; the
  member the needed move took from (the reference) is not harmed.
- A mutant of a clean recorded run (reference, java, librdkafka) in which one member skips a
  cooperative revoke and keeps a partition its new owner already consumes: two owners (R2). The
  culprit is not known (either may be at fault), so R2 marks exactly the pair of the two owners,
  "safety"; the skipping member's own stall (P1) and claim (E5), culprit it, mark its other pair
  with their lesser classes.
- On every recorded run here, the per-member table and the first grid say the same of each spec.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.mutate import MUTATIONS, mutate
from conformance.pipeline.matrix import build_matrix
from recorded import TEST_TIMEOUT, copy_run, rename, unpack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FRANZ = {"generationless": "franz-go-1.22.3-generationless-owned.tar.xz",
         "revoke-undone": "franz-go-1.22.3-generationless-owned-r3.tar.xz",
         "needed-move": "franz-go-1.22.3-generationless-owned-needed-move.tar.xz"}
CLEAN = FIXTURES / "real-runs" / "reference-java-librdkafka--seed-26.tar.xz"
SKIPPED_REVOKE = next(m for m in MUTATIONS if m.name == "skipped-revoke")


def recorded_copies(root: Path) -> dict[str, Path]:
    dirs: dict[str, Path] = {}
    for name, archive in FRANZ.items():
        # The L4 and R3 runs share a seed and mix, so a run id: each copy gets its own.
        dirs[name] = copy_run(unpack(FIXTURES / "client-bugs" / archive, root / f"{name}-original"),
                              root / "runs" / name, f"-attributed-{name}")
    clean = unpack(CLEAN, root / "clean-original")
    dirs["clean"] = copy_run(clean, root / "runs" / "clean", "-attributed")
    # The mutation score's skipped-revoke mutant of this run, byte for byte: another run id.
    dirs["two-owners"] = mutate(clean, SKIPPED_REVOKE, root / "runs" / "two-owners").path
    rename(dirs["two-owners"], "-attributed")
    return dirs


def _marked(matrix: dict) -> dict[tuple[str, str], tuple[str, str | None]]:
    return {(g["a"], g["b"]): (g["status"], g["severity"]) for g in matrix["grid"] if g["status"] != "pass"}


def test_franz_go_marks_only_franz_go_x_kafka_python(recorded_verdicts):
    franz = [recorded_verdicts[n] for n in FRANZ]
    assert {v["verdict"] for v in franz} == {"known-issue"}
    for v in franz:
        found = [x for i in v["invariants"].values() for x in i["violations"]]
        assert found and {(x["culprit"], tuple(x["harmed"])) for x in found} == {("m5-franz-go", ("m4-kafka-python",))}
    m = build_matrix(franz)
    assert _marked(m) == {("franz-go@1.22.3", "kafka-python@3.0.12"): ("known-issue", "efficiency")}
    assert {(e["a"], e["b"]) for e in m["entries"] if e["status"] != "pass"} == {("franz-go@1.22.3", "kafka-python@3.0.12")}
    [issue] = [k for k in m["known_issues"] if k["invariant"] == "L4"]
    assert issue["reference"].startswith("docs/client-bugs/franz-go-generationless-owned.md")
    assert issue["specs"] == ["franz-go@1.22.3"] and issue["severity"] == "efficiency"


def test_two_owners_show_safety_on_exactly_their_pair(recorded_verdicts):
    v = recorded_verdicts["two-owners"]
    assert recorded_verdicts["clean"]["verdict"] == "pass"
    assert v["verdict"] == "fail" and v["invariants"]["R2"]["status"] == "fail"
    [r2] = v["invariants"]["R2"]["violations"]
    assert r2["culprit"] is None and "culprit unknown" in r2["message"]
    owners = {v["member_specs"][m] for m in r2["members"]}
    assert len(owners) == 2
    marked = _marked(build_matrix([v]))
    assert {pair for pair, (_, severity) in marked.items() if severity == "safety"} == {tuple(sorted(owners))}
    assert marked[tuple(sorted(owners))] == ("fail", "safety")
    # The member that skipped its revoke also stalled the partition (P1) and declared its claims wrong
    # (E5): its own acts, culprit it, harming the group as a whole; those mark its pairs, never as safety.
    others = {pair: severity for pair, (_, severity) in marked.items() if pair != tuple(sorted(owners))}
    assert all("reference@0.1.0" in pair and severity in ("liveness", "protocol") for pair, severity in others.items())


def test_per_member_table_agrees_with_the_grid(recorded_verdicts):
    from test_verdict_attribution import assert_grid_agrees_with_kinds

    everything = list(recorded_verdicts.values())
    for v in everything:
        assert_grid_agrees_with_kinds(build_matrix([v]))
    assert_grid_agrees_with_kinds(build_matrix(everything))


def test_the_rendered_report_opens_with_the_grid_and_links_the_known_issue(recorded_verdicts, tmp_path):
    # The page as a maintainer opens it, in headless Chromium: the first table is the member x member
    # grid, each entry has one status and links to its cells, and the known issue links to its
    # client-bugs page, copied beside the report.
    from conformance.report.site import write_site
    from test_report_render import assert_structure, render_in_chromium

    report = tmp_path / "report"
    write_site(list(recorded_verdicts.values()), report)
    dom = render_in_chromium(report / "index.html", tmp_path / "profile", screenshot=tmp_path / "report.png")
    s = assert_structure(dom)
    assert s["known_issue_links"] >= 2 and s["known_issue_unlinked"] == 0, s
    assert (report / "client-bugs" / "franz-go-generationless-owned.md").is_file()
    assert 'href="client-bugs/franz-go-generationless-owned.md"' in dom
    assert (tmp_path / "report.png").stat().st_size > 20000
