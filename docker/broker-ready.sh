#!/bin/bash
# Exit 0 only when a Kafka broker answers an ApiVersions (v0) request on 127.0.0.1:${READY_PORT:-9092}:
# a real Kafka response (correlation id 1, error code 0), not merely an open port.
exec 3<>"/dev/tcp/127.0.0.1/${READY_PORT:-9092}" || exit 1
# size 10 | api_key 18 | api_version 0 | correlation_id 1 | client_id "" (length 0)
printf '\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00' >&3
resp=$(timeout 3 head -c 10 <&3 | od -An -tx1 | tr -d ' \n')
# response: size (4 bytes) | correlation_id 00000001 | error_code 0000
[[ ${#resp} -eq 20 && ${resp:8:8} == 00000001 && ${resp:16:4} == 0000 ]]
