"""Judge run directories and print a digest of their verdicts (to compare before/after a pipeline change).

The digest keeps what a verdict means: per cell, its verdict, and per
invariant its status and every violation's invariant id, members,
generation, partitions, time and message (evidence included); metrics and
malformed lines too. Two digests of the same runs must be identical.

    .venv/bin/python bench/pipeline_verdict_digest.py OUT.json RUN_DIR_OR_ROOT... [--each] [--spark-master URL]

``--each`` judges every run directory alone as well (the small-run path) and
adds those verdicts under ``"alone"``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def digest(verdicts: list[dict]) -> dict:
    out = {}
    for v in verdicts:
        out[v["run"]] = {
            "verdict": v["verdict"],
            "members": v["members"],
            "invariants": {k: {"status": i["status"], "error": (i.get("error") or "")[:200],
                               "violations": i["violations"]} for k, i in sorted(v["invariants"].items())},
            "metrics": v["metrics"],
            "malformed": v["malformed"],
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--each", action="store_true")
    ap.add_argument("--spark-master", default=None)
    ap.add_argument("--catalog", action="store_true", help="also judge the hand-made story catalog (tests/stories/)")
    args = ap.parse_args()
    from conformance.pipeline import judge
    from conformance.pipeline.ingest import find_run_dirs

    dirs = find_run_dirs(args.runs)
    result: dict = {}
    with tempfile.TemporaryDirectory(prefix="verdict-digest-") as tmp:
        t0 = time.time()
        result["together"] = digest(judge(dirs, Path(tmp) / "all", args.spark_master)) if dirs else {}
        print(f"{len(dirs)} run(s) together: {time.time() - t0:.1f} s", flush=True)
        if args.each:
            result["alone"] = {}
            for i, d in enumerate(dirs):
                t0 = time.time()
                result["alone"].update(digest(judge([d], Path(tmp) / f"one-{i}", args.spark_master)))
                print(f"{d.name}: {time.time() - t0:.1f} s", flush=True)
        if args.catalog:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            from stories import judged_catalog

            t0 = time.time()
            result["catalog"] = digest(judged_catalog(Path(tmp) / "catalog")[1])
            print(f"story catalog: {time.time() - t0:.1f} s", flush=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    for run, v in {**result["together"], **result.get("catalog", {})}.items():
        bad = {k: i["status"] for k, i in v["invariants"].items() if i["status"] != "pass"}
        print(f"{v['verdict']:8} {run[:60]} {bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
