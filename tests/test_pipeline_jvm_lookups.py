"""The Spark session's view of the JVM remembers classes and static methods, and nothing else.

Counted on the wire: the commands py4j sends to the driver JVM (``r``: a reflection
lookup, ``c``: a call).
"""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JError
from pyspark.sql import functions as F

from conformance.pipeline.session import get_session


@pytest.fixture(scope="module")
def spark():
    return get_session()


@pytest.fixture
def sent(spark, monkeypatch):
    client = spark.sparkContext._gateway._gateway_client
    commands: list[str] = []
    send = client.send_command

    def counting(command, *args, **kwargs):
        commands.append(command.split("\n", 1)[0])
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counting)
    return commands


def test_a_static_method_is_looked_up_once(spark, sent):
    jvm = spark.sparkContext._jvm
    assert jvm.java.lang.Long.toHexString(255) == "ff"
    assert "r" in sent                # the first use asked the JVM what the names are
    sent.clear()
    assert [jvm.java.lang.Long.toHexString(n) for n in (16, 17)] == ["10", "11"]
    assert sent == ["c", "c"]         # later uses only call it


def test_pyspark_functions_are_looked_up_once(spark, sent):
    F.col("a")
    sent.clear()
    for _ in range(3):
        assert str(F.col("a")) == "Column<'a'>"
    assert "r" not in sent and "c" in sent


def test_calls_still_reach_the_jvm_and_answer(spark, sent):
    jvm = spark.sparkContext._jvm
    assert [jvm.java.lang.Math.max(3, n) for n in (1, 7, 5)] == [3, 7, 5]
    assert sent.count("c") == 3


def test_field_values_and_failed_lookups_are_asked_again(spark, sent):
    integer = spark.sparkContext._jvm.java.lang.Integer
    sent.clear()
    assert integer.MAX_VALUE == 2147483647 and integer.MAX_VALUE == 2147483647
    assert sent == ["r", "r"]
    for _ in range(2):
        with pytest.raises(Py4JError):
            integer.noSuchMember
    assert sent == ["r"] * 4
