# shellcheck shell=bash
# The audit part (issue 34), sourced by interop/run.sh (functions only):
# `icecdc run` with sink.type iceberg writes the change feed of the stage's
# Spark tables (the local JDBC catalog) to target tables audit.<table>_changes
# in the same catalog (format version 3: the scenarios hold v3 types), is
# SIGKILLed twice on the way and run to the end; Spark 4.1 then reads every
# target: each event of `icecdc changes` exactly once per row it makes, and
# the head rebuilt by _source_row_id equal to Spark's read of the table
# (interop/audit_e2e.py). The same again with the targets of bookshop,
# merge and types on S3 (moto) through a SQL catalog of their own, and for
# Flink's upsert tables when the flink-upserts part wrote them. Alone (it writes its own Spark tables when the
# stage's are not there):
#   bash -c '. interop/run.sh && audit_run'
AUDIT_SCENARIOS="bookshop merge partitioned compaction cow defaults types"

audit_run() {
  local t0 rc db wh dir=$WORK/audit only
  t0=$(now)
  [ -x "$PY" ] || install_python >/dev/null || { echo "audit: the Python venv did not install"; return 1; }
  build_icecdc || { echo "audit: icecdc did not build (log $LOGS/build-icecdc.log)"; return 1; }
  mkdir -p "$dir"
  if [ -f "$WORK/spark/catalog.db" ] && [ -s "$WORK/heads.json" ]; then
    db=$WORK/spark/catalog.db wh=$WORK/spark/wh
  else
    only=${ICECDC_INTEROP_ONLY:-$AUDIT_SCENARIOS}
    echo "audit: Spark writes the scenarios $only (the stage's tables are not there)"
    # shellcheck disable=SC2086
    (cd "$HERE" && "$PY" run_scenarios.py --work "$dir/spark" --ivy "$CACHE/ivy" --icecdc "$BIN" \
      --heads "$dir/spark/heads.json" --only $only) >"$LOGS/audit-spark.out" 2>"$LOGS/audit-spark.stderr"
    if [ ! -s "$dir/spark/heads.json" ]; then
      echo "interop: command failed: run_scenarios.py --only $only (log $LOGS/audit-spark.stderr)"
      tail -n 20 "$LOGS/audit-spark.stderr" | sed 's/^/    /'
      return 1
    fi
    db=$dir/spark/catalog.db wh=$dir/spark/wh
  fi
  local extra=()
  # Targets on S3 (moto), in a SQL catalog of their own.
  [ -n "$S3_ENDPOINT" ] || start_s3 >/dev/null || true
  if [ -n "$S3_ENDPOINT" ]; then
    extra+=(--s3-endpoint "$S3_ENDPOINT")
  else
    echo "audit: targets on S3 not checked: the S3 server (moto) did not start (log $LOGS/moto-server.log)"
  fi
  # Flink's upsert tables, when the flink-upserts part wrote them.
  if [ "$(cut -d' ' -f1 "$WORK/flink/status" 2>/dev/null)" = 0 ] && [ -f "$WORK/flink/catalog.db" ]; then
    extra+=(--flink-catalog-db "$WORK/flink/catalog.db" --flink-warehouse "$WORK/flink/wh")
  else
    echo "audit: Flink's upsert tables not followed: the flink-upserts part did not write them in this run"
  fi
  (cd "$HERE" && "$PY" audit_e2e.py --icecdc "$BIN" --catalog-db "$db" --warehouse "$wh" --ivy "$CACHE/ivy" \
    --work "$dir/e2e" "${extra[@]}") 2>"$LOGS/audit-e2e.stderr"
  rc=$?
  [ $rc -ne 0 ] && tail -n 20 "$LOGS/audit-e2e.stderr" | sed 's/^/    /'
  echo "audit: exit $rc in $(elapsed "$t0")s"
  return $rc
}
