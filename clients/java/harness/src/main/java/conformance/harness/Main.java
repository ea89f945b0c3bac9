package conformance.harness;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java member harness: one Kafka consumer driven by the harness contract
 * (docs: conformance/members/harness_config.py, events: conformance/history.py).
 *
 * <p>Compiled against kafka-clients 2.4 and run against any release from 2.4.0 on.
 * What later releases add is reached by reflection: {@code groupMetadata()} (2.5+)
 * gives the member id and generation of every event, else they are left out
 * (unknown); {@code group.protocol=consumer} (3.7+) is set only when the config
 * asks for it, and asking for it on an older client is a fatal error.
 *
 * <p>Guarantees:
 * <ul>
 * <li>{@code started} is written once the consumer exists and has subscribed;
 *     {@code stopped} (reason {@code sigterm}) is the last line after SIGTERM,
 *     written after {@code close()} returned (offsets committed per the commit
 *     mode, group left unless the member is static); the exit code is then 0.</li>
 * <li>{@code protocol} is {@code cooperative} exactly when every configured
 *     assignor supports COOPERATIVE (the rule kafka-clients itself applies: a list
 *     such as [cooperative-sticky, range] stays eager), {@code consumer} for KIP-848.</li>
 * <li>Every client error is recorded; an error that leaves the consumer unusable is
 *     recorded with {@code fatal: true} and the process exits with code 3. A config
 *     that cannot be used exits with code 2.</li>
 * </ul>
 */
public final class Main {
    static final Map<String, String> ASSIGNORS = Map.of(
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor");

    private final HarnessConfig cfg;
    private final History history;
    private KafkaConsumer<byte[], byte[]> consumer;
    /** Next offset to read per partition, from what this incarnation consumed. */
    private final Map<TopicPartition, Long> consumed = new HashMap<>();
    private volatile boolean running = true;
    private volatile boolean exitingOnOwn = false;
    /** Set when main() itself is exiting (any code): the shutdown hook then does nothing. */
    private static volatile boolean exiting = false;
    private volatile boolean cleanClose = false;
    private final CountDownLatch finished = new CountDownLatch(1);
    private final Method groupMetadata;

    private Main(HarnessConfig cfg, History history) {
        this.cfg = cfg;
        this.history = history;
        Method m = null;
        try {
            m = KafkaConsumer.class.getMethod("groupMetadata");
        } catch (NoSuchMethodException absentBefore25) {
            m = null;
        }
        this.groupMetadata = m;
    }

    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: java -jar harness.jar CONFIG_JSON");
            System.exit(2);
        }
        HarnessConfig cfg;
        try {
            cfg = HarnessConfig.load(args[0]);
        } catch (HarnessConfig.BadConfig ex) {
            System.err.println("java harness: " + ex.getMessage());
            System.exit(2);
            return;
        }
        History history;
        try {
            history = new History(cfg.historyPath, cfg.member, cfg.client, cfg.clientVersion);
        } catch (java.io.IOException ex) {
            System.err.println("java harness: cannot open history " + cfg.historyPath + ": " + ex);
            System.exit(2);
            return;
        }
        int code;
        try {
            code = new Main(cfg, history).run();
        } catch (Throwable ex) {
            // A harness bug or a library incompatibility: recorded, never a silent hang.
            history.record("error", "error", "harness failure: " + describe(ex), "fatal", true);
            System.err.println("java harness " + cfg.member + ": " + describe(ex));
            ex.printStackTrace();
            code = 4;
        }
        history.close();
        exiting = true;
        System.exit(code);
    }

    /** kafka-clients' own version (kafka/kafka-version.properties in its jar), or "unknown". */
    static String libraryVersion() {
        try (java.io.InputStream in = KafkaConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) return "unknown";
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException ex) {
            return "unknown";
        }
    }

    private int run() {
        Properties props;
        String protocol;
        try {
            protocol = protocolOf(cfg);
            props = properties(cfg);
            consumer = new KafkaConsumer<>(props);
        } catch (Exception ex) {
            history.record("error", "error", describe(ex), "fatal", true);
            System.err.println("java harness " + cfg.member + ": cannot create the consumer: " + describe(ex));
            history.close();
            return 2;
        }
        history.context("protocol", protocol);
        Runtime.getRuntime().addShutdownHook(new Thread(this::onShutdown, "harness-shutdown"));
        consumer.subscribe(cfg.topics, new Listener());
        history.record("started",
                "library_version", libraryVersion(),
                "assignment_strategies", cfg.assignmentStrategies,
                "group_protocol", cfg.groupProtocol,
                "group_instance_id", cfg.groupInstanceId,
                "commit_mode", cfg.commitMode,
                "pid", ProcessHandle.current().pid());
        int code = 0;
        try {
            loop();
        } catch (Fatal ex) {
            code = 3;
        }
        if (code == 0) {
            code = closeGracefully();
        } else {
            try {
                consumer.close(Duration.ofSeconds(5));
            } catch (RuntimeException ignored) {
                // the consumer is already unusable; its error was recorded
            }
        }
        exitingOnOwn = code != 0 || running;
        history.close();
        finished.countDown();
        return code;
    }

    /** Thrown out of the loop after a fatal error has been recorded. */
    private static final class Fatal extends Exception {
        private static final long serialVersionUID = 1L;
    }

    private void loop() throws Fatal {
        Control control = new Control(cfg.controlPath, history);
        while (running) {
            control.serve(() -> !running, topics -> consumer.subscribe(topics, new Listener()));
            if (!running) return;
            ConsumerRecords<byte[], byte[]> records;
            double pollTs = History.nowMs();
            try {
                records = consumer.poll(Duration.ofMillis(100));
            } catch (WakeupException | InterruptException ex) {
                if (!running) return;
                continue;
            } catch (RuntimeException ex) {
                onError(ex);
                continue;
            }
            refreshContext();
            if (records.isEmpty()) continue;
            Map<TopicPartition, OffsetAndMetadata> batch = new HashMap<>();
            for (TopicPartition tp : records.partitions()) {
                List<ConsumerRecord<byte[], byte[]>> list = records.records(tp);
                for (int i = 0; i < list.size() && cfg.processingDelayMs > 0; i++) {
                    try {
                        Thread.sleep(cfg.processingDelayMs);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
                long first = list.get(0).offset();
                long last = list.get(list.size() - 1).offset();
                history.record("consumed", "topic", tp.topic(), "partition", tp.partition(),
                        "first_offset", first, "last_offset", last, "count", list.size(), "poll_ts", pollTs);
                consumed.put(tp, last + 1);
                batch.put(tp, new OffsetAndMetadata(last + 1));
            }
            if (cfg.commitMode.equals("sync-batch")) commit(batch);
        }
    }

    /** Record a client error from the poll loop; throws Fatal when the consumer is unusable. */
    private void onError(RuntimeException ex) throws Fatal {
        boolean fatal = !(ex instanceof RetriableException || ex instanceof CommitFailedException
                || ex instanceof RebalanceInProgressException);
        // Exceptions thrown from our own listener arrive wrapped; the listener never throws, so any
        // other KafkaException here came from the client itself.
        history.record("error", "error", describe(ex), "fatal", fatal);
        if (fatal) {
            System.err.println("java harness " + cfg.member + ": fatal client error: " + describe(ex));
            ex.printStackTrace();
            throw new Fatal();
        }
    }

    /** commitSync the given offsets and record the outcome; never throws. */
    private void commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (offsets.isEmpty()) return;
        List<List<Object>> listed = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            listed.add(List.of(e.getKey().topic(), e.getKey().partition(), e.getValue().offset()));
        }
        String error = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                consumer.commitSync(offsets);
                error = null;
                break;
            } catch (WakeupException ex) {
                error = describe(ex); // a pending wakeup from shutdown: retry once
            } catch (RuntimeException ex) {
                error = describe(ex);
                break;
            }
        }
        history.record("committed", "offsets", listed, "error", error);
        if (error != null) history.record("error", "error", "commit failed: " + error, "fatal", false);
    }

    private Map<TopicPartition, OffsetAndMetadata> consumedOffsets(Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        for (TopicPartition tp : partitions) {
            Long next = consumed.get(tp);
            if (next != null) out.put(tp, new OffsetAndMetadata(next));
        }
        return out;
    }

    /** Commit per the commit mode, close (leaves the group unless static), record stopped. */
    private int closeGracefully() {
        try {
            if (!cfg.commitMode.equals("auto")) {
                try {
                    commit(consumedOffsets(consumer.assignment()));
                } catch (RuntimeException ex) {
                    history.record("error", "error", "commit before close: " + describe(ex), "fatal", false);
                }
            }
            consumer.close();
            cleanClose = true;
        } catch (RuntimeException ex) {
            history.record("error", "error", "close failed: " + describe(ex), "fatal", true);
            return 3;
        }
        history.record("stopped", "reason", "sigterm");
        return 0;
    }

    private void onShutdown() {
        if (exitingOnOwn || exiting) return;
        running = false;
        try {
            consumer.wakeup();
            if (!finished.await(60, TimeUnit.SECONDS)) {
                history.record("error", "error", "graceful close did not finish within 60s", "fatal", true);
                history.close();
                Runtime.getRuntime().halt(3);
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
        // SIGTERM is the contract's graceful stop: exit 0 once close() succeeded.
        Runtime.getRuntime().halt(cleanClose ? 0 : 3);
    }

    /** Keep member_id and generation current (2.5+: groupMetadata(); before: unknown). */
    private void refreshContext() {
        if (groupMetadata == null) return;
        try {
            Object meta = groupMetadata.invoke(consumer);
            Object gen = meta.getClass().getMethod("generationId").invoke(meta);
            Object mid = meta.getClass().getMethod("memberId").invoke(meta);
            int g = gen instanceof Integer ? (Integer) gen : -1;
            history.context("generation", g >= 0 ? g : null);
            history.context("member_id", mid instanceof String && !((String) mid).isEmpty() ? mid : null);
        } catch (ReflectiveOperationException | RuntimeException ex) {
            // groupMetadata() throws when the consumer is closed; the context stays as it was
        }
    }

    private static List<List<Object>> listed(Collection<TopicPartition> partitions) {
        List<List<Object>> out = new ArrayList<>();
        partitions.stream()
                .sorted((a, b) -> a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition())
                        : a.topic().compareTo(b.topic()))
                .forEach(tp -> out.add(List.of(tp.topic(), tp.partition())));
        return out;
    }

    private final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            // Cooperative clients call this only with a non-empty set; eager ones call it before
            // every join, possibly with nothing owned: record only real revocations.
            if (partitions.isEmpty()) return;
            refreshContext();
            if (!cfg.commitMode.equals("auto")) commit(consumedOffsets(partitions));
            history.record("revoked", "partitions", listed(partitions));
            partitions.forEach(consumed::remove);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            refreshContext();
            history.record("assigned", "partitions", listed(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            if (partitions.isEmpty()) return;
            refreshContext();
            history.record("lost", "partitions", listed(partitions));
            partitions.forEach(consumed::remove);
        }
    }

    static String protocolOf(HarnessConfig cfg) throws ReflectiveOperationException, HarnessConfig.BadConfig {
        if (cfg.groupProtocol.equals("consumer")) return "consumer";
        boolean cooperative = true;
        for (String name : cfg.assignmentStrategies) {
            Object assignor = Class.forName(assignorClass(name)).getDeclaredConstructor().newInstance();
            List<ConsumerPartitionAssignor.RebalanceProtocol> supported =
                    ((ConsumerPartitionAssignor) assignor).supportedProtocols();
            cooperative &= supported.contains(ConsumerPartitionAssignor.RebalanceProtocol.COOPERATIVE);
        }
        return cooperative ? "cooperative" : "eager";
    }

    static String assignorClass(String name) throws HarnessConfig.BadConfig {
        String cls = ASSIGNORS.get(name);
        if (cls == null) {
            throw new HarnessConfig.BadConfig("unknown assignment strategy " + name + "; known: " + ASSIGNORS.keySet());
        }
        return cls;
    }

    static Properties properties(HarnessConfig cfg) throws HarnessConfig.BadConfig {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrapServers);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, cfg.groupId);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, cfg.clientId);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, cfg.autoOffsetReset);
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, Integer.toString(cfg.maxPollIntervalMs));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, Boolean.toString(cfg.commitMode.equals("auto")));
        p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "1000");
        if (cfg.groupInstanceId != null) p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, cfg.groupInstanceId);
        if (cfg.rackId != null) p.put(ConsumerConfig.CLIENT_RACK_CONFIG, cfg.rackId);
        if (cfg.groupProtocol.equals("consumer")) {
            try {
                ConsumerConfig.class.getField("GROUP_PROTOCOL_CONFIG");
            } catch (NoSuchFieldException ex) {
                throw new HarnessConfig.BadConfig("group_protocol consumer (KIP-848) needs kafka-clients 3.7 or later, "
                        + "this is " + libraryVersion());
            }
            // The broker assigns; classic-only settings are rejected with this protocol.
            p.put("group.protocol", "consumer");
        } else {
            List<String> classes = new ArrayList<>();
            for (String s : cfg.assignmentStrategies) classes.add(assignorClass(s));
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, String.join(",", classes));
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(cfg.sessionTimeoutMs));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, Integer.toString(cfg.heartbeatIntervalMs));
        }
        return p;
    }

    private static String describe(Throwable ex) {
        String msg = ex.getMessage();
        return ex.getClass().getName() + (msg == null ? "" : ": " + msg);
    }
}
