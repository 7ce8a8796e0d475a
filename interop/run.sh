#!/usr/bin/env bash
# The interop stage (issue #4): real Spark/Iceberg-Java tables, a real Kafka
# broker, an independent consumer. .ci/run calls it after the Go tests.
#
#   bash interop/run.sh                 everything
#   ICECDC_INTEROP=skip bash interop/run.sh   skip it locally (never under CI=true)
#   ICECDC_INTEROP_ONLY="bookshop merge"      run only these Spark scenarios
#   ICECDC_INTEROP_KEEP=1                     keep the work directory after success
#   ICECDC_INTEROP_CACHE=DIR                  where downloads are kept (default ~/.cache/icecdc-interop)
#
# It installs what it needs (PyPI, Maven Central, apt) into a cache that
# survives runs and clones (default ~/.cache/icecdc-interop), then:
#   1. Spark 4.1 + Iceberg 1.11 write the scenario tables (interop/scenarios.py)
#      in a JDBC/SQLite catalog and, for one scenario, through the Iceberg REST
#      catalog server; icecdc's `changes` output for every snapshot must equal
#      the events Spark's own reads imply (interop/oracle.py); PyIceberg must
#      agree on every snapshot's row count;
#   2. an Apache Kafka 4 broker (KRaft) starts from Maven Central jars; kcat
#      produces and consumes through it;
#   3. kafka e2e: `icecdc run` streams the tables to the broker with
#      exactly-once delivery, is SIGKILLed and restarted, and a read_committed
#      kcat consumer must see every event exactly once, in order.
# Exit status: 0 only when every part passed.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
CACHE=${ICECDC_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/icecdc-interop}
START=$(date +%s)

if [ "${ICECDC_INTEROP:-}" = skip ]; then
  if [ "${CI:-}" = true ]; then
    echo "interop: ICECDC_INTEROP=skip is ignored because CI=true: the stage runs"
  else
    echo "interop: skipped (ICECDC_INTEROP=skip); CI runs it"
    exit 0
  fi
fi

if [ -n "${ICECDC_INTEROP_ONLY:-}" ] && [ "${CI:-}" = true ]; then
  echo "interop: ICECDC_INTEROP_ONLY is ignored because CI=true: every scenario runs"
  ICECDC_INTEROP_ONLY=
fi

mkdir -p "$CACHE"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/icecdc-interop.XXXXXX")
LOGS=$WORK/logs
mkdir -p "$LOGS"
echo "interop: work directory $WORK, cache $CACHE"

PY=$CACHE/venv/bin/python
export PYTHONDONTWRITEBYTECODE=1
BIN=$WORK/bin/icecdc
PASSED=() FAILED=() SKIPPED=() TIMES=()
PIDS=()

# ---------------------------------------------------------------- helpers

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# must LOG CMD...: runs CMD with its output in $LOGS/LOG; on failure says
# exactly which command failed, with the end of its output.
must() {
  local log=$LOGS/$1.log
  shift
  echo "+ $*" >>"$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "interop: command failed (exit $rc): $*"
    tail -n 25 "$log" | sed 's/^/    /'
  fi
  return $rc
}

# part NAME FUNCTION: runs one part, timed, and records its outcome.
part() {
  local name=$1 fn=$2 t0 rc
  t0=$(now)
  echo "== interop: $name"
  "$fn"
  rc=$?
  TIMES+=("$(printf '%-22s %6ss' "$name" "$(elapsed "$t0")")")
  case $rc in
    0) PASSED+=("$name") ;;
    3) SKIPPED+=("$name") ;;
    *) FAILED+=("$name"); echo "interop: $name FAILED" ;;
  esac
  return $rc
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT SECONDS PID: waits until 127.0.0.1:PORT accepts connections.
wait_port() {
  local port=$1 secs=$2 pid=$3 i
  for ((i = 0; i < secs * 5; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "interop: process $pid exited before port $port opened"
      return 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "interop: port $port did not open within ${secs}s"
  return 1
}

stop_pid() {
  local pid=$1 i
  kill "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -9 "$pid" 2>/dev/null
}

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
}
trap cleanup EXIT

# ---------------------------------------------------------------- install

install_python() {
  if [ ! -x "$PY" ] || ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    rm -rf "$CACHE/venv"
    must install-python python3 -m venv "$CACHE/venv" || return 1
  fi
  must install-python "$PY" -m pip install --disable-pip-version-check -q -r "$HERE/requirements.txt" || return 1
  "$PY" -c 'import pyspark, pyiceberg, pyarrow; print("pyspark", pyspark.__version__, "pyiceberg", pyiceberg.__version__, "pyarrow", pyarrow.__version__)'
}

install_jars() {
  if ! command -v mvn >/dev/null; then
    must install-jars apt-get update || return 1
    must install-jars apt-get install -y maven || return 1
  fi
  local what
  for what in kafka rest; do
    rm -rf "$CACHE/jars/$what"
    must install-jars mvn -B -q -f "$HERE/maven/$what/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$CACHE/jars/$what" || return 1
    echo "$what: $(ls "$CACHE/jars/$what" | wc -l) jars, $(du -sh "$CACHE/jars/$what" | cut -f1)"
  done
}

install_kcat() {
  if ! command -v kcat >/dev/null; then
    must install-kcat apt-get update || return 1
    must install-kcat apt-get install -y kcat || return 1
  fi
  kcat -V | grep -i "^version" || kcat -V | head -n 1
}

build_icecdc() {
  must build-icecdc go build -o "$BIN" "$ROOT/cmd/icecdc"
}

# Sourced (interop/generate_testdata.sh): the helpers and install functions
# above are all it takes; nothing below runs.
[ "${BASH_SOURCE[0]}" != "$0" ] && return 0

# ---------------------------------------------------------------- REST catalog

REST_URI=
start_rest() {
  local port pid
  port=$(free_port)
  mkdir -p "$WORK/rest/wh"
  (
    cd "$WORK/rest" || exit 1
    exec env CATALOG_URI="jdbc:sqlite:$WORK/rest/catalog.db" CATALOG_WAREHOUSE="file:$WORK/rest/wh" \
      CATALOG_REST_PORT="$port" CATALOG_JDBC_SCHEMA__VERSION=V1 \
      java -Xmx512m -cp "$CACHE/jars/rest/*" org.apache.iceberg.rest.RESTCatalogServer
  ) >"$LOGS/rest-server.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  if ! wait_port "$port" 60 "$pid"; then
    echo "interop: command failed: java -cp '$CACHE/jars/rest/*' org.apache.iceberg.rest.RESTCatalogServer"
    tail -n 25 "$LOGS/rest-server.log" | sed 's/^/    /'
    return 1
  fi
  REST_URI=http://127.0.0.1:$port
  echo "Iceberg REST catalog server at $REST_URI (pid $pid)"
}

# ---------------------------------------------------------------- Spark scenarios

spark_scenarios() {
  local args=(--work "$WORK/spark" --ivy "$CACHE/ivy" --icecdc "$BIN" --facts "$WORK/facts.txt")
  [ -n "$REST_URI" ] && args+=(--rest-uri "$REST_URI")
  # shellcheck disable=SC2206
  [ -n "${ICECDC_INTEROP_ONLY:-}" ] && args+=(--only ${ICECDC_INTEROP_ONLY})
  (cd "$HERE" && "$PY" run_scenarios.py "${args[@]}") 2>"$LOGS/spark.stderr" | tee "$LOGS/scenarios.out"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ] && ! grep -q '^scenarios:' "$LOGS/scenarios.out"; then
    echo "interop: command failed (exit $rc): $PY interop/run_scenarios.py ${args[*]}"
    tail -n 40 "$LOGS/spark.stderr" | sed 's/^/    /'
  fi
  return "$rc"
}

# ---------------------------------------------------------------- Kafka

KAFKA=
KAFKA_PID=
kafka_start() {
  local dir=$WORK/kafka port cport id cp="$CACHE/jars/kafka/*"
  port=$(free_port)
  cport=$(free_port)
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<EOF
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
share.coordinator.state.topic.replication.factor=1
group.initial.rebalance.delay.ms=0
EOF
  cat >"$dir/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$LOGS/kafka-broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
EOF
  id=$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-format.log" | tail -n 1)
  must kafka-format java -cp "$cp" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" || return 1
  java -Xmx512m -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$cp" kafka.Kafka "$dir/server.properties" \
    >"$LOGS/kafka-stdout.log" 2>&1 &
  KAFKA_PID=$!
  PIDS+=("$KAFKA_PID")
  if ! wait_port "$port" 90 "$KAFKA_PID"; then
    echo "interop: command failed: java -cp '$cp' kafka.Kafka $dir/server.properties"
    tail -n 25 "$LOGS/kafka-stdout.log" "$LOGS/kafka-broker.log" 2>/dev/null | sed 's/^/    /'
    return 1
  fi
  KAFKA=127.0.0.1:$port
  must kafka-format kcat -b "$KAFKA" -L -m 30 || return 1
  echo "Kafka $(ls "$CACHE/jars/kafka" | sed -n 's/^kafka_2.13-\(.*\)\.jar$/\1/p') (KRaft, cluster $id) at $KAFKA (pid $KAFKA_PID)"
}

kafka_stop() {
  [ -n "$KAFKA_PID" ] && stop_pid "$KAFKA_PID"
  KAFKA_PID=
}

# kcat produces three keyed records with a header, and consumes them back
# with read_committed.
kafka_smoke() {
  [ -n "$KAFKA" ] || { echo "kafka smoke: no broker"; return 1; }
  local i got want=$'k1=v1 id=1\nk2=v2 id=2\nk3=v3 id=3'
  for i in 1 2 3; do
    echo "k$i=v$i" | must kafka-smoke kcat -b "$KAFKA" -P -t interop.smoke -K = -H "id=$i" || return 1
  done
  got=$(kcat -b "$KAFKA" -C -t interop.smoke -o beginning -e -q -X isolation.level=read_committed \
    -f '%k=%s %h\n' 2>>"$LOGS/kafka-smoke.log")
  if [ "$got" != "$want" ]; then
    echo "kafka smoke: kcat read back:"
    printf '%s\n' "$got" | sed 's/^/    /'
    echo "  want:"
    printf '%s\n' "$want" | sed 's/^/    /'
    return 1
  fi
  echo "kafka smoke: kcat produced 3 records and read them back (read_committed): keys, values, headers intact"
}

# ----------------------------------------------------------------------------
# HOOK: the daemon test. `icecdc run` streams the Spark tables to the broker
# with exactly-once delivery, is SIGKILLed mid-stream and restarted; kcat
# (read_committed) must then see every event of `icecdc changes` exactly
# once, in commit order (interop/kafka_e2e.py). Skipped, with a message,
# only while `icecdc run` does not exist.
kafka_e2e() {
  if ! (cd "$ROOT" && go run ./cmd/icecdc run -h) >"$LOGS/kafka-e2e-probe.log" 2>&1; then
    echo "kafka e2e: skipped (icecdc run not built yet)"
    return 3
  fi
  if [ -n "${ICECDC_INTEROP_ONLY:-}" ] && [[ " $ICECDC_INTEROP_ONLY " != *" bulk "* ]]; then
    echo "kafka e2e: skipped (ICECDC_INTEROP_ONLY leaves out the bulk table it interrupts)"
    return 3
  fi
  [ -n "$KAFKA" ] || { echo "kafka e2e: no broker"; return 1; }
  [ -f "$WORK/spark/catalog.db" ] || { echo "kafka e2e: no Spark tables to stream"; return 1; }
  (cd "$HERE" && "$PY" kafka_e2e.py --icecdc "$BIN" --brokers "$KAFKA" --work "$WORK/kafka-e2e" \
    --catalog-db "$WORK/spark/catalog.db" --warehouse "$WORK/spark/wh") 2>"$LOGS/kafka-e2e.stderr"
  local rc=$?
  [ $rc -ne 0 ] && tail -n 20 "$LOGS/kafka-e2e.stderr" | sed 's/^/    /'
  return $rc
}

# ---------------------------------------------------------------- main

part install-python install_python
PY_OK=$?
part install-jars install_jars
JARS_OK=$?
part install-kcat install_kcat
KCAT_OK=$?
part build-icecdc build_icecdc
GO_OK=$?

if [ $JARS_OK -eq 0 ]; then
  part rest-catalog start_rest
else
  echo "interop: rest-catalog not started: its jars did not install"
  FAILED+=(rest-catalog)
fi

if [ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ]; then
  part spark-scenarios spark_scenarios
else
  echo "interop: spark-scenarios not run: Python packages or the icecdc build are missing (see above)"
  FAILED+=(spark-scenarios)
fi

if [ $JARS_OK -eq 0 ] && [ $KCAT_OK -eq 0 ]; then
  part kafka-start kafka_start
  part kafka-smoke kafka_smoke
  part kafka-e2e kafka_e2e
  kafka_stop
else
  echo "interop: kafka parts not run: the broker's jars or kcat are missing (see above)"
  FAILED+=(kafka)
fi

if [ -s "$WORK/facts.txt" ]; then
  echo "== interop: what Spark/Iceberg Java wrote, per snapshot (+ added, - removed; dseq = data sequence number)"
  cat "$WORK/facts.txt"
fi
echo "== interop: timings"
printf '  %s\n' "${TIMES[@]}"
grep '^timing:\|^  timing:\|^scenario ' "$LOGS/scenarios.out" 2>/dev/null | sed 's/^ *//; s/^/  /'
echo "  total                  $(($(date +%s) - START))s"
[ ${#SKIPPED[@]} -gt 0 ] && echo "interop: skipped: ${SKIPPED[*]}"
[ ${#FAILED[@]} -gt 0 ] && echo "interop: failed: ${FAILED[*]} (logs in $LOGS)"
if [ ${#FAILED[@]} -eq 0 ] && [ "${ICECDC_INTEROP_KEEP:-}" != 1 ]; then
  cleanup
  PIDS=()
  rm -rf "$WORK"
fi
echo "interop: ${#PASSED[@]} passed, ${#FAILED[@]} failed, ${#SKIPPED[@]} skipped"
[ ${#FAILED[@]} -eq 0 ]
