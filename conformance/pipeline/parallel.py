"""Running independent Spark jobs from a few driver threads.

Small jobs are dominated by scheduling latency, not CPU; Spark runs jobs
submitted from several threads concurrently, so independent writes and
checks overlap. Results come back in input order; an exception is returned
(not raised) so that one failing task cannot hide the others' results.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

from conformance import config

T = TypeVar("T")


def run_all(tasks: Sequence[Callable[[], T]], threads: int | None = None) -> list[T | BaseException]:
    def guarded(task: Callable[[], T]) -> T | BaseException:
        try:
            return task()
        except Exception as exc:  # returned to the caller, who turns it into "unknown"
            return exc

    with ThreadPoolExecutor(max_workers=threads or config.PIPELINE_THREADS) as pool:
        return list(pool.map(guarded, tasks))
