# The reference cooperative consumer: the suite on Python 3.11 with its kafka-python.
# Context: suite/, member/run, ca/. Same first layers as tools.Dockerfile (shared build cache).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
COPY ca/ /usr/local/share/ca-certificates/
RUN apt-get update -qq -o Acquire::Check-Valid-Until=false \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates python3 python3-venv >/dev/null \
 && update-ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1 LANG=C.UTF-8
COPY suite/requirement /opt/suite-requirement
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install -q -r /opt/suite-requirement
COPY suite/ /opt/conformance/
ENV CONFORMANCE_CACHE=/cache PYTHONPATH=/opt/conformance PATH=/opt/venv/bin:$PATH
WORKDIR /opt/conformance
COPY member/ /opt/member/
LABEL io.conformance.suite=1
ENTRYPOINT ["/opt/member/run"]
