#!/bin/bash
# kafka-topics.sh as the apache/kafka image has it (Kafka's TopicCommand), with KAFKA_HEAP_OPTS.
# shellcheck disable=SC2086 # the heap options are a word list
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties \
  -cp '/opt/kafka/libs/*' org.apache.kafka.tools.TopicCommand "$@"
