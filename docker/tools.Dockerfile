# The suite itself (producer, wire tap, reference consumer) on Python 3.11 with its kafka-python.
# Context: suite/ (conformance/, clients/, pyproject.toml, requirement), ca/.
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
LABEL io.conformance.suite=1
CMD ["python", "-c", "print('conformance-tools: run python -m conformance.members.producer CONFIG, or python -m conformance.reference CONFIG')"]
