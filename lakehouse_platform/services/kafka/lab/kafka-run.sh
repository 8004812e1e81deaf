#!/bin/bash
# The lab's Kafka broker: server.properties from the KAFKA_* variables (apache/kafka's mapping), storage
# formatted with CLUSTER_ID once, then one exec'd JVM (kafka.Kafka), as the native target runs it.
set -euo pipefail
config=/opt/kafka/config/server.properties
: > "$config"
skip=" KAFKA_HEAP_OPTS KAFKA_OPTS KAFKA_JVM_PERFORMANCE_OPTS KAFKA_GC_LOG_OPTS KAFKA_LOG4J_OPTS KAFKA_JMX_OPTS KAFKA_VERSION "
while IFS='=' read -r name value; do
  case "$skip" in *" $name "*) continue ;; esac
  key="${name#KAFKA_}"
  key="${key//___/-}"; key="${key//__/@}"; key="${key//_/.}"; key="${key//@/_}"
  printf '%s=%s\n' "${key,,}" "$value" >> "$config"
done < <(env | grep '^KAFKA_' | sort)
: "${CLUSTER_ID:?CLUSTER_ID is not set: the storage cannot be formatted}"
log="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
java -Xmx256m "$log" -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
  --cluster-id "$CLUSTER_ID" --config "$config"
# shellcheck disable=SC2086 # the heap options are a word list
exec java ${KAFKA_HEAP_OPTS:--Xmx512m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
  -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true ${KAFKA_OPTS:-} "$log" \
  -cp '/opt/kafka/libs/*' kafka.Kafka "$config"
