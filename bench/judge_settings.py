"""The judge's Spark settings side by side: the judge's CPU and wall per variant, before and after.

Judges the same recorded cells once per variant per round, each in a fresh process (Spark's start
paid every time, as ``conformance run`` pays it), the variants in turn within a round so that all
see the same moments of a shared machine. CPU is the Python driver's own plus Spark's JVM's (user
and system seconds, read from /proc before the process ends): it depends less on what else runs
than wall does. Every process's verdicts are digested (bench/pipeline_verdict_digest.py's digest)
and must be the same for all variants: a setting changes how a query runs, never its rows.

Variants (``--variants``, default all, in this order):

- ``before``: the judge as issue #40 found it: no JVM option, every setting from Spark's
  internals (:data:`INTERNAL`) on top of the public ones (:data:`PUBLIC_SQL`).
- ``after``: the suite as committed (``conformance.config`` untouched).
- ``old``: the suite as committed in another tree (``--old-tree``, e.g. main's checkout: its
  ``conformance`` package imported through PYTHONPATH), to compare two commits side by side.
- ``public``: the JVM option (``config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS``) and public settings only.
- ``after:KEY=VALUE``: ``after`` with one session setting (``config.SPARK_CONF``) changed or added.
- ``public+NAME``: ``public`` plus one internal setting alone, for each of :data:`INTERNAL`: what
  that setting saves measured alone, side by side (docs/judge.md keeps a setting only if it saves
  at least 10% of the judge's CPU).

Default input: the default matrix's mix (reference, Java, librdkafka, Sarama, kafka-python,
franz-go) in its recorded cells under fixtures/: leader-rotation, rolling-restart and crash-restart
of one matrix run, and a leader-rotation of the mix without franz-go (there is no recorded
partition cell); ``--one`` judges the first alone (a single cell's judge, Spark's start included).

    .venv/bin/python bench/judge_settings.py [RUN_DIR ...] [--rounds 3] [--variants before,after] [--one]
    .venv/bin/python bench/judge_settings.py --variants old,after --old-tree /work/main

Prints one line per process, then per variant the median CPU and wall and the median ratio to
``public`` (or to the first variant) of the rounds' pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import host_reference
import recorded_run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: The default matrix's recorded cells (see the module docstring).
DEFAULT_CELLS = (FIXTURES / "client-bugs" / "franz-go-1.22.3-generationless-owned.tar.xz",
                 FIXTURES / "client-bugs" / "franz-go-1.22.3-generationless-owned-needed-move.tar.xz",
                 FIXTURES / "client-behaviour" / "sarama-1.61.1-crash-restart-not-yet-applied.tar.xz",
                 FIXTURES / "client-bugs" / "kafka-python-3.0.12-discarded-join.tar.xz")

#: The public Spark SQL settings of one-partition judging (listed by Spark's ``SET -v``).
PUBLIC_SQL: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
}
#: Optimizer rules the judge skipped by class name before issue #40.
SKIPPED_RULES = tuple(
    [f"org.apache.spark.sql.catalyst.optimizer.{name}" for name in (
        "RemoveRedundantAliases", "FoldablePropagation", "OptimizeOneRowRelationSubquery", "SimplifyBinaryComparison",
        "BooleanSimplification", "ConstantPropagation", "PushProjectionThroughUnion", "ReorderJoin",
        "ReplaceNullWithFalseInPredicate", "CombineTypedFilters", "GenerateOptimization", "OptimizeUpdateFields",
        "ReorderAssociativeOperator", "NullDownPropagation")]
    + ["org.apache.spark.sql.execution.dynamicpruning.PartitionPruning",
       "org.apache.spark.sql.execution.datasources.SchemaPruning"])
#: Settings from Spark's internals the judge carried before issue #40: name -> (where, settings).
#: "sql": one-partition SQL settings; "session": the session's start settings. None of these keys is
#: listed by Spark's ``SET -v`` (the internal ones), or they name Spark's classes.
INTERNAL: dict[str, tuple[str, dict[str, str]]] = {
    "wholeStage": ("sql", {"spark.sql.codegen.wholeStage": "false"}),
    "factoryMode": ("sql", {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}),
    "constraintPropagation": ("sql", {"spark.sql.constraintPropagation.enabled": "false"}),
    "excludedRules": ("sql", {"spark.sql.optimizer.excludedRules": ",".join(SKIPPED_RULES)}),
    "dataFrameDebugging": ("session", {"spark.python.sql.dataFrameDebugging.enabled": "false"}),
}
#: The JVM option of issue #40's decision (the ``public`` variants).
JIT_OPTION = "-XX:TieredStopAtLevel=1"


def variants() -> dict[str, dict | None]:
    """name -> overrides for the child (None: the suite as committed)."""
    def spec(java: str, names: list[str]) -> dict:
        sql, session = dict(PUBLIC_SQL), {}
        for n in names:
            where, settings = INTERNAL[n]
            (sql if where == "sql" else session).update(settings)
        return {"java": java, "sql": sql, "session": session}

    out: dict[str, dict | None] = {"before": spec("", list(INTERNAL)), "after": None, "old": None,
                                   "public": spec(JIT_OPTION, [])}
    for n in INTERNAL:
        out[f"public+{n}"] = spec(JIT_OPTION, [n])
    return out


CHILD = r"""
import hashlib, json, os, resource, sys, time
t0 = time.time()
from pathlib import Path
from conformance import config
spec = json.loads(sys.argv[3])
if spec is not None and "add" in spec:
    config.SPARK_CONF = {**config.SPARK_CONF, **spec["add"]}
elif spec is not None:
    config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS = spec["java"]
    config.PIPELINE_ONE_PARTITION_SQL_CONF = spec["sql"]
    config.SPARK_CONF = {k: v for k, v in config.SPARK_CONF.items() if k != "spark.python.sql.dataFrameDebugging.enabled"}
    config.SPARK_CONF.update(spec["session"])
sys.path.insert(0, sys.argv[4])
from pipeline_verdict_digest import digest
from conformance.pipeline import verdicts
phases = {}
v = verdicts.judge([Path(p) for p in json.loads(sys.argv[2])], Path(sys.argv[1]), phases=phases)
wall = time.time() - t0
from pyspark import SparkContext
stat = Path(f"/proc/{SparkContext._gateway.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
jvm = sum(int(x) for x in stat[11:15]) / os.sysconf("SC_CLK_TCK")
ru = resource.getrusage(resource.RUSAGE_SELF)
print("RESULT " + json.dumps({
    "wall": round(wall, 2), "py_cpu": round(ru.ru_utime + ru.ru_stime, 2), "jvm_cpu": round(jvm, 2),
    "phases": {k: phases[k] for k in ("spark_start", "ingest", "checks", "writes") if k in phases},
    "package": str(Path(config.__file__).resolve().parent.parent),
    "digest": hashlib.sha256(json.dumps(digest(v), sort_keys=True, default=str).encode()).hexdigest()[:16],
    "verdicts": sorted(x["verdict"] for x in v)}))
"""


def load() -> str:
    p = Path("/proc/loadavg")
    return p.read_text().split(" ")[0] if p.exists() else "?"


def judge_once(runs: list[Path], spec: dict | None, tree: Path | None = None) -> dict:
    """One fresh process judging ``runs`` under ``spec`` (with ``tree``'s ``conformance`` package when
    given); its RESULT plus the process's wall and the load."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory(prefix="judge-settings-") as out:
        before, t0 = load(), time.time()
        done = subprocess.run([sys.executable, "-c", CHILD, out, json.dumps([str(r) for r in runs]), json.dumps(spec),
                               str(Path(__file__).resolve().parent)], capture_output=True, text=True, env=env, cwd=out)
        wall = time.time() - t0
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"the judge failed (exit {done.returncode}): {done.stderr[-3000:]}")
    r = json.loads(line[len("RESULT "):])
    r.update(process_wall=round(wall, 2), cpu=round(r["py_cpu"] + r["jvm_cpu"], 2), load=f"{before}->{load()}")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--one", action="store_true", help="judge one cell alone (the first)")
    ap.add_argument("--old-tree", type=Path, default=None,
                    help="a checkout whose conformance package the ``old`` variant judges with (e.g. /work/main)")
    args = ap.parse_args()
    every = variants()
    names = args.variants.split(",") if args.variants else [n for n in every if n != "old" or args.old_tree]
    for n in names:   # after:KEY=VALUE: the suite as committed with one session setting changed or added
        if n.startswith("after:") and "=" in n:
            key, value = n[len("after:"):].split("=", 1)
            every[n] = {"add": {key: value}}
    unknown = [n for n in names if n not in every]
    if unknown:
        print(f"unknown variant(s) {unknown}; known: {', '.join(every)}", file=sys.stderr)
        return 2
    if "old" in names and (args.old_tree is None or not (args.old_tree / "conformance" / "__init__.py").is_file()):
        print("the old variant needs --old-tree DIR, a checkout holding conformance/__init__.py", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="judge-settings-runs-") as tmp:
        runs = [p.resolve() for p in args.runs] or [recorded_run.unpack(Path(tmp) / str(i), a)
                                                    for i, a in enumerate(DEFAULT_CELLS)]
        if args.one:
            runs = runs[:1]
        print(host_reference.line(), flush=True)
        print(f"{len(runs)} cell(s): " + ", ".join(r.name[:60] for r in runs), flush=True)
        got: dict[str, list[dict]] = {n: [] for n in names}
        for i in range(args.rounds):
            for n in names:
                r = judge_once(runs, every[n], args.old_tree.resolve() if n == "old" else None)
                got[n].append(r)
                ph = " ".join(f"{k}={v}" for k, v in r["phases"].items())
                print(f"round {i + 1} {n:28} cpu {r['cpu']:6.1f} s (python {r['py_cpu']}, jvm {r['jvm_cpu']}) "
                      f"wall {r['process_wall']:5.1f} s | {ph} | load {r['load']} | digest {r['digest']} "
                      f"| {r['package']}", flush=True)
    digests = {r["digest"] for rs in got.values() for r in rs}
    base = "public" if "public" in names else names[0]
    print(f"\n{'variant':28} {'cpu s':>7} {'wall s':>7} {'cpu/' + base:>12} {'wall/' + base:>12}  (medians of {args.rounds})")
    for n in names:
        cpu_ratio = statistics.median(r["cpu"] / b["cpu"] for r, b in zip(got[n], got[base]))
        wall_ratio = statistics.median(r["process_wall"] / b["process_wall"] for r, b in zip(got[n], got[base]))
        print(f"{n:28} {statistics.median(r['cpu'] for r in got[n]):7.1f} "
              f"{statistics.median(r['process_wall'] for r in got[n]):7.1f} {cpu_ratio:12.2f} {wall_ratio:12.2f}")
    print("verdict digest: " + ("the same in every process (" + digests.pop() + ")" if len(digests) == 1
                                else f"DIFFERS: {sorted(digests)}"))
    return 0 if len(digests) <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
