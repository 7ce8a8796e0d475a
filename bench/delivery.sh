#!/usr/bin/env bash
# Delivery as fast as the engine (issue 33): times `icecdc changes >
# /dev/null` against `icecdc run --once` into the file sink (debezium-json
# and debezium-connect-json) and, with a real broker, into Kafka
# (debezium-json, debezium-connect-json, debezium-avro), on one bulk
# table: one deletion vector removing N of 2N rows (N = ICECDC_BENCH_BULK,
# default 1,000,000). CPU is user + sys from GNU time; every command runs
# under nice; each row is the median of ROUNDS rounds (default 2), and
# the CPU ratio is taken to `changes` of the same binary in the same
# round, so that a shared machine's drift moves both sides.
#
#   bash bench/delivery.sh                          # this tree, built here
#   bash bench/delivery.sh ./icecdc-before ./icecdc-after   # interleaved, same run
#   ROUNDS=3 ICECDC_BENCH_BULK=200000 bash bench/delivery.sh  # more rounds, a smaller table
#
# Kafka rows need a real broker: KAFKA=host:port (for example the broker
# interop/run.sh starts, kafka-start part), or KAFKA=start: the script
# starts an Apache Kafka broker (KRaft, one node, one partition a topic)
# itself from the jars interop/run.sh caches
# (${ICECDC_INTEROP_CACHE:-~/.cache/icecdc-interop}/jars/kafka), with java. debezium-avro also needs a
# schema registry: REGISTRY=url, else the in-memory one of bench/kfake
# (franz-go's srfake) in its own process. Without KAFKA the Kafka rows are
# skipped, and the script says so; a kfake broker is no substitute (see
# bench/run.sh for those numbers). Kafka topics are new per run
# (bench-<format>-<n>), so the broker must create topics on first use
# (auto.create.topics.enable, its default).
#
# The sinks of teams without Kafka (issue 36), debezium-json, on real
# servers: NATS=url (JetStream enabled), REDIS=url, AMQP=url (RabbitMQ), or
# SINKS=start: the script starts Debian's nats-server -js, redis-server
# and rabbitmq-server itself on free loopback ports (as interop/run.sh's
# sinks part does; apt-get install nats-server redis-server
# rabbitmq-server). Each run gets a JetStream stream of its own (file
# storage, messages kept 2 minutes), a Redis stream deleted after the run,
# and a durable RabbitMQ queue bound to the exchange and purged before the
# run (bench/amqpqueue), so every message is stored as a consumer's would
# be. SQS, SNS and Kinesis have no server here but moto, an emulator whose
# speed says nothing of AWS's: they have no row.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-2}
bulk=${ICECDC_BENCH_BULK:-1000000}
[ -x /usr/bin/time ] || { echo "delivery: /usr/bin/time (GNU time) is needed: apt-get install time" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/icecdc-delivery.XXXXXX")
kpid=
bpid=
spids=()
cleanup() {
  [ -z "$kpid" ] || kill "$kpid" 2>/dev/null || true
  for p in "${spids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
  if [ -n "$bpid" ]; then
    kill "$bpid" 2>/dev/null || true
    wait "$bpid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ $# -eq 0 ]; then
  go build -o "$tmp/icecdc" ./cmd/icecdc
  set -- "$tmp/icecdc"
fi
go build -o "$tmp/tables" ./bench/tables
echo "delivery: building the bulk table ($bulk of $((2 * bulk)) rows deleted by one vector) in $tmp" >&2
nice "$tmp/tables" -dir "$tmp/t" -files '' -rows 0 -bulk "$bulk" > "$tmp/tables.txt"
meta=$(awk '$1=="bulk" {print $2}' "$tmp/tables.txt" | sed 's|^file://||')
from=$(( $(awk '$1=="bulk" {print $3}' "$tmp/tables.txt") - 1 ))

# ICECDC_DELIVERY_FILE_FORMATS narrows the file rows (debezium-connect-json
# writes about 3.3 KB an event: 3.3 GB for a million; empty: none).
# changes-file: `changes` into a file of its own (no fsync): what writing
# the bytes costs, the floor of the file sink rows.
# start_kafka: a one-node KRaft broker from the interop stage's jars, on
# free ports; sets KAFKA.
start_kafka() {
  local cp="${ICECDC_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/icecdc-interop}/jars/kafka" dir=$tmp/kafka port cport id
  if ! command -v java > /dev/null || ! ls "$cp"/kafka_2.13-*.jar > /dev/null 2>&1; then
    echo "delivery: KAFKA=start needs java and the Kafka jars in $cp (bash interop/run.sh caches them); the Kafka rows are skipped" >&2
    KAFKA=
    return
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$dir/data"
  cat > "$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
  id=$(java -cp "$cp/*" kafka.tools.StorageTool random-uuid 2> /dev/null | tail -n 1)
  java -cp "$cp/*" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" > "$dir/format.log" 2>&1 ||
    { cat "$dir/format.log" >&2; exit 1; }
  java -Xmx512m -cp "$cp/*" kafka.Kafka "$dir/server.properties" > "$dir/broker.log" 2>&1 & bpid=$!
  for _ in $(seq 180); do
    if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
      KAFKA=127.0.0.1:$port
      sleep 2 # the broker registers with its controller after it listens
      echo "delivery: started Apache Kafka $(ls "$cp" | sed -n 's/^kafka_2.13-\(.*\)\.jar$/\1/p') (KRaft) at $KAFKA" >&2
      return
    fi
    kill -0 "$bpid" 2> /dev/null || { tail -n 20 "$dir/broker.log" >&2; exit 1; }
    sleep 0.5
  done
  echo "delivery: the Kafka broker did not listen within 90 s" >&2
  tail -n 20 "$dir/broker.log" >&2
  exit 1
}
[ "${KAFKA:-}" != start ] || start_kafka

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() {
  for _ in $(seq 240); do
    (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null && return
    sleep 0.5
  done
  echo "delivery: nothing listened on port $1 within 120 s (logs in $tmp/servers)" >&2
  exit 1
}
# start_sinks: nats-server -js, redis-server and rabbitmq-server on free
# loopback ports, their files under $tmp/servers; sets NATS, REDIS, AMQP.
start_sinks() {
  local d=$tmp/servers np rp ap dp
  for b in nats-server redis-server /usr/lib/rabbitmq/bin/rabbitmq-server; do
    command -v "$b" > /dev/null || { echo "delivery: SINKS=start needs $b (apt-get install nats-server redis-server rabbitmq-server)" >&2; exit 1; }
  done
  mkdir -p "$d/nats" "$d/redis" "$d/rabbitmq"
  np=$(freeport) rp=$(freeport) ap=$(freeport) dp=$(freeport)
  setsid nats-server -js -a 127.0.0.1 -p "$np" -sd "$d/nats" > "$d/nats.log" 2>&1 & spids+=($!)
  setsid redis-server --port "$rp" --bind 127.0.0.1 --dir "$d/redis" --save "" --appendonly no > "$d/redis.log" 2>&1 & spids+=($!)
  echo "[]." > "$d/rabbitmq/enabled_plugins"
  # The script under /usr/lib runs the node as the calling user.
  (cd "$d/rabbitmq" && exec setsid env HOME="$d/rabbitmq" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$ap" \
    RABBITMQ_DIST_PORT="$dp" RABBITMQ_NODENAME="icecdc-bench-$ap@localhost" RABBITMQ_MNESIA_BASE="$d/rabbitmq/mnesia" \
    RABBITMQ_LOG_BASE="$d/rabbitmq/log" RABBITMQ_ENABLED_PLUGINS_FILE="$d/rabbitmq/enabled_plugins" \
    RABBITMQ_CONFIG_FILE="$d/rabbitmq/rabbitmq" RABBITMQ_ADVANCED_CONFIG_FILE="$d/rabbitmq/advanced.config" \
    /usr/lib/rabbitmq/bin/rabbitmq-server) > "$d/rabbitmq.log" 2>&1 & spids+=($!)
  waitport "$np"; waitport "$rp"; waitport "$ap"
  NATS=nats://127.0.0.1:$np REDIS=redis://127.0.0.1:$rp/0 AMQP=amqp://guest:guest@127.0.0.1:$ap/
  echo "delivery: started $(nats-server --version), $(redis-server --version | cut -d' ' -f1-3), rabbitmq-server" >&2
}
[ "${SINKS:-}" != start ] || start_sinks

paths="changes changes-file"
for f in ${ICECDC_DELIVERY_FILE_FORMATS-debezium-json debezium-connect-json}; do paths="$paths file:$f"; done
if [ -n "${KAFKA:-}" ]; then
  paths="$paths kafka:debezium-json kafka:debezium-connect-json kafka:debezium-avro"
  registry=${REGISTRY:-}
  if [ -z "$registry" ]; then
    go build -o "$tmp/kfake" ./bench/kfake
    "$tmp/kfake" -registry > "$tmp/kfake.addr" & kpid=$!
    for _ in $(seq 50); do [ "$(wc -l < "$tmp/kfake.addr")" -ge 2 ] && break; sleep 0.1; done
    registry=$(sed -n 2p "$tmp/kfake.addr")
  fi
else
  echo "delivery: KAFKA unset: the Kafka rows are skipped (they need a real broker, KAFKA=host:port)" >&2
fi
[ -z "${NATS:-}" ] || paths="$paths nats:debezium-json"
[ -z "${REDIS:-}" ] || paths="$paths redis:debezium-json"
if [ -n "${AMQP:-}" ]; then
  paths="$paths rabbitmq:debezium-json"
  go build -o "$tmp/amqpqueue" ./bench/amqpqueue
fi
[ -n "${NATS:-}${REDIS:-}${AMQP:-}" ] ||
  echo "delivery: NATS, REDIS and AMQP unset: their rows are skipped (SINKS=start starts the three servers)" >&2

# config PATH N: the run --once configuration of a path, run N.
config() {
  local kind=${1%%:*} fmt=${1#*:}
  cat <<YAML
name: bench
tables: [{name: shop.orders, metadata: "$meta", start: sequence:$from}]
format: $fmt
state: {path: "$tmp/state.db"}
http: {listen: ""}
YAML
  case $kind in
  file) echo "sink: {type: file, file: {path: \"$tmp/events.jsonl\"}}" ;;
  nats) echo "sink: {type: nats, nats: {urls: [\"$NATS\"], subject: \"bench$2.{table}\", stream: {name: BENCH$2, max_age: 2m}}}" ;;
  redis) echo "sink: {type: redis, redis: {url: \"$REDIS\", stream: \"bench:$2\"}}" ;;
  rabbitmq) echo "sink: {type: rabbitmq, rabbitmq: {url: \"$AMQP\", exchange: bench}}" ;;
  *)
    echo "sink: {type: kafka, kafka: {brokers: [\"$KAFKA\"], topic: bench-$fmt-$2}}"
    [ "$fmt" != debezium-avro ] || echo "schema_registry: {url: \"$registry\"}"
    ;;
  esac
}

# once ID PATH N BINARY: runs one path once and appends "wall cpu" to
# $tmp/ID.all.
once() {
  local id=$1 path=$2 n=$3 bin=$4
  rm -f "$tmp/events.jsonl" "$tmp/state.db"
  if [ "$path" = changes ]; then
    nice /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$bin" changes --metadata "$meta" --from-seq "$from" > /dev/null
  elif [ "$path" = changes-file ]; then
    nice /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$bin" changes --metadata "$meta" --from-seq "$from" > "$tmp/events.jsonl"
  else
    config "$path" "$n" > "$tmp/run.yaml"
    [ "${path%%:*}" != rabbitmq ] || "$tmp/amqpqueue" -url "$AMQP" -exchange bench -queue bench
    nice /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$bin" run -c "$tmp/run.yaml" --once 2> "$tmp/err" ||
      { cat "$tmp/err" >&2; exit 1; }
    if [ "${path%%:*}" = file ] && [ "$(wc -l < "$tmp/events.jsonl")" -ne "$bulk" ]; then
      echo "delivery: $bin $path wrote $(wc -l < "$tmp/events.jsonl") events, want $bulk" >&2
      exit 1
    fi
    case ${path%%:*} in
    redis) [ "$(redis-cli -u "$REDIS" XLEN "bench:$n")" -eq "$bulk" ] ||
      { echo "delivery: $bin $path: the Redis stream holds $(redis-cli -u "$REDIS" XLEN "bench:$n") entries, want $bulk" >&2; exit 1; }
      redis-cli -u "$REDIS" DEL "bench:$n" > /dev/null ;;
    rabbitmq) [ "$("$tmp/amqpqueue" -url "$AMQP" -queue bench -count)" -eq "$bulk" ] ||
      { echo "delivery: $bin $path: the queue holds $("$tmp/amqpqueue" -url "$AMQP" -queue bench -count) messages, want $bulk" >&2; exit 1; } ;;
    esac
    if [ "${path%%:*}" != file ] && ! grep -q "\"events\":$bulk" "$tmp/err"; then
      echo "delivery: $bin $path did not log delivering $bulk events:" >&2
      tail -n 5 "$tmp/err" >&2
      exit 1
    fi
  fi
  awk '{ print $1, $2 + $3 }' "$tmp/time" >> "$tmp/$id.all"
}

# median: of an even count, the mean of the middle two.
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2}'; }
idof() { echo "$1" | tr '/.:' '___'; }

for b in "$@"; do
  n=$(nice "$b" changes --metadata "$meta" --from-seq "$from" | wc -l)
  [ "$n" -eq "$bulk" ] || { echo "delivery: $b changes printed $n events, want $bulk" >&2; exit 1; }
done
run=0
for r in $(seq "$rounds"); do
  for b in "$@"; do
    for p in $paths; do
      run=$((run + 1))
      once "$(idof "$b")-$(idof "$p")" "$p" "$run" "$b"
    done
    # The ratio of this round: each path's CPU over changes'.
    base=$(tail -n 1 "$tmp/$(idof "$b")-changes.all" | cut -d' ' -f2)
    for p in $paths; do
      tail -n 1 "$tmp/$(idof "$b")-$(idof "$p").all" | awk -v c="$base" '{ print $2 / c }' >> "$tmp/$(idof "$b")-$(idof "$p").ratio"
    done
  done
  echo "delivery: round $r of $rounds done" >&2
done

echo "one commit: $bulk of $((2 * bulk)) rows deleted by one deletion vector; medians of $rounds rounds; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '| binary | path | events/s (wall) | wall s | CPU s | CPU / `changes` |'
echo '|---|---|---|---|---|---|'
for b in "$@"; do
  for p in $paths; do
    id="$(idof "$b")-$(idof "$p")"
    wall=$(cut -d' ' -f1 "$tmp/$id.all" | median)
    cpu=$(cut -d' ' -f2 "$tmp/$id.all" | median)
    ratio=$(median < "$tmp/$id.ratio")
    case $p in
    changes) label='`changes > /dev/null`' ;;
    changes-file) label='`changes > file` (debezium-json)' ;;
    file:*) label="\`run --once\`, file sink, ${p#*:}" ;;
    kafka:*) label="\`run --once\`, Kafka ($KAFKA), ${p#*:}" ;;
    nats:*) label="\`run --once\`, NATS JetStream, ${p#*:}" ;;
    redis:*) label="\`run --once\`, Redis Streams, ${p#*:}" ;;
    rabbitmq:*) label="\`run --once\`, RabbitMQ (a durable queue), ${p#*:}" ;;
    esac
    printf '| %s | %s | %.0fk | %.2f | %.2f | %.2f× |\n' "$(basename "$b")" "$label" \
      "$(awk -v n="$bulk" -v w="$wall" 'BEGIN { print n / w / 1000 }')" "$wall" "$cpu" "$ratio"
  done
done
[ -n "${KAFKA:-}" ] || echo "(Kafka rows skipped: KAFKA unset; they need a real broker)"
