package conformance.pipeline;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import scala.Function2;
import scala.collection.Iterator;
import scala.reflect.ClassTag$;

/** What {@link PinnedScanExec} needs of Spark's internals that Scala code outside Spark may not call. */
final class PinnedRows {
    private PinnedRows() {
    }

    /**
     * {@code rdd} with {@code perPartition} applied to each partition (its index and rows), as Spark's own
     * scans map theirs: without the closure cleaning (a serialisation check) that the public
     * {@code mapPartitionsWithIndex} runs on every call.
     */
    static RDD<InternalRow> mapPartitions(RDD<InternalRow> rdd,
                                          Function2<Object, Iterator<InternalRow>, Iterator<InternalRow>> perPartition) {
        return rdd.mapPartitionsWithIndexInternal(perPartition, false, false, ClassTag$.MODULE$.apply(InternalRow.class));
    }
}
