"""Batched collects: many checks' ``collect()`` calls served by ONE Spark action.

Small inputs are dominated by per-job latency (scheduling, planning, stage
set-up), not by data. :class:`CollectBatcher` runs every task (a check) in
its own driver thread; a task asks for rows with :meth:`CollectBatcher.collect`
(or :meth:`collect_many` for several independent DataFrames), which blocks.
When every live task is blocked, the pending DataFrames are unioned into one
DataFrame of (key, JSON row) and collected with a single action; each task
gets back exactly the rows ``df.collect()`` would have given (Rows rebuilt
from the JSON with the DataFrame's schema, same field names, order and
types). A task whose next collect depends on earlier rows simply waits for
the next round.

Guarantees:
- Rows are those of ``df.collect()`` (same order within a DataFrame, same
  values: doubles travel as their shortest round-trip decimal, NaN and
  infinities as Jackson's strings and are parsed back).
- A DataFrame whose schema the JSON transport cannot carry exactly (binary,
  decimal, dates, timestamps, maps with non-string keys) is collected on its own.
- If the combined action fails, every pending DataFrame is collected on its
  own, so that one failing query raises only in the task that asked for it.
- Results come back in task order; a task's exception is returned, not
  raised.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from typing import Any, Callable, Sequence

_SIMPLE = {"StringType", "IntegerType", "LongType", "ShortType", "ByteType", "DoubleType", "FloatType", "BooleanType",
           "NullType"}


def _portable(dt) -> bool:
    """True when a Spark type survives to_json -> json.loads -> rebuild exactly."""
    from pyspark.sql.types import ArrayType, MapType, StringType, StructType

    name = type(dt).__name__
    if name in _SIMPLE:
        return True
    if isinstance(dt, ArrayType):
        return _portable(dt.elementType)
    if isinstance(dt, StructType):
        names = [f.name for f in dt.fields]
        return len(set(names)) == len(names) and all(_portable(f.dataType) for f in dt.fields)
    if isinstance(dt, MapType):
        return isinstance(dt.keyType, StringType) and _portable(dt.valueType)
    return False


def _rebuild(value: Any, dt) -> Any:
    """A JSON-decoded value back into what ``collect()`` yields for type ``dt``."""
    from pyspark.sql.types import (
        ArrayType,
        ByteType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        MapType,
        ShortType,
        StructType,
        _create_row,
    )

    if value is None:
        return None
    if isinstance(dt, StructType):
        return _create_row([f.name for f in dt.fields], [_rebuild(value.get(f.name), f.dataType) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return [_rebuild(v, dt.elementType) for v in value]
    if isinstance(dt, MapType):
        return {k: _rebuild(v, dt.valueType) for k, v in value.items()}
    if isinstance(dt, (DoubleType, FloatType)):
        if isinstance(value, str):   # Jackson writes non-finite numbers as strings
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(value, float(value))
        return float(value)
    if isinstance(dt, (IntegerType, LongType, ShortType, ByteType)):
        return int(value)
    return value


def _decode_rows(texts: list[str], schema) -> list:
    from pyspark.sql.types import _create_row

    names = [f.name for f in schema.fields]
    out = []
    for text in texts:
        obj = json.loads(text)
        out.append(_create_row(names, [_rebuild(obj.get(f"c{i}"), f.dataType) for i, f in enumerate(schema.fields)]))
    return out


class CollectBatcher:
    """Serves the collects of concurrently running tasks with one action per round (see module docstring)."""

    def __init__(self, spark, result_tasks: int | None = None) -> None:
        """``result_tasks``: coalesce the combined action's final stage to this many tasks (small
        inputs: each task deserialises the whole combined plan, ~1 MB, once); None keeps one task
        per partition of every DataFrame (large inputs: their last steps stay parallel)."""
        self.spark = spark
        self.result_tasks = result_tasks
        self._cond = threading.Condition()
        self._active = 0
        self._waiting = 0
        self._pending: list[dict] = []
        self.rounds = 0          # combined actions run
        self.singles = 0         # DataFrames collected on their own
        self.log: list[dict] = []  # per round: DataFrames served, seconds waiting for the tasks, seconds serving

    # -- what tasks call ---------------------------------------------------------------------
    def collect(self, df) -> list:
        """``df.collect()``, batched with the other tasks' collects."""
        return self.collect_many(df)[0]

    def collect_many(self, *dfs) -> list[list]:
        """``[df.collect() for df in dfs]`` in one round."""
        if threading.current_thread() is threading.main_thread() or not self._in_task():
            return [df.collect() for df in dfs]
        reqs = [{"df": df, "rows": None, "error": None, "done": False, "keyed": self._keyed(df)} for df in dfs]
        try:
            with self._cond:
                self._pending.extend(reqs)
                self._waiting += 1
                self._cond.notify_all()
                while not all(r["done"] for r in reqs):
                    self._cond.wait()
                self._waiting -= 1
        finally:
            for r in reqs:
                if r["keyed"] is not None:
                    self.spark.catalog.dropTempView(r["keyed"][1])
        for r in reqs:
            if r["error"] is not None:
                raise r["error"]
        return [r["rows"] for r in reqs]

    # -- running tasks -----------------------------------------------------------------------
    _local = threading.local()

    def _in_task(self) -> bool:
        return getattr(self._local, "batcher", None) is self

    def run(self, tasks: Sequence[Callable[[], Any]]) -> list[Any]:
        """Run every task in its own thread; serve their collects in rounds; results in task order."""
        results: list[Any] = [None] * len(tasks)

        def body(i: int, task: Callable[[], Any]) -> None:
            self._local.batcher = self
            try:
                results[i] = task()
            except Exception as exc:  # returned to the caller, who turns it into "unknown"
                results[i] = exc
            finally:
                with self._cond:
                    self._active -= 1
                    self._cond.notify_all()

        with self._cond:
            self._active = len(tasks)
        threads = [threading.Thread(target=body, args=(i, t), name=f"check-{i}", daemon=True)
                   for i, t in enumerate(tasks)]
        for th in threads:
            th.start()
        t0 = time.perf_counter()
        while True:
            with self._cond:
                while self._active and (self._waiting < self._active or not self._pending):
                    self._cond.wait()
                if not self._active:
                    break
                batch, self._pending = self._pending, []
            t1 = time.perf_counter()
            self._serve(batch)
            t2 = time.perf_counter()
            self.log.append({"dataframes": len(batch), "wait_s": round(t1 - t0, 3), "serve_s": round(t2 - t1, 3)})
            t0 = t2
            with self._cond:
                self._cond.notify_all()
        for th in threads:
            th.join()
        return results

    def _keyed(self, df):
        """``(schema, view)`` for the combined action, or None when ``df`` must be collected alone.

        ``view`` is a temporary view of ``df`` as (``o``, ``v``): ``v`` a row as JSON,
        ``o`` ordering the rows as ``collect()`` would (partition, then position), whatever order
        the combined action returns them in. Made in the asking task's thread (analysing a deep
        plan costs driver time: the tasks' threads do it side by side, not one by one when the
        round is served); the task drops the view once served.
        """
        from pyspark.sql import functions as F

        try:
            schema = df.schema
            if not _portable(schema):
                return None
            view = f"__collect_{uuid.uuid4().hex}"
            (df.toDF(*[f"c{j}" for j in range(len(schema.fields))])
             .select(F.monotonically_increasing_id().alias("o"), F.to_json(F.struct("*")).alias("v"))
             .createOrReplaceTempView(view))
            return schema, view
        except Exception:   # the lone collect reports it
            return None

    def _serve(self, batch: list[dict]) -> None:
        """Fill every request of ``batch`` (rows or error), with one action for the portable ones."""
        combined: list[tuple[int, Any]] = []
        keyed: dict[int, tuple[dict, Any, list]] = {}
        for i, req in enumerate(batch):
            if req["keyed"] is None or len(batch) == 1:
                self._single(req)
                continue
            schema, view = req["keyed"]
            combined.append((i, view))
            keyed[i] = (req, schema, [])
        if combined:
            self.rounds += 1
            try:
                union = self._union(combined)
                for row in sorted(union.collect(), key=lambda r: (r["k"], r["o"])):
                    keyed[row["k"]][2].append(row["v"])
                for req, schema, texts in keyed.values():
                    req["rows"] = _decode_rows(texts, schema)
                    req["done"] = True
            except Exception:
                for req, _schema, _texts in keyed.values():
                    req["rows"] = None
                    self._single(req)

    def _union(self, parts: list[tuple[int, str]]):
        """One DataFrame (k, o, v) of every row of ``parts``: (k, temporary view of o, v) pairs, unioned
        by one SQL UNION ALL (analysed once, where chaining ``unionAll`` re-analyses the growing plan at
        every step). Coalesced to ``result_tasks``."""
        union = self.spark.sql(" UNION ALL ".join(f"SELECT {k} AS k, o, v FROM {view}" for k, view in parts))
        return union if self.result_tasks is None else union.coalesce(self.result_tasks)

    def _single(self, req: dict) -> None:
        self.singles += 1
        try:
            req["rows"] = req["df"].collect()
        except Exception as exc:
            req["error"] = exc
        req["done"] = True

