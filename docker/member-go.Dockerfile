# A Sarama member: the harness binary (static, CGO off) built by the suite for one version.
# Context: cache/sarama/<v>/harness, member/run.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY cache/ /cache/
COPY member/ /opt/member/
ENV CONFORMANCE_CACHE=/cache
LABEL io.conformance.suite=1
ENTRYPOINT ["/opt/member/run"]
