# Toxiproxy, the binary the suite built from its Go module (context: toxiproxy-server).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY toxiproxy-server /usr/local/bin/toxiproxy-server
LABEL io.conformance.suite=1
EXPOSE 8474
ENTRYPOINT ["/usr/local/bin/toxiproxy-server", "-host", "0.0.0.0", "-port", "8474"]
HEALTHCHECK --interval=1s --timeout=3s --retries=3 CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8474 && printf 'GET /version HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 2 head -c 12 <&3 | grep -q ' 200'"]
