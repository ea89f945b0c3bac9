"""ingest.read_back: Parquet written from a DataFrame reads back with exactly the schema Spark would infer
(every field nullable, nested ones too) and the same rows, without an inference job."""

from __future__ import annotations

import pytest
from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType

from conformance.pipeline.ingest import nullable, read_back
from conformance.pipeline.session import get_session

_STRICT = StructType([
    StructField("run", StringType(), False),
    StructField("n", LongType(), False),
    StructField("tps", ArrayType(StructType([StructField("topic", StringType(), False),
                                             StructField("partition", LongType(), False)]), False), False),
    StructField("m", MapType(StringType(), LongType(), False), False),
])


@pytest.fixture(scope="module")
def spark():
    return get_session()


def _nullable_everywhere(dt) -> bool:
    if isinstance(dt, StructType):
        return all(f.nullable and _nullable_everywhere(f.dataType) for f in dt.fields)
    if isinstance(dt, ArrayType):
        return dt.containsNull and _nullable_everywhere(dt.elementType)
    if isinstance(dt, MapType):
        return dt.valueContainsNull and _nullable_everywhere(dt.valueType)
    return True


def test_nullable_relaxes_every_level():
    assert not _nullable_everywhere(_STRICT)          # the violating input: strict at every level
    relaxed = nullable(_STRICT)
    assert _nullable_everywhere(relaxed)
    assert [f.name for f in relaxed.fields] == [f.name for f in _STRICT.fields]
    assert relaxed["tps"].dataType.elementType["partition"].dataType == LongType()
    assert nullable(relaxed) == relaxed


def test_read_back_equals_inferred_read(spark, tmp_path):
    rows = [("r1", 1, [("t", 0), ("t", 1)], {"a": 1}), ("r2", 2, [], {})]
    df = spark.createDataFrame(rows, _STRICT)
    path = str(tmp_path / "t")
    df.write.parquet(path)
    inferred = spark.read.parquet(path)
    back = read_back(spark, path, df.schema)
    assert df.schema != inferred.schema                # what a plain schema() read would get wrong
    assert back.schema == inferred.schema
    assert sorted(back.collect()) == sorted(inferred.collect()) == sorted(df.collect())
