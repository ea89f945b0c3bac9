"""The evidence schema (:mod:`conformance.pipeline.checks.evidence`) is whole, enforced and documented.

- Every invariant of the catalog declares its evidence keys, and no other invariant does.
- A finding built with an undeclared key, or a value of another type, is refused by ``violation()``
  naming the invariant, the key and the value's type; a declared finding is built unchanged.
- Every known-issue row matches only on keys (and value types) its invariant declares, and a row
  naming an undeclared key is refused.
- docs/contracts.md's "Evidence keys" section is the schema, key for key (written from the code: a
  change to either shows here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import config
from conformance.members import known_issues
from conformance.members.known_issues import KnownIssue
from conformance.pipeline.checks import CATALOG
from conformance.pipeline.checks.common import violation
from conformance.pipeline.checks.evidence import EVIDENCE, check_known_issue

DOC = Path(config.REPO_ROOT) / "docs" / "contracts.md"
SECTION = "## Evidence keys"


def render() -> list[str]:
    """The doc's evidence tables as the schema says they are: one per invariant, in catalog order."""
    lines = []
    for inv in CATALOG:
        lines += ["", f"### Evidence of {inv}", "", "| key | type | meaning |", "|---|---|---|"]
        lines += [f"| `{k.name}` | {k.type_text} | {k.meaning} |" for k in EVIDENCE[inv].values()]
    return lines


def test_every_invariant_declares_its_evidence_and_only_catalog_invariants_do():
    assert set(EVIDENCE) == set(CATALOG)
    assert all(EVIDENCE[inv] for inv in CATALOG), [inv for inv in CATALOG if not EVIDENCE[inv]]


def test_a_declared_finding_is_built_unchanged():
    ev = {"wire_line": 12, "kind": "stale-claim", "assignment_wire_line": None}
    assert violation("E5", "run-1", "stale claim", evidence=ev)["evidence"] == ev


@pytest.mark.parametrize("invariant, evidence, named", [
    # A key E5 never declares: a check typo or a key added without its declaration.
    ("E5", {"wire_line": 12, "wire_lne": 13}, "'wire_lne' (value of type int)"),
    # A declared key with a value of another type: a wire line as a string.
    ("E5", {"wire_line": "12"}, "'wire_line' has a value of type str"),
    # None where the key is not nullable.
    ("D1", {"records": None}, "'records' has a value of type NoneType"),
    # A bool is not an int unless the key says so.
    ("D1", {"records": True}, "'records' has a value of type bool"),
])
def test_an_undeclared_key_or_a_wrong_type_is_refused_naming_it(invariant, evidence, named):
    with pytest.raises(ValueError, match=invariant) as err:
        violation(invariant, "run-1", "m", evidence=evidence)
    assert named in str(err.value)


def test_every_known_issue_matches_only_declared_keys():
    rows = known_issues.table()
    assert rows
    for row in rows:
        check_known_issue(row.invariant, row.evidence)
        assert {k for k, _ in row.evidence} <= set(EVIDENCE[row.invariant]), row.reference


def test_a_known_issue_naming_an_undeclared_key_is_refused():
    # A row of L4 matching "taken_by" is fine; one matching "owner_changed" (D1's key) could never match.
    row = KnownIssue("sarama", None, None, "L4", "ref", "summary", evidence=(("owner_changed", True),))
    with pytest.raises(ValueError, match="'owner_changed' is not declared for L4"):
        check_known_issue(row.invariant, row.evidence)
    with pytest.raises(ValueError, match="'taken_by' has a value of type int"):
        check_known_issue("L4", (("taken_by", 3),))


def test_contracts_lists_every_invariants_evidence_keys():
    doc = DOC.read_text(encoding="utf-8").splitlines()
    start = doc.index(SECTION)
    end = next((i for i in range(start + 1, len(doc)) if doc[i].startswith("## ")), len(doc))
    listed = [line for line in doc[start + 1:end] if line.startswith(("### Evidence of", "| "))]
    expected = [line for line in render() if line.startswith(("### Evidence of", "| "))]
    assert listed == expected, "docs/contracts.md's evidence keys differ from conformance/pipeline/checks/evidence.py"
