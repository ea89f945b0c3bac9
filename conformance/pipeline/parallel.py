"""Running independent Spark jobs from a few driver threads.

Small jobs are dominated by scheduling latency, not CPU; Spark runs jobs
submitted from several threads concurrently, so independent writes and
checks overlap. Results come back in input order; an exception is returned
(not raised) so that one failing task cannot hide the others' results.
Each thread names its Spark jobs first (:func:`conformance.pipeline.session.name_jobs`).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
import threading
from typing import Callable, Sequence, TypeVar

from conformance import config
from conformance.pipeline.session import name_jobs

T = TypeVar("T")


def run_all(tasks: Sequence[Callable[[], T]], threads: int | None = None) -> list[T | BaseException]:
    def guarded(task: Callable[[], T]) -> T | BaseException:
        try:
            name_jobs()
            return task()
        except Exception as exc:  # returned to the caller, who turns it into "unknown"
            return exc

    with ThreadPoolExecutor(max_workers=threads or config.PIPELINE_THREADS) as pool:
        return list(pool.map(guarded, tasks))


def run_all_or_raise(tasks: Sequence[Callable[[], T]], threads: int | None = None) -> list[T]:
    """:func:`run_all`, then the first exception (in task order) raised once every task has ended."""
    results = run_all(tasks, threads)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


class Background:
    """One call running in a daemon thread: :meth:`result` waits and returns or raises its outcome."""

    def __init__(self, call: Callable[[], T]) -> None:
        self._future: Future = Future()
        self._thread = threading.Thread(target=self._run, args=(call,), name="background", daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], T]) -> None:
        try:
            name_jobs()
            self._future.set_result(call())
        except BaseException as exc:  # re-raised by result()
            self._future.set_exception(exc)

    def result(self) -> T:
        return self._future.result()

    def wait(self) -> None:
        """Wait for the call to end, whatever its outcome."""
        self._thread.join()


def run_in_thread(call: Callable[[], T]) -> Background:
    """Start ``call()`` in a background thread (e.g. Parquet writes while the checks run)."""
    return Background(call)
