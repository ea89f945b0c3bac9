package conformance.pipeline;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.RDDScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.exchange.ENSURE_REQUIREMENTS$;
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec;
import scala.Function1;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;
import scala.runtime.BoxedUnit;

/**
 * Spark session extension (spark.sql.extensions) of the conformance pipeline's small batches.
 *
 * <p>It drops every shuffle that Spark's planner inserts to meet a distribution requirement
 * (origin ENSURE_REQUIREMENTS) when the shuffle has one output partition and its child already
 * has exactly one partition. Such a shuffle moves every row from the one input partition to the
 * one output partition in order: removing it changes no row and no order, only saves a stage.
 * Small batches keep every table in one partition, yet the planner reshuffles both sides of a
 * join whose input is an inner join of one-partition tables (their partitioning is then a
 * collection, which its single-partition shortcut does not recognise).
 *
 * <p>It also plans every scan of an existing RDD as a {@link PinnedScanExec}, which hands the
 * pinned tables' stored rows on without copying each one.
 */
public final class SmallBatchRules extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        Function1<SparkSession, ColumnarRule> build = new AbstractFunction1<SparkSession, ColumnarRule>() {
            @Override
            public ColumnarRule apply(SparkSession session) {
                return new Rules();
            }
        };
        extensions.injectColumnar(build);
        return BoxedUnit.UNIT;
    }

    /** Runs after the planner has inserted its shuffles (columnar rules come after EnsureRequirements). */
    static final class Rules extends ColumnarRule {
        @Override
        public Rule<SparkPlan> preColumnarTransitions() {
            return new SmallBatchPlan();
        }
    }

    /**
     * Both rewrites of a small batch's physical plan, in one bottom-up pass: a pinned scan replaces
     * an {@link RDDScanExec} (exactly that class), and a shuffle that moves one partition to one
     * partition, inserted for a requirement, gives way to its child.
     */
    static final class SmallBatchPlan extends Rule<SparkPlan> {
        /** The node's replacement, or null to keep it. */
        static SparkPlan rewrite(SparkPlan node) {
            if (node.getClass() == RDDScanExec.class) {
                return PinnedScanExec.of((RDDScanExec) node);
            }
            if (!(node instanceof ShuffleExchangeExec)) {
                return null;
            }
            ShuffleExchangeExec shuffle = (ShuffleExchangeExec) node;
            boolean trivial = shuffle.shuffleOrigin() == ENSURE_REQUIREMENTS$.MODULE$
                && shuffle.outputPartitioning().numPartitions() == 1
                && shuffle.child().outputPartitioning().numPartitions() == 1;
            return trivial ? shuffle.child() : null;
        }

        @Override
        public SparkPlan apply(SparkPlan plan) {
            return plan.transformUp(new AbstractPartialFunction<SparkPlan, SparkPlan>() {
                @Override
                public boolean isDefinedAt(SparkPlan node) {
                    return rewrite(node) != null;
                }

                @Override
                public <A1 extends SparkPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
                    SparkPlan replacement = rewrite(node);
                    if (replacement == null) {
                        return otherwise.apply(node);
                    }
                    @SuppressWarnings("unchecked")
                    B1 replaced = (B1) replacement;
                    return replaced;
                }
            });
        }
    }
}
