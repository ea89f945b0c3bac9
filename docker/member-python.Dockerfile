# A Python client member (librdkafka via confluent-kafka, or kafka-python): the client in its
# own venv at the cache's path, the suite's harness and package from the repository.
# Context: member/requirement, member/venv (the venv's path), member/run, suite/, ca/.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY ca/ /usr/local/share/ca-certificates/
RUN apt-get update -qq -o Acquire::Check-Valid-Until=false \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates python3 python3-venv >/dev/null \
 && update-ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1 LANG=C.UTF-8
COPY member/requirement member/venv /opt/member/
RUN venv="$(cat /opt/member/venv)" && python3 -m venv "$venv" \
 && "$venv/bin/pip" install -q --only-binary=:all: -r /opt/member/requirement
COPY suite/ /opt/conformance/
COPY member/run /opt/member/run
ENV CONFORMANCE_CACHE=/cache PYTHONPATH=/opt/conformance
WORKDIR /opt/conformance
LABEL io.conformance.suite=1
ENTRYPOINT ["/opt/member/run"]
