"""JUnit XML: one testcase per (cell, invariant), plus one per cell for its input and one for its end.

A testcase's name carries its invariant's severity class (safety, liveness, protocol, efficiency);
a failed invariant is a <failure> (type: invariant and class) whose message is its first violation,
culprit first ("culprit m1, harmed m2: ..." or "culprit unknown: ..."), and whose text is its violations; an unknown one an
<error> with the check's error; one judged on damaged input ("malformed") an
<error> of type ``malformed`` naming the damaged lines; one that failed only by known client bugs is
<skipped> naming their references; malformed input lines fail the cell's
``input`` testcase with their file and line; a run cut short before its
scenario ended (a suite error, Ctrl-C) is an <error> of the cell's ``run``
testcase, saying why. The ``input`` testcase's properties carry the members,
seed, verdict, the finding to read first, ``allowed.<rule>``: how many
findings each named exemption allowed, ``reproduce``: the command that runs the cell again,
``run_dir`` and ``file.<path>``: links to the run directory's files, relative to the report's
directory (:mod:`conformance.report.evidence`). A failure's text ends with the reproduce command;
its findings name the wire capture's lines as ``wire.jsonl:N`` and times from the run's start.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from conformance.pipeline.checks import CATALOG, SEVERITY
from conformance.report.evidence import CellLinks, attributed, located, message


def render(verdicts: list[dict], links: dict[str, CellLinks] | None = None) -> str:
    suites = ET.Element("testsuites", name="conformance")
    by_scenario: dict[str, list[dict]] = {}
    for v in verdicts:
        by_scenario.setdefault(f"{v['scenario']} (broker {v['broker_version']})", []).append(v)
    for name, cells in sorted(by_scenario.items()):
        suite = ET.SubElement(suites, "testsuite", name=name)
        tests = failures = errors = 0
        for v in sorted(cells, key=lambda v: v["run"]):
            classname = f"{v['scenario']}.{v['run']}"
            link = (links or {}).get(v["run"])
            t0 = (v.get("timing") or {}).get("start_ts")
            again = f"\nreproduce: {link.command}" if link and link.command else ""
            for inv, (_c, statement) in CATALOG.items():
                i = v["invariants"].get(inv, {"status": "unknown", "violations": [], "error": "not run"})
                case = ET.SubElement(suite, "testcase", classname=classname,
                                     name=f"{inv} ({SEVERITY.get(inv, '?')}) {statement}")
                tests += 1
                if i["status"] == "known-issue":
                    ET.SubElement(case, "skipped", message="known issue: " + "; ".join(
                        sorted({x["known_issue"]["reference"] for x in i["violations"] if x.get("known_issue")})))
                    case_out = ET.SubElement(case, "system-out")
                    case_out.text = "\n".join(attributed(x) for x in i["violations"])
                elif i["status"] == "fail":
                    failures += 1
                    f = ET.SubElement(case, "failure", message=attributed(i["violations"][0])[:500],
                                      type=f"{inv} {SEVERITY.get(inv, '?')}")
                    f.text = "\n".join(json.dumps(located(x, t0), sort_keys=True, default=str)
                                       for x in i["violations"][:50]) + again
                elif i["status"] == "malformed":   # damaged input: an error of the suite's data, no client's failure
                    errors += 1
                    damaged = i.get("damaged") or []
                    e = ET.SubElement(case, "error", type="malformed", message=(
                        f"not judged: damaged input {damaged[0]['file']}:{damaged[0]['line']}" if damaged
                        else "not judged: damaged input")[:500])
                    e.text = "\n".join(f"{d['file']}:{d['line']}: {d['problem']}" for d in damaged)
                elif i["status"] == "unknown":
                    errors += 1
                    e = ET.SubElement(case, "error", message=str(i.get("error"))[:500], type="check-error")
                    e.text = str(i.get("traceback") or i.get("error"))
                elif i["violations"]:
                    ET.SubElement(case, "system-out").text = "\n".join(x["message"] for x in i["violations"])
            case = ET.SubElement(suite, "testcase", classname=classname, name="run: reached the scenario's end")
            tests += 1
            if v.get("cut_short"):
                errors += 1
                ET.SubElement(case, "error", message=f"cut short: {v['cut_short']}"[:500], type="cut-short")
            case = ET.SubElement(suite, "testcase", classname=classname, name="input: every line usable")
            tests += 1
            if v.get("malformed"):
                failures += 1
                f = ET.SubElement(case, "failure", message=f"{len(v['malformed'])} malformed line(s)", type="malformed")
                f.text = "\n".join(f"{m['file']}:{m['line']}: {m['problem']}" for m in v["malformed"][:200]) + again
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="members", value=", ".join(v.get("members") or []))
            ET.SubElement(props, "property", name="seed", value=str(v.get("seed")))
            ET.SubElement(props, "property", name="verdict", value=str(v.get("verdict")))
            for rule, n in (v.get("allowed") or {}).items():
                ET.SubElement(props, "property", name=f"allowed.{rule}", value=str(n))
            if v.get("root_cause"):
                ET.SubElement(props, "property", name="root_cause", value=message(v["root_cause"]["message"])[:500])
            if link is not None:
                if link.command:
                    ET.SubElement(props, "property", name="reproduce", value=link.command)
                if link.dir_href:
                    ET.SubElement(props, "property", name="run_dir", value=link.dir_href)
                for name, href in link.files:
                    ET.SubElement(props, "property", name=f"file.{name}", value=href)
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
