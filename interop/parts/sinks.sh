# shellcheck shell=bash
# The sinks part (issue 36), sourced by interop/run.sh (functions only).
#
# Debian's nats-server (with -js), redis-server and rabbitmq-server,
# installed with apt-get when missing, each started on a free loopback
# port with its files under $WORK/sinks. First the Go tests of
# sinks/nats, sinks/redis and sinks/rabbitmq run with
# ICECDC_REQUIRE_SINK_SERVERS=1 (their own servers: nats-server's Go
# module in process, redis-server and rabbitmq-server started by
# TestMain; a missing binary fails instead of skipping). Then
# interop/sinks_e2e.py has `icecdc run` deliver the demo table's history
# to each server, SIGKILLs it after its first deliveries, commits while
# it is down, restarts it and commits once more live, then stops the server
# (SIGSTOP) for ICECDC_SINKS_OUTAGE seconds (60) while the table takes two
# commits, and lets it answer again; nats-py, redis and
# pika read every event back and compare with `icecdc changes`: one line
# per sink (events, kills, the outage, lost, duplicated, order per key).
#
#   sinks_install   apt-get install of the three servers when missing
#   sinks_start     the three servers in the background
#   sinks_stop
#   sinks_run       the whole part; alone:
#     bash -c '. interop/run.sh && sinks_run'
SINKS_DIR= SINKS_NATS= SINKS_REDIS= SINKS_AMQP= SINKS_PIDS=()

sinks_install() {
  local missing=()
  command -v nats-server >/dev/null || missing+=(nats-server)
  command -v redis-server >/dev/null || missing+=(redis-server)
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || missing+=(rabbitmq-server)
  if [ ${#missing[@]} -gt 0 ]; then
    must install-sinks apt-get update || return 1
    must install-sinks apt-get install -y "${missing[@]}" || return 1
  fi
  echo "sinks: $(nats-server --version), $(redis-server --version | cut -d' ' -f1-3)," \
    "rabbitmq-server $(dpkg-query -W -f='${Version}' rabbitmq-server 2>/dev/null)"
}

# sinks_start: the servers, on free loopback ports; RabbitMQ from the
# script under /usr/lib, which runs the node as the calling user (the one
# in /usr/sbin switches to the rabbitmq user, who may not write $WORK).
sinks_start() {
  local np rp ap dp d
  SINKS_DIR=$WORK/sinks
  d=$SINKS_DIR
  mkdir -p "$d/nats" "$d/redis" "$d/rabbitmq"
  np=$(free_port) rp=$(free_port) ap=$(free_port) dp=$(free_port)
  nats-server -js -a 127.0.0.1 -p "$np" -sd "$d/nats" >"$LOGS/sinks-nats-server.log" 2>&1 &
  SINKS_PIDS+=($!) PIDS+=($!)
  redis-server --port "$rp" --bind 127.0.0.1 --dir "$d/redis" --save "" --appendonly no \
    >"$LOGS/sinks-redis-server.log" 2>&1 &
  SINKS_PIDS+=($!) PIDS+=($!)
  echo "[]." >"$d/rabbitmq/enabled_plugins"
  (cd "$d/rabbitmq" && exec setsid env HOME="$d/rabbitmq" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$ap" \
    RABBITMQ_DIST_PORT="$dp" RABBITMQ_NODENAME="icecdc-interop-$ap@localhost" \
    RABBITMQ_MNESIA_BASE="$d/rabbitmq/mnesia" RABBITMQ_LOG_BASE="$d/rabbitmq/log" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$d/rabbitmq/enabled_plugins" RABBITMQ_CONFIG_FILE="$d/rabbitmq/rabbitmq" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$d/rabbitmq/advanced.config" \
    /usr/lib/rabbitmq/bin/rabbitmq-server) >"$LOGS/sinks-rabbitmq-server.log" 2>&1 &
  SINKS_PIDS+=($!) PIDS+=($!)
  echo "$!" >"$d/rabbitmq.pid"
  SINKS_NATS=nats://127.0.0.1:$np SINKS_REDIS=redis://127.0.0.1:$rp/0 SINKS_AMQP=amqp://guest:guest@127.0.0.1:$ap/
  wait_port "$np" 30 "${SINKS_PIDS[0]}" && wait_port "$rp" 30 "${SINKS_PIDS[1]}" && wait_port "$ap" 120 "${SINKS_PIDS[2]}" || {
    tail -n 15 "$LOGS"/sinks-*-server.log | sed 's/^/    /'
    return 1
  }
}

sinks_stop() {
  local pid
  for pid in "${SINKS_PIDS[@]}"; do
    # rabbitmq-server's node and Erlang helpers share its process group
    kill -TERM -- "-$pid" 2>/dev/null
    stop_pid "$pid"
  done
  SINKS_PIDS=()
}

sinks_run() {
  local t0 rc=0
  t0=$(now)
  sinks_install || return 1
  [ -x "$BIN" ] || build_icecdc || return 1
  (cd "$ROOT" && ICECDC_REQUIRE_SINK_SERVERS=1 must sinks-go-tests go test -count=1 ./sinks/nats/ ./sinks/redis/ ./sinks/rabbitmq/) || return 1
  grep -E '^(ok|FAIL)' "$LOGS/sinks-go-tests.log" | sed 's/^/  /'
  echo "sinks: go tests $(elapsed "$t0")s"
  sinks_start || { sinks_stop; return 1; }
  mkdir -p "$SINKS_DIR/e2e"
  (cd "$HERE" && "$PY" sinks_e2e.py --icecdc "$BIN" --work "$SINKS_DIR/e2e" --nats "$SINKS_NATS" --redis "$SINKS_REDIS" \
    --amqp "$SINKS_AMQP" --outage "${ICECDC_SINKS_OUTAGE:-60}" --nats-pid "${SINKS_PIDS[0]}" --redis-pid "${SINKS_PIDS[1]}" \
    --amqp-pgid "${SINKS_PIDS[2]}") 2>&1 | tee "$LOGS/sinks-e2e.log" | grep -v '^$'
  rc=${PIPESTATUS[0]}
  sinks_stop
  echo "sinks: part took $(elapsed "$t0")s"
  return "$rc"
}
