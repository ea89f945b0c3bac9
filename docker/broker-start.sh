#!/bin/bash
# The broker image's entrypoint (see conformance/containers/images.py, "Broker image"):
# server.properties = default.properties + the lines of $KAFKA_PROPERTIES (a later key wins),
# storage formatted once (--ignore-formatted keeps a restarted container's data), then Kafka.
set -euo pipefail
cd /opt/kafka
{ sed "s/HOSTNAME/$(hostname)/" default.properties; printf '%s\n' "${KAFKA_PROPERTIES:-}"; } > server.properties
if [ -f log4j2.properties ]; then
  log_flag=-Dlog4j2.configurationFile=/opt/kafka/log4j2.properties
else
  log_flag=-Dlog4j.configuration=file:/opt/kafka/log4j.properties
fi
flags=("-Xmx${KAFKA_HEAP:-512m}" -Xms128m -XX:+UseSerialGC -Xss1m -Djava.awt.headless=true
       -Dkafka.logs.dir=/var/log/kafka "$log_flag" -cp '/opt/kafka/lib/*')
java "${flags[@]}" kafka.tools.StorageTool format -t "${CLUSTER_ID:-Y29uZm9ybWFuY2UtY2x1cw}" \
  -c server.properties --ignore-formatted >/var/log/kafka/format.log 2>&1 \
  || { cat /var/log/kafka/format.log >&2; exit 1; }
exec java "${flags[@]}" kafka.Kafka server.properties
