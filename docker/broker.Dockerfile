# A Kafka broker of one version: Java 17 and that version's jars from the suite's cache.
# Context (staged by conformance.containers.images): kafka/lib/*.jar, kafka/log4j*.properties,
# kafka/default.properties, kafka/start, kafka/ready, ca/.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY ca/ /usr/local/share/ca-certificates/
# /usr/share/man/man1 must exist for openjdk's install in a minimal image; Check-Valid-Until off
# because a mirror snapshot may be older than its Valid-Until.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update -qq -o Acquire::Check-Valid-Until=false \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates openjdk-17-jre-headless >/dev/null \
 && update-ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY kafka/ /opt/kafka/
RUN mkdir -p /var/lib/kafka/data /var/log/kafka
LABEL io.conformance.suite=1
EXPOSE 9092
ENTRYPOINT ["/opt/kafka/start"]
HEALTHCHECK --interval=1s --timeout=5s --start-period=300s --retries=3 CMD ["/opt/kafka/ready"]
