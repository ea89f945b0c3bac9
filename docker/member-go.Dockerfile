# A member whose harness is a static Go binary (CGO off) that the suite built for one version of
# its client: Sarama or franz-go. Context: cache/<kind>/<v>/harness, member/run.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY cache/ /cache/
COPY member/ /opt/member/
ENV CONFORMANCE_CACHE=/cache
LABEL io.conformance.suite=1
ENTRYPOINT ["/opt/member/run"]
