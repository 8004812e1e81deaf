#!/bin/bash
# The lab's Flink entrypoint: `jobmanager` or `taskmanager`, configured by FLINK_PROPERTIES (key: value lines),
# started as the native target starts it (lakehouse_platform/targets/native/bash_java_utils.py): BashJavaUtils computes the
# JVM's memory flags from the configuration, then the JVM is exec'd (one process). Anything else is exec'd.
set -euo pipefail
role="${1:-help}"
case "$role" in
  jobmanager) params=GET_JM_RESOURCE_PARAMS; main=org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint
              extra=(--executionMode cluster) ;;
  taskmanager) params=GET_TM_RESOURCE_PARAMS; main=org.apache.flink.runtime.taskexecutor.TaskManagerRunner; extra=() ;;
  *) exec "$@" ;;
esac
conf=/opt/flink/conf
printf '%s\n' "${FLINK_PROPERTIES:-}" > "$conf/config.yaml"
cp /opt/flink/log4j-console.properties "$conf/"
classpath="$(paste -sd: /opt/flink/classpath)"
utils="/opt/flink/bin/bash-java-utils.jar:$classpath"
out="$(java -Xmx64m -cp "$utils" org.apache.flink.runtime.util.bash.BashJavaUtils "$params" --configDir "$conf")" || {
  echo "flink entrypoint: BashJavaUtils $params failed:" >&2; echo "$out" >&2; exit 1; }
results="$(grep '^BASH_JAVA_UTILS_EXEC_RESULT:' <<<"$out" | cut -d: -f2- | tail -n 2)"
jvm="$(head -n 1 <<<"$results")"
dynamic="$(tail -n 1 <<<"$results")"
echo "flink entrypoint: $role, memory flags $jvm"
opts=()
for m in java.base/sun.net.util java.rmi/sun.rmi.registry jdk.compiler/com.sun.tools.javac.api \
         jdk.compiler/com.sun.tools.javac.file jdk.compiler/com.sun.tools.javac.parser \
         jdk.compiler/com.sun.tools.javac.tree jdk.compiler/com.sun.tools.javac.util java.security.jgss/sun.security.krb5; do
  opts+=("--add-exports=$m=ALL-UNNAMED")
done
for p in java.lang java.net java.io java.nio sun.nio.ch java.lang.reflect java.text java.time java.util \
         java.util.concurrent java.util.concurrent.atomic java.util.concurrent.locks; do
  opts+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
# shellcheck disable=SC2086 # BashJavaUtils' results are word lists
exec java -XX:+IgnoreUnrecognizedVMOptions -XX:+ExitOnOutOfMemoryError "${opts[@]}" \
  "-Dlog4j.configurationFile=file:$conf/log4j-console.properties" $jvm -classpath "$classpath" "$main" \
  --configDir "$conf" "${extra[@]}" $dynamic
