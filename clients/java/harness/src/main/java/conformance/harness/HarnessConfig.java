package conformance.harness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The harness contract's JSON config (conformance/members/harness_config.py),
 * read once at start. A missing or mistyped key raises {@link BadConfig} naming it.
 */
final class HarnessConfig {
    /** The config file is unusable; the message names the file and the key. */
    static final class BadConfig extends Exception {
        private static final long serialVersionUID = 1L;
        BadConfig(String message) { super(message); }
    }

    final String member;
    final String client;
    final String clientVersion;
    final String clientId;
    final String bootstrapServers;
    final String groupId;
    final List<String> topics;
    final List<String> assignmentStrategies;
    final String groupProtocol;
    final String groupInstanceId;
    final int sessionTimeoutMs;
    final int heartbeatIntervalMs;
    final int maxPollIntervalMs;
    final String commitMode;
    final int processingDelayMs;
    final String autoOffsetReset;
    final String historyPath;
    final String rackId;
    final String controlPath;
    final Map<String, Object> extra;

    private final String path;
    private final Map<String, Object> raw;

    @SuppressWarnings("unchecked")
    private HarnessConfig(String path, Map<String, Object> raw) throws BadConfig {
        this.path = path;
        this.raw = raw;
        member = str("member", false);
        client = str("client", false);
        clientVersion = str("client_version", false);
        String cid = str("client_id", true);
        clientId = cid == null || cid.isEmpty() ? member : cid;
        bootstrapServers = str("bootstrap_servers", false);
        groupId = str("group_id", false);
        topics = strings("topics");
        assignmentStrategies = strings("assignment_strategies");
        groupProtocol = str("group_protocol", false);
        groupInstanceId = str("group_instance_id", true);
        sessionTimeoutMs = integer("session_timeout_ms");
        heartbeatIntervalMs = integer("heartbeat_interval_ms");
        maxPollIntervalMs = integer("max_poll_interval_ms");
        commitMode = str("commit_mode", false);
        processingDelayMs = integer("processing_delay_ms");
        autoOffsetReset = str("auto_offset_reset", false);
        historyPath = str("history_path", false);
        rackId = str("rack_id", true);
        controlPath = raw.containsKey("control_path") ? str("control_path", true) : null;
        Object e = raw.get("extra");
        extra = e instanceof Map ? (Map<String, Object>) e : Collections.emptyMap();
        if (!List.of("auto", "sync-batch", "on-revoke").contains(commitMode)) {
            throw new BadConfig(path + ": commit_mode " + commitMode + " is not one of auto, sync-batch, on-revoke");
        }
        if (!List.of("classic", "consumer").contains(groupProtocol)) {
            throw new BadConfig(path + ": group_protocol " + groupProtocol + " is not one of classic, consumer");
        }
        if (topics.isEmpty()) throw new BadConfig(path + ": topics is empty");
    }

    @SuppressWarnings("unchecked")
    static HarnessConfig load(String path) throws BadConfig {
        String text;
        try {
            text = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
        } catch (IOException ex) {
            throw new BadConfig("cannot read harness config " + path + ": " + ex);
        }
        Object parsed;
        try {
            parsed = Json.parse(text);
        } catch (Json.JsonException ex) {
            throw new BadConfig("harness config " + path + ": " + ex.getMessage());
        }
        if (!(parsed instanceof Map)) throw new BadConfig("harness config " + path + " is not a JSON object");
        return new HarnessConfig(path, (Map<String, Object>) parsed);
    }

    private String str(String key, boolean nullable) throws BadConfig {
        if (!raw.containsKey(key)) throw new BadConfig(path + ": missing key " + key);
        Object v = raw.get(key);
        if (v == null && nullable) return null;
        if (!(v instanceof String)) throw new BadConfig(path + ": " + key + " must be a string, got " + Json.write(v));
        return (String) v;
    }

    private int integer(String key) throws BadConfig {
        Object v = raw.get(key);
        if (!(v instanceof Long)) throw new BadConfig(path + ": " + key + " must be an integer, got " + Json.write(v));
        return (int) (long) (Long) v;
    }

    private List<String> strings(String key) throws BadConfig {
        Object v = raw.get(key);
        if (!(v instanceof List)) throw new BadConfig(path + ": " + key + " must be a list of strings, got " + Json.write(v));
        List<String> out = new ArrayList<>();
        for (Object o : (List<?>) v) {
            if (!(o instanceof String)) throw new BadConfig(path + ": " + key + " must be a list of strings, got " + Json.write(v));
            out.add((String) o);
        }
        return Collections.unmodifiableList(out);
    }
}
