package conformance.harness;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The member's control file (format and guarantees: conformance/members/control.py): the
 * commands appended since this incarnation started, applied from the poll loop.
 */
final class Control {
    private final String path;
    private final History history;
    private long offset;

    Control(String path, History history) {
        this.path = path;
        this.history = history;
        this.offset = size();
    }

    private long size() {
        if (path == null) return 0;
        java.io.File f = new java.io.File(path);
        return f.isFile() ? f.length() : 0;
    }

    /** The complete lines appended since the last call. */
    private List<String> newLines() {
        List<String> out = new ArrayList<>();
        if (path == null || size() <= offset) return out;
        byte[] data;
        try (RandomAccessFile f = new RandomAccessFile(path, "r")) {
            f.seek(offset);
            data = new byte[(int) (f.length() - offset)];
            f.readFully(data);
        } catch (IOException ex) {
            return out;
        }
        int end = -1;
        for (int i = data.length - 1; i >= 0; i--) {
            if (data[i] == '\n') { end = i; break; }
        }
        if (end < 0) return out;
        offset += end + 1;
        for (String line : new String(data, 0, end + 1, StandardCharsets.UTF_8).split("\n")) {
            if (!line.trim().isEmpty()) out.add(line);
        }
        return out;
    }

    /**
     * Apply every new command in order: record {@code control}, then stall (sleep, ended early when
     * {@code stopping} turns true) or subscribe (through {@code subscribe}). A line that is not a
     * command, or a subscribe the client refuses, is a non-fatal {@code error} event.
     */
    @SuppressWarnings("unchecked")
    void serve(BooleanSupplier stopping, Consumer<List<String>> subscribe) {
        for (String line : newLines()) {
            Object parsed;
            try {
                parsed = Json.parse(line);
            } catch (Json.JsonException ex) {
                parsed = null;
            }
            Map<String, Object> cmd = parsed instanceof Map ? (Map<String, Object>) parsed : null;
            Object op = cmd == null ? null : cmd.get("op");
            Object seq = cmd == null ? null : cmd.get("seq");
            if ("stall".equals(op) && seq instanceof Long && cmd.get("ms") instanceof Long) {
                long ms = (Long) cmd.get("ms");
                history.record("control", "seq", seq, "op", "stall", "ms", ms);
                long deadline = System.nanoTime() + ms * 1_000_000L;
                while (!stopping.getAsBoolean() && System.nanoTime() < deadline) {
                    try {
                        Thread.sleep(Math.max(1, Math.min(50, (deadline - System.nanoTime()) / 1_000_000L)));
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            } else if ("subscribe".equals(op) && seq instanceof Long && cmd.get("topics") instanceof List) {
                List<String> topics = new ArrayList<>();
                for (Object t : (List<?>) cmd.get("topics")) topics.add(String.valueOf(t));
                history.record("control", "seq", seq, "op", "subscribe", "topics", topics);
                try {
                    subscribe.accept(topics);
                } catch (RuntimeException ex) {
                    history.record("error", "error", "control " + seq + ": subscribe " + topics + " failed: " + ex,
                            "fatal", false);
                }
            } else {
                history.record("error", "error", "control: not a command: " + line, "fatal", false);
            }
        }
    }
}
