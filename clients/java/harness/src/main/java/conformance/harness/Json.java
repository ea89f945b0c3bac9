package conformance.harness;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A small, strict JSON reader and writer (RFC 8259), so the harness needs no
 * dependency besides kafka-clients.
 *
 * <p>Reading yields {@code Map<String,Object>} (insertion ordered), {@code List<Object>},
 * {@code String}, {@code Long} (integers that fit), {@code Double}, {@code Boolean} or
 * {@code null}. Malformed input raises {@link JsonException} naming the offset.
 * Writing accepts the same types (any {@code Number}, any {@code Collection}).
 */
final class Json {
    private Json() {}

    /** Malformed JSON; the message names the character offset and what was expected. */
    static final class JsonException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        JsonException(String message) { super(message); }
    }

    static Object parse(String text) {
        Reader r = new Reader(text);
        r.ws();
        Object value = r.value();
        r.ws();
        if (r.pos != text.length()) throw r.error("trailing characters");
        return value;
    }

    private static final class Reader {
        final String s;
        int pos;

        Reader(String s) { this.s = s; }

        JsonException error(String what) {
            return new JsonException("JSON error at offset " + pos + ": " + what);
        }

        void ws() {
            while (pos < s.length()) {
                char c = s.charAt(pos);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') pos++; else break;
            }
        }

        char peek() {
            if (pos >= s.length()) throw error("unexpected end of input");
            return s.charAt(pos);
        }

        void expect(String word) {
            if (!s.startsWith(word, pos)) throw error("expected " + word);
            pos += word.length();
        }

        Object value() {
            char c = peek();
            switch (c) {
                case '{': return object();
                case '[': return array();
                case '"': return string();
                case 't': expect("true"); return Boolean.TRUE;
                case 'f': expect("false"); return Boolean.FALSE;
                case 'n': expect("null"); return null;
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw error("unexpected character '" + c + "'");
            }
        }

        Map<String, Object> object() {
            Map<String, Object> out = new LinkedHashMap<>();
            pos++;
            ws();
            if (peek() == '}') { pos++; return out; }
            while (true) {
                ws();
                if (peek() != '"') throw error("expected a string key");
                String key = string();
                ws();
                if (peek() != ':') throw error("expected ':'");
                pos++;
                ws();
                out.put(key, value());
                ws();
                char c = peek();
                pos++;
                if (c == '}') return out;
                if (c != ',') { pos--; throw error("expected ',' or '}'"); }
            }
        }

        List<Object> array() {
            List<Object> out = new ArrayList<>();
            pos++;
            ws();
            if (peek() == ']') { pos++; return out; }
            while (true) {
                ws();
                out.add(value());
                ws();
                char c = peek();
                pos++;
                if (c == ']') return out;
                if (c != ',') { pos--; throw error("expected ',' or ']'"); }
            }
        }

        String string() {
            pos++; // opening quote
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = peek();
                pos++;
                if (c == '"') return b.toString();
                if (c < 0x20) { pos--; throw error("control character in string"); }
                if (c != '\\') { b.append(c); continue; }
                char e = peek();
                pos++;
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (pos + 4 > s.length()) throw error("short \\u escape");
                        try {
                            b.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
                        } catch (NumberFormatException ex) {
                            throw error("bad \\u escape");
                        }
                        pos += 4;
                        break;
                    default: pos--; throw error("bad escape '\\" + e + "'");
                }
            }
        }

        Object number() {
            int start = pos;
            if (peek() == '-') pos++;
            boolean fraction = false;
            while (pos < s.length()) {
                char c = s.charAt(pos);
                if (c >= '0' && c <= '9') { pos++; continue; }
                if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') { fraction = true; pos++; continue; }
                break;
            }
            String text = s.substring(start, pos);
            try {
                if (!fraction) return Long.parseLong(text);
                return Double.parseDouble(text);
            } catch (NumberFormatException ex) {
                pos = start;
                throw error("bad number '" + text + "'");
            }
        }
    }

    /** Append {@code value} as JSON to {@code out}. */
    static void write(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            quote(out, (String) value);
        } else if (value instanceof Boolean) {
            out.append(value.toString());
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) out.append("null");
            else out.append(String.format(Locale.ROOT, "%.3f", d));
        } else if (value instanceof Number) {
            out.append(value.toString());
        } else if (value instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                if (!first) out.append(',');
                first = false;
                quote(out, String.valueOf(e.getKey()));
                out.append(':');
                write(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof Collection) {
            out.append('[');
            boolean first = true;
            for (Object o : (Collection<?>) value) {
                if (!first) out.append(',');
                first = false;
                write(out, o);
            }
            out.append(']');
        } else {
            quote(out, value.toString());
        }
    }

    static String write(Object value) {
        StringBuilder b = new StringBuilder();
        write(b, value);
        return b.toString();
    }

    private static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        out.append('"');
    }
}
