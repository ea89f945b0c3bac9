package conformance.pipeline

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.connector.read.streaming.SparkDataStream
import org.apache.spark.sql.execution.RDDScanExec

/**
 * A scan of an existing RDD of rows (what a pinned, locally checkpointed table is planned as) that
 * hands on each row that is already an unsafe row of the scan's width, as it is.
 *
 * Spark's [[RDDScanExec]] runs every row through an unsafe projection, since an RDD may hold rows
 * of any kind. Without code generation (small batches) the projection is interpreted and copies
 * each row field by field, every column, for every query that reads the table. A pinned table's
 * rows are the unsafe rows its plan produced, in the scan's column order, so for them the
 * projection is a copy and nothing else. Rows of another kind or width still go through it.
 *
 * Guarantees: the rows are those [[RDDScanExec]] yields (operators copy a row they keep and never
 * change one they read, so the stored row serves as well as a copy); the plan node is otherwise
 * the same (output, partitioning, ordering, metrics, canonical form), but never equal to the
 * scan it replaces, so that a plan rewrite keeps it.
 */
class PinnedScanExec(output: Seq[Attribute], rdd: RDD[InternalRow], name: String, outputPartitioning: Partitioning,
                     outputOrdering: Seq[SortOrder], stream: Option[SparkDataStream])
  extends RDDScanExec(output, rdd, name, outputPartitioning, outputOrdering, stream) {

  override protected def doExecute(): RDD[InternalRow] = {
    // Locals only: the closure must not capture the plan node (it is serialised with each task).
    val numOutputRows = longMetric("numOutputRows")
    val schema = this.schema
    val width = output.length
    PinnedRows.mapPartitions(rdd, { (index: AnyRef, rows: Iterator[InternalRow]) =>
      var projection: UnsafeProjection = null
      rows.map { row =>
        numOutputRows += 1
        row match {
          case stored: UnsafeRow if stored.numFields == width => stored
          case other =>
            if (projection == null) {
              projection = UnsafeProjection.create(schema)
              projection.initialize(index.asInstanceOf[Integer].intValue)
            }
            projection(other)
        }
      }
    })
  }

  // A parent keeps a rewritten child only when it differs from the old one.
  override def canEqual(other: Any): Boolean = other.isInstanceOf[PinnedScanExec]

  override def equals(other: Any): Boolean = other.isInstanceOf[PinnedScanExec] && super.equals(other)

  override def hashCode(): Int = super.hashCode()
}

object PinnedScanExec {
  /** The same scan as `scan`, handing stored unsafe rows on. */
  def of(scan: RDDScanExec): PinnedScanExec =
    new PinnedScanExec(scan.output, scan.rdd, scan.name, scan.outputPartitioning, scan.outputOrdering, scan.stream)
}
