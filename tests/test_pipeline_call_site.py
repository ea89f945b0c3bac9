"""Pipeline threads name their Spark jobs (conformance.pipeline.session.name_jobs).

Spark then takes the call site of every RDD and SQL execution from the
thread's local properties instead of walking the thread's stack; the
judge's own thread gets its previous names back.
"""

from __future__ import annotations

import pytest

from conformance.pipeline.batch import CollectBatcher
from conformance.pipeline.parallel import run_all, run_in_thread
from conformance.pipeline.session import CALL_SITE, get_session, name_jobs, restore_names


@pytest.fixture(scope="module")
def spark():
    return get_session()


def _recorded(spark) -> tuple[str, str]:
    """The call site Spark records for an RDD or job the calling thread creates now."""
    site = spark.sparkContext._jsc.sc().getCallSite()
    return site.shortForm(), site.longForm()


def test_every_pipeline_thread_names_its_jobs(spark):
    assert run_all([lambda: _recorded(spark)] * 2, threads=2) == [(CALL_SITE, CALL_SITE)] * 2
    assert run_in_thread(lambda: _recorded(spark)).result() == (CALL_SITE, CALL_SITE)
    b = CollectBatcher(spark)
    assert b.run([lambda: _recorded(spark)]) == [(CALL_SITE, CALL_SITE)]


def test_the_calling_thread_gets_its_names_back(spark):
    sc = spark.sparkContext
    sc.setLocalProperty("callSite.short", "mine")
    try:
        unnamed = _recorded(spark)[1]          # walked from this thread's stack
        assert unnamed != CALL_SITE
        previous = name_jobs()
        assert _recorded(spark) == (CALL_SITE, CALL_SITE)
        restore_names(previous)
        assert sc.getLocalProperty("callSite.short") == "mine" and sc.getLocalProperty("callSite.long") is None
        assert _recorded(spark) == ("mine", unnamed)
    finally:
        sc.setLocalProperty("callSite.short", None)
