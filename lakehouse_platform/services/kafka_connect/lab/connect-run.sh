#!/bin/bash
# The lab's Connect worker: connect-distributed.properties from the Debezium image's variables, then one exec'd
# JVM (ConnectDistributed, the properties file last: the Iceberg sink reads it back from sun.java.command).
set -euo pipefail
config=/kafka/config/connect-distributed.properties
{
  echo "plugin.path=${PLUGIN_PATH:-/kafka/connect}"
  for pair in bootstrap.servers:BOOTSTRAP_SERVERS group.id:GROUP_ID config.storage.topic:CONFIG_STORAGE_TOPIC \
              offset.storage.topic:OFFSET_STORAGE_TOPIC status.storage.topic:STATUS_STORAGE_TOPIC \
              offset.flush.interval.ms:OFFSET_FLUSH_INTERVAL_MS; do
    name="${pair#*:}"
    [ -n "${!name:-}" ] && echo "${pair%%:*}=${!name}"
  done
  while IFS='=' read -r name value; do
    key="${name#CONNECT_}"
    key="${key,,}"
    echo "${key//_/.}=$value"
  done < <(env | grep '^CONNECT_' | sort)
} > "$config"
: "${BOOTSTRAP_SERVERS:?BOOTSTRAP_SERVERS is not set}"
# shellcheck disable=SC2086 # the heap options are a word list
exec java ${HEAP_OPTS:--Xmx512m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:G1PeriodicGCInterval=30000 \
  -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true ${KAFKA_OPTS:-} \
  -Dlog4j2.configurationFile=/kafka/config/log4j2.properties -cp '/kafka/libs/*' \
  org.apache.kafka.connect.cli.ConnectDistributed "$config"
