#!/usr/bin/env bash
# A Docker engine of the project's own, for hosts that have none (issue 19): start | stop | status | env.
#
#   start   only when `docker info` finds no engine: installs Debian's docker.io (dockerd 20.10, containerd,
#           runc, iptables) and docker-registry (the registry tests/lab/test_image_push.py pushes to) if dockerd is
#           missing, records the host's network state, then starts dockerd in the background with its data root,
#           exec root, pid file and socket under <state>/docker.
#   stop    stops that dockerd (its own pid, from its pid file; never by name), then undoes what it changed:
#           the iptables rules and chains added since start (DOCKER, DOCKER-USER, DOCKER-ISOLATION-*, the
#           MASQUERADE rules), the FORWARD policy, the bridges it made (docker0, br-*), ip_forward.
#   status  whether our engine runs, and what is recorded.
#   env     the lines that point a shell at it, when it runs: eval "$(lakehouse engine env)".
#
# <state> is the project's state root (LAKEHOUSE_STATE_DIR, else lakehouse_platform.paths.state_root()). Clients reach the
# engine with DOCKER_HOST=unix://<state>/docker/docker.sock. Builds use the classic builder (DOCKER_BUILDKIT=0):
# the 28.x client's BuildKit needs the buildx plugin, which Debian's packages do not provide, and the project's
# build driver (lakehouse lab images) talks to the engine's build API, which is the classic builder.
set -euo pipefail
# What the package sits in (site-packages, or a checkout): this script is lakehouse_platform/lab/scripts/.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
state="$(PYTHONPATH="$root" python3 -c 'from lakehouse_platform.paths import state_root; print(state_root())')"
dir="$state/docker"
sock="$dir/docker.sock"
pidfile="$dir/docker.pid"
record="$dir/before"
log="$dir/dockerd.log"
host="unix://$sock"

say() { echo "==> docker-engine: $*" >&2; }

our_pid() {
  # The pid in our pid file, when that process is alive and is a dockerd (a recycled pid is not ours).
  [ -f "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile")"
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "dockerd" ] || return 1
  echo "$pid"
}

answers() { DOCKER_HOST="$1" timeout 10 docker info >/dev/null 2>&1; }

tables() { command -v iptables-save >/dev/null && echo iptables; command -v ip6tables-save >/dev/null && echo ip6tables; true; }

bridges() { ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | sort || true; }

record_host() {
  # What dockerd is about to change, as it is now (replaced at every start: stop restores the last start's).
  rm -rf "$record"
  mkdir -p "$record"
  cat /proc/sys/net/ipv4/ip_forward > "$record/ip_forward"
  bridges > "$record/bridges"
  local t table
  for t in $(tables); do
    for table in filter nat; do
      "$t-save" -t "$table" > "$record/$t-$table.rules" 2>/dev/null || true
    done
  done
  say "recorded the host's network state in $record (ip_forward=$(cat "$record/ip_forward"), bridges: $(tr '\n' ' ' < "$record/bridges"))"
}

restore_host() {
  [ -d "$record" ] || { say "nothing recorded ($record missing): nothing to restore"; return 0; }
  local t table line now
  for t in $(tables); do
    for table in filter nat; do
      [ -f "$record/$t-$table.rules" ] || continue
      now="$("$t-save" -t "$table" 2>/dev/null || true)"
      # 1. rules added since start, in the chains that existed before (FORWARD -j DOCKER-USER, MASQUERADE, ...)
      #    and in new chains alike: delete each exactly as it was added.
      grep '^-A ' <<<"$now" | grep -vxF -f <(grep '^-A ' "$record/$t-$table.rules" || true) | while read -r line; do
        # shellcheck disable=SC2086 # the saved rule is a word list, as iptables-save writes it
        eval "$t -t $table -D ${line#-A }" 2>/dev/null || say "$t -t $table: could not delete: $line"
      done || true
      # 2. chains added since start: flush (rules left by others) and delete.
      grep '^:' <<<"$now" | cut -d' ' -f1 | cut -c2- | while read -r chain; do
        if ! grep -q "^:$chain " "$record/$t-$table.rules"; then
          "$t" -t "$table" -F "$chain" 2>/dev/null || true
          "$t" -t "$table" -X "$chain" 2>/dev/null || say "$t -t $table: could not delete chain $chain"
        fi
      done || true
      # 3. built-in chains' policies (dockerd sets FORWARD to DROP when it turns forwarding on).
      grep '^:' "$record/$t-$table.rules" | while read -r chain policy _; do
        chain="${chain#:}"
        [ "$policy" = "-" ] || "$t" -t "$table" -P "$chain" "$policy" 2>/dev/null || true
      done || true
    done
  done
  # The bridges it made (docker0, one br-<id> per user-defined network).
  for bridge in $(comm -13 "$record/bridges" <(bridges)); do
    ip link delete "$bridge" type bridge && say "deleted bridge $bridge"
  done
  echo "$(cat "$record/ip_forward")" > /proc/sys/net/ipv4/ip_forward
  say "restored: ip_forward=$(cat /proc/sys/net/ipv4/ip_forward), iptables rules and chains as recorded, bridges: $(bridges | tr '\n' ' ')"
}

install_engine() {
  command -v dockerd >/dev/null && return 0
  say "no dockerd: installing Debian's docker.io (dockerd, containerd, runc, iptables), --no-install-recommends"
  [ "$(id -u)" = 0 ] || { say "installing packages needs root"; exit 1; }
  # Debian's packages would start their services; a policy-rc.d that refuses keeps them stopped (ours runs).
  local policy=/usr/sbin/policy-rc.d made_policy=""
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; made_policy=1; fi
  # docker-registry: a local registry the lab tests push the cloud's operations image to (never started here).
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io docker-registry >&2 || {
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io docker-registry >&2
  }
  [ -z "$made_policy" ] || rm -f "$policy"
}

start() {
  if pid="$(our_pid)" && answers "$host"; then
    say "already running (pid $pid): $host"
    return 0
  fi
  if answers "${DOCKER_HOST:-unix:///var/run/docker.sock}"; then
    say "an engine already answers at ${DOCKER_HOST:-unix:///var/run/docker.sock}: using it, starting none"
    return 0
  fi
  install_engine
  [ "$(id -u)" = 0 ] || { say "dockerd needs root"; exit 1; }
  mkdir -p "$dir/data" "$dir/exec"
  record_host
  say "starting dockerd (data $dir/data, socket $sock, log $log)"
  # --group root: the socket stays root's (no docker group is assumed). Its own containerd (dockerd starts
  # one as its child, under the exec root), not the package's service.
  setsid dockerd --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$pidfile" -H "$host" \
    --group root --storage-driver overlay2 --log-level warn >"$log" 2>&1 < /dev/null &
  local started=$SECONDS
  until answers "$host"; do
    if (( SECONDS - started > 60 )); then
      say "dockerd did not answer within 60 s; its log ($log):"
      tail -n 30 "$log" >&2
      exit 1
    fi
    sleep 0.5
  done
  say "ready in $(( SECONDS - started )) s (pid $(cat "$pidfile")): $host"
  env_lines >&2
}

stop() {
  local pid
  if pid="$(our_pid)"; then
    say "stopping dockerd (pid $pid)"
    kill -TERM "$pid"
    local started=$SECONDS
    while [ -d "/proc/$pid" ]; do
      if (( SECONDS - started > 60 )); then say "dockerd (pid $pid) still running after 60 s: KILL"; kill -KILL "$pid"; fi
      sleep 0.5
    done
    say "dockerd stopped after $(( SECONDS - started )) s"
  else
    say "our dockerd is not running"
  fi
  rm -f "$pidfile"
  restore_host
  if grep -q " $dir/" /proc/mounts; then say "mounts left under $dir:"; grep " $dir/" /proc/mounts >&2; fi
}

status() {
  local pid
  if pid="$(our_pid)"; then
    echo "running: pid $pid, $host$(answers "$host" && echo ", answering" || echo ", not answering")"
  else
    echo "not running (state $dir)"
  fi
  [ -d "$record" ] && echo "recorded before start: ip_forward=$(cat "$record/ip_forward"), bridges: $(tr '\n' ' ' < "$record/bridges")"
  echo "now: ip_forward=$(cat /proc/sys/net/ipv4/ip_forward), bridges: $(bridges | tr '\n' ' ')"
}

env_lines() {
  # Only our own engine is pointed at: where `start` found another answering, DOCKER_HOST stays as it is.
  if our_pid >/dev/null; then
    echo "export DOCKER_HOST=$host"
    echo "export DOCKER_BUILDKIT=0"
    echo "# point a shell at it: eval \"\$(lakehouse engine env)\""
  else
    echo "# no engine of the project's runs: DOCKER_HOST stays ${DOCKER_HOST:-unset (the default socket)}"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) env_lines ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
