"""The evidence schema (:mod:`conformance.pipeline.checks.evidence`) is whole, enforced and documented.

- Every invariant of the catalog declares its evidence keys, and no other invariant does.
- A finding built with an undeclared key, or a value of another type, is refused by ``violation()``
  naming the invariant, the key and the value's type; a declared finding is built unchanged.
- Every known-issue row matches only on keys (and value types) its invariant declares, and a row
  naming an undeclared key is refused.
- Every key the checks' code writes (dict literals passed as ``evidence=``, ``evidence = {...}``,
  ``evidence["k"] = ...``, ``evidence.update(k=...)``) is declared for the invariants its function
  finds, and every declared key is written somewhere: a rarely taken branch cannot carry an
  undeclared key to a real run, and no declaration outlives its key.
- docs/contracts.md's "Evidence keys" section is the schema, key for key (written from the code: a
  change to either shows here).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conformance import config
from conformance.members import known_issues
from conformance.members.known_issues import KnownIssue
from conformance.pipeline.checks import CATALOG
from conformance.pipeline.checks.common import violation
from conformance.pipeline.checks.evidence import EVIDENCE, check_known_issue

DOC = Path(config.REPO_ROOT) / "docs" / "contracts.md"
CHECKS = Path(config.REPO_ROOT) / "conformance" / "pipeline" / "checks"
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


def _literal_keys(d: ast.Dict) -> list[str]:
    """The constant keys of a dict literal, and of dict literals spread into it (``**({...} if x else {})``)."""
    out = []
    for key, value in zip(d.keys, d.values):
        if key is None:
            out += [k.value for n in ast.walk(value) if isinstance(n, ast.Dict) for k in n.keys
                    if isinstance(k, ast.Constant)]
        elif isinstance(key, ast.Constant):
            out.append(key.value)
    return out


def _written_keys() -> set[tuple[str, str]]:
    """(invariant, key) for every evidence key a check function writes, paired with every invariant whose
    finding it builds (an invariant passed as a name, as ``_final_state_not_judged``'s, is each caller's)."""
    written: set[tuple[str, str]] = set()
    callers = {"_final_state_not_judged": ("L2", "L3")}
    # Steps that build a finding's evidence for the check that calls them (no violation() of their own).
    builders = {"_what_leader_sent": ("L1",), "_unexcused_cause": ("L1",), "_reset_evidence": ("D2", "D3")}
    for path in sorted(CHECKS.glob("*.py")):
        for fn in (n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.FunctionDef)):
            invariants: set[str] = set(builders.get(fn.name, ()))
            keys: list[str] = []
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "violation":
                    first = node.args[0]
                    invariants |= {first.value} if isinstance(first, ast.Constant) else set(callers[fn.name])
                    keys += [k for kw in node.keywords if kw.arg == "evidence" and isinstance(kw.value, ast.Dict)
                             for k in _literal_keys(kw.value)]
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        pairs = (zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple)
                                 and isinstance(node.value, ast.Tuple) else [(target, node.value)])
                        for name, value in pairs:
                            if isinstance(name, ast.Name) and name.id == "evidence" and isinstance(value, ast.Dict):
                                keys += _literal_keys(value)
                            elif (isinstance(name, ast.Subscript) and getattr(name.value, "id", None) == "evidence"
                                  and isinstance(name.slice, ast.Constant)):
                                keys.append(name.slice.value)
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
                      and getattr(node.func.value, "id", None) == "evidence"):
                    keys += [kw.arg for kw in node.keywords if kw.arg]
            written |= {(inv, k) for inv in invariants for k in keys}
    return written


def test_every_key_the_checks_write_is_declared_and_every_declared_key_is_written():
    written = _written_keys()
    declared = {(inv, k) for inv, keys in EVIDENCE.items() for k in keys}
    assert len(written) >= 150   # the scan still sees the checks' evidence (192 keys when written)
    assert sorted(written - declared) == [], "written by a check but not declared in checks/evidence.py"
    assert sorted(declared - written) == [], "declared in checks/evidence.py but written by no check"
