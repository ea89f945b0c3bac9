package conformance.pipeline;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.MonotonicallyIncreasingID;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.StructsToJson;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Repartition;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.classic.Dataset$;
import org.apache.spark.sql.classic.SparkSession;
import scala.Option;
import scala.collection.immutable.Map$;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The combined action of the conformance pipeline's batched collects, built without re-analysing
 * what Spark has analysed already.
 *
 * <p>{@link #of} turns DataFrames {@code d0 .. dn} into one DataFrame of (k int, o long, v
 * string): for every row of {@code di}, its key {@code k}, a monotonically increasing id {@code o} (the
 * row's position in {@code di}'s partitions, as {@code collect()} orders them) and {@code v}, the
 * row as a JSON object whose fields are named {@code c0, c1, ...} by position. It equals
 * {@code SELECT k, monotonically_increasing_id() AS o, to_json(struct(c0, c1, ...)) AS v} over each
 * DataFrame, unioned, but each DataFrame's wrapping is built from its analysed plan's output
 * attributes (resolved by construction) and marked analysed, so that only the union itself is
 * analysed, once. Built column by column through the DataFrame API instead, every step re-checks
 * the whole plan below it (~15 ms per step for a check's plan).
 */
public final class CollectUnion {

    private CollectUnion() {
    }

    /**
     * One DataFrame (k, o, v) of every row of {@code frames} (see the class comment), {@code k}
     * being the frame's key in {@code keys} (same length), coalesced to {@code resultTasks}
     * partitions when {@code resultTasks > 0}.
     */
    public static Dataset<Row> of(SparkSession session, List<Dataset<Row>> frames, List<Integer> keys,
                                  int resultTasks) {
        if (frames.isEmpty() || keys.size() != frames.size()) {
            throw new IllegalArgumentException("need one key per DataFrame, and at least one DataFrame");
        }
        String zone = session.sessionState().conf().sessionLocalTimeZone();
        List<LogicalPlan> children = new ArrayList<>(frames.size());
        for (int i = 0; i < frames.size(); i++) {
            children.add(keyed(keys.get(i), frames.get(i).queryExecution().analyzed(), zone));
        }
        LogicalPlan union = new Union(seq(children), false, false);
        if (resultTasks > 0) {
            union = new Repartition(resultTasks, false, union);
        }
        return Dataset$.MODULE$.ofRows(session, union);
    }

    private static LogicalPlan keyed(int k, LogicalPlan analyzed, String zone) {
        List<Expression> fields = new ArrayList<>();
        List<Attribute> output = CollectionConverters.asJava(analyzed.output());
        for (int i = 0; i < output.size(); i++) {
            fields.add(Literal$.MODULE$.apply("c" + i));
            fields.add(output.get(i));
        }
        Expression json = new StructsToJson(Map$.MODULE$.empty(), new CreateNamedStruct(seq(fields)),
                Option.apply(zone));
        List<NamedExpression> columns = List.of(alias(Literal$.MODULE$.apply(k), "k"),
                alias(new MonotonicallyIncreasingID(), "o"), alias(json, "v"));
        LogicalPlan project = new Project(seq(columns), analyzed);
        project.setAnalyzed();
        return project;
    }

    private static NamedExpression alias(Expression child, String name) {
        return new Alias(child, name, NamedExpression$.MODULE$.newExprId(), seq(List.<String>of()),
                Option.empty(), seq(List.<String>of()));
    }

    private static <T> Seq<T> seq(List<T> items) {
        return CollectionConverters.asScala(items).toList();
    }
}
