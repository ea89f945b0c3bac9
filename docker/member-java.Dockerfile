# A Java member: the harness jar and one kafka-clients version from the suite's cache.
# Context: cache/java/harness-<hash>.jar, cache/java/kafka-clients-<v>/, member/run, ca/.
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
COPY cache/ /cache/
COPY member/ /opt/member/
ENV CONFORMANCE_CACHE=/cache
LABEL io.conformance.suite=1
ENTRYPOINT ["/opt/member/run"]
