package conformance.golden;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;

/**
 * Writes golden consumer-protocol vectors produced by the kafka-clients jar on the class path.
 *
 * <p>Every byte string comes from the Java client's own code: {@code ConsumerProtocol.serializeSubscription},
 * {@code serializeAssignment}, {@code CooperativeStickyAssignor.subscriptionUserData} and
 * {@code StickyAssignor.subscriptionUserData}. The recorded logical content of each vector is what the
 * library's own deserialiser reads back from those bytes (wire order), so a vector never states a content
 * the library did not produce. Output: one JSON array on stdout (schema in fixtures/golden/README.md).
 *
 * <p>Compiled against kafka-clients 2.4.1; members that appeared later (Subscription with generation and
 * rack, {@code generationId()}, {@code rackId()}) are reached by reflection and reported absent otherwise.
 */
public final class GoldenVectors {

    private static final List<String> TOPICS = List.of("orders", "audit");
    private static final List<String> TOPICS_SORTED = List.of("audit", "orders");
    private static final List<TopicPartition> OWNED = List.of(
            new TopicPartition("orders", 2), new TopicPartition("orders", 0), new TopicPartition("audit", 1));
    private static final List<TopicPartition> OWNED_SORTED = List.of(
            new TopicPartition("audit", 1), new TopicPartition("orders", 0), new TopicPartition("orders", 2));
    private static final List<TopicPartition> ASSIGNED = List.of(
            new TopicPartition("orders", 1), new TopicPartition("audit", 0), new TopicPartition("orders", 0));
    private static final List<TopicPartition> ASSIGNED_SORTED = List.of(
            new TopicPartition("audit", 0), new TopicPartition("orders", 0), new TopicPartition("orders", 1));
    private static final int GENERATION = 5;
    private static final String RACK = "r1";

    private final String version = kafkaVersion();
    private final List<String> out = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        GoldenVectors g = new GoldenVectors();
        g.run();
        System.out.println("[\n" + String.join(",\n", g.out) + "\n]");
    }

    private void run() throws Exception {
        ByteBuffer coopUserData = cooperativeUserData(GENERATION);
        short highest = ConsumerProtocol.serializeSubscription(new Subscription(TOPICS)).getShort(0);

        subscription("subscription-basic-default", new Subscription(TOPICS), null,
                "Subscription(topics=[orders, audit]) with no userData, default (highest) version");

        Built full = newSubscription(TOPICS, coopUserData, OWNED, GENERATION, RACK);
        subscription("subscription-full-default", full.subscription, null,
                "what ConsumerCoordinator builds: topics, cooperative-sticky userData for generation 5, "
                        + "owned partitions, generation 5, rack r1; default (highest) version", full.dropped);
        for (short v = 0; v <= highest + 1; v++) {
            subscription("subscription-full-v" + v, full.subscription, v,
                    "same content serialised with the explicit version argument " + v, full.dropped);
        }
        Built sorted = newSubscription(TOPICS_SORTED, ByteBuffer.wrap(new byte[] {0, 0, 0, 5}), OWNED_SORTED,
                GENERATION, RACK);
        subscription("subscription-sorted-default", sorted.subscription, null,
                "inputs already in sorted order; default (highest) version", sorted.dropped);
        Built empty = newSubscription(TOPICS_SORTED, ByteBuffer.allocate(0), List.of(), -1, null);
        subscription("subscription-empty-userdata-default", empty.subscription, null,
                "empty (not null) userData, no owned partitions; default (highest) version", empty.dropped);

        short highestAssignment = ConsumerProtocol.serializeAssignment(new Assignment(ASSIGNED)).getShort(0);
        assignment("assignment-default", new Assignment(ASSIGNED), null,
                "Assignment([orders-1, audit-0, orders-0]) with no userData, default (highest) version");
        for (short v = 0; v <= highestAssignment; v++) {
            assignment("assignment-v" + v, new Assignment(ASSIGNED), v,
                    "same content serialised with the explicit version argument " + v);
        }
        assignment("assignment-sorted-default", new Assignment(ASSIGNED_SORTED), null,
                "inputs already in sorted order; default (highest) version");
        assignment("assignment-userdata-default", new Assignment(ASSIGNED_SORTED, ByteBuffer.allocate(0)), null,
                "empty (not null) assignment userData; default (highest) version");

        CooperativeStickyAssignor fresh = new CooperativeStickyAssignor();
        userdata("userdata-cooperative-fresh", "cooperative-sticky",
                fresh.subscriptionUserData(new HashSet<>(TOPICS)),
                "CooperativeStickyAssignor.subscriptionUserData before any assignment");
        userdata("userdata-cooperative-gen5", "cooperative-sticky", coopUserData,
                "CooperativeStickyAssignor.subscriptionUserData after onAssignment in generation 5");
        StickyAssignor stickyFresh = new StickyAssignor();
        userdata("userdata-sticky-fresh", "sticky", stickyFresh.subscriptionUserData(new HashSet<>(TOPICS)),
                "StickyAssignor.subscriptionUserData before any assignment");
        StickyAssignor sticky = new StickyAssignor();
        sticky.onAssignment(new Assignment(OWNED), metadata(GENERATION));
        userdata("userdata-sticky-gen5", "sticky", sticky.subscriptionUserData(new HashSet<>(TOPICS)),
                "StickyAssignor.subscriptionUserData after onAssignment([orders-2, orders-0, audit-1]) "
                        + "in generation 5");
    }

    // ------------------------------------------------------------------ vectors

    private void subscription(String id, Subscription s, Short requested, String description, String... dropped)
            throws Exception {
        ByteBuffer bytes = requested == null
                ? ConsumerProtocol.serializeSubscription(s)
                : ConsumerProtocol.serializeSubscription(s, requested);
        byte[] raw = toBytes(bytes);
        short written = ByteBuffer.wrap(raw).getShort(0);
        Subscription back = ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(raw));
        List<String> facts = new ArrayList<>();
        facts.add("description: " + description);
        if (requested != null && requested != written) {
            facts.add("asked for version " + requested + ", wrote version " + written);
        }
        for (String d : dropped) {
            if (d != null) {
                facts.add(d);
            }
        }
        orderFacts(facts, "topics", back.topics(), s.topics());
        Map<String, List<Integer>> owned = group(back.ownedPartitions());
        if (written >= 1) {
            partitionFacts(facts, "owned partitions", owned, s.ownedPartitions());
        }
        userDataFact(facts, back.userData());
        Integer generation = written >= 2 ? optionalInt(back, "generationId") : null;
        String rack = written >= 3 ? optionalString(back, "rackId") : null;
        String content = "{\"version\": " + written
                + ", \"topics\": " + strings(back.topics())
                + ", \"owned_partitions\": " + partitions(owned)
                + ", \"generation_id\": " + (generation == null ? -1 : generation)
                + ", \"rack_id\": " + (rack == null ? "null" : quote(rack))
                + ", \"user_data\": " + hexOrNull(back.userData()) + "}";
        boolean canonical = isSorted(back.topics()) && isCanonical(owned);
        emit(id, "subscription", null, raw, content, canonical, facts);
    }

    private void assignment(String id, Assignment a, Short requested, String description) throws Exception {
        ByteBuffer bytes = requested == null
                ? ConsumerProtocol.serializeAssignment(a)
                : ConsumerProtocol.serializeAssignment(a, requested);
        byte[] raw = toBytes(bytes);
        short written = ByteBuffer.wrap(raw).getShort(0);
        Assignment back = ConsumerProtocol.deserializeAssignment(ByteBuffer.wrap(raw));
        List<String> facts = new ArrayList<>();
        facts.add("description: " + description);
        if (requested != null && requested != written) {
            facts.add("asked for version " + requested + ", wrote version " + written);
        }
        Map<String, List<Integer>> assigned = group(back.partitions());
        partitionFacts(facts, "assigned partitions", assigned, a.partitions());
        userDataFact(facts, back.userData());
        String content = "{\"version\": " + written
                + ", \"assigned_partitions\": " + partitions(assigned)
                + ", \"user_data\": " + hexOrNull(back.userData()) + "}";
        emit(id, "assignment", null, raw, content, isCanonical(assigned), facts);
    }

    private void userdata(String id, String assignor, ByteBuffer data, String description) {
        List<String> facts = new ArrayList<>();
        facts.add("description: " + description);
        byte[] raw = data == null ? null : toBytes(data);
        String content;
        boolean canonical = true;
        if (raw == null) {
            facts.add("returns null userData (nothing written)");
            content = "{\"format\": \"null\", \"fields\": {}}";
        } else if (raw.length == 0) {
            content = "{\"format\": \"empty\", \"fields\": {}}";
        } else if (assignor.equals("cooperative-sticky")) {
            facts.add("a bare int32 generation, no version prefix");
            content = "{\"format\": \"cooperative-generation\", \"fields\": {\"generation\": "
                    + ByteBuffer.wrap(raw).getInt() + "}}";
        } else {
            boolean[] sortedOut = new boolean[1];
            content = stickyContent(raw, facts, sortedOut);
            canonical = sortedOut[0];
        }
        emit(id, "userdata", assignor, raw, content, canonical, facts);
    }

    /** Reads StickyAssignorUserData v0/v1 (previous assignment [, generation]) in wire order. */
    private static String stickyContent(byte[] raw, List<String> facts, boolean[] sortedOut) {
        ByteBuffer b = ByteBuffer.wrap(raw);
        Map<String, List<Integer>> prev = new LinkedHashMap<>();
        int n = b.getInt();
        List<String> order = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] name = new byte[b.getShort()];
            b.get(name);
            String topic = new String(name, java.nio.charset.StandardCharsets.UTF_8);
            order.add(topic);
            List<Integer> ps = new ArrayList<>();
            int m = b.getInt();
            for (int j = 0; j < m; j++) {
                ps.add(b.getInt());
            }
            prev.put(topic, ps);
        }
        String format = "sticky-v0";
        String fields = "\"previous_assignment\": " + partitions(prev);
        if (b.remaining() >= 4) {
            format = "sticky-v1";
            fields += ", \"generation\": " + b.getInt();
            facts.add("StickyAssignorUserData v1: previous assignment then int32 generation, no version prefix");
        } else {
            facts.add("StickyAssignorUserData v0: previous assignment only");
        }
        facts.add("previous assignment written as " + prev + (isCanonical(prev)
                ? " (sorted by topic then partition)"
                : " (topics in HashMap order, partitions in input order: not sorted)"));
        sortedOut[0] = isCanonical(prev);
        return "{\"format\": \"" + format + "\", \"fields\": {" + fields + "}}";
    }

    private void emit(String id, String kind, String assignor, byte[] raw, String content, boolean canonical,
                      List<String> facts) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"id\": ").append(quote("java-" + version + "-" + id))
                .append(", \"library\": \"java\"")
                .append(", \"library_version\": ").append(quote(version))
                .append(", \"kind\": ").append(quote(kind))
                .append(", \"assignor\": ").append(assignor == null ? "null" : quote(assignor))
                .append(", \"hex\": ").append(raw == null ? "null" : quote(hex(raw)))
                .append(", \"content\": ").append(content)
                .append(", \"canonical\": ").append(canonical)
                .append(", \"facts\": ").append(strings(facts))
                .append("}");
        out.add(sb.toString());
    }

    // ------------------------------------------------------------------ facts

    private static void orderFacts(List<String> facts, String what, List<String> written, List<String> input) {
        if (written.equals(input) && !isSorted(input)) {
            facts.add(what + " written in input order " + written + ", not sorted");
        } else if (isSorted(written) && !isSorted(input)) {
            facts.add(what + " sorted on write (input " + input + ", wrote " + written + ")");
        }
    }

    private static void partitionFacts(List<String> facts, String what, Map<String, List<Integer>> written,
                                       List<TopicPartition> input) {
        if (input.isEmpty()) {
            return;
        }
        if (isCanonical(written)) {
            facts.add(what + " written sorted by topic then partition" + (isCanonical(group(input)) ? "" :
                    " (input was unsorted)"));
        } else {
            facts.add(what + " NOT sorted: written as " + written + " for input " + input);
        }
    }

    private static void userDataFact(List<String> facts, ByteBuffer userData) {
        if (userData == null) {
            facts.add("userData null (length -1)");
        } else if (!userData.hasRemaining()) {
            facts.add("userData empty (length 0), not null");
        }
    }

    // ------------------------------------------------------------------ reflection across releases

    private static final class Built {
        final Subscription subscription;
        final String dropped;

        Built(Subscription subscription, String dropped) {
            this.subscription = subscription;
            this.dropped = dropped;
        }
    }

    /** Subscription with generation and rack where the release has that constructor (3.4+). */
    private static Built newSubscription(List<String> topics, ByteBuffer userData, List<TopicPartition> owned,
                                         int generation, String rack) throws Exception {
        try {
            Constructor<Subscription> c = Subscription.class.getConstructor(
                    List.class, ByteBuffer.class, List.class, int.class, Optional.class);
            return new Built(c.newInstance(topics, userData, owned, generation, Optional.ofNullable(rack)), null);
        } catch (NoSuchMethodException e) {
            if (generation == -1 && rack == null) {
                return new Built(new Subscription(topics, userData, owned), null);
            }
            return new Built(new Subscription(topics, userData, owned),
                    "this release's Subscription has no generation/rack (no 5-argument constructor): "
                            + "generation " + generation + " and rack " + rack + " cannot be expressed");
        }
    }

    private static Integer optionalInt(Subscription s, String method) throws Exception {
        Object o = optional(s, method);
        return o == null ? null : (Integer) o;
    }

    private static String optionalString(Subscription s, String method) throws Exception {
        Object o = optional(s, method);
        return o == null ? null : (String) o;
    }

    private static Object optional(Subscription s, String method) throws Exception {
        Method m;
        try {
            m = Subscription.class.getMethod(method);
        } catch (NoSuchMethodException e) {
            return null;
        }
        Optional<?> v = (Optional<?>) m.invoke(s);
        return v.orElse(null);
    }

    private static ConsumerGroupMetadata metadata(int generation) {
        return new ConsumerGroupMetadata("golden-group", generation, "golden-member", Optional.empty());
    }

    private static ByteBuffer cooperativeUserData(int generation) {
        CooperativeStickyAssignor a = new CooperativeStickyAssignor();
        a.onAssignment(new Assignment(OWNED), metadata(generation));
        return a.subscriptionUserData(new HashSet<>(TOPICS));
    }

    // ------------------------------------------------------------------ helpers

    /** The release of the kafka-clients jar on the class path (its kafka/kafka-version.properties). */
    private static String kafkaVersion() {
        try (java.io.InputStream in = ConsumerProtocol.class.getClassLoader()
                .getResourceAsStream("kafka/kafka-version.properties")) {
            if (in == null) {
                throw new IllegalStateException("kafka/kafka-version.properties not on the class path");
            }
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version").trim();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot read kafka-version.properties", e);
        }
    }

    private static Map<String, List<Integer>> group(List<TopicPartition> tps) {
        Map<String, List<Integer>> m = new LinkedHashMap<>();
        for (TopicPartition tp : tps) {
            m.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(tp.partition());
        }
        return m;
    }

    private static boolean isSorted(List<String> xs) {
        List<String> s = new ArrayList<>(xs);
        Collections.sort(s);
        return s.equals(xs);
    }

    private static boolean isCanonical(Map<String, List<Integer>> m) {
        if (!isSorted(new ArrayList<>(m.keySet()))) {
            return false;
        }
        for (List<Integer> ps : m.values()) {
            List<Integer> s = new ArrayList<>(ps);
            Collections.sort(s);
            if (!s.equals(ps)) {
                return false;
            }
        }
        return true;
    }

    private static byte[] toBytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] raw = new byte[d.remaining()];
        d.get(raw);
        return raw;
    }

    private static String hexOrNull(ByteBuffer b) {
        return b == null ? "null" : quote(hex(toBytes(b)));
    }

    private static String hex(byte[] raw) {
        StringBuilder sb = new StringBuilder();
        for (byte x : raw) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    private static String partitions(Map<String, List<Integer>> m) {
        List<String> items = new ArrayList<>();
        for (Map.Entry<String, List<Integer>> e : m.entrySet()) {
            items.add("{\"topic\": " + quote(e.getKey()) + ", \"partitions\": " + e.getValue() + "}");
        }
        return "[" + String.join(", ", items) + "]";
    }

    private static String strings(List<String> xs) {
        List<String> q = new ArrayList<>();
        for (String x : xs) {
            q.add(quote(x));
        }
        return "[" + String.join(", ", q) + "]";
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
