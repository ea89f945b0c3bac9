package conformance.harness;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Appends history events (format: conformance/history.py) to one file, one
 * line per event, flushed per line. Thread-safe: the poll loop, the rebalance
 * listener and the shutdown hook all record.
 *
 * <p>Every event carries {@code ts} (epoch ms with sub-ms fraction), {@code member},
 * {@code client}, {@code client_version}, {@code event}, then the context fields
 * ({@code member_id}, {@code generation}, {@code protocol}) that are known, then
 * the event's own fields.
 */
final class History {
    private final Writer out;
    private final String member;
    private final String client;
    private final String clientVersion;
    private final Map<String, Object> context = new LinkedHashMap<>();
    private boolean closed;

    History(String path, String member, String client, String clientVersion) throws IOException {
        java.io.File parent = new java.io.File(path).getAbsoluteFile().getParentFile();
        if (parent != null) parent.mkdirs();
        this.out = new OutputStreamWriter(new FileOutputStream(path, true), StandardCharsets.UTF_8);
        this.member = member;
        this.client = client;
        this.clientVersion = clientVersion;
    }

    /** Set a context field (null removes it); later events carry it. */
    synchronized void context(String key, Object value) {
        if (value == null) context.remove(key); else context.put(key, value);
    }

    synchronized Object context(String key) {
        return context.get(key);
    }

    static double nowMs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1000.0 + now.getNano() / 1_000_000.0;
    }

    /** Write one event; fields are given as alternating key, value. */
    synchronized void record(String event, Object... fields) {
        if (closed) return;
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("ts", nowMs());
        e.put("member", member);
        e.put("client", client);
        e.put("client_version", clientVersion);
        e.put("event", event);
        e.putAll(context);
        for (int i = 0; i + 1 < fields.length; i += 2) e.put((String) fields[i], fields[i + 1]);
        try {
            out.write(Json.write(e));
            out.write('\n');
            out.flush();
        } catch (IOException ex) {
            System.err.println("history: cannot write " + event + ": " + ex);
        }
    }

    synchronized void close() {
        if (closed) return;
        closed = true;
        try { out.close(); } catch (IOException ignored) { /* nothing left to do */ }
    }
}
