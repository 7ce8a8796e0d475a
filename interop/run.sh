#!/usr/bin/env bash
# The interop stage (issue #4): real Spark/Iceberg-Java tables, a real Kafka
# broker, an independent consumer. .ci/run calls it after the Go tests.
#
#   bash interop/run.sh                 everything
#   ICECDC_INTEROP=skip bash interop/run.sh   skip it locally (never under CI=true)
#   ICECDC_INTEROP_ONLY="bookshop merge"      run only these Spark scenarios ("flink": the Flink tables, "retention": the hold part)
#   ICECDC_INTEROP_PARTS="avro"               run only these parts (names as in the timings: avro, connect-sink,
#                                             v3-pg, unwrap, kafka-e2e, ...), with the installs, the broker, the
#                                             Spark scenarios and the servers they need; never under CI=true
#   ICECDC_INTEROP_KEEP=1                     keep the work directory after success
#   ICECDC_INTEROP_CACHE=DIR                  where downloads are kept (default ~/.cache/icecdc-interop)
#   bash -c '. interop/run.sh && hive_run'    only the hive part (10; so are the other parts' functions)
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
#      kcat consumer must see every event exactly once, in order;
#   4. object storage (issue 8): a moto server on loopback serves S3 and Glue;
#      Spark writes a subset of the scenarios through S3FileIO into the JDBC
#      catalog, the REST catalog and Glue, all with warehouses on S3, and
#      icecdc must read them as exactly as local files; `icecdc run` with
#      examples/icecdc.compose.yaml (docker-compose's config) follows the
#      REST one into Kafka, and a file-sink `icecdc run` reads the JDBC ones;
#   5. Flink upserts (issue 12): PyFlink 2.0 with Iceberg's Flink runtime
#      writes two v3 tables in upsert mode (equality deletes; one keyed on one
#      field, one partitioned and keyed on two) in a job per commit, in the
#      background while the parts above run (interop/flink_upserts.py); Spark
#      reads every snapshot as the oracle and icecdc's events must match.
#   6. retention hold (issue 12), on the Spark session of 1 and alongside
#      it: `icecdc run` with `hold: true` keeps the commits it has seen but
#      not delivered (its sink failing) through Spark's expire_snapshots
#      and delivers them exactly once restarted; without the hold the
#      table stops with the history-loss error; `icecdc reset` removes the
#      branch (interop/retention.py).
#   7. GCS and Azure: fake-gcs-server (Go module proxy) and Azurite's blob
#      service (npm) on loopback; iceberg-go writes the bookshop story there
#      and `go test ./cmd/icecdc -run 'TestAzurite|TestFakeGCS'` reads it with
#      `icecdc changes` and `icecdc run` and breaks the stores. It needs no
#      Spark and runs in the background beside the other parts.
#   8. connect sink (issue 10): Kafka Connect 4 (standalone) runs Debezium's
#      JDBC sink connector against the broker into PostgreSQL (Debian's, a
#      private cluster on loopback); icecdc streams the local Spark tables
#      in Connect JSON, keyed by _row_id and by identifier columns, and a
#      replayed copy; every PostgreSQL table must equal Spark's rows at the
#      head, and so must a second consumer (interop/connect_sink.py).
#   9. cluster (issue 11): three `icecdc run` members in cluster mode share
#      twelve iceberg-go tables committed to all the time (interop/
#      clusterwriter), exactly-once, through two SIGKILLs and a rolling
#      restart; kcat (read_committed) must read every event of `icecdc
#      changes` exactly once, in order; it prints the takeover times
#      (interop/cluster_e2e.py). It runs while Spark writes its tables.
#  10. hive: Hive's standalone metastore 3.1.3 on embedded Derby (Maven
#      Central jars, interop/maven/hive; schema loaded with Derby's ij) on
#      loopback; `go test ./cmd/icecdc -run '^TestHiveMetastore$'` writes
#      the bookshop story through iceberg-go's hive catalog and reads it
#      with `icecdc changes` and `icecdc run` (retention hold included), and
#      `go test ./source -run '^TestHiveCatalogChecksChangesInBulk$'` counts
#      the Thrift calls of the change checks of 150 idle tables. In
#      the background from the end of install-jars on. Alone:
#        bash -c '. interop/run.sh && hive_run'
#  11. cluster-churn (issue 18): `go test ./internal/daemontest -run
#      '^TestClusterChurnRealBroker$'` against the broker: 3 to 5 members,
#      exactly-once, 8 tables, 16 membership changes (SIGKILL, SIGSTOP past
#      the session timeout, SIGINT, join); every event once and in order,
#      every table caught up within the session timeout + 10s of the last
#      change, every SIGINT'd member gone within the session timeout.
#  12. avro (issue 21): format debezium-avro through Apicurio Registry,
#      Apicurio's Connect converter and the JDBC sink (interop/parts/avro.sh).
#  13. opensearch (issue 32): a real OpenSearch 2.19.6 node from Maven
#      Central jars (interop/maven/opensearch: a Node subclass loading
#      netty4, analysis-common and painless as class-path plugins), started
#      at the end of install-jars; `icecdc run` with the opensearch sink
#      follows the Spark tables into it by key and by row id, and the
#      Flink upsert tables of 5 by their identifier fields, through a
#      SIGKILL of the daemons and a restart of the node; every index must
#      equal its table's head value by value, and replays from an older
#      checkpoint and from the start change no document
#      (interop/parts/opensearch.sh, interop/opensearch_e2e.py). Alone
#      (it writes a subset of the Spark tables itself):
#        bash -c '. interop/run.sh && opensearch_run'
#  14. trino (issue 37): an embedded Trino 483 (Java 25) writes random histories into a
#      JDBC catalog on SQLite; icecdc's events must equal Trino's own
#      time-travel reads at every snapshot, by catalog and by metadata file
#      (interop/parts/trino.sh, interop/trino_check.py). Alone:
#        bash -c '. interop/run.sh && trino_run'
# The servers start together, before Spark (the compose daemon waits for
# its table while Spark writes it).
# Exit status: 0 only when every part passed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
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

if [ -n "${ICECDC_INTEROP_PARTS:-}" ] && [ "${CI:-}" = true ]; then
  echo "interop: ICECDC_INTEROP_PARTS is ignored because CI=true: every part runs"
  ICECDC_INTEROP_PARTS=
fi
# The parts ICECDC_INTEROP_PARTS may name (the installs, kafka-start,
# postgres and spark-scenarios run whenever a part needs them).
KNOWN_PARTS="audit avro aws-sinks cluster cluster-churn cloud-emulators compose connect-sink flink-upserts hive kafka-e2e kafka-smoke
  masks opensearch rest-catalog retention-hold s3-run signals sinks trino unwrap v3-flink v3-pg v3-spark"
for p in ${ICECDC_INTEROP_PARTS:-}; do
  if [[ " $(echo $KNOWN_PARTS) " != *" $p "* ]]; then
    echo "interop: ICECDC_INTEROP_PARTS: no part $p (want some of: $(echo $KNOWN_PARTS))"
    exit 2
  fi
done
[ -n "${ICECDC_INTEROP_PARTS:-}" ] && echo "interop: only the parts $ICECDC_INTEROP_PARTS (ICECDC_INTEROP_PARTS), and what they need"

# wants NAME...: whether ICECDC_INTEROP_PARTS (when set) names any of the parts.
wants() {
  [ -z "${ICECDC_INTEROP_PARTS:-}" ] && return 0
  local p
  for p in "$@"; do
    [[ " $ICECDC_INTEROP_PARTS " == *" $p "* ]] && return 0
  done
  return 1
}

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
  PART_SECS= # a part that ran elsewhere (in another part's process) sets its own time
  "$fn"
  rc=$?
  TIMES+=("$(printf '%-22s %6ss' "$name" "${PART_SECS:-$(elapsed "$t0")}")")
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
  # the metastore, started in the background by the hive part
  [ -s "$WORK/hive/metastore.pid" ] && stop_pid "$(cat "$WORK/hive/metastore.pid")"
  declare -F pg_stop >/dev/null && pg_stop
  # the OpenSearch node, which the opensearch part may have restarted
  if [ -s "$WORK/opensearch/node.pid" ]; then stop_pid "$(cat "$WORK/opensearch/node.pid")"; fi
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
  local what stamp
  for what in kafka rest flink; do
    # The poms pin every version: the same pom gives the same jars, so a
    # cache made from it is kept (its copy is 150 MB and some seconds).
    stamp=$(sha256sum "$HERE/maven/$what/pom.xml" | cut -d' ' -f1)
    if [ "$(cat "$CACHE/jars/$what/.pom.sha256" 2>/dev/null)" != "$stamp" ]; then
      rm -rf "$CACHE/jars/$what"
      must install-jars mvn -B -q -f "$HERE/maven/$what/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$CACHE/jars/$what" || return 1
      echo "$stamp" >"$CACHE/jars/$what/.pom.sha256"
    fi
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

# Kafka Connect, Debezium's JDBC sink connector and the PostgreSQL driver
# (interop/maven/connect), and PostgreSQL from Debian.
PGBIN=
install_connect() {
  local stamp dir=$CACHE/jars/connect
  stamp=$(sha256sum "$HERE/maven/connect/pom.xml" | cut -d' ' -f1)
  if [ "$(cat "$dir/.pom.sha256" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$dir"
    must install-connect mvn -B -q -f "$HERE/maven/connect/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir" || return 1
    echo "$stamp" >"$dir/.pom.sha256"
  fi
  echo "connect: $(ls "$dir" | wc -l) jars, $(du -sh "$dir" | cut -f1):" \
    "$(ls "$dir" | grep -E '^(connect-runtime|debezium-connector-jdbc|postgresql)-' | sed 's/\.jar$//' | tr '\n' ' ')"
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    must install-connect apt-get update || return 1
    must install-connect apt-get install -y postgresql || return 1
  fi
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  echo "postgresql: $("$PGBIN/postgres" --version)"
}

# The Go build runs in the background while the other installs run
# (launch_build); build_icecdc waits for it.
BUILD_PID=
launch_build() {
  must build-icecdc go build -o "$BIN" "$ROOT/cmd/icecdc" &
  BUILD_PID=$!
}

# build_icecdc waits for the build once and keeps its outcome: a part run
# in the background (part_bg) is a subshell, where the build's process is
# not a child, and `wait` on it would fail (127) however the build went.
BUILD_RC=
build_icecdc() {
  if [ -z "$BUILD_RC" ]; then
    [ -n "$BUILD_PID" ] || launch_build
    wait "$BUILD_PID"
    BUILD_RC=$?
  fi
  return "$BUILD_RC"
}

# ---------------------------------------------------------------- Hive metastore
# Hive's standalone metastore 3.1.3 on an embedded Derby database, from
# Maven Central jars (interop/maven/hive), on loopback; the Go test
# TestHiveMetastore (it skips without ICECDC_HIVE_URI) writes the bookshop
# story through iceberg-go's hive catalog and reads it with `icecdc
# changes` and `icecdc run`, and breaks the metastore. It needs no Spark:
# launch_hive runs it in the background from the end of install-jars on,
# and hive_metastore waits for it and reports. Above the sourced return,
# so that it runs alone too:
#   bash -c '. interop/run.sh && hive_run'
HIVE_VERSION=3.1.3
HIVE_PID= HIVE_T0=

# hive_install: the jars (copied once per pom, like install_jars's), the
# Derby schema script out of iceberg-hive-metastore's test jar (which then
# leaves the class path), and an empty metastore database made from the
# script with derbytools' ij, kept as a template (loading it takes ~10s;
# each run copies it).
hive_install() {
  local dir=$CACHE/jars/hive stamp
  stamp=$(sha256sum "$HERE/maven/hive/pom.xml" | cut -d' ' -f1) && [ -n "$stamp" ] || return 1
  if [ "$(cat "$dir/.pom.sha256" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$dir"
    must hive mvn -B -q -f "$HERE/maven/hive/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/lib" || return 1
    mkdir -p "$dir/schema"
    mv "$dir"/lib/iceberg-hive-metastore-*-tests.jar "$dir/schema/" || return 1
    must hive python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
      "$(ls "$dir"/schema/iceberg-hive-metastore-*-tests.jar)" hive-schema-3.1.0.derby.sql "$dir/schema" || return 1
    (
      cd "$dir/schema" || exit 1
      java -Dderby.stream.error.file="$dir/schema/derby.log" \
        -Dij.connection.hms="jdbc:derby:;databaseName=$dir/schema/metastore_db;create=true" \
        -cp "$(ls "$dir"/lib/derby-[0-9]*.jar):$(ls "$dir"/lib/derbytools-[0-9]*.jar)" org.apache.derby.tools.ij hive-schema-3.1.0.derby.sql
    ) >"$LOGS/hive-schema.log" 2>&1
    # ij goes on past a failed statement and exits 0 anyway.
    if [ ! -d "$dir/schema/metastore_db" ] || grep -q '^ERROR' "$LOGS/hive-schema.log"; then
      echo "interop: command failed: java org.apache.derby.tools.ij hive-schema-3.1.0.derby.sql (log $LOGS/hive-schema.log)"
      grep -m 10 -B2 '^ERROR' "$LOGS/hive-schema.log" | sed 's/^/    /'
      rm -rf "$dir/schema/metastore_db"
      return 1
    fi
    echo "$stamp" >"$dir/.pom.sha256"
  fi
  echo "hive: $(ls "$dir/lib" | wc -l) jars, $(du -sh "$dir/lib" | cut -f1); schema $(grep -c '^CREATE TABLE' "$dir/schema/hive-schema-3.1.0.derby.sql") tables (hive-schema-3.1.0.derby.sql)"
}

# hive_start: a fresh metastore on a free loopback port; sets HIVE_URI and
# HIVE_PID. The JVM does not exit after a fatal startup error (it keeps
# Derby's lock too), so a start that fails kills it by its pid.
HIVE_URI=
hive_start() {
  local dir=$WORK/hive jars=$CACHE/jars/hive port i
  port=$(free_port)
  rm -rf "$dir"
  mkdir -p "$dir/conf" "$dir/warehouse"
  cp -r "$jars/schema/metastore_db" "$dir/" || return 1
  # The two class names replace defaults the standalone jar lacks
  # (hive-exec's PartitionExpressionForMetastore, repl.DumpDirCleanerTask).
  cat >"$dir/conf/metastore-site.xml" <<XML
<configuration>
  <property><name>metastore.thrift.port</name><value>$port</value></property>
  <property><name>metastore.thrift.bind.host</name><value>127.0.0.1</value></property>
  <property><name>metastore.warehouse.dir</name><value>file://$dir/warehouse</value></property>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName=$dir/metastore_db</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>metastore.schema.verification</name><value>false</value></property>
  <property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
  <property><name>metastore.event.db.notification.api.auth</name><value>false</value></property>
  <property><name>metastore.metrics.enabled</name><value>false</value></property>
  <property><name>metastore.expression.proxy</name><value>org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy</value></property>
  <property><name>metastore.task.threads.always</name><value>org.apache.hadoop.hive.metastore.events.EventCleanerTask</value></property>
</configuration>
XML
  cat >"$dir/conf/log4j2.properties" <<EOF2
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $LOGS/hive-metastore.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
logger.hms.name = org.apache.hadoop.hive.metastore
logger.hms.level = info
EOF2
  (
    cd "$dir" || exit 1
    exec java -Xmx512m -XX:ActiveProcessorCount=1 -Dlog4j2.configurationFile="$dir/conf/log4j2.properties" \
      -Dderby.stream.error.file="$dir/derby.log" -cp "$dir/conf:$jars/lib/*" org.apache.hadoop.hive.metastore.HiveMetaStore
  ) >"$LOGS/hive-metastore-stdout.log" 2>&1 &
  HIVE_PID=$!
  echo "$HIVE_PID" >"$dir/metastore.pid"
  for ((i = 0; i < 120 * 5; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      HIVE_URI=thrift://127.0.0.1:$port
      return 0
    fi
    if ! kill -0 "$HIVE_PID" 2>/dev/null || grep -q 'threw an exception' "$LOGS/hive-metastore.log" 2>/dev/null; then
      break
    fi
    sleep 0.2
  done
  echo "interop: command failed: java -cp '$dir/conf:$jars/lib/*' org.apache.hadoop.hive.metastore.HiveMetaStore" \
    "(port $port not open; log $LOGS/hive-metastore.log)"
  grep -h -m 4 -E ' ERROR |Exception: ' "$LOGS/hive-metastore.log" "$LOGS/hive-metastore-stdout.log" 2>/dev/null | cut -c1-300 | sed 's/^/    /'
  hive_stop
  return 1
}

hive_stop() {
  [ -n "$HIVE_PID" ] && stop_pid "$HIVE_PID"
  HIVE_PID=
  rm -f "$WORK/hive/metastore.pid"
}

# hive_run: the whole part; its times go to $WORK/hive-times for the
# timing table.
hive_run() {
  if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    if [ "${CI:-}" = true ]; then
      echo "hive: FAILED: java and mvn are needed (Maven Central's metastore jars run on Java 17); the stage installs Maven (install-jars)"
      return 1
    fi
    echo "hive: skipped: java or mvn is missing (apt-get install maven brings both); CI runs it"
    return 3
  fi
  local t0 ti ts rc
  t0=$(now)
  hive_install || return 1
  ti=$(elapsed "$t0") t0=$(now)
  hive_start || return 1
  ts=$(elapsed "$t0") t0=$(now)
  (cd "$ROOT" && ICECDC_HIVE_URI=$HIVE_URI go test ./cmd/icecdc -run '^TestHiveMetastore$' -count=1 -v &&
    ICECDC_HIVE_URI=$HIVE_URI go test ./source -run '^TestHiveCatalogChecksChangesInBulk$' -count=1 -v) >"$LOGS/hive-test.log" 2>&1
  rc=$?
  hive_stop
  printf '%s %s %s\n' "$ti" "$ts" "$(elapsed "$t0")" >"$WORK/hive-times"
  grep -E '^(--- |    --- |        --- |ok|FAIL)|checks of .* idle tables' "$LOGS/hive-test.log"
  if [ $rc -eq 0 ] && grep -q -- '--- PASS: TestHiveMetastore ' "$LOGS/hive-test.log" &&
    grep -q -- '--- PASS: TestHiveCatalogChecksChangesInBulk ' "$LOGS/hive-test.log"; then
    echo "hive: metastore $HIVE_VERSION (Derby) at $HIVE_URI; TestHiveMetastore and TestHiveCatalogChecksChangesInBulk passed (install ${ti}s, metastore start ${ts}s, tests $(elapsed "$t0")s)"
    return 0
  fi
  grep -B2 -A8 -- '--- FAIL\|--- SKIP' "$LOGS/hive-test.log" | tail -n 40 | sed 's/^/    /'
  echo "hive: TestHiveMetastore or TestHiveCatalogChecksChangesInBulk did not pass against the metastore at $HIVE_URI (log $LOGS/hive-test.log, metastore log $LOGS/hive-metastore.log)"
  return 1
}

launch_hive() {
  HIVE_T0=$(now)
  hive_run >"$LOGS/hive.out" 2>&1 &
  HIVE_BG=$!
  PIDS+=("$HIVE_BG")
}

hive_metastore() {
  [ -n "${HIVE_BG:-}" ] || { echo "hive: the part was not started"; return 1; }
  wait "$HIVE_BG"
  local rc=$? ti ts tt
  cat "$LOGS/hive.out"
  if read -r ti ts tt <"$WORK/hive-times" 2>/dev/null; then
    TIMES+=("$(printf '%-22s %6ss' "  hive install" "$ti")" "$(printf '%-22s %6ss' "  hive metastore start" "$ts")" \
      "$(printf '%-22s %6ss' "  hive test" "$tt")")
  fi
  PART_SECS=$(elapsed "$HIVE_T0")
  echo "hive: ran for ${PART_SECS}s in the background"
  return $rc
}

# ---------------------------------------------------------------- S3 and Glue (issue 8)
# One moto server on loopback serves S3 and the Glue API; interop/stores.py
# says which catalog keeps its warehouse where (bucket s3://warehouse). A
# second REST catalog server ("rest-s3") keeps its warehouse on S3 and vends
# its S3 keys with each table. The Spark scenarios with -s3/-glue in their
# names are written there (interop/scenarios.py).
S3_ENDPOINT= S3_PORT= S3_PID= REST_S3_URI=
launch_s3() {
  S3_PORT=$(free_port)
  "$PY" -m moto.server -H 127.0.0.1 -p "$S3_PORT" >"$LOGS/moto-server.log" 2>&1 &
  S3_PID=$!
  PIDS+=("$S3_PID")
}

start_s3() {
  [ -n "$S3_PID" ] || launch_s3
  if ! wait_port "$S3_PORT" 60 "$S3_PID"; then
    echo "interop: command failed: $PY -m moto.server -H 127.0.0.1 -p $S3_PORT"
    tail -n 25 "$LOGS/moto-server.log" | sed 's/^/    /'
    return 1
  fi
  must s3-server "$PY" "$HERE/stores.py" create-bucket "http://127.0.0.1:$S3_PORT" || return 1
  S3_ENDPOINT=http://127.0.0.1:$S3_PORT
  echo "moto $("$PY" -c 'import moto; print(moto.__version__)') (S3 and Glue) at $S3_ENDPOINT (pid $S3_PID), bucket s3://warehouse"
}

. "$HERE/parts/masks.sh"
. "$HERE/parts/audit.sh"
# Sourced (interop/generate_testdata.sh): the helpers and install functions
# above are all it takes; nothing below runs.
. "$HERE/parts/v3.sh"
. "$HERE/parts/signals.sh"
. "$HERE/parts/opensearch.sh"
. "$HERE/parts/trino.sh"
. "$HERE/parts/sinks.sh"
. "$HERE/parts/awssinks.sh"
[ "${BASH_SOURCE[0]}" != "$0" ] && return 0

# ---------------------------------------------------------------- REST catalog

# launch_rest_server NAME ENV...: starts the REST catalog server (the
# catalog in $WORK/NAME) in the background and returns at once;
# await_rest_server NAME waits for it and prints its URI.
declare -A SERVER_PORT SERVER_PID
launch_rest_server() {
  local name=$1 port
  shift
  port=$(free_port)
  mkdir -p "$WORK/$name/wh"
  (
    cd "$WORK/$name" || exit 1
    exec env CATALOG_URI="jdbc:sqlite:$WORK/$name/catalog.db" CATALOG_WAREHOUSE="file:$WORK/$name/wh" \
      CATALOG_REST_PORT="$port" CATALOG_JDBC_SCHEMA__VERSION=V1 "$@" \
      java -Xmx512m -cp "$CACHE/jars/rest/*" org.apache.iceberg.rest.RESTCatalogServer
  ) >"$LOGS/$name-server.log" 2>&1 &
  SERVER_PORT[$name]=$port
  SERVER_PID[$name]=$!
  PIDS+=("$!")
}

await_rest_server() {
  local name=$1 port=${SERVER_PORT[$1]:-} pid=${SERVER_PID[$1]:-}
  [ -n "$port" ] || { echo "interop: the $name catalog server was not started"; return 1; }
  if ! wait_port "$port" 60 "$pid"; then
    echo "interop: command failed: java -cp '$CACHE/jars/rest/*' org.apache.iceberg.rest.RESTCatalogServer (log $LOGS/$name-server.log)"
    tail -n 25 "$LOGS/$name-server.log" | sed 's/^/    /'
    return 1
  fi
  echo "http://127.0.0.1:$port"
}

REST_URI=
start_rest() {
  [ -n "${SERVER_PORT[rest]:-}" ] || launch_rest_server rest
  REST_URI=$(await_rest_server rest) || { echo "$REST_URI"; REST_URI=; return 1; }
  echo "Iceberg REST catalog server at $REST_URI (pid ${SERVER_PID[rest]})"
}

# ---------------------------------------------------------------- Spark scenarios

spark_scenarios() {
  local args=(--work "$WORK/spark" --ivy "$CACHE/ivy" --icecdc "$BIN" --facts "$WORK/facts.txt" --heads "$WORK/heads.json")
  [ -n "$REST_URI" ] && args+=(--rest-uri "$REST_URI")
  [ -n "$S3_ENDPOINT" ] && args+=(--s3-endpoint "$S3_ENDPOINT")
  [ -n "$REST_S3_URI" ] && args+=(--rest-s3-uri "$REST_S3_URI")
  [ -n "$FLINK_PID" ] && args+=(--flink-work "$WORK/flink")
  only_has retention && wants retention-hold && args+=(--retention "$WORK/retention")
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

# ---------------------------------------------------------------- Flink upserts (issue 12)
# PyFlink in a venv of its own (requirements-flink.txt) with the jars of
# maven/flink in pyflink/lib, which PyFlink puts on the JVM's class path
# (so that DriverManager finds the SQLite driver). The install and the
# writer run in the background from the end of install-jars on;
# run_scenarios.py waits for $WORK/flink/status ("EXIT INSTALL_S WRITE_S")
# before Spark reads the tables, and flink_await reports.
FLINK_PY=$CACHE/venv-flink/bin/python
FLINK_PID=
install_flink() {
  if [ ! -x "$FLINK_PY" ] || ! "$FLINK_PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    rm -rf "$CACHE/venv-flink"
    must flink python3 -m venv "$CACHE/venv-flink" || return 1
  fi
  must flink "$FLINK_PY" -m pip install --disable-pip-version-check -q -r "$HERE/requirements-flink.txt" || return 1
  local lib j
  lib=$("$FLINK_PY" -c 'import os, pyflink; print(os.path.join(os.path.dirname(pyflink.__file__), "lib"))') || return 1
  find "$lib" -maxdepth 1 -type l -delete
  for j in iceberg-flink-runtime-2.0 hadoop-client-api hadoop-client-runtime sqlite-jdbc; do
    must flink ln -s "$CACHE/jars/flink/$j"-[0-9]*.jar "$lib/" || return 1
  done
}

launch_flink() {
  if ! only_has flink; then
    echo "flink: skipped (ICECDC_INTEROP_ONLY leaves out flink)"
    return 3
  fi
  mkdir -p "$WORK/flink/wh"
  (
    t0=$(now)
    install_flink
    rc=$? ti=$(elapsed "$t0") t1=$(now)
    if [ $rc -eq 0 ]; then
      (cd "$HERE" && exec "$FLINK_PY" flink_upserts.py write --catalog-db "$WORK/flink/catalog.db" \
        --warehouse "$WORK/flink/wh") >>"$LOGS/flink.log" 2>&1
      rc=$?
    fi
    echo "$rc $ti $(elapsed "$t1")" >"$WORK/flink/status"
  ) &
  FLINK_PID=$!
  PIDS+=("$FLINK_PID")
  echo "flink: installing PyFlink and writing the upsert tables in the background (pid $FLINK_PID, log $LOGS/flink.log)"
}

# The writer's outcome and times; the tables' checks are run_scenarios.py's
# "flink <table>: ..." lines (spark-scenarios).
flink_await() {
  wait "$FLINK_PID"
  local rc ti tw
  read -r rc ti tw <"$WORK/flink/status" 2>/dev/null || { echo "flink: the writer left no status"; return 1; }
  TIMES+=("$(printf '%-22s %6ss' "  flink install" "$ti")" "$(printf '%-22s %6ss' "  flink write" "$tw")")
  echo "flink: PyFlink $("$FLINK_PY" -c 'import pyflink.version as v; print(v.__version__)' 2>/dev/null)," \
    "$(cd "$CACHE/jars/flink" && ls iceberg-flink-runtime-*.jar); install ${ti}s, write ${tw}s (in the background)"
  grep '^flink: job' "$LOGS/flink.log" | sed 's/^/  /'
  if [ "$rc" -ne 0 ]; then
    echo "interop: command failed (exit $rc): $FLINK_PY interop/flink_upserts.py write (log $LOGS/flink.log)"
    grep -v ' INFO ' "$LOGS/flink.log" | tail -n 25 | sed 's/^/    /'
    return 1
  fi
  local checked
  checked=$(grep -c '^flink interop_flink\.[a-z_]*: [0-9]* snapshots, [0-9]* events, exact' "$LOGS/scenarios.out" 2>/dev/null)
  if [ "${checked:-0}" -ne "$(grep -c '^flink interop_flink' "$LOGS/scenarios.out" 2>/dev/null)" ] || [ "${checked:-0}" -eq 0 ]; then
    echo "flink: not every table is exact (see spark-scenarios above)"
    return 1
  fi
  echo "flink: $checked tables exact at every snapshot"
}

# The retention hold (issue 12): run_scenarios.py runs interop/retention.py
# on its Spark session alongside the scenarios (most of it is waiting for
# `icecdc run`); this part reports its outcome and the time it took.
retention_hold() {
  local out=$WORK/retention/result.txt
  if ! only_has retention; then
    echo "retention hold: skipped (ICECDC_INTEROP_ONLY leaves out retention)"
    return 3
  fi
  if [ ! -s "$out" ]; then
    echo "retention hold: FAILED: $out was not written (the Spark scenarios' process ended before the part did; see $LOGS/spark.stderr)"
    return 1
  fi
  tail -n +2 "$out" | grep -v '^timing:'
  PART_SECS=$(sed -n 's/^timing: retention-hold \([0-9.]*\)s.*/\1/p' "$out")
  [ "$(head -n 1 "$out")" = ok ]
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

launch_rest_s3() {
  local envs
  mapfile -t envs < <("$PY" "$HERE/stores.py" rest-server-env "http://127.0.0.1:$S3_PORT")
  launch_rest_server rest-s3 "${envs[@]}"
}

start_rest_s3() {
  REST_S3_URI=$(await_rest_server rest-s3) || { echo "$REST_S3_URI"; REST_S3_URI=; return 1; }
  echo "Iceberg REST catalog server with its warehouse on S3 at $REST_S3_URI (pid ${SERVER_PID[rest-s3]})"
}

# only_has NAME: whether ICECDC_INTEROP_ONLY (when set) keeps scenario NAME.
only_has() {
  [ -z "${ICECDC_INTEROP_ONLY:-}" ] || [[ " $ICECDC_INTEROP_ONLY " == *" $1 "* ]]
}

# The docker-compose config, tested: `icecdc run -c examples/icecdc.compose.yaml`
# starts before Spark has created any table, with the environment pointing
# it at the loopback servers (the compose file points it at its services)
# and no AWS variable: its `tables: shop.*` must wait, saying so, and then
# follow shop.orders (the bookshop-rest-s3 scenario) into Kafka while Spark
# writes it; compose_check compares what kcat reads with `icecdc changes`.
COMPOSE_PID= COMPOSE_HTTP=
compose_start() {
  if ! only_has bookshop-rest-s3; then
    echo "compose: skipped (ICECDC_INTEROP_ONLY leaves out bookshop-rest-s3, the table it follows)"
    return 3
  fi
  local dir=$WORK/compose v i
  local unset=()
  mkdir -p "$dir"
  for v in $(compgen -e); do [[ $v == AWS_* ]] && unset+=(-u "$v"); done
  COMPOSE_HTTP=127.0.0.1:$(free_port)
  env "${unset[@]}" AWS_EC2_METADATA_DISABLED=true \
    ICECDC_CATALOG_URI="$REST_S3_URI" ICECDC_S3_ENDPOINT="$S3_ENDPOINT" ICECDC_S3_REGION=us-east-1 \
    ICECDC_KAFKA_BROKERS="$KAFKA" \
    "$BIN" run -c "$ROOT/examples/icecdc.compose.yaml" -state "$dir/state.db" -listen "$COMPOSE_HTTP" \
    >"$dir/icecdc.log" 2>&1 &
  COMPOSE_PID=$!
  PIDS+=("$COMPOSE_PID")
  for ((i = 0; i < 150; i++)); do
    if grep -q '"msg":"no table to follow yet' "$dir/icecdc.log"; then
      echo "compose: icecdc run -c examples/icecdc.compose.yaml (pid $COMPOSE_PID) is waiting for a table to match shop.*"
      return 0
    fi
    kill -0 "$COMPOSE_PID" 2>/dev/null || break
    sleep 0.2
  done
  echo "interop: command failed: $BIN run -c $ROOT/examples/icecdc.compose.yaml (no 'waiting' message; log $dir/icecdc.log)"
  tail -n 25 "$dir/icecdc.log" | sed 's/^/    /'
  return 1
}

compose_check() {
  [ -n "$COMPOSE_PID" ] || { echo "compose: the daemon did not start"; return 1; }
  (cd "$HERE" && "$PY" daemons_s3.py compose --icecdc "$BIN" --s3-endpoint "$S3_ENDPOINT" \
    --rest-s3-uri "$REST_S3_URI" --brokers "$KAFKA" --http "$COMPOSE_HTTP" --log "$WORK/compose/icecdc.log") \
    2>"$LOGS/compose-check.stderr"
  local rc=$? code
  stop_pid "$COMPOSE_PID"
  wait "$COMPOSE_PID"
  code=$?
  COMPOSE_PID=
  if [ $code -ne 0 ]; then
    echo "compose: icecdc run ended with exit $code on SIGTERM (log $WORK/compose/icecdc.log)"
    tail -n 10 "$WORK/compose/icecdc.log" | sed 's/^/    /'
    rc=1
  else
    echo "compose: SIGTERM: exit 0"
  fi
  [ $rc -ne 0 ] && [ -s "$LOGS/compose-check.stderr" ] && tail -n 20 "$LOGS/compose-check.stderr" | sed 's/^/    /'
  return $rc
}

# ---------------------------------------------------------------- cluster (issue 11)
# interop/cluster_e2e.py runs in the background from when the broker is up
# (it needs no Spark table) and is collected after the Spark scenarios.
CLUSTER_PID= CLUSTER_T0=
cluster_launch() {
  local dir=$WORK/cluster
  mkdir -p "$dir"
  if ! must cluster-build go build -o "$WORK/bin/clusterwriter" "$ROOT/interop/clusterwriter"; then
    echo "interop: cluster: the table writer did not build" >"$LOGS/cluster.out"
    echo 1 >"$dir/rc"
    return
  fi
  CLUSTER_T0=$(now)
  (
    cd "$HERE" && "$PY" cluster_e2e.py --icecdc "$BIN" --writer "$WORK/bin/clusterwriter" \
      --brokers "$KAFKA" --work "$dir" ${ICECDC_CLUSTER_ARGS:-} 2>"$LOGS/cluster.stderr"
    echo $? >"$dir/rc"
  ) >"$LOGS/cluster.out" &
  CLUSTER_PID=$!
  PIDS+=("$CLUSTER_PID")
}

cluster_check() {
  [ -n "$CLUSTER_PID" ] && wait "$CLUSTER_PID"
  cat "$LOGS/cluster.out"
  local rc
  rc=$(cat "$WORK/cluster/rc" 2>/dev/null || echo 1)
  [ "$rc" -ne 0 ] && [ -s "$LOGS/cluster.stderr" ] && tail -n 20 "$LOGS/cluster.stderr" | sed 's/^/    /'
  [ -n "$CLUSTER_T0" ] && echo "cluster: ran for $(elapsed "$CLUSTER_T0")s in the background"
  return "$rc"
}

# The cluster churn of issue 18 against the broker: TestClusterChurnRealBroker
# (internal/daemontest) runs 3 to 5 `icecdc run` members, exactly-once, on 8
# tables through ICECDC_CLUSTER_CHURN_CHANGES (default 16) SIGKILLs, SIGSTOPs
# past the 6s session timeout, SIGINTs and joins, and fails unless every
# event arrives once, in order, every table catches up within the session
# timeout + 10s of the last change, and every stopped member exits within
# the session timeout. Its summary lines are printed.
cluster_churn() {
  [ -n "$KAFKA" ] || { echo "cluster churn: no broker"; return 1; }
  (cd "$ROOT" && ICECDC_KAFKA_BROKERS=$KAFKA ICECDC_CLUSTER_CHANGES=${ICECDC_CLUSTER_CHURN_CHANGES:-16} \
    go test ./internal/daemontest -run '^TestClusterChurnRealBroker$' -count=1 -v -timeout 10m) >"$LOGS/cluster-churn.log" 2>&1
  local rc=$?
  grep -E 'cluster_test.go:[0-9]+: |^(--- |ok|FAIL)' "$LOGS/cluster-churn.log" | sed 's/^ *//; s/^/  /'
  [ $rc -ne 0 ] && tail -n 30 "$LOGS/cluster-churn.log" | sed 's/^/    /'
  return $rc
}

# A file-sink `icecdc run` over every table of the JDBC catalog on S3.
s3_run() {
  if [ ! -f "$WORK/spark/s3catalog.db" ] && [ -n "${ICECDC_INTEROP_ONLY:-}" ]; then
    echo "s3 run: skipped (ICECDC_INTEROP_ONLY leaves out the S3 scenarios)"
    return 3
  fi
  (cd "$HERE" && "$PY" daemons_s3.py s3-run --icecdc "$BIN" --s3-endpoint "$S3_ENDPOINT" \
    --s3-catalog-db "$WORK/spark/s3catalog.db" --work "$WORK/s3-run") 2>"$LOGS/s3-run.stderr"
  local rc=$?
  [ $rc -ne 0 ] && tail -n 20 "$LOGS/s3-run.stderr" | sed 's/^/    /'
  return $rc
}

# ---------------------------------------------------------------- GCS and Azure (issue 8)
# fake-gcs-server and Azurite's blob service start on loopback and the Go
# tests TestFakeGCS and TestAzurite run against them (they skip without
# ICECDC_GCS_EMULATOR / ICECDC_AZURITE). Launched in the background at the
# start; cloud_emulators waits for it and reports.
FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0
CLOUD_PID= CLOUD_T0=
cloud_run() {
  local gcs=$CACHE/fake-gcs-server/$FAKE_GCS_VERSION/fake-gcs-server
  local azurite=$CACHE/azurite/$AZURITE_VERSION/node_modules/.bin/azurite-blob
  if [ ! -x "$gcs" ]; then
    GOBIN=$(dirname "$gcs") must cloud go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" || return 1
  fi
  if [ ! -x "$azurite" ]; then
    command -v npm >/dev/null || { echo "cloud: npm is missing (Node.js installs it)"; return 1; }
    must cloud npm install --no-audit --no-fund --prefix "$CACHE/azurite/$AZURITE_VERSION" "azurite@$AZURITE_VERSION" || return 1
  fi
  local gport aport pids=()
  gport=$(free_port)
  aport=$(free_port)
  "$gcs" -scheme http -host 127.0.0.1 -port "$gport" -public-host "127.0.0.1:$gport" -backend memory \
    >"$LOGS/fake-gcs-server.log" 2>&1 &
  pids+=($!)
  mkdir -p "$WORK/azurite"
  node "$azurite" --blobHost 127.0.0.1 --blobPort "$aport" --location "$WORK/azurite" --skipApiVersionCheck --silent \
    >"$LOGS/azurite.log" 2>&1 &
  pids+=($!)
  local rc=0
  if ! wait_port "$gport" 60 "${pids[0]}"; then
    tail -n 20 "$LOGS/fake-gcs-server.log" | sed 's/^/    /'
    rc=1
  elif ! wait_port "$aport" 60 "${pids[1]}"; then
    tail -n 20 "$LOGS/azurite.log" | sed 's/^/    /'
    rc=1
  else
    echo "fake-gcs-server $FAKE_GCS_VERSION at 127.0.0.1:$gport, azurite-blob $AZURITE_VERSION at 127.0.0.1:$aport"
    (cd "$ROOT" && ICECDC_GCS_EMULATOR=127.0.0.1:$gport ICECDC_AZURITE=127.0.0.1:$aport \
      go test ./cmd/icecdc -run 'TestAzurite|TestFakeGCS' -count=1 -v) >"$LOGS/cloud-test.log" 2>&1
    rc=$?
    grep -E '^(--- |    --- |ok|FAIL)' "$LOGS/cloud-test.log"
    [ $rc -ne 0 ] && grep -B2 -A8 -- '--- FAIL' "$LOGS/cloud-test.log" | tail -n 40 | sed 's/^/    /'
  fi
  local pid
  for pid in "${pids[@]}"; do stop_pid "$pid"; done
  return $rc
}

launch_cloud() {
  CLOUD_T0=$(now)
  cloud_run >"$LOGS/cloud.out" 2>&1 &
  CLOUD_PID=$!
  PIDS+=("$CLOUD_PID")
}

cloud_emulators() {
  wait "$CLOUD_PID"
  local rc=$?
  cat "$LOGS/cloud.out"
  echo "cloud: emulators and tests took $(elapsed "$CLOUD_T0")s in the background"
  return $rc
}

# ---------------------------------------------------------------- connect sink (issue 10)
# A private PostgreSQL cluster on loopback (as the postgres user when run as
# root: PostgreSQL refuses root), and a Kafka Connect standalone worker with
# three JDBC sink connectors: rowid.* -> rowid_<table>, ident.* ->
# ident_<table>, replay.* -> replay_<table>. Both start while Spark writes;
# interop/connect_sink.py produces and compares once the tables are there.
PG_PORT= PG_CONNINFO= CONNECT_PID=
PG_STOP=()
pg_start() {
  local dir=$WORK/pg as=()
  PG_PORT=$(free_port)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chmod 711 "$WORK"
    chown postgres "$dir"
    as=(runuser -u postgres --)
  fi
  must postgres "${as[@]}" "$PGBIN/initdb" -D "$dir/data" -U icecdc --auth=trust -E UTF8 --locale=C.UTF-8 || return 1
  must postgres "${as[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$dir -c fsync=off" start || return 1
  PG_STOP=("${as[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -m fast stop)
  PG_CONNINFO="host=127.0.0.1 port=$PG_PORT user=icecdc dbname=postgres"
  echo "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') at 127.0.0.1:$PG_PORT (data $dir/data)"
}

pg_stop() {
  [ ${#PG_STOP[@]} -gt 0 ] && "${PG_STOP[@]}" >>"$LOGS/postgres.log" 2>&1
  PG_STOP=()
}

CONNECT_URL=
connect_start() {
  local dir=$WORK/connect m
  mkdir -p "$dir"
  CONNECT_URL=http://127.0.0.1:$(free_port)
  cat >"$dir/worker.properties" <<EOF
bootstrap.servers=$KAFKA
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename=$dir/offsets
offset.flush.interval.ms=1000
listeners=$CONNECT_URL
plugin.discovery=only_scan
${CONNECT_PLUGIN_PATH:+plugin.path=$CONNECT_PLUGIN_PATH}
consumer.metadata.max.age.ms=1000
EOF
  for m in rowid ident replay; do
    cat >"$dir/jdbc-$m.properties" <<EOF
name=jdbc-$m
connector.class=io.debezium.connector.jdbc.JdbcSinkConnector
tasks.max=1
topics.regex=$m\\..*
connection.url=jdbc:postgresql://127.0.0.1:$PG_PORT/postgres
connection.username=icecdc
connection.password=
insert.mode=upsert
delete.enabled=true
primary.key.mode=record_key
schema.evolution=basic
collection.name.format=${m}_\${source.table}
EOF
  done
  # Connect's JsonConverter (schemas.enable=true) reads icecdc's
  # schema-change records; the file sink writes each as the Struct it
  # converted to, or its task fails on a record it cannot convert.
  cat >"$dir/file-schema-changes.properties" <<EOF
name=file-schema-changes
connector.class=org.apache.kafka.connect.file.FileStreamSinkConnector
tasks.max=1
topics.regex=icecdc\\.schema-changes
file=$dir/schema-changes.txt
EOF
  cat >"$dir/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$LOGS/connect.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
EOF
  java -Xmx512m -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$CACHE/jars/connect/*" \
    org.apache.kafka.connect.cli.ConnectStandalone "$dir/worker.properties" \
    "$dir/jdbc-rowid.properties" "$dir/jdbc-ident.properties" "$dir/jdbc-replay.properties" \
    "$dir/file-schema-changes.properties" \
    >"$LOGS/connect-stdout.log" 2>&1 &
  CONNECT_PID=$!
  PIDS+=("$CONNECT_PID")
  echo "Kafka Connect standalone (pid $CONNECT_PID): Debezium JDBC sink connectors jdbc-rowid, jdbc-ident, jdbc-replay into PostgreSQL," \
    "FileStreamSink file-schema-changes"
}

# has_connect_format: whether this icecdc knows format debezium-connect-json
# (its config check names the format field when it does not).
has_connect_format() {
  local dir=$WORK/connect/probe
  mkdir -p "$dir"
  printf 'name: probe\ncatalog: {name: local, type: sql, uri: "file:%s/c.db", warehouse: "file://%s"}\ntables: [{name: a.b}]\nformat: debezium-connect-json\nsink: {type: stdout}\nstate: {path: "%s/state.db"}\n' \
    "$dir" "$dir" "$dir" >"$dir/icecdc.yaml"
  local out
  out=$("$BIN" status -c "$dir/icecdc.yaml" 2>&1)
  [[ $out != *"config: format"* ]]
}

connect_sink() {
  [ -n "$CONNECT_PID" ] || { echo "connect sink: the Connect worker did not start"; return 1; }
  [ -s "$WORK/heads.json" ] || { echo "connect sink: no Spark heads ($WORK/heads.json): the Spark scenarios did not run"; return 1; }
  if ! kill -0 "$CONNECT_PID" 2>/dev/null; then
    echo "interop: command failed: java -cp '$CACHE/jars/connect/*' org.apache.kafka.connect.cli.ConnectStandalone (log $LOGS/connect.log)"
    tail -n 25 "$LOGS/connect-stdout.log" | sed 's/^/    /'
    return 1
  fi
  local producer=native
  if ! has_connect_format; then
    producer=translated
    echo "connect sink: skipped: icecdc has no format debezium-connect-json yet (icecdc run with it is what this part checks);"
    echo "  meanwhile the chain is checked with icecdc changes' events translated to Connect JSON by interop/connect_sink.py"
  fi
  (cd "$HERE" && "$PY" connect_sink.py --icecdc "$BIN" --brokers "$KAFKA" --pg "$PG_CONNINFO" \
    --catalog-db "$WORK/spark/catalog.db" --warehouse "$WORK/spark/wh" --heads "$WORK/heads.json" \
    --work "$WORK/connect/check" --producer "$producer" \
    --schema-changes-file "$WORK/connect/schema-changes.txt") 2>"$LOGS/connect-sink.stderr"
  local rc=$?
  [ $rc -eq 3 ] && return 3
  if [ $rc -ne 0 ]; then
    tail -n 20 "$LOGS/connect-sink.stderr" | sed 's/^/    /'
    grep -m 5 ' ERROR ' "$LOGS/connect.log" | cut -c1-400 | sed 's/^/    connect.log: /'
  fi
  # Without the format the part counts as skipped, whatever the translated
  # chain gave (it said above, line by line, whether it was exact).
  if [ "$producer" = translated ]; then
    [ $rc -ne 0 ] && echo "connect sink: the translated chain is NOT exact (above); skipped until icecdc has format debezium-connect-json"
    return 3
  fi
  return $rc
}

# part_bg NAME FUNCTION: runs a part in the background, its output kept
# until part_wait NAME prints it and records its outcome and time.
declare -A BG_PID
part_bg() {
  local name=$1 fn=$2
  (
    t0=$(now)
    "$fn" >"$LOGS/$name.out" 2>&1
    rc=$?
    printf '%s %s\n' "$rc" "$(elapsed "$t0")" >"$LOGS/$name.rc"
  ) &
  BG_PID[$name]=$!
  echo "== interop: $name (runs in the background; its output follows the parts below)"
}

part_wait() {
  local name=$1 rc secs
  wait "${BG_PID[$name]}"
  read -r rc secs <"$LOGS/$name.rc" 2>/dev/null || { rc=1; secs=?; }
  echo "== interop: $name"
  cat "$LOGS/$name.out"
  TIMES+=("$(printf '%-22s %6ss' "$name" "$secs")")
  case $rc in
    0) PASSED+=("$name") ;;
    3) SKIPPED+=("$name") ;;
    *) FAILED+=("$name"); echo "interop: $name FAILED" ;;
  esac
}

. "$HERE/parts/unwrap.sh"
. "$HERE/parts/avro.sh"

# ---------------------------------------------------------------- main

launch_build
wants cloud-emulators && launch_cloud
part install-python install_python
PY_OK=$?
part install-jars install_jars
JARS_OK=$?
wants hive && launch_hive # needs only Maven (install-jars installs it) and Java
# The OpenSearch node boots while the other servers and Spark run.
[ $JARS_OK -eq 0 ] && wants opensearch && part install-opensearch opensearch_prepare
if [ $JARS_OK -eq 0 ]; then
  wants flink-upserts && launch_flink
  [ $? -eq 3 ] && SKIPPED+=(flink-upserts)
else
  echo "interop: flink-upserts not run: its jars did not install"
  FAILED+=(flink-upserts)
fi
part install-kcat install_kcat
KCAT_OK=$?
part install-connect install_connect
CONNECT_OK=$?
wants avro && part install-avro avro_install
[ $CONNECT_OK -eq 0 ] && wants masks && part masks masks_vectors
part build-icecdc build_icecdc
GO_OK=$?
[ $CONNECT_OK -eq 0 ] && wants unwrap && part install-unwrap unwrap_install

# The servers start together: moto and the REST catalog servers boot in the
# background while the broker starts; the parts after it wait for each.
[ $PY_OK -eq 0 ] && wants s3-run compose && launch_s3
if [ $JARS_OK -eq 0 ]; then
  wants rest-catalog && launch_rest_server rest
  [ $PY_OK -eq 0 ] && wants s3-run compose && launch_rest_s3
fi
KAFKA_PARTS=0
if [ $JARS_OK -eq 0 ] && [ $KCAT_OK -eq 0 ]; then
  KAFKA_PARTS=1
  part kafka-start kafka_start
else
  echo "interop: kafka parts not run: the broker's jars or kcat are missing (see above)"
  FAILED+=(kafka)
fi
CONNECT_PARTS=0
if ! wants connect-sink avro v3-pg unwrap; then
  :
elif [ -n "$KAFKA" ] && [ $CONNECT_OK -eq 0 ] && [ $PY_OK -eq 0 ]; then
  if part postgres pg_start; then
    CONNECT_PARTS=1
    connect_start
  fi
else
  echo "interop: connect sink not run: it needs the broker, the Connect jars, PostgreSQL and the Python packages (see above)"
  FAILED+=(connect-sink)
fi
if ! wants rest-catalog; then
  :
elif [ $JARS_OK -eq 0 ]; then
  part rest-catalog start_rest
else
  echo "interop: rest-catalog not started: its jars did not install"
  FAILED+=(rest-catalog)
fi
if ! wants s3-run compose; then
  :
elif [ $PY_OK -eq 0 ]; then
  part s3-server start_s3
  [ $JARS_OK -eq 0 ] && part rest-s3-catalog start_rest_s3
else
  echo "interop: s3-server not started: the Python packages (moto) did not install"
  FAILED+=(s3-server)
fi
if ! wants compose; then
  :
elif [ -n "$KAFKA" ] && [ -n "$REST_S3_URI" ] && [ $GO_OK -eq 0 ]; then
  part compose-start compose_start
else
  echo "interop: compose not run: it needs the broker, the REST catalog on S3 and the icecdc build (see above)"
  FAILED+=(compose)
fi

if ! wants cluster; then
  :
elif [ -n "$KAFKA" ] && [ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ]; then
  cluster_launch
else
  echo "interop: cluster not run: it needs the broker, the Python packages and the icecdc build (see above)"
  FAILED+=(cluster)
fi

# Trino (its own JVM, its jars downloaded on a cold cache) runs beside the
# Spark parts; its outcome is read after the sinks' parts.
[ $GO_OK -eq 0 ] && wants trino && part_bg trino trino_run
if [ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ]; then
  part spark-scenarios spark_scenarios
else
  echo "interop: spark-scenarios not run: Python packages or the icecdc build are missing (see above)"
  FAILED+=(spark-scenarios)
fi

[ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ] && wants retention-hold && part retention-hold retention_hold
[ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ] && wants v3-spark && part v3-spark v3_spark
[ $CONNECT_PARTS -eq 1 ] && wants v3-pg && part v3-pg v3_pg
[ $CONNECT_PARTS -eq 1 ] && wants connect-sink && part_bg connect-sink connect_sink
[ $CONNECT_PARTS -eq 1 ] && wants avro && part_bg avro avro_run
[ -n "$COMPOSE_PID" ] && part compose-check compose_check
[ -n "$FLINK_PID" ] && wants flink-upserts && part flink-upserts flink_await
[ $JARS_OK -eq 0 ] && [ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ] && wants v3-flink && part v3-flink v3_flink
if [ -n "$S3_ENDPOINT" ] && [ $GO_OK -eq 0 ] && wants s3-run; then
  part s3-run s3_run
fi

[ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ] && wants opensearch && part opensearch opensearch_run
[ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ] && wants audit && part audit audit_run
[ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ] && wants sinks && part sinks sinks_run
[ $PY_OK -eq 0 ] && [ $GO_OK -eq 0 ] && wants aws-sinks && part aws-sinks awssinks_run
[ -n "${BG_PID[trino]:-}" ] && part_wait trino
wants cloud-emulators && part cloud-emulators cloud_emulators
wants hive && part hive hive_metastore

[ -f "$WORK/cluster/rc" ] || [ -n "$CLUSTER_PID" ] && part cluster cluster_check
if [ $KAFKA_PARTS -eq 1 ]; then
  wants kafka-smoke && part kafka-smoke kafka_smoke
  wants kafka-e2e && part kafka-e2e kafka_e2e
  wants signals && part signals signals_e2e
  [ $GO_OK -eq 0 ] && wants cluster-churn && part cluster-churn cluster_churn
fi
[ $CONNECT_PARTS -eq 1 ] && [ $GO_OK -eq 0 ] && wants unwrap && part unwrap unwrap_check
if [ $CONNECT_PARTS -eq 1 ]; then
  wants connect-sink && part_wait connect-sink
  wants avro && part_wait avro
  stop_pid "$CONNECT_PID"
  pg_stop
fi
[ $KAFKA_PARTS -eq 1 ] && kafka_stop

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
