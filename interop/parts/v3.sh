# The v3 types part (issue 20), sourced by interop/run.sh (functions only).
#
# v3_spark: Spark 4.1 with iceberg-spark-runtime-4.1_2.13:1.12.0 (the
# scenarios run 1.11; ICECDC_ICEBERG_VERSION picks the runtime) writes
# the VARIANT tables of testdata_tables.py afresh, merge-on-read: inserts
# through parse_json and casts, updates, a delete, a MERGE, an insert and
# a compaction; once unshredded and once with Iceberg's variant shredding
# (write.parquet.shred-variants, spark.sql.iceberg.shred-variants), whose
# files must hold typed_value columns. icecdc's `changes` must equal the
# events Spark's reads of every snapshot imply (run_scenarios.py --set v3,
# the oracle the scenarios use).
#
# The servers' functions are below run.sh's sourced return, so the parts
# run alone from run.sh's functions without its main section (the file
# must be in interop/, where run.sh finds its helpers):
#   sed '/^\[ "${BASH_SOURCE\[0\]}" != "$0" \] \&\& return 0/d; /^# -* main$/,$d' interop/run.sh >interop/.fns.sh
#   CI=true bash -c '. interop/.fns.sh && install_python && install_kcat && install_connect && build_icecdc &&
#     kafka_start && pg_start && connect_start && v3_spark && v3_pg'
V3_ICEBERG=1.12.0

v3_spark() {
  local t0 rc
  t0=$(now)
  mkdir -p "$WORK/v3"
  (cd "$HERE" && ICECDC_ICEBERG_VERSION=$V3_ICEBERG "$PY" run_scenarios.py --set v3 --work "$WORK/v3" \
    --ivy "$CACHE/ivy" --icecdc "$BIN" --heads "$WORK/v3/heads.json") 2>"$LOGS/v3-spark.stderr" | tee "$LOGS/v3-spark.out"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ] && ! grep -q '^scenarios:' "$LOGS/v3-spark.out"; then
    echo "interop: command failed (exit $rc): run_scenarios.py --set v3 (Iceberg $V3_ICEBERG)"
    tail -n 40 "$LOGS/v3-spark.stderr" | sed 's/^/    /'
  fi
  echo "v3-spark: Spark 4.1 + Iceberg $V3_ICEBERG, VARIANT unshredded and shredded: exit $rc in $(elapsed "$t0")s"
  return "$rc"
}

# v3_pg: the JDBC sink into PostgreSQL with PostGIS. It needs the broker,
# the Connect worker and PostgreSQL run.sh starts for the connect-sink part
# and v3_spark's variant table (and its heads); it installs Debian's
# postgresql-NN-postgis-3 for the installed PostgreSQL major, adds a JDBC
# sink connector (v3.* topics) to the running worker through its REST API,
# and has interop/v3_pg.py stream the variant table and the geo table
# Iceberg Java 1.12 wrote (testdata/java/geo) through it; the mirrored
# rows must equal the tables' heads value by value (jsonb equality,
# ST_AsBinary and ST_SRID).

v3_pg_major() { "$PGBIN/postgres" --version | awk '{print $3}' | cut -d. -f1; }

v3_postgis() {
  local major
  major=$(v3_pg_major)
  [ -f "/usr/share/postgresql/$major/extension/postgis.control" ] && return 0
  if [ "${CI:-}" != true ] && [ "$(id -u)" != 0 ]; then
    echo "v3-pg: skipped: postgresql-$major-postgis-3 is not installed (apt-get install postgresql-$major-postgis-3); CI runs it"
    return 3
  fi
  must v3-pg apt-get install -y "postgresql-$major-postgis-3" ||
    { must v3-pg apt-get update && must v3-pg apt-get install -y "postgresql-$major-postgis-3"; } || return 1
}

v3_pg() {
  local t0 rc url geo
  t0=$(now)
  [ -n "$CONNECT_PID" ] && kill -0 "$CONNECT_PID" 2>/dev/null || { echo "v3-pg: the Connect worker is not running"; return 1; }
  [ -s "$WORK/v3/heads.json" ] || { echo "v3-pg: no heads of the v3 tables ($WORK/v3/heads.json): v3-spark did not run"; return 1; }
  v3_postgis
  rc=$?
  [ $rc -ne 0 ] && return $rc
  url=http://$(sed -n 's|^listeners=http://||p' "$WORK/connect/worker.properties")
  geo=$WORK/v3/geo
  rm -rf "$geo"
  must v3-pg go -C "$ROOT" run ./internal/javatables/relocate \
    -metadata "$ROOT/testdata/java/geo/$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["metadata"])' "$ROOT/testdata/java/geo/expected.json")" \
    -from file:/ICECDC_TESTDATA -src "$ROOT/testdata/java/geo" -to "file:$geo" -out "$geo" || return 1
  cp "$ROOT/testdata/java/geo/expected.json" "$geo/"
  (cd "$HERE" && "$PY" v3_pg.py --icecdc "$BIN" --brokers "$KAFKA" --pg "$PG_CONNINFO" --pg-port "$PG_PORT" \
    --connect-url "$url" --v3-work "$WORK/v3" --geo "$geo") 2>"$LOGS/v3-pg.stderr"
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 20 "$LOGS/v3-pg.stderr" | sed 's/^/    /'
    grep -m 5 ' ERROR ' "$LOGS/connect.log" | cut -c1-400 | sed 's/^/    connect.log: /'
  fi
  echo "v3-pg: PostgreSQL $(v3_pg_major) with PostGIS through Debezium's JDBC sink: exit $rc in $(elapsed "$t0")s"
  return $rc
}

# v3_flink: PyFlink 2.0 with iceberg-flink-runtime-2.0 (the Flink upserts'
# venv and jars) writes a v3 table with TIMESTAMP(9) and TIMESTAMP_LTZ(9)
# columns in upsert mode, a job per commit, and reads it back after each
# (interop/flink_ns.py); icecdc's events, replayed by key, must equal
# Flink's read of every snapshot (Spark reads no nanoseconds). run.sh
# runs it after the Flink upserts' writer, which shares its venv. Alone
# (see the top): install_python && install_jars && build_icecdc && v3_flink
v3_flink() {
  local t0 rc dir=$WORK/flink-ns
  t0=$(now)
  mkdir -p "$dir/wh"
  install_flink || { echo "v3-flink: PyFlink did not install (log $LOGS/flink.log)"; return 1; }
  (cd "$HERE" && "$FLINK_PY" flink_ns.py write --catalog-db "$dir/catalog.db" --warehouse "$dir/wh" \
    --reads "$dir/reads.json") >"$LOGS/v3-flink.log" 2>&1
  rc=$?
  grep '^flink-ns: job' "$LOGS/v3-flink.log"
  if [ $rc -ne 0 ]; then
    echo "interop: command failed (exit $rc): $FLINK_PY interop/flink_ns.py write (log $LOGS/v3-flink.log)"
    grep -v ' INFO ' "$LOGS/v3-flink.log" | tail -n 25 | sed 's/^/    /'
    return 1
  fi
  (cd "$HERE" && "$PY" flink_ns.py check --catalog-db "$dir/catalog.db" --warehouse "$dir/wh" \
    --reads "$dir/reads.json" --icecdc "$BIN")
  rc=$?
  echo "v3-flink: Flink 2.0 + $(cd "$CACHE/jars/flink" && ls iceberg-flink-runtime-*.jar), TIMESTAMP(9) upserts: exit $rc in $(elapsed "$t0")s"
  return $rc
}
